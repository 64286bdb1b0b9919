"""One run database, one store per job: the checkpointer keeps to LangGraph's contract, the stores share a connection."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from reinloop import MemoryStore, RunLog
from reinloop.checkpoints import Database, SqlCheckpointer, database_for, open_database, open_saver
from reinloop.errors import StorageError
from reinloop.tools import ToolJournal
from reinloop.checkpoints.journal import CallKey


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_checkpointer_offers_langgraphs_contract_and_nothing_else():
    assert public(SqlCheckpointer) - public(BaseCheckpointSaver) == {"open", "opener", "close", "location"}


def test_every_store_of_a_database_uses_its_one_connection(tmp_path):
    with open_database(tmp_path / "run.db") as db:
        stores = [db.checkpointer, db.runs, db.events, db.journal, db.memories, db.queue]
        assert all(store.db is db for store in stores)
        assert db.events is db.events  # handed out once
        assert database_for(db.checkpointer) == (db, False) and database_for(db) == (db, False)


def test_without_a_database_every_store_runs_in_memory_on_the_same_code():
    log, journal, memories = RunLog(":memory:"), ToolJournal(), MemoryStore()
    for store in (log, journal, memories):
        assert isinstance(store.db, Database) and store.db.location == ":memory:"
    log({"node": "guard", "summary": "finish", "thread_id": "t1"})
    key = CallKey("t1", 1, 1, 0, "c1", "send", "abc")
    journal.begin(key, {"to": "ann"})
    memories.add(scope="s", text="kept", embedding=[1.0], model="m")
    assert [e["node"] for e in log.events("t1")] == ["guard"]
    assert not journal.get(key).finished and memories.count("s") == 1
    assert log.db is not journal.db  # each has its own: nothing is shared by accident


def test_a_store_closes_the_database_it_opened_and_leaves_a_given_one_open(tmp_path):
    log = RunLog(tmp_path / "own.db")
    log.close()
    with pytest.raises(StorageError):
        log({"node": "guard", "summary": "after close"})
    with open_database(tmp_path / "given.db") as db:
        RunLog(db).close()
        db.events({"node": "guard", "summary": "still open", "thread_id": "t"})
        assert len(db.events.events("t")) == 1


def test_closing_a_checkpointer_from_open_saver_closes_its_database(tmp_path):
    saver = open_saver(tmp_path / "run.db")
    assert isinstance(saver.db, Database) and saver.location == str(tmp_path / "run.db")
    saver.close()
    with pytest.raises(StorageError):
        saver.db.query("SELECT 1")


def test_a_database_opened_read_only_refuses_every_stores_writes(tmp_path):
    open_database(tmp_path / "run.db").close()
    with open_database(tmp_path / "run.db", read_only=True) as db:
        with pytest.raises(StorageError, match="opened read-only; open it without read_only to change it"):
            db.runs.record_settings("t1", {"model": "m"})
        with pytest.raises(StorageError, match="opened read-only"):
            db.events({"node": "guard", "summary": "x"})
        assert db.runs.list() == []
