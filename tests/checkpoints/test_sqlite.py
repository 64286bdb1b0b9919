"""SqliteCheckpointer storage: each change stored once, readable schema, prune, copy, projection."""

from __future__ import annotations

import json

import pytest
import sqlite_utils
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import Limits
from reinloop.checkpoints import MIGRATIONS, SqliteCheckpointer
from reinloop.checkpoints.base import JUMP, appended, next_version, reachable
from reinloop.checkpoints.sqlite import CHAIN_SQL

from .helpers import CONFIG, NO_LIMITS, comparable, script


@pytest.fixture
def saver(tmp_path):
    with SqliteCheckpointer.open(tmp_path / "runs.db") as s:
        yield s


def test_every_checkpoint_reads_back_as_the_in_memory_saver_has_it(make_graph, saver):
    memory = InMemorySaver()
    for checkpointer in (saver, memory):
        graph, _ = make_graph(script(JUMP + 8), limits=NO_LIMITS, checkpointer=checkpointer)
        graph.invoke({"task": "double"}, CONFIG)
    ours = [comparable(t.checkpoint["channel_values"]) for t in saver.list(CONFIG)]
    theirs = [comparable(t.checkpoint["channel_values"]) for t in memory.list(CONFIG)]
    assert len(ours) == len(theirs) > 6 * JUMP
    assert ours == theirs
    one_by_one = [comparable(saver.get_tuple(t.config).checkpoint["channel_values"]) for t in saver.list(CONFIG)]
    assert one_by_one == theirs  # without the values list() reuses


def test_the_scratchpad_is_stored_as_the_steps_each_version_appends(make_graph, saver):
    graph, _ = make_graph(script(20), limits=NO_LIMITS, checkpointer=saver)
    out = graph.invoke({"task": "double"}, CONFIG)
    rows = list(saver.db.query("select kind, length, value from channel_values where channel = 'scratchpad'"))
    assert [r["kind"] for r in rows].count("append") == 20  # one whole value (step 1), then only appends
    assert [r["length"] for r in rows] == list(range(1, 22))
    stored = sum(len(r["value"]) for r in rows)
    assert stored < 1.1 * len(json.dumps(out["scratchpad"], ensure_ascii=False))


def test_a_long_scratchpad_is_read_through_few_rows_and_stored_at_most_twice(make_graph, saver):
    steps = 3 * JUMP + 5
    graph, _ = make_graph(script(steps), limits=NO_LIMITS, checkpointer=saver)
    out = graph.invoke({"task": "double"}, CONFIG)
    head = saver.db.connection.raw.execute("select version from channel_values where channel = 'scratchpad' "
                            "order by length desc limit 1").fetchone()[0]
    chain = saver.db.connection.raw.execute(CHAIN_SQL, {"thread": "t1", "ns": "", "channel": "scratchpad", "version": head,
                                         "stop": ""}).fetchall()  # '': walk back to the whole value
    assert chain[-1][1] == "value" and len(chain) <= JUMP + steps // JUMP + 1
    payload = sum(len(r[3]) for r in saver.db.connection.raw.execute("select * from channel_values where channel = 'scratchpad'"))
    assert payload < 2 * len(json.dumps(out["scratchpad"], ensure_ascii=False))
    with SqliteCheckpointer.open(saver.location) as fresh:
        assert fresh.get_tuple(CONFIG).checkpoint["channel_values"]["scratchpad"] == out["scratchpad"]


def test_a_new_connection_reads_the_same_latest_state(make_graph, saver, tmp_path):
    graph, _ = make_graph(script(8), limits=NO_LIMITS, checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    with SqliteCheckpointer.open(tmp_path / "runs.db") as fresh:
        assert fresh.get_tuple(CONFIG).checkpoint == saver.get_tuple(CONFIG).checkpoint


def test_a_fork_from_an_older_checkpoint_keeps_both_branches_intact(make_graph, saver):
    graph, _ = make_graph(script(6), limits=NO_LIMITS, checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    history = list(graph.get_state_history(CONFIG))
    older = next(s for s in history if len(s.values.get("scratchpad", [])) == 3 and s.next == ("decide",))
    forked = graph.update_state(older.config, {"scratchpad": [{"index": 99, "run": 1, "thought": "forked"}]})
    assert [s["index"] for s in graph.get_state(forked).values["scratchpad"]] == [1, 2, 3, 99]
    main_line = history[0].config
    assert [s["index"] for s in graph.get_state(main_line).values["scratchpad"]] == [1, 2, 3, 4, 5, 6, 7]


def test_prune_keeps_the_latest_checkpoints_every_step_and_resumability(make_graph, saver):
    graph, _ = make_graph(script(10), limits=Limits(max_steps=6), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    before = saver.get_tuple(CONFIG)
    rows_before = saver.db.query("select count(*) as n from channel_values")[0]["n"]
    saver.prune(["t1"], keep_last=2)
    assert saver.db.count_checkpoints("t1") == 2
    assert saver.db.query("select count(*) as n from channel_values")[0]["n"] < rows_before / 3
    assert saver.db.connection.raw.execute("select count(*) from checkpoint_writes where checkpoint_id not in "
                            "(select checkpoint_id from checkpoints)").fetchone()[0] == 0
    after = saver.get_tuple(CONFIG)
    assert after.checkpoint["channel_values"] == before.checkpoint["channel_values"]
    assert len(after.checkpoint["channel_values"]["scratchpad"]) == 6
    from langgraph.types import Command

    out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 10}), CONFIG)
    assert out["status"] == "done" and len(out["scratchpad"]) == 11


