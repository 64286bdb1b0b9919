"""AnswerRules(vary_repeats=True): a reply repeating a failure of the run is asked for again with sampling."""

from __future__ import annotations

from reinloop.protocols.answers import AnswerRules
from reinloop.protocols.repeats import VARY_TEMPERATURE
from reinloop.testing import tool_call

BAD = [tool_call("calculator", {"expression": "2+"})]
TWO = [tool_call("calculator", {"expression": "2+2"})]
VARY = AnswerRules(vary_repeats=True)


def memory_events(out):
    return [e for s in out["scratchpad"] for e in s.get("memory") or []]


def test_a_repeated_failed_call_is_asked_again_with_a_seeded_sample_and_the_new_call_runs(make_graph):
    graph, model = make_graph([BAD, BAD, TWO, "4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert [a["args"]["expression"] for s in out["scratchpad"] for a in s["actions"]] == ["2+", "2+2"]
    assert out["answer"] == "4"
    assert model.call_options[2]["temperature"] == VARY_TEMPERATURE and model.call_options[2]["seed"] == 201
    assert "temperature" not in model.call_options[1]
    assert out["counters"]["llm_calls"] == 4  # the reply put aside is counted
    assert {"event": "resampled", "asks": 1, "temperature": VARY_TEMPERATURE, "changed": True} in memory_events(out)


def test_a_repeated_unreadable_reply_in_json_is_asked_again(make_graph):
    bad = "I think so."
    graph, model = make_graph([bad, bad, {"tool": "calculator", "args": {"expression": "1+1"}}, {"final_answer": "2"}],
                              protocol="json", answers=VARY)
    out = graph.invoke({"task": "1+1"})
    assert out["answer"] == "2" and model.call_options[2].get("seed") == 201


def test_a_repeat_of_a_call_that_worked_is_asked_again_greedily_without_that_tool(make_graph):
    graph, model = make_graph([TWO, TWO, "4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert out["answer"] == "4" and not any("seed" in o for o in model.call_options)  # no sampling
    assert model.tools_sent == [["calculator", "db_query", "get_weather"]] * 2 + [["db_query", "get_weather"]]
    assert len(out["scratchpad"]) == 2 and out["counters"]["llm_calls"] == 3  # the repeat put aside, counted
    assert {"event": "withheld", "tool": "calculator"} in memory_events(out)


def test_in_json_the_withheld_tool_leaves_the_listing_of_the_re_ask(make_graph):
    two = {"tool": "calculator", "args": {"expression": "2+2"}}
    graph, model = make_graph([two, two, {"final_answer": "4"}], protocol="json", answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert out["answer"] == "4"
    listing = [str(p[0].content) for p in model.prompts]
    assert "- calculator:" in listing[1] and "- calculator:" not in listing[2] and "- get_weather:" in listing[2]
    fresh = model.prompts[2]  # the task and the results, none of the model's own replies to copy
    assert [m.type for m in fresh] == ["system", "human", "human", "human"]
    assert "Results of the tools called for this task, verbatim:" in str(fresh[2].content) and "-> 4" in str(fresh[2].content)
    assert str(fresh[3].content).startswith("calculator gave its result already (above). Which tool gives")
    assert str(fresh[3].content).endswith("Reply following the required format exactly.")


def test_a_repeat_of_a_side_effecting_call_is_not_withheld(make_graph):
    from langchain_core.tools import tool

    from reinloop.tools import builtins, configure

    sent: list[str] = []

    @configure(side_effects=True)
    @tool
    def send(text: str) -> str:
        """Send a message."""
        sent.append(text)
        return "sent"

    again = [tool_call("send", {"text": "hi"})]
    graph, model = make_graph([again, again, "done"], answers=VARY, tools=[send, *builtins("calculator")])
    out = graph.invoke({"task": "say hi twice"})
    assert sent == ["hi", "hi"] and out["answer"] == "done"
    assert all("send" in names for names in model.tools_sent)


def test_a_repeat_of_a_tool_not_declared_cacheable_is_not_withheld_and_runs_again(make_graph):
    from langchain_core.tools import tool

    from reinloop.tools import builtins

    states = iter(["running", "done"])

    @tool
    def job_status(job: str) -> str:
        """The status of a job, now."""
        return next(states)

    poll = [tool_call("job_status", {"job": "j1"})]
    graph, model = make_graph([poll, poll, "the job is done"], answers=VARY, tools=[job_status, *builtins("calculator")])
    out = graph.invoke({"task": "wait for job j1"})
    assert [a["observation"] for s in out["scratchpad"] for a in s["actions"]] == ["running", "done"]
    assert all("job_status" in names for names in model.tools_sent) and model.calls == 3
    assert not any(e.get("event") == "withheld" for e in memory_events(out))
    assert out["answer"] == "the job is done"


def test_a_model_that_repeats_every_time_is_asked_at_most_twice_more_and_the_guard_sees_the_repeat(make_graph):
    graph, model = make_graph([BAD] * 4 + ["4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert [o.get("seed") for o in model.call_options[:4]] == [None, None, 201, 202]
    assert out["counters"]["llm_calls"] == 5
    assert {"event": "resampled", "asks": 2, "temperature": VARY_TEMPERATURE, "changed": False} in memory_events(out)


def test_without_the_rule_a_repeat_is_not_asked_again(make_graph):
    graph, model = make_graph([BAD, BAD, "4"])
    graph.invoke({"task": "2+2"})
    assert model.calls == 3 and not any("seed" in o for o in model.call_options)


def test_a_repeat_of_a_refused_call_is_asked_again_without_that_tool_quoting_the_refusal(make_graph):
    from langchain_core.tools import tool

    from reinloop.tools import builtins

    @tool
    def save(row: dict[str, str]) -> str:
        """Save a row of column -> text."""
        return "saved"

    # what Qwen2.5-Coder-0.5B sent db_insert four times: the parameter's schema instead of a row
    copied = [tool_call("save", {"row": {"additionalProperties": {"type": "string"}, "type": "object"}})]
    graph, model = make_graph([copied, copied, copied, copied, TWO, "4"], answers=VARY,
                              tools=[save, *builtins("calculator")])
    out = graph.invoke({"task": "2+2"})
    first = out["scratchpad"][0]["actions"][0]["observation"]
    assert "'row' holds a copy of the tool's parameter schema ('additionalProperties', 'type'), not a value" in first
    assert out["answer"] == "4"
    assert [a["tool"] for s in out["scratchpad"] for a in s["actions"]] == ["save", "calculator"]  # no second save
    assert model.tools_sent[-2] == ["calculator"]  # the re-ask: save withheld
    asked = str(model.prompts[-2][-1].content)
    assert asked.startswith("save refused that call already: invalid arguments for save: 'row' holds a copy")
    assert "Expected:" not in asked  # the sketch it copied from is left out
    assert {"event": "withheld", "tool": "save", "reason": "refused"} in memory_events(out)


def test_a_refused_call_may_be_made_again_once_a_result_came_since(make_graph):
    from reinloop.protocols.repeats import refused_repeat
    from reinloop.protocols import get_protocol
    from reinloop.tools.registry import ToolRegistry
    from reinloop.tools import builtins

    tools = ToolRegistry(builtins("calculator,get_weather"))
    refused = {"tool": "calculator", "args": {"expression": "x"}, "problem": "no figures yet", "error": True}
    ran = {"tool": "get_weather", "args": {"city": "杭州"}, "observation": "杭州: 多云", "error": False}
    reply = {"text": "", "tool_calls": [{"name": "calculator", "args": {"expression": "x"}, "id": "1"}]}
    protocol = get_protocol("tool_calling")
    state = {"scratchpad": [{"index": 1, "actions": [refused]}]}
    assert refused_repeat(state, protocol, reply, tools) == ("calculator", "no figures yet")
    state = {"scratchpad": [{"index": 1, "actions": [refused]}, {"index": 2, "actions": [ran]}]}
    assert refused_repeat(state, protocol, reply, tools) is None
