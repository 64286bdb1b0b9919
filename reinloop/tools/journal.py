"""The side-effects journal: at-most-once tool calls across crashes.

Before the executor runs a tool declared ``side_effects=True`` it writes an
*intent* row (thread, run, step, position, call id, tool, hash of the
arguments) and commits it; when the tool returns, it fills in the result. A
resumed run re-executes the node that was interrupted, so the same call comes
around again with the same key, and the journal decides:

- no row: the call never started; run it;
- a row with a result: the call finished but the step was not checkpointed;
  the recorded observation is replayed, the tool is not run again;
- an intent without a result: the process died during the call. Whether the
  effect happened is unknown, so the call is *not* repeated; the model is
  told the outcome is unknown and can check.

Idempotent tools are not journaled: re-running them is harmless.

The table lives in the run database: any SQLite file (``":memory:"`` keeps
it for the life of the process), or, given a saver (``ToolJournal(saver)``,
as ``reinloop run`` does), the saver's database, SQLite or PostgreSQL, through
its ``journal_*`` methods. :func:`create_journal_table` is its only SQLite DDL
outside the run database's migrations.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from ..checkpoints import ReinloopSaver
from ..checkpoints.blobs import preview_value
from ..checkpoints.schema import TOOL_JOURNAL
from ..checkpoints.sqlitedb import create_table

TABLE = "tool_journal"
KEY_COLUMNS = ("thread_id", "run", "step", "position", "call_id", "tool", "args_hash")


def create_journal_table(db: sqlite_utils.Database) -> None:
    """Create the ``tool_journal`` table (spec: :data:`reinloop.checkpoints.schema.TOOL_JOURNAL`) if missing."""
    create_table(db, TOOL_JOURNAL)


def args_hash(args: dict[str, Any]) -> str:
    """A stable hash of a call's arguments (key order does not matter)."""
    text = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class CallKey:
    """Where a call belongs: the same call after a resume has the same key."""

    thread_id: str
    run: int
    step: int
    position: int
    call_id: str
    tool: str
    args_hash: str

    def as_row(self) -> dict[str, Any]:
        """The key as column values."""
        return {c: getattr(self, c) for c in KEY_COLUMNS}


@dataclass(frozen=True)
class JournalEntry:
    """One journaled call: its intent, and its result once it finished."""

    key: CallKey
    started_at: float
    finished_at: float | None
    observation: str | None
    error: bool

    @property
    def finished(self) -> bool:
        """Did the call return (its result is recorded)?"""
        return self.finished_at is not None


class ToolJournal:
    """The ``tool_journal`` table of a SQLite file or of a saver's database, safe to use from worker threads."""

    def __init__(self, path: str | os.PathLike[str] | ReinloopSaver = ":memory:") -> None:
        self.saver = path if isinstance(path, ReinloopSaver) else None
        if self.saver is not None:
            self.path = self.saver.location
            return
        self.path = str(path)
        # One connection shared by the node and the worker threads, serialised by a lock;
        # autocommit, so an intent is committed before the tool starts.
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        if self.path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
        self._lock = threading.Lock()
        self.db = sqlite_utils.Database(conn)
        with self._lock:
            create_journal_table(self.db)

    def begin(self, key: CallKey, args: dict[str, Any]) -> None:
        """Record the intent to run a call (committed before this returns).

        ``args`` is kept as a preview (long strings cut, with their length and sha256): the key's
        ``args_hash`` identifies the whole arguments, which the run's state holds.
        """
        text = json.dumps(preview_value(args), ensure_ascii=False, default=str)
        row = {**key.as_row(), "args": text, "started_at": time.time()}
        if self.saver is not None:
            self.saver.journal_begin(row)
            return
        with self._lock:
            self.db.table(TABLE).insert(row, replace=True)

    def finish(self, key: CallKey, observation: str, error: bool) -> None:
        """Record the result of a call that returned."""
        result = {"finished_at": time.time(), "observation": observation, "error": int(error)}
        if self.saver is not None:
            self.saver.journal_finish(key.as_row(), result)
            return
        with self._lock:
            self.db.table(TABLE).update(tuple(key.as_row().values()), result)

    def get(self, key: CallKey) -> JournalEntry | None:
        """The journaled call with this key, or ``None``."""
        if self.saver is not None:
            row = self.saver.journal_get(key.as_row())
            return self._entry(row) if row else None
        where = " and ".join(f"{c} = ?" for c in KEY_COLUMNS)
        with self._lock:
            rows = list(self.db.table(TABLE).rows_where(where, list(key.as_row().values())))
        return self._entry(rows[0]) if rows else None

    def entries(self, thread_id: str | None = None) -> list[JournalEntry]:
        """Every journaled call (of one thread), oldest first."""
        if self.saver is not None:
            return [self._entry(r) for r in self.saver.journal_rows(thread_id)]
        where, args = ("thread_id = ?", [thread_id]) if thread_id is not None else (None, [])
        with self._lock:
            rows = list(self.db.table(TABLE).rows_where(where, args, order_by="started_at"))
        return [self._entry(r) for r in rows]

    def close(self) -> None:
        """Close the database connection (a saver's stays open: its owner closes it)."""
        if self.saver is not None:
            return
        with self._lock:
            self.db.conn.close()

    @staticmethod
    def _entry(row: dict[str, Any]) -> JournalEntry:
        return JournalEntry(
            key=CallKey(**{c: row[c] for c in KEY_COLUMNS}),
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            observation=row["observation"],
            error=bool(row["error"]),
        )