def test_copy_thread_copies_the_run_row_and_its_breaks(make_graph, saver):
    graph, _ = make_graph(script(4), limits=Limits(max_steps=2), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    saver.copy_thread("t1", "t2")
    assert saver.db.runs.get("t2").status == "broken" and saver.db.runs.get("t2").paused
    assert [b.reason for b in saver.db.runs.breaks("t2")] == ["max_steps"]
    assert saver.get_tuple({"configurable": {"thread_id": "t2"}}).checkpoint["channel_values"]["counters"]["steps"] == 2


def test_the_runs_row_mirrors_the_latest_state(make_graph, saver):
    graph, _ = make_graph(script(3), limits=Limits(max_steps=2), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    run = saver.db.runs.get("t1")
    assert (run.task, run.status, run.paused, run.steps, run.break_reason) == ("double", "broken", True, 2, "max_steps")
    assert saver.db.runs.list(status="broken") == [run] and saver.db.runs.list(status="done") == []


def test_the_schema_is_readable_without_python(make_graph, saver, tmp_path):
    graph, _ = make_graph(script(2), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    db = sqlite_utils.Database(tmp_path / "runs.db")
    assert set(db.table_names()) == {"migrations", "checkpoints", "channel_values", "checkpoint_writes", "runs", "breaks",
                                     "node_events", "tool_journal", "memories", "tasks", "blobs"}
    assert [r["version"] for r in db.query("select version from migrations order by version")] == list(range(1, len(MIGRATIONS) + 1))
    (row,) = db.query("select json_extract(metadata, '$.step') as step, json_extract(checkpoint, '$.v') as v "
                      "from checkpoints order by checkpoint_id desc limit 1")
    assert row["v"] == 4 and row["step"] > 0
    (step,) = db.query("select json_extract(value, '$[0].actions[0].observation') as obs from channel_values "
                       "where channel = 'scratchpad' and kind = 'append' limit 1")
    assert step["obs"] == "2"
    assert db["runs"].get("t1")["status"] == "done"


def test_migrations_are_numbered_in_order_without_gaps():
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    names = [t.name for m in MIGRATIONS for t in m.tables]
    assert len(names) == len(set(names))


def test_versions_order_as_strings_and_never_collide():
    versions = [next_version(None)]
    for _ in range(20):
        versions.append(next_version(versions[-1]))
    assert versions == sorted(versions) and len(set(versions)) == 21
    assert next_version("0000000001.aaaaaaaa") != next_version("0000000001.aaaaaaaa")  # two branches


def test_appended_finds_only_true_suffixes():
    a = [{"i": 1}, {"i": 2}]
    assert appended(a, [*a, {"i": 3}]) == [{"i": 3}]
    assert appended(a, [{"i": 1}, {"i": 9}, {"i": 3}]) is None
    assert appended(a, a[:1]) is None and appended([], a) is None and appended(a, "ab") is None


def test_reachable_keeps_append_chains_of_live_versions():
    bases = {("", "s", "3"): "2", ("", "s", "2"): "1", ("", "s", "1"): None, ("", "s", "9"): "1", ("", "x", "1"): None}
    assert reachable([("", "s", "3")], bases) == {("", "s", "3"), ("", "s", "2"), ("", "s", "1")}


def test_a_new_file_opens_while_another_connection_is_writing_to_it(tmp_path):
    """Switching to WAL fails at once (no busy wait) while another connection writes: reinloop waits and retries."""
    import sqlite3
    import threading

    from reinloop.checkpoints import SqliteCheckpointer

    path = tmp_path / "fresh.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # e.g. another process creating the tables right now
    threading.Timer(0.3, lambda: other.execute("COMMIT")).start()
    with SqliteCheckpointer.open(path) as saver:
        assert saver.db.count_checkpoints() == 0
    other.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
