"""The same behaviour on both backends: a SQLite file and a PostgreSQL database (``db_url`` runs each test twice)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from reinloop import Limits, RunLog
from reinloop.checkpoints import PostgresCheckpointer, SqliteCheckpointer, open_saver
from reinloop.checkpoints.schema import (
    MIGRATIONS_SPEC,
    latest_version,
    tables,
    thread_tables,
)

from .helpers import CONFIG, NO_LIMITS, comparable, script


@pytest.fixture
def saver(db_url):
    with open_saver(db_url) as s:
        yield s


def count(saver, table: str, thread: str | None = None) -> int:
    where, params = ("WHERE thread_id = ?", (thread,)) if thread else ("", ())
    return saver.db.query(f"SELECT count(*) AS n FROM {table} {where}", params)[0]["n"]


def test_every_checkpoint_reads_back_as_the_in_memory_saver_has_it(make_graph, saver):
    memory = InMemorySaver()
    for checkpointer in (saver, memory):
        graph, _ = make_graph(script(40), limits=NO_LIMITS, checkpointer=checkpointer)
        graph.invoke({"task": "double"}, CONFIG)
    ours = [comparable(t.checkpoint["channel_values"]) for t in saver.list(CONFIG)]
    theirs = [comparable(t.checkpoint["channel_values"]) for t in memory.list(CONFIG)]
    assert len(ours) == len(theirs) > 200
    assert ours == theirs


def test_the_scratchpad_is_stored_as_the_steps_each_version_appends(make_graph, saver):
    graph, _ = make_graph(script(20), limits=NO_LIMITS, checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    rows = saver.db.query("SELECT kind, length FROM channel_values WHERE channel = 'scratchpad' ORDER BY length")
    assert [r["kind"] for r in rows].count("append") == 20
    assert [r["length"] for r in rows] == list(range(1, 22))


def test_a_break_pauses_with_a_breaks_row_and_the_runs_row_mirrors_the_state(make_graph, saver):
    graph, _ = make_graph(script(3), limits=Limits(max_steps=2), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    run = saver.db.runs.get("t1")
    assert (run.task, run.status, run.paused, run.steps, run.break_reason) == ("double", "broken", True, 2, "max_steps")
    assert run.counters["steps"] == 2 and saver.db.runs.list(status="broken") == [run]
    (brk,) = saver.db.runs.breaks("t1")
    assert brk.reason == "max_steps" and brk.resolution is None and brk.limits["max_steps"] == 2
    out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 5}), CONFIG)
    assert out["status"] == "done" and saver.db.runs.get("t1").status == "done"
    assert saver.db.runs.breaks("t1")[0].resolution == {"action": "continue", "extra_steps": 5}


def test_a_new_connection_resumes_a_crashed_run_from_its_last_checkpoint(make_graph, saver, db_url):
    graph, _ = make_graph(script(3), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG, interrupt_before=["execute"])
    with open_saver(db_url) as fresh:  # as a new process would open it
        graph2, model = make_graph(script(3)[1:], checkpointer=fresh)
        out = graph2.invoke(None, CONFIG)
    assert out["status"] == "done" and out["counters"]["steps"] == 4 and model.calls == 3


def test_prune_keeps_the_latest_checkpoints_every_step_and_resumability(make_graph, saver):
    graph, _ = make_graph(script(10), limits=Limits(max_steps=6), checkpointer=saver)
    graph.invoke({"task": "double"}, CONFIG)
    before = saver.get_tuple(CONFIG)
    rows_before = count(saver, "channel_values")
    saver.prune(["t1"], keep_last=2)
    assert saver.db.count_checkpoints("t1") == 2
    assert count(saver, "channel_values") < rows_before / 3
    assert saver.db.query("SELECT count(*) AS n FROM checkpoint_writes w WHERE NOT EXISTS (SELECT 1 FROM checkpoints c "
                       "WHERE c.checkpoint_id = w.checkpoint_id)")[0]["n"] == 0
    assert saver.get_tuple(CONFIG).checkpoint["channel_values"] == before.checkpoint["channel_values"]
    out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 10}), CONFIG)
    assert out["status"] == "done" and len(out["scratchpad"]) == 11


def test_copy_thread_copies_every_per_thread_table_and_delete_removes_them(make_graph, saver):
    graph, _ = make_graph(script(4), limits=Limits(max_steps=2), checkpointer=saver, sinks=[RunLog(saver)])
    graph.invoke({"task": "double"}, CONFIG)
    saver.copy_thread("t1", "t2")
    assert saver.db.runs.get("t2").status == "broken" and saver.db.runs.get("t2").paused
    assert [b.reason for b in saver.db.runs.breaks("t2")] == ["max_steps"]
    assert saver.get_tuple({"configurable": {"thread_id": "t2"}}).checkpoint["channel_values"]["counters"]["steps"] == 2
    for table in thread_tables():
        assert count(saver, table, "t2") == count(saver, table, "t1"), table
    saver.delete_thread("t1")
    assert {table: count(saver, table, "t1") for table in thread_tables()} == dict.fromkeys(thread_tables(), 0)
    assert count(saver, "node_events", "t2") > 0 and saver.db.runs.get("t2") is not None


class CountingSerde(JsonPlusSerializer):
    """A custom serde (an encrypting one, say): every value must go through it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def dumps_typed(self, obj):
        self.calls += 1
        return super().dumps_typed(obj)


