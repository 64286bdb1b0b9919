"""With a checkpointer, a tripped breaker pauses the run until an operator continues or aborts it."""

from __future__ import annotations

import time

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from reinloop import Limits
from reinloop.checkpoints import SqliteCheckpointer
from reinloop.errors import ConfigurationError
from reinloop.state import BREAK_KIND
from reinloop.testing import tool_call

CONFIG = {"configurable": {"thread_id": "t1"}}


def calc(expr: str) -> list[dict]:
    return [tool_call("calculator", {"expression": expr})]


def prompt_text(messages) -> str:
    return "\n".join(str(m.content) for m in messages)


@pytest.fixture
def saver(tmp_path):
    with SqliteCheckpointer.open(tmp_path / "runs.db") as s:
        yield s


def test_a_break_pauses_the_run_and_get_state_shows_the_pending_break(make_graph, saver):
    graph, model = make_graph([calc(f"1+{i}") for i in range(5)], limits=Limits(max_steps=2), checkpointer=saver)
    out = graph.invoke({"task": "count"}, CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "max_steps"
    snapshot = graph.get_state(CONFIG)
    assert snapshot.next == ("guard",)
    (pending,) = snapshot.interrupts
    assert pending.value["kind"] == BREAK_KIND
    assert pending.value["reason"] == "max_steps"
    assert pending.value["message"] == "reached the step limit: 2 of 2 steps"
    assert pending.value["counters"]["steps"] == 2
    assert "extra_steps" in pending.value["how_to_resume"]
    assert snapshot.values["status"] == "broken" and snapshot.values["decision"] == "pause"
    assert model.calls == 2
    (row,) = saver.db.runs.breaks("t1")
    assert (row.reason, row.counters["steps"], row.resolution) == ("max_steps", 2, None)
    assert row.checkpoint_id == snapshot.config["configurable"]["checkpoint_id"]


def test_any_checkpointer_pauses_and_no_checkpointer_ends_the_run(make_graph):
    graph, _ = make_graph([calc(f"1+{i}") for i in range(5)], limits=Limits(max_steps=1), checkpointer=InMemorySaver())
    assert graph.invoke({"task": "t"}, CONFIG)["__interrupt__"]
    graph, _ = make_graph([calc(f"1+{i}") for i in range(5)], limits=Limits(max_steps=1))
    out = graph.invoke({"task": "t"})
    assert "__interrupt__" not in out and out["decision"] == "break"
    assert out["history"][-1]["status"] == "broken"


def test_continue_with_extra_steps_reaches_the_answer_and_records_the_resolution(make_graph, saver):
    graph, model = make_graph([calc("1+1"), calc("2+2"), calc("3+3"), "6"], limits=Limits(max_steps=2), checkpointer=saver)
    graph.invoke({"task": "t"}, CONFIG)
    out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 3}), CONFIG)
    assert out["status"] == "done" and out["answer"] == "6"
    assert out["counters"]["steps"] == 4 and out["extensions"]["steps"] == 3
    assert out["history"] == [{"task": "t", "answer": "6", "status": "done"}]  # one turn, not a broken one too
    (row,) = saver.db.runs.breaks("t1")
    assert row.resolution == {"action": "continue", "extra_steps": 3}


def test_continue_without_raising_the_tripped_limit_pauses_again_at_once(make_graph, saver):
    graph, model = make_graph([calc("1+1"), calc("2+2"), "4"], limits=Limits(max_steps=2), checkpointer=saver)
    graph.invoke({"task": "t"}, CONFIG)
    out = graph.invoke(Command(resume={"action": "continue", "extra_seconds": 30}), CONFIG)
    assert out["status"] == "broken" and out["__interrupt__"][0].value["reason"] == "max_steps"
    assert model.calls == 2  # the model was not called past its limit
    assert [b.resolution for b in saver.db.runs.breaks("t1")] == [{"action": "continue", "extra_seconds": 30}, None]


