"""Runs stored by the previous schema (6: node events in a ``steps`` table) open, show and resume after migration 7."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from reinloop import Limits; from reinloop.runs import api as runs
from reinloop.checkpoints import open_database
from reinloop.checkpoints.schema import latest_version
from reinloop.checkpoints.runlog import read_events
from reinloop.testing import ScriptedChatModel, tool_call

from .fixtures.old_run import NOTE, RECEIPT, THREAD, file_note

FIXTURES = Path(__file__).parent / "fixtures"
NODES = ["decide", "parse", "validate", "execute", "memorize", "guard"]


def versions(db) -> list[int]:
    return [r["version"] for r in db.query("SELECT version FROM migrations ORDER BY version")]


def resume_to_the_end(location: str) -> None:
    """Show the paused run, resume it, and check the node events before and after."""
    detail = runs.show_run(THREAD, db=location)
    assert detail.run.status == "broken" and detail.run.paused and detail.pending_break is not None
    assert detail.steps[0]["actions"][0]["observation"] == RECEIPT
    assert [e["node"] for e in read_events(location, THREAD)] == NODES  # the old rows, under the new name
    model = ScriptedChatModel(replies=[[tool_call("file_note", {"text": NOTE}, id="call_2")], "filed twice"])
    out = runs.resume(THREAD, db=location, extra_steps=2, model=model, tools=[file_note])
    assert out.status == "done" and out.answer == "filed twice"
    events = read_events(location, THREAD)
    assert [e["node"] for e in events[:6]] == NODES and events[-1]["node"] == "guard" and len(events) > 12
    assert [r.thread_id for r in runs.list_runs(db=location, status="done")] == [THREAD]


def test_a_run_stored_by_schema_6_opens_shows_and_resumes(tmp_path):
    db = tmp_path / "v6.db"
    # made by reinloop at schema 6 (git 250cce0) with fixtures/old_run.py: a run paused at its step limit
    with gzip.open(FIXTURES / "v6-paused-run.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    resume_to_the_end(str(db))
    with open_database(db) as opened:
        assert versions(opened) == list(range(1, latest_version() + 1))
        tables = {r["name"] for r in opened.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        assert "steps" not in tables and {"node_events", "idx_node_events_thread_id_run_step"} <= tables
        assert "idx_steps_thread_id_run_step" not in tables


def downgrade_to_schema_6(location: str) -> None:
    """Put a run database back to schema 6 by hand: ``node_events`` named ``steps`` again, migration 7 unapplied."""
    with open_database(location) as db, db.write() as tx:
        tx.execute("ALTER TABLE node_events RENAME TO steps")
        tx.execute("ALTER INDEX idx_node_events_thread_id_run_step RENAME TO idx_steps_thread_id_run_step")
        tx.execute("DELETE FROM migrations WHERE version = 7")


def test_a_postgres_run_stored_by_schema_6_opens_shows_and_resumes(pg_url):
    model = ScriptedChatModel(replies=[[tool_call("file_note", {"text": NOTE}, id="call_1")]])  # as old_run.make
    out = runs.run("file the note", db=pg_url, model=model, tools=[file_note], limits=Limits(max_steps=1), thread_id=THREAD)
    assert out.paused
    # today's code, then back to schema 6: the two differ only in that table's name
    downgrade_to_schema_6(pg_url)
    resume_to_the_end(pg_url)
    with open_database(pg_url) as db:
        assert versions(db) == list(range(1, latest_version() + 1))
        names = {r["indexname"] for r in db.query("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        assert "idx_node_events_thread_id_run_step" in names and "idx_steps_thread_id_run_step" not in names
        assert not db.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                            "AND table_name = 'steps'")