def test_a_custom_serde_is_used_for_every_value(make_graph, db_url):
    serde = CountingSerde()
    saver = (PostgresCheckpointer.open(db_url, serde=serde) if db_url.startswith("postgresql")
             else SqliteCheckpointer.open(db_url, serde=serde))
    with saver:
        graph, _ = make_graph(script(2), checkpointer=saver)
        graph.invoke({"task": "a secret task"}, CONFIG)
        types = {r["type"] for r in saver.db.query("SELECT DISTINCT type FROM channel_values WHERE kind <> 'empty'")}
        assert "json" not in types
        assert saver.get_tuple(CONFIG).checkpoint["channel_values"]["answer"] == "done"
        assert serde.calls > saver.db.query("SELECT count(*) AS n FROM channel_values")[0]["n"]


def test_the_journal_the_run_log_and_memories_write_through_the_database(saver):
    from reinloop.protocols.memory import MemoryStore
    from reinloop.tools import ToolJournal
    from reinloop.checkpoints.journal import CallKey

    key = CallKey("t1", 1, 2, 0, "c1", "send", "abc")
    assert saver.db.journal.db is saver.db.events.db is saver.db.memories.db is saver.db  # one database, one connection
    journal = ToolJournal(saver)
    journal.begin(key, {"to": "ann"})
    assert not journal.get(key).finished
    journal.finish(key, "sent", False)
    assert journal.get(key).observation == "sent" and [e.key for e in journal.entries("t1")] == [key]
    RunLog(saver)({"node": "guard", "summary": "finish", "thread_id": "t1", "counters": {"steps": 1}, "hints": ["x"]})
    assert [(e["node"], e["counters"], e["hints"]) for e in saver.db.events.events("t1")] == [("guard", {"steps": 1}, ["x"])]
    store = MemoryStore(saver)
    first = store.add(scope="thread:t1", text="北京 28℃", embedding=[1.0, 0.0], model="m", thread_id="t1", run=1,
                      first_step=1, last_step=2)
    assert store.add(scope="thread:t1", text="北京 29℃", embedding=[1.0, 0.0], model="m", thread_id="t1", run=1,
                     first_step=1, last_step=2) == first  # the same folded steps again: replaced
    store.add(scope="thread:t1", text="rain", embedding=[0.0, 1.0], model="m")
    assert store.count("thread:t1") == 2
    assert [r.text for r in store.search([0.9, 0.1], scope="thread:t1", model="m", k=2)] == ["北京 29℃", "rain"]
    assert [r["text"] for r in store.records("thread:t1")] == ["北京 29℃", "rain"]


def test_text_with_nul_characters_is_stored(make_graph, saver):
    graph, _ = make_graph(["a\x00b"], checkpointer=saver, sinks=[RunLog(saver)])
    assert graph.invoke({"task": "t\x00"}, CONFIG)["answer"] == "a\x00b"
    assert saver.get_tuple(CONFIG).checkpoint["channel_values"]["answer"] == "a\x00b"  # values are exact


def schema_of(saver) -> dict[str, dict]:
    """Each table's columns (name, type, not null), primary key and indexes, read from the database."""
    if isinstance(saver, SqliteCheckpointer):
        out = {}
        for spec in [*tables(), MIGRATIONS_SPEC]:
            info = saver.db.query(f"PRAGMA table_info({spec.name})")
            indexes = [saver.db.query(f"PRAGMA index_info({i['name']})") for i in saver.db.query(f"PRAGMA index_list({spec.name})")
                       if i["origin"] == "c"]
            out[spec.name] = {"columns": [(r["name"], r["type"], bool(r["notnull"])) for r in info],
                              "pk": [r["name"] for r in sorted(info, key=lambda r: r["pk"]) if r["pk"]],
                              "indexes": sorted(tuple(c["name"] for c in i) for i in indexes)}
        return out
    out = {}
    for spec in [*tables(), MIGRATIONS_SPEC]:
        info = saver.db.query("SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE "
                           "table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position", (spec.name,))
        pk = saver.db.query("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
                         "a.attnum = ANY(i.indkey) WHERE i.indrelid = ?::regclass AND i.indisprimary", (spec.name,))
        indexes = saver.db.query("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ? "
                              "AND indexname LIKE 'idx_%'", (spec.name,))
        out[spec.name] = {"columns": [(r["column_name"], r["data_type"], r["is_nullable"] == "NO") for r in info],
                          "pk": [r["attname"] for r in pk],
                          "indexes": sorted(tuple(c.strip() for c in r["indexdef"].split("(")[1].rstrip(")").split(","))
                                            for r in indexes)}
    return out


