"""Tool failures, long outputs and several calls per reply."""

from __future__ import annotations

import time

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from reinloop import Limits
from reinloop.testing import tool_call
from reinloop.tools import builtins


@tool
def explode(reason: str) -> str:
    """Always raises."""
    raise ValueError(f"cannot do {reason}")


@tool
def novel(n: int) -> str:
    """Returns a very long text."""
    return "x" * n


def test_tool_exception_becomes_an_error_observation(make_graph):
    graph, _ = make_graph([[tool_call("explode", {"reason": "that"})], "gave up"], tools=[explode])
    out = graph.invoke({"task": "t"})
    action = out["scratchpad"][0]["actions"][0]
    assert action["observation"] == "ERROR: ValueError: cannot do that"
    assert action["error"] is True and out["counters"]["errors"] == 1
    assert out["status"] == "done"


def test_calculator_errors_are_clear(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "1/0"})], "x"])
    out = graph.invoke({"task": "t"})
    assert out["scratchpad"][0]["actions"][0]["observation"] == "ERROR: CalculatorError: division by zero"


def test_long_output_is_truncated_with_a_marker(make_graph):
    graph, _ = make_graph([[tool_call("novel", {"n": 5000})], "ok"], tools=[novel],
                          limits=Limits(max_observation_chars=100))
    out = graph.invoke({"task": "t"})
    observation = out["scratchpad"][0]["actions"][0]["observation"]
    assert observation == "x" * 100 + "\n[... truncated 4900 of 5000 characters]"


def test_a_long_result_is_cut_to_the_lines_the_task_names(make_graph):
    from langchain_core.tools import tool

    @tool
    def pages() -> str:
        """All the pages."""
        return "\n".join(["# Index", *(f"- filler line {i} " + "z" * 40 for i in range(60)), "- chengdu population: 2140"])

    task = "What is the population of Chengdu?"
    graph, _ = make_graph([[tool_call("pages", {})], "2140"], tools=[pages], limits=Limits(max_observation_chars=500))
    observation = graph.invoke({"task": task})["scratchpad"][0]["actions"][0]["observation"]
    assert "- chengdu population: 2140" in observation and "kept the opening and the lines with the task's words" in observation
    assert len(observation) < 600


def test_several_tool_calls_in_one_reply_run_in_order(make_graph):
    reply = [tool_call("get_weather", {"city": "北京"}, id="a"), tool_call("get_weather", {"city": "上海"}, id="b"),
             tool_call("calculator", {"expression": "24-18"}, id="c")]
    graph, model = make_graph([reply, "6"])
    out = graph.invoke({"task": "t"})
    actions = out["scratchpad"][0]["actions"]
    assert [a["observation"] for a in actions] == ["北京: 晴, 18℃ (demo data)", "上海: 多云, 24℃ (demo data)", "6"]
    assert out["counters"]["steps"] == 2  # three calls in one step, then the answer
    replay = model.prompts[1][-4:]  # the AI message, then one tool result per call id, in order
    assert isinstance(replay[0], AIMessage) and [c["id"] for c in replay[0].tool_calls] == ["a", "b", "c"]
    assert [m.tool_call_id for m in replay[1:] if isinstance(m, ToolMessage)] == ["a", "b", "c"]


def test_invalid_json_arguments_get_an_error_result_for_their_call_id(make_graph):
    bad = AIMessage(
        content="",
        invalid_tool_calls=[{"name": "calculator", "args": '{"expression": "1+', "id": "bad1",
                             "error": "JSONDecodeError", "type": "invalid_tool_call"}],
    )
    graph, model = make_graph([bad, [tool_call("calculator", {"expression": "1+1"})], "2"])
    out = graph.invoke({"task": "t"})
    action = out["scratchpad"][0]["actions"][0]
    assert action["id"] == "bad1" and action["error"] is True
    assert action["observation"].startswith("ERROR: the arguments are not valid JSON")
    tool_results = [m for m in model.prompts[1] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_results] == ["bad1"]
    assert out["answer"] == "2"