def test_abort_ends_the_run_as_aborted_and_keeps_the_reason_in_the_message(make_graph, saver):
    graph, model = make_graph([calc("1+1"), calc("2+2"), "4"], limits=Limits(max_steps=1), checkpointer=saver)
    graph.invoke({"task": "t"}, CONFIG)
    out = graph.invoke(Command(resume={"action": "abort"}), CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "aborted"
    assert out["break_message"] == "aborted by the operator at the max_steps break: reached the step limit: 1 of 1 step"
    assert out["history"] == [{"task": "t", "answer": None, "status": "broken"}]
    assert graph.get_state(CONFIG).next == ()
    assert saver.db.runs.breaks("t1")[0].reason == "max_steps"


def test_the_operator_hint_is_shown_to_the_model_once(make_graph, saver):
    same = [tool_call("get_weather", {"city": "杭州"})]
    graph, model = make_graph([same, same, same, calc("1+1"), "done"], checkpointer=saver)
    out = graph.invoke({"task": "weather?"}, CONFIG)
    assert out["break_reason"] == "repeated_action"
    graph.invoke(Command(resume={"action": "continue", "hint": "Stop asking for the weather."}), CONFIG)
    assert "[reinloop] Stop asking for the weather." in prompt_text(model.prompts[3])
    assert "Stop asking for the weather." not in prompt_text(model.prompts[4])
    assert model.prompts[3] and graph.get_state(CONFIG).values["answer"] == "done"


def test_continue_restarts_the_stuck_counters_so_a_repeated_failing_call_is_not_rebroken_at_once(make_graph, saver):
    wrong = [tool_call("web", {"q": "2+2"})]  # refused every time: an error and a repeat
    graph, model = make_graph([wrong, wrong, wrong, calc("2+2"), "4"], checkpointer=saver)
    out = graph.invoke({"task": "t"}, CONFIG)
    assert out["break_reason"] == "same_errors"
    assert out["counters"]["repeats"] == 3  # would trip repeated_action as soon as errors were forgiven
    out = graph.invoke(Command(resume={"action": "continue", "hint": "use the calculator"}), CONFIG)
    assert out["status"] == "done" and out["answer"] == "4"
    assert out["counters"]["errors"] == 3 and out["counters"]["steps"] == 5


def test_a_model_that_keeps_failing_after_a_resume_breaks_again(make_graph, saver):
    bad = ["nope", "no", "never", "still no", "nothing", "none"]
    graph, model = make_graph(bad, protocol="json", checkpointer=saver)
    assert graph.invoke({"task": "t"}, CONFIG)["break_reason"] == "same_errors"
    out = graph.invoke(Command(resume={"action": "continue"}), CONFIG)
    assert out["break_reason"] == "same_errors" and model.calls == 6
    assert len(saver.db.runs.breaks("t1")) == 2


@tool
def nap(seconds: float) -> str:
    """Sleep for a while."""
    time.sleep(seconds)
    return f"slept {seconds}"


def test_time_spent_paused_at_a_break_does_not_count_toward_the_time_limit(make_graph, saver):
    replies = [[tool_call("nap", {"seconds": 0.25})], [tool_call("nap", {"seconds": 0.01})], "awake"]
    graph, _ = make_graph(replies, tools=[nap], limits=Limits(max_seconds=0.2), checkpointer=saver)
    assert graph.invoke({"task": "t"}, CONFIG)["break_reason"] == "timeout"
    time.sleep(1.5)  # the operator takes a while
    out = graph.invoke(Command(resume={"action": "continue", "extra_seconds": 5}), CONFIG)
    assert out["status"] == "done"
    assert 0.2 <= out["counters"]["elapsed_seconds"] < 1.2  # at least 1.7 if the pause counted (the nap is cut at 0.2)


def test_a_new_task_on_a_paused_thread_closes_the_broken_run_and_starts_fresh(make_graph, saver):
    graph, _ = make_graph([calc("1+1"), "fresh answer"], limits=Limits(max_steps=1), checkpointer=saver)
    graph.invoke({"task": "first"}, CONFIG)
    out = graph.invoke({"task": "second"}, CONFIG)
    assert out["status"] == "done" and out["run"] == 2 and out["counters"]["steps"] == 1
    assert out["history"] == [
        {"task": "first", "answer": None, "status": "broken"},
        {"task": "second", "answer": "fresh answer", "status": "done"},
    ]


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ("yes", "cannot resume a broken run with 'yes'; expected Command"),
        ({"action": "go"}, "cannot resume a broken run with"),
        ({"action": "continue", "extra_stepz": 2}, "unknown resume key"),
        ({"action": "continue", "extra_steps": -1}, "extra_steps must be a number >= 0, got -1"),
    ],
)
def test_a_malformed_answer_to_a_break_is_refused_and_the_break_stays_pending(make_graph, saver, answer, match):
    graph, _ = make_graph([calc("1+1"), "2"], limits=Limits(max_steps=1), checkpointer=saver)
    graph.invoke({"task": "t"}, CONFIG)
    with pytest.raises(ConfigurationError, match=match):
        graph.invoke(Command(resume=answer), CONFIG)
    out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 1}), CONFIG)
    assert out["answer"] == "2"


def test_the_async_api_pauses_and_resumes_through_the_saver_async_methods(make_graph, saver):
    import asyncio

    graph, _ = make_graph([calc("1+1"), "2"], limits=Limits(max_steps=1), checkpointer=saver)

    async def scenario():
        first = await graph.ainvoke({"task": "t"}, CONFIG)
        with pytest.raises(ConfigurationError, match="cannot resume a broken run with 'yes'"):
            await graph.ainvoke(Command(resume="yes"), CONFIG)
        return first, await graph.ainvoke(Command(resume={"action": "continue", "extra_steps": 1}), CONFIG)

    first, done = asyncio.run(scenario())
    assert first["break_reason"] == "max_steps" and done["answer"] == "2"
    assert saver.db.runs.breaks("t1")[0].resolution == {"action": "continue", "extra_steps": 1}
