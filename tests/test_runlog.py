"""The node_events table: every node transition of a run, queryable after the fact."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys

import pytest
import sqlite_utils

from reinloop import RunLog
from reinloop.errors import StorageError
from reinloop import SqliteCheckpointer
from reinloop.checkpoints.schema import STEPS
from reinloop.checkpoints.sqlitedb import create_table
from reinloop.observe.events import NodeEvent
from reinloop.checkpoints.runlog import EVENT_COLUMNS, read_events

# A run that hits a parse error, a tool error, a repeat hint and a break (json protocol).
TROUBLE = [
    "我认为答案是……",
    {"thought": "compute", "tool": "calculator", "args": {"expression": "1/0"}},
    *[{"thought": "look it up", "tool": "get_weather", "args": {"city": "北京"}}] * 3,
]
TROUBLE_DECISIONS = ["continue", "continue", "continue", "hint", "pause"]  # with a checkpointer, a break pauses


@pytest.fixture
def troubled_run(tmp_path, make_graph):
    """Run TROUBLE with a RunLog and reinloop's checkpointer in the same database file; yield the file's path."""
    path = tmp_path / "reinloop.db"
    with SqliteCheckpointer.open(path) as saver:
        log = RunLog(path)
        graph, _ = make_graph(TROUBLE, protocol="json", checkpointer=saver, sinks=[log])
        out = graph.invoke({"task": "北京天气？"}, {"configurable": {"thread_id": "trouble"}})
    assert out["break_reason"] == "repeated_action"
    return path


def query(path, sql, params=()):
    return list(sqlite_utils.Database(path).query(sql, params))


def test_the_steps_table_explains_a_troubled_run(troubled_run):
    rows = query(troubled_run, "select step, node, error, decision, reason, hints from node_events "
                               "where thread_id = 'trouble' order by id")
    assert [(r["step"], r["node"]) for r in rows if r["node"] in ("decide", "guard")] == [
        (s, n) for s in range(1, 6) for n in ("decide", "guard")]
    parse_error, tool_error = (r for r in rows if r["node"] in ("parse", "execute") and r["error"])
    assert (parse_error["step"], parse_error["error"]) == (1, "no JSON object found in the reply: '我认为答案是……'")
    assert (tool_error["step"], tool_error["error"]) == (2, "calculator: ERROR: CalculatorError: division by zero")
    guards = [r for r in rows if r["node"] == "guard"]
    assert [g["decision"] for g in guards] == TROUBLE_DECISIONS
    assert json.loads(guards[3]["hints"])[0].startswith("You already did this: get_weather")
    assert guards[4]["reason"] == "repeated_action"


def test_json_columns_can_be_queried_with_sqlite_json_functions(troubled_run):
    rows = query(troubled_run, "select step, json_extract(counters, '$.consecutive_errors') as errs, "
                               "json_extract(actions, '$[0].tool') as tool from node_events where node = 'memorize' order by id")
    assert [(r["step"], r["errs"], r["tool"]) for r in rows] == [
        (1, 1, None), (2, 2, "calculator"), (3, 0, "get_weather"), (4, 0, "get_weather"), (5, 0, "get_weather")]


def test_every_step_row_points_at_a_stored_checkpoint(troubled_run):
    rows = query(troubled_run, "select s.node, s.superstep, c.checkpoint_id from node_events s left join checkpoints c "
                               "on c.thread_id = s.thread_id and c.checkpoint_ns = s.checkpoint_ns "
                               "and c.checkpoint_id = s.checkpoint_id")
    assert len(rows) == 28 and all(r["checkpoint_id"] for r in rows)
    assert [r["superstep"] for r in rows] == list(range(1, 29))


def test_sqlite_utils_cli_explains_a_run(troubled_run):
    sql = "select step, node, error from node_events where error is not null and node != 'memorize' order by id"
    out = subprocess.run([sys.executable, "-m", "sqlite_utils", "query", str(troubled_run), sql],
                         capture_output=True, text=True, check=True).stdout
    assert [(r["step"], r["node"]) for r in json.loads(out)] == [(1, "parse"), (2, "execute")]


def test_read_events_decodes_json_columns_and_drops_empty_ones(troubled_run):
    events = read_events(troubled_run, "trouble")
    assert len(events) == 28 and events[-1]["counters"]["repeats"] == 3
    assert "reason" not in events[0] and events[-1]["reason"] == "repeated_action"
    assert read_events(troubled_run, "no-such-thread") == []


def test_runlog_accepts_writes_from_langgraph_worker_threads(tmp_path, make_graph):
    log = RunLog(tmp_path / "async.db")
    graph, _ = make_graph(["6"], sinks=[log])  # astream runs sync nodes on executor threads
    asyncio.run(graph.ainvoke({"task": "t"}, {"configurable": {"thread_id": "a1"}}))
    assert [e["node"] for e in log.events("a1")] == ["decide", "parse", "memorize", "guard"]


def test_runlog_takes_an_existing_sqlite_utils_database(make_graph):
    db = sqlite_utils.Database(memory=True)
    graph, _ = make_graph(["6"], sinks=[RunLog(db)])
    graph.invoke({"task": "t"}, {"configurable": {"thread_id": "m1"}})
    assert db["node_events"].count == 4


def test_the_node_events_table_has_every_event_column_and_its_index(tmp_path):
    RunLog(tmp_path / "x.db").close()
    db = sqlite_utils.Database(tmp_path / "x.db")
    assert list(db["node_events"].columns_dict) == list(EVENT_COLUMNS)
    assert set(EVENT_COLUMNS) - {"id"} == set(NodeEvent.__annotations__)
    assert [i.columns for i in db["node_events"].indexes] == [["thread_id", "run", "step"]]
    assert "steps" not in db.table_names()


def test_a_steps_table_left_by_an_older_standalone_run_log_is_migrated_with_its_rows(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)  # what RunLog("old.db") made before it joined the run database
    create_table(db, STEPS)
    db["steps"].insert({"thread_id": "t1", "step": 1, "node": "guard", "counters": '{"steps": 1}'})
    db.conn.close()
    assert read_events(path, "t1") == [{"id": 1, "thread_id": "t1", "step": 1, "node": "guard", "counters": {"steps": 1}}]
    with RunLog(path) as log:
        log({"node": "guard", "summary": "finish", "thread_id": "t1", "step": 2})
        assert [e["step"] for e in log.events("t1")] == [1, 2]
    assert "node_events" in sqlite_utils.Database(path).table_names()


def test_a_file_that_is_not_sqlite_is_refused_with_the_path(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not a database\n" * 20)
    with pytest.raises(StorageError, match=r".*notes.db is not a SQLite database \(it starts with b'just some notes"):
        RunLog(path)
    assert path.read_text().startswith("just some notes")  # nothing lost


def test_a_failed_write_says_the_run_can_be_resumed(tmp_path):
    log = RunLog(tmp_path / "x.db")
    log.db.connection.raw.execute("pragma query_only = on")  # as if the file had become read-only
    with pytest.raises(StorageError, match=r"cannot write the run log: .*x.db is read-only \(attempt to write a readonly "
                                           r"database\).*; the run stopped before this guard step was saved and can be resumed"):
        log({"node": "guard", "summary": "finish"})


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(StorageError, match="is a directory; --db needs a database file"):
        RunLog(tmp_path)


def test_the_run_database_uses_wal_so_readers_do_not_block_a_run(tmp_path):
    RunLog(tmp_path / "w.db")
    assert sqlite3.connect(tmp_path / "w.db").execute("pragma journal_mode").fetchone() == ("wal",)




def test_a_step_row_keeps_a_preview_of_a_long_observation_and_a_long_answer_whole(tmp_path):
    from langchain_core.tools import tool

    from reinloop import build_graph
    from reinloop.checkpoints.blobs import PREVIEW_CHARS
    from reinloop.testing import ScriptedChatModel, tool_call

    @tool
    def dump(part: int) -> str:
        """A long log."""
        return "log line. " * 150

    answer = "The whole answer. " * 200
    log = RunLog(tmp_path / "runs.db")
    graph = build_graph(ScriptedChatModel(replies=[[tool_call("dump", {"part": 1})], answer]), [dump], sinks=[log])
    graph.invoke({"task": "t"})
    rows = {r["node"]: r for r in log.db.query("select node, actions, answer from node_events where node in ('execute', 'parse')")}
    observation = json.loads(rows["execute"]["actions"])[0]["observation"]
    assert observation.startswith("log line. ") and len(observation) < PREVIEW_CHARS + 100 and "1,500 chars in all; sha256 " in observation
    (memorized,) = log.db.query("select answer from node_events where node = 'memorize' and answer is not null")
    assert memorized["answer"] == answer.strip() and len(answer) > 3000