def test_mixed_valid_and_invalid_calls_run_the_valid_ones(make_graph):
    reply = [tool_call("calculator", {"expression": "2+2"}, id="ok"), tool_call("nope", {}, id="no")]
    graph, _ = make_graph([reply, "4"])
    out = graph.invoke({"task": "t"})
    first, second = out["scratchpad"][0]["actions"]
    assert (first["observation"], first["error"]) == ("4", False)
    assert second["error"] is True and "unknown tool 'nope'" in second["observation"]
    assert out["scratchpad"][0]["error"] is True  # one refused call fails the step
    assert out["counters"]["errors"] == 1


def test_a_tool_past_its_timeout_is_an_error_and_the_run_goes_on_to_an_answer(make_graph):
    import time

    from reinloop.tools import builtin

    replies = [[tool_call("wait", {"seconds": 3})], [tool_call("calculator", {"expression": "6*7"})], "42"]
    graph, model = make_graph(replies, tools=[builtin("wait"), builtin("calculator")], limits=Limits(tool_timeout=0.3))
    began = time.monotonic()
    out = graph.invoke({"task": "t"})
    assert time.monotonic() - began < 0.3 + 1.5  # did not wait for the 3 s sleep
    first, second = (step["actions"][0] for step in out["scratchpad"][:2])
    assert first["error"] is True
    assert first["observation"].startswith("ERROR: ToolTimeout: wait did not finish within 0.3 s and was abandoned.")
    assert second["observation"] == "42"
    assert (out["status"], out["answer"]) == ("done", "42")
    assert "ToolTimeout" in str(model.prompts[1])  # the model was told


def test_execute_reports_status_attempts_and_time_per_call(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "1+1"})], "2"])
    events = [e for mode, e in graph.stream({"task": "t"}, stream_mode=["custom"]) if e["node"] == "execute"]
    [event] = events
    assert event["summary"] == "calculator -> ok"
    [record] = event["actions"]
    assert (record["status"], record["attempts"], record["error"]) == ("ok", 1, False)
    assert record["latency_ms"] >= 0 and event.get("error") is None


def test_parallel_safe_calls_of_one_reply_run_concurrently_in_the_graph(make_graph):
    import threading

    from langchain_core.tools import StructuredTool

    from reinloop.tools import configure

    barrier = threading.Barrier(3, timeout=5)  # passes only if all three calls run at once

    def meet(name: str) -> str:
        barrier.wait()
        return f"{name} met"

    meet_tool = configure(StructuredTool.from_function(meet, name="meet", description="Meet."), parallel_safe=True)
    reply = [tool_call("meet", {"name": n}, id=n) for n in ("a", "b", "c")]
    graph, _ = make_graph([reply, "done"], tools=[meet_tool])
    out = graph.invoke({"task": "t"})
    assert [a["observation"] for a in out["scratchpad"][0]["actions"]] == ["a met", "b met", "c met"]


def test_a_run_with_a_tool_that_never_returns_ends_at_max_seconds_as_a_resumable_timeout(make_graph):
    import threading
    import time

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from reinloop.tools import builtin

    forever = threading.Event()

    @tool
    def hang(x: str) -> str:
        """Never returns (until the test ends)."""
        forever.wait()
        return "too late"

    config = {"configurable": {"thread_id": "t"}}
    for tool_timeout in (30.0, None):  # the default timeout, and none at all
        replies = [[tool_call("hang", {"x": "a"})], [tool_call("calculator", {"expression": "6*7"})], "42"]
        events = []
        graph, _ = make_graph(replies, tools=[hang, builtin("calculator")], checkpointer=InMemorySaver(),
                              limits=Limits(max_seconds=3, tool_timeout=tool_timeout), sinks=[events.append])
        began = time.monotonic()
        out = graph.invoke({"task": "t"}, config)
        assert time.monotonic() - began < 3 + 2
        assert (out["status"], out["break_reason"]) == ("broken", "timeout")
        [action] = out["scratchpad"][0]["actions"]
        assert "did not finish within" in action["observation"] and "the run's time limit (max_seconds) ran out" in action["observation"]
        stats = graph.reinloop_context.workers.stats()
        assert (stats["running"], stats["overdue"]) == (1, 1)  # a thread that cannot be stopped is counted
        [execute] = [e for e in events if e["node"] == "execute"]  # ... and reported
        assert execute["summary"] == "hang -> timeout; 1 of 8 tool workers held by abandoned calls"
        assert execute["data"]["workers"]["overdue"] == 1
        out = graph.invoke(Command(resume={"action": "continue", "extra_seconds": 30}), config)
        assert (out["status"], out["answer"]) == ("done", "42")
    forever.set()