SQLITE_TYPES = {"text": "TEXT", "integer": "INTEGER", "float": "REAL", "json": "TEXT", "value": "BLOB", "blob": "BLOB"}
PG_TYPES = {"text": "text", "integer": "bigint", "float": "double precision", "json": "jsonb", "value": "bytea", "blob": "bytea"}


def test_both_backends_tables_match_the_one_schema_definition(saver):
    types = SQLITE_TYPES if isinstance(saver, SqliteCheckpointer) else PG_TYPES
    actual = schema_of(saver)
    pk_not_null = not isinstance(saver, SqliteCheckpointer)  # PostgreSQL: a primary key is NOT NULL
    for spec in [*tables(), MIGRATIONS_SPEC]:
        expected_columns = [(c.name, types[c.type], c.not_null or (pk_not_null and c.name in spec.pk)) for c in spec.columns]
        assert actual[spec.name]["columns"] == expected_columns, spec.name
        assert sorted(actual[spec.name]["pk"]) == sorted(spec.pk), spec.name
        assert actual[spec.name]["indexes"] == sorted([*spec.indexes, *spec.unique]), spec.name
    assert [r["version"] for r in saver.db.query("SELECT version FROM migrations ORDER BY version")] == list(
        range(1, latest_version() + 1))


# --- bad input that applies to both backends ---------------------------------------------------


def snapshot(db_url: str) -> dict:
    """Every table of the database and its rows, to show that nothing was written."""
    if db_url.startswith("postgresql"):
        with psycopg.connect(db_url) as conn:
            names = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE "
                                                "table_schema = current_schema() ORDER BY 1")]
            return {n: sorted(map(str, conn.execute(f"SELECT * FROM {n}").fetchall())) for n in names}
    conn = sqlite3.connect(db_url)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")]
    data = {n: sorted(map(str, conn.execute(f"SELECT * FROM {n}").fetchall())) for n in names}
    conn.close()
    return data


def execute(db_url: str, sql: str) -> None:
    if db_url.startswith("postgresql"):
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(sql)
        return
    with sqlite3.connect(db_url) as conn:
        conn.execute(sql)


def test_a_database_from_a_newer_reinloop_is_refused_and_left_alone(make_graph, db_url, cli_error, openai_server):
    with open_saver(db_url) as saver:
        graph, _ = make_graph(script(1), checkpointer=saver)
        graph.invoke({"task": "double"}, CONFIG)
    execute(db_url, "INSERT INTO migrations (version, name) VALUES (99, 'from the future')")
    before = snapshot(db_url)
    for argv in (["runs", "list"], ["run", "hi", "--base-url", openai_server.base_url]):
        line = cli_error(*argv, "--db", db_url)
        assert f"has schema version 99, newer than this reinloop knows ({latest_version()}); upgrade reinloop to use it" in line
    assert snapshot(db_url) == before and openai_server.requests == []


def test_another_programs_tables_are_refused_untouched(db_url, cli_error, openai_server):
    """LangGraph's own savers make a ``checkpoints`` table of another layout."""
    if db_url.startswith("postgresql"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with psycopg.connect(db_url, autocommit=True) as conn:
            PostgresSaver(conn).setup()
        tables_named = "checkpoint_writes, checkpoints"
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(db_url, check_same_thread=False)
        SqliteSaver(conn).setup()
        conn.close()
        tables_named = "checkpoints, writes"
    before = snapshot(db_url)
    line = cli_error("run", "hi", "--base-url", openai_server.base_url, "--db", db_url)
    assert "not a reinloop run database" in line or "has tables named like reinloop's that reinloop did not make" in line
    assert tables_named.split(", ")[0] in line
    assert snapshot(db_url) == before and openai_server.requests == []


def test_an_unknown_thread_and_a_finished_run_each_get_one_line(make_graph, db_url, cli_error):
    with open_saver(db_url) as saver:
        graph, _ = make_graph(["done"], checkpointer=saver)
        graph.invoke({"task": "t"}, CONFIG)
        location = saver.location
    for argv in (["runs", "show", "zzz"], ["resume", "zzz"], ["runs", "delete", "zzz"]):
        assert cli_error(*argv, "--db", db_url) == (
            f"reinloop: error: no run with thread id 'zzz' in {location}; `reinloop runs list` shows the stored runs")
    before = snapshot(db_url)
    line = cli_error("resume", "t1", "--db", db_url, "--model", "openai:gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1")
    assert line.endswith("run 't1' is finished (answer: 'done'); start a new task on it with `reinloop run TASK --thread t1`")
    assert snapshot(db_url) == before


def test_an_empty_database_holds_no_runs_to_read_and_stays_empty(db_url, cli_error):
    line = cli_error("runs", "list", "--db", db_url)
    if db_url.startswith("postgresql"):
        assert line.endswith("holds no runs yet; run a task first (reinloop run ...), or point --db (or REINLOOP_DB) "
                             "at an existing database")
        assert snapshot(db_url) == {}
    else:
        assert line.startswith(f"reinloop: error: no run database at {db_url}")
        assert not Path(db_url).exists()
