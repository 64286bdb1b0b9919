"""A run cut off mid-step resumes from its last checkpoint; calls without results are repaired."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from reinloop import Limits
from reinloop.checkpoints import SqliteCheckpointer
from reinloop.nodes.memorize import finalize
from reinloop.protocols.tool_calling import INTERRUPTED
from reinloop.testing import tool_call

CONFIG = {"configurable": {"thread_id": "t1"}}


class Crash(KeyboardInterrupt):
    """Stands for the process dying in the middle of a tool (Ctrl-C: the one thing a tool raises that stops a run)."""


def crashing_tool(log: list[str], crash_on: str):
    @tool
    def record(item: str) -> str:
        """Record an item."""
        log.append(item)
        if item == crash_on and log.count(item) == 1:
            raise Crash
        return f"receipt for {item}"

    return record


def script() -> list:
    return [[tool_call("record", {"item": x}, id=f"call_{x}")] for x in "abc"] + ["recorded"]


@pytest.fixture
def saver(tmp_path):
    with SqliteCheckpointer.open(tmp_path / "runs.db") as s:
        yield s


def test_invoke_none_after_a_crash_reruns_only_the_cut_off_step(make_graph, saver, tmp_path):
    log: list[str] = []
    graph, model = make_graph(script(), tools=[crashing_tool(log, "b")], checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": "record a, b, c"}, CONFIG)
    assert graph.get_state(CONFIG).next == ("execute",)

    # a new saver on the same file, as a new process would open it
    with SqliteCheckpointer.open(tmp_path / "runs.db") as fresh:
        graph2, _ = make_graph(script()[2:], tools=[crashing_tool(log, "b")], checkpointer=fresh)
        out = graph2.invoke(None, CONFIG)
    assert out["status"] == "done" and out["answer"] == "recorded"
    assert log == ["a", "b", "b", "c"]  # a ran once; only the cut-off step ran again
    assert [a["observation"] for s in out["scratchpad"] for a in s["actions"]] == [
        "receipt for a", "receipt for b", "receipt for c",
    ]
    assert model.calls == 2


def test_a_new_task_after_a_cut_off_run_records_its_calls_as_interrupted(make_graph, saver):
    log: list[str] = []
    graph, model = make_graph([*script()[:2], "fresh answer"], tools=[crashing_tool(log, "b")], checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": "record a, b, c"}, CONFIG)
    out = graph.invoke({"task": "something else"}, CONFIG)
    assert out["status"] == "done" and out["run"] == 2 and out["counters"]["steps"] == 1
    cut = [s for s in out["scratchpad"] if s["run"] == 1]
    assert [s["index"] for s in cut] == [1, 2]
    (action,) = cut[1]["actions"]
    assert action["observation"] == INTERRUPTED and action["error"] is True
    assert out["history"][0] == {"task": "record a, b, c", "answer": None, "status": "interrupted"}
    assert log == ["a", "b"]  # the cut-off call was not run again for a task nobody asked for any more


def test_a_call_with_no_result_observes_interrupted_so_every_call_id_gets_a_tool_message(make_graph):
    action = finalize({"id": "call_x", "tool": "record", "args": {"item": "x"}, "problem": None})
    assert action["observation"] == INTERRUPTED and action["error"]
    graph, model = make_graph(["ok"])
    step = {"index": 1, "run": 1, "thought": "", "raw": "", "actions": [action], "answer": None,
            "parse_error": None, "error": True, "prompt_tokens": 0, "completion_tokens": 0, "hints": []}
    messages = graph.reinloop_context.protocol.render_step(step)
    assert isinstance(messages[0], AIMessage) and messages[0].tool_calls[0]["id"] == "call_x"
    assert isinstance(messages[1], ToolMessage) and messages[1].tool_call_id == "call_x"
    assert messages[1].content == INTERRUPTED


def test_resuming_a_crashed_run_after_its_limit_is_still_guarded(make_graph, saver):
    log: list[str] = []
    graph, _ = make_graph(script(), tools=[crashing_tool(log, "b")], limits=Limits(max_steps=2), checkpointer=saver)
    with pytest.raises(Crash):
        graph.invoke({"task": "t"}, CONFIG)
    out = graph.invoke(None, CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "max_steps" and out["__interrupt__"]