def test_calls_waiting_for_a_worker_do_not_outlast_the_run(make_graph):
    import threading
    import time

    from langchain_core.tools import StructuredTool

    from reinloop.tools import configure

    forever = threading.Event()
    hang = configure(StructuredTool.from_function(lambda x: forever.wait() and "late", name="hang", description="Hang."),
                     parallel_safe=True)
    reply = [tool_call("hang", {"x": str(i)}, id=f"c{i}") for i in range(4)]  # two more than there are workers
    graph, _ = make_graph([reply, "done"], tools=[hang], limits=Limits(max_seconds=2, tool_timeout=None, tool_workers=2))
    began = time.monotonic()
    out = graph.invoke({"task": "t"})
    assert time.monotonic() - began < 2 + 2
    assert out["break_reason"] == "timeout"
    observations = [a["observation"] for a in out["scratchpad"][0]["actions"]]
    assert all("ran out" in o for o in observations[:2])  # started, abandoned at the run's end
    assert all("not started" in o for o in observations[2:])  # no worker came free before the run's end
    forever.set()


def counting_tools():
    """A cacheable lookup and a side-effecting write, each counting its runs."""
    from reinloop.tools import configure

    runs = {"lookup": 0, "store": 0}
    box = {"value": "old"}

    @configure(cacheable=True)
    @tool
    def lookup(key: str) -> str:
        """Read a value."""
        runs["lookup"] += 1
        return f"{key} = {box['value']}"

    @configure(side_effects=True)
    @tool
    def store(value: str) -> str:
        """Write a value."""
        runs["store"] += 1
        box["value"] = value
        return "stored"

    return [lookup, store], runs


def look(key: str = "k") -> list[dict]:
    return [tool_call("lookup", {"key": key})]


def test_a_repeated_call_of_a_tool_configured_cacheable_is_answered_from_its_earlier_result(make_graph):
    tools, runs = counting_tools()
    graph, model = make_graph([look(), look(), "k is old"], tools=tools)
    out = graph.invoke({"task": "t"})
    again = out["scratchpad"][1]["actions"][0]
    assert runs["lookup"] == 1
    assert again["reused"] == 1 and again["error"] is False
    note = ("k = old\n(already known: this is the earlier result of the same call at step 1, reused because "
            "lookup is declared cacheable (its result depends only on its arguments); it was not run again)")
    assert again["observation"] == note
    assert note in [m.content for m in model.prompts[2] if isinstance(m, ToolMessage)]  # the model reads the note
    assert out["status"] == "done"


SENSOR_READS = {
    "tool_calling": ([tool_call("thermometer", {"room": "lab"})], "it warmed by 0.5 °C"),
    "json": ({"tool": "thermometer", "args": {"room": "lab"}}, {"final_answer": "it warmed by 0.5 °C"}),
    "react": ('Thought: read it\nAction: thermometer\nAction Input: {"room": "lab"}',
              "Thought: done\nFinal Answer: it warmed by 0.5 °C"),
}


