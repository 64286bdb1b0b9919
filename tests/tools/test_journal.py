"""The side-effects journal: intents and results in SQLite, at most once per call."""

from __future__ import annotations

import threading
import time

import sqlite_utils
from langchain_core.tools import StructuredTool

from reinloop.tools import (
    Place,
    ToolCall,
    ToolExecutor,
    ToolJournal,
    configure,
)
from reinloop.checkpoints.journal import CallKey, args_hash

PLACE = Place(thread_id="t1", run=1, step=2)


def effect_tool(log, name="send", **options):
    def send(to: str) -> str:
        log.append(to)
        return f"sent to {to}"

    return configure(StructuredTool.from_function(send, name=name, description="d"), side_effects=True, **options)


def key_for(call: ToolCall, place: Place = PLACE) -> CallKey:
    return CallKey(place.thread_id, place.run, place.step, call.position, call.call_id, call.tool.name, args_hash(call.args))


def test_without_a_database_the_journal_is_kept_in_memory_with_the_same_rows():
    log: list[str] = []
    journal = ToolJournal()
    call = ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)
    ToolExecutor(journal=journal).run([call], PLACE)
    ToolExecutor(journal=journal).run([call], PLACE)  # the same call after a resume: replayed
    assert log == ["ann"] and journal.path == ":memory:"
    assert [r["observation"] for r in journal.rows("t1")] == ["sent to ann"]


def test_a_journal_left_by_an_older_standalone_journal_is_migrated_with_its_rows(tmp_path):
    path = tmp_path / "journal.db"
    db = sqlite_utils.Database(path)  # what ToolJournal("journal.db") made before it joined the run database
    db["tool_journal"].create({"thread_id": str, "run": int, "step": int, "position": int, "call_id": str, "tool": str,
                               "args_hash": str, "args": str, "started_at": float, "finished_at": float,
                               "observation": str, "error": int},
                              pk=("thread_id", "run", "step", "position", "call_id", "tool", "args_hash"))
    call = ToolCall(effect_tool([]), {"to": "ann"}, "c1", 0)
    db["tool_journal"].insert({**key_for(call).as_row(), "args": "{}", "started_at": 1.0, "finished_at": 2.0,
                               "observation": "sent to ann", "error": 0})
    db.conn.close()
    log: list[str] = []
    [result] = ToolExecutor(journal=ToolJournal(path)).run([ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)], PLACE)
    assert result.observation == "sent to ann" and log == []  # replayed from the old row, not sent again


def test_args_hash_ignores_key_order():
    assert args_hash({"a": 1, "b": "二"}) == args_hash({"b": "二", "a": 1}) != args_hash({"a": 2, "b": "二"})


def test_a_side_effect_call_journals_intent_then_result(tmp_path):
    log: list[str] = []
    journal = ToolJournal(tmp_path / "run.db")
    call = ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)
    [result] = ToolExecutor(journal=journal).run([call], PLACE)
    assert result.observation == "sent to ann" and log == ["ann"]
    [entry] = ToolJournal(tmp_path / "run.db").entries("t1")  # durable: another connection sees it
    assert entry.key == key_for(call) and entry.finished and entry.observation == "sent to ann"


def test_a_finished_call_is_replayed_not_rerun(tmp_path):
    log: list[str] = []
    journal = ToolJournal(tmp_path / "run.db")
    call = ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)
    ToolExecutor(journal=journal).run([call], PLACE)
    [again] = ToolExecutor(journal=journal).run([call], PLACE)
    assert log == ["ann"]
    assert (again.observation, again.status) == ("sent to ann", "replayed")


def test_an_intent_without_a_result_is_not_rerun_and_the_outcome_is_unknown(tmp_path):
    log: list[str] = []
    journal = ToolJournal(tmp_path / "run.db")
    call = ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)
    journal.begin(key_for(call), call.args)  # as if the process died during the call
    [result] = ToolExecutor(journal=journal).run([call], PLACE)
    assert log == []
    assert result.status == "unknown" and result.error
    assert "the outcome of this send call is unknown" in result.observation
    assert "It was not run again because send has side effects. Check whether it took effect" in result.observation


def test_the_same_call_in_another_step_or_thread_runs_again(tmp_path):
    log: list[str] = []
    journal = ToolJournal(tmp_path / "run.db")
    call = ToolCall(effect_tool(log), {"to": "ann"}, "c1", 0)
    executor = ToolExecutor(journal=journal)
    executor.run([call], PLACE)
    executor.run([call], Place("t1", 1, 3))
    executor.run([call], Place("t2", 1, 2))
    assert log == ["ann", "ann", "ann"]


def test_idempotent_tools_and_threadless_runs_are_not_journaled(tmp_path):
    log: list[str] = []
    journal = ToolJournal(tmp_path / "run.db")
    plain = configure(StructuredTool.from_function(lambda to: log.append(to) or "ok", name="look", description="d"))
    executor = ToolExecutor(journal=journal)
    executor.run([ToolCall(plain, {"to": "a"}, "c1", 0)], PLACE)
    executor.run([ToolCall(plain, {"to": "a"}, "c1", 0)], PLACE)
    executor.run([ToolCall(effect_tool(log), {"to": "b"}, "c1", 0)], Place("", 1, 1))
    assert log == ["a", "a", "b"] and journal.entries() == []


def test_a_timed_out_side_effect_call_is_unknown_and_its_late_result_is_journaled(tmp_path):
    release = threading.Event()

    def slow_send(to: str) -> str:
        release.wait(5)
        return f"sent to {to}"

    journal = ToolJournal(tmp_path / "run.db")
    tool = configure(StructuredTool.from_function(slow_send, name="send", description="d"), side_effects=True, timeout=0.1)
    [result] = ToolExecutor(journal=journal).run([ToolCall(tool, {"to": "ann"}, "c1", 0)], PLACE)
    assert result.status == "timeout"
    assert "has side effects and may still complete, so its outcome is unknown" in result.observation
    assert not journal.entries()[0].finished
    release.set()
    deadline = time.monotonic() + 5
    while not journal.entries()[0].finished and time.monotonic() < deadline:
        time.sleep(0.01)
    assert journal.entries()[0].observation == "sent to ann"


def test_build_graph_with_reinloop_s_checkpointer_journals_side_effects_in_its_run_database(tmp_path):
    from reinloop import build_graph
    from reinloop.checkpoints import SqliteCheckpointer, open_database
    from reinloop.testing import ScriptedChatModel, tool_call

    log: list[str] = []
    saver = SqliteCheckpointer.open(tmp_path / "runs.db")
    model = ScriptedChatModel(replies=[[tool_call("send", {"to": "ann"})], "sent"])
    graph = build_graph(model, [effect_tool(log)], checkpointer=saver)
    out = graph.invoke({"task": "mail ann"}, {"configurable": {"thread_id": "t1"}})
    saver.close()
    assert out["status"] == "done" and log == ["ann"]
    with open_database(tmp_path / "runs.db", read_only=True) as db:  # another process sees it: not in memory
        assert [(r["tool"], r["observation"]) for r in db.journal.rows("t1")] == [("send", "sent to ann")]


def test_build_graph_with_another_checkpointer_journals_in_memory():
    from langgraph.checkpoint.memory import InMemorySaver

    from reinloop.graph import open_journal

    assert open_journal(None, InMemorySaver()).path == ":memory:"
    assert open_journal(None, None) is None