@pytest.mark.parametrize("protocol", list(SENSOR_READS))
def test_a_live_sensor_read_twice_gives_two_readings(make_graph, protocol):
    readings = iter(["21.5 °C", "22.0 °C"])

    @tool
    def thermometer(room: str) -> str:
        """The temperature in a room, now."""
        return next(readings)

    read, answer = SENSOR_READS[protocol]
    graph, model = make_graph([read, read, answer], tools=[thermometer], protocol=protocol)
    out = graph.invoke({"task": "Has the lab warmed up?"})
    observations = [a["observation"] for s in out["scratchpad"] for a in s["actions"]]
    assert observations == ["21.5 °C", "22.0 °C"]
    assert "reused" not in out["scratchpad"][1]["actions"][0]
    prompt = "\n".join(str(m.content) for m in model.prompts[2])
    assert "22.0 °C" in prompt and "already known" not in prompt  # the model reads the new reading, no note
    assert out["status"] == "done" and out["answer"] == "it warmed by 0.5 °C"


def test_a_calculator_repeat_is_reused_and_the_model_is_told(make_graph):
    calc = [tool_call("calculator", {"expression": "17*23"})]
    graph, model = make_graph([calc, calc, "391"], tools=builtins("calculator"))
    out = graph.invoke({"task": "What is 17*23?"})
    again = out["scratchpad"][1]["actions"][0]
    assert again["reused"] == 1
    assert [m.content for m in model.prompts[2] if isinstance(m, ToolMessage)][-1] == (
        "391\n(already known: this is the earlier result of the same call at step 1, reused because calculator is "
        "declared cacheable (its result depends only on its arguments); it was not run again)")
    assert out["answer"] == "391"


def test_wait_is_not_cacheable_a_second_wait_really_waits(make_graph):
    wait = [tool_call("wait", {"seconds": 0.2})]
    graph, _ = make_graph([wait, wait, "waited"], tools=builtins("wait"))
    began = time.monotonic()
    out = graph.invoke({"task": "wait twice"})
    assert time.monotonic() - began >= 0.4
    assert [a.get("reused") for s in out["scratchpad"] for a in s["actions"]] == [None, None]


def test_a_side_effecting_call_in_between_makes_the_read_run_again(make_graph):
    tools, runs = counting_tools()
    graph, _ = make_graph([look(), [tool_call("store", {"value": "new"})], look(), "new"], tools=tools)
    out = graph.invoke({"task": "t"})
    assert runs["lookup"] == 2 and out["scratchpad"][2]["actions"][0]["observation"] == "k = new"


def test_a_side_effecting_call_is_never_answered_from_an_earlier_result(make_graph):
    tools, runs = counting_tools()
    write = [tool_call("store", {"value": "v"})]
    graph, _ = make_graph([write, write, "done"], tools=tools)
    graph.invoke({"task": "t"})
    assert runs["store"] == 2


def test_a_failed_call_is_run_again_and_other_arguments_run(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "1/0"})]] * 2 + [look("a"), look("b"), "x"],
                          tools=counting_tools()[0] + builtins("calculator"))
    out = graph.invoke({"task": "t"})
    assert [a.get("reused") for s in out["scratchpad"] for a in s["actions"]] == [None, None, None, None]


def test_the_execute_event_lists_reused_and_run_calls_in_the_models_order(make_graph):
    lookup = look()[0]
    replies = [[lookup], [tool_call("calculator", {"expression": "1+1"}), lookup], "done"]
    graph, _ = make_graph(replies, tools=counting_tools()[0] + builtins("calculator"))
    events = [e for _, e in graph.stream({"task": "t"}, stream_mode=["custom"]) if e["node"] == "execute"]
    assert [(r["tool"], r["status"]) for r in events[1]["actions"]] == [("calculator", "ok"), ("lookup", "reused")]
    assert events[1]["summary"] == "calculator -> ok, lookup -> reused"


def test_a_tool_not_declared_cacheable_runs_at_every_repeat(make_graph):
    weather = tool_call("get_weather", {"city": "Hangzhou"})
    graph, _ = make_graph([[weather], [weather], "done"])
    events = [e for _, e in graph.stream({"task": "t"}, stream_mode=["custom"]) if e["node"] == "execute"]
    assert [r["status"] for e in events for r in e["actions"]] == ["ok", "ok"]
