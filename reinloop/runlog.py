"""The run log: every node transition of every run, in a ``steps`` table you can query.

:class:`RunLog` is an event sink (``build_graph(..., sinks=[RunLog("reinloop.db")])``)
that writes each :class:`~reinloop.events.StepEvent` as one row, beside the
checkpoints of the same run database. Its columns are the event's keys, so a
run explains itself after the fact with plain SQL::

    sqlite-utils query reinloop.db "select step, node, latency_ms, error, decision
                                    from steps where thread_id = 'demo-3' order by id"

Lists and dicts (``actions``, ``counters``, ``hints``, ``memory``, ``data``)
are JSON text, readable with SQLite's ``json_extract`` or ``->>``. A row
points at its checkpoint by ``(thread_id, checkpoint_ns, checkpoint_id)``: the
checkpoint the node started from (see :func:`reinloop.events.where`).

The table is created by one function, :func:`create_steps_table`, so the run
database's numbered migrations can call it.

Given a saver instead of a path (``RunLog(saver)``, as ``reinloop run`` does),
the log writes through the saver's ``append_step``: the rows land in the run
database whatever it is, a SQLite file or PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import sqlite_utils

from .checkpoints import ReinloopSaver, is_postgres_url, open_saver
from .checkpoints.blobs import PREVIEW_CHARS, preview_value
from .checkpoints.schema import STEPS
from .checkpoints.sqlitedb import DEFAULT_TIMEOUT, connect, create_table
from .errors import StorageError
from .events import StepEvent

STEPS_COLUMNS: tuple[str, ...] = tuple(c.name for c in STEPS.columns)
"""The columns of the ``steps`` table, in order."""
"""The ``steps`` table: an autoincrement ``id`` (the order of events), then the event's keys."""

JSON_COLUMNS = ("actions", "hints", "counters", "memory", "data")

ANSWER_CHARS = 20_000
"""Longest final answer the ``steps`` table keeps whole (a longer one is a preview with its hash)."""


def create_steps_table(db: sqlite_utils.Database) -> sqlite_utils.db.Table:
    """Create the ``steps`` table (spec: :data:`reinloop.checkpoints.schema.STEPS`) if missing; return it."""
    create_table(db, STEPS)
    return db.table("steps")  # type: ignore[return-value]


def open_database(db: str | Path | sqlite_utils.Database) -> sqlite_utils.Database:
    """A ``sqlite_utils.Database`` for a path (created if missing) or the one given."""
    if isinstance(db, sqlite_utils.Database):
        return db
    path = Path(db)
    if path.is_dir():
        raise StorageError(f"run database {str(path)!r} is a directory; give a file path such as ./reinloop.db")
    try:
        # Sync nodes may run on LangGraph's worker threads (astream): allow them, RunLog serialises writes.
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")  # readers (sqlite-utils, Datasette) do not block a run
        # A commit survives a killed process; only a power cut may lose the last rows, and halves the cost
        # of a row (benchmarks/run_log_overhead.py).
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open run database {str(path)!r}: {exc}; check it is a SQLite file you may write") from None
    return sqlite_utils.Database(conn)


def to_row(event: StepEvent) -> dict[str, Any]:
    """An event as a ``steps`` row: known columns only, lists and dicts as JSON, long strings as previews.

    A string longer than :data:`~reinloop.checkpoints.blobs.PREVIEW_CHARS` (a tool's arguments, an
    observation, a thought) keeps its start, its length and its sha256; the run's state holds it
    whole (in the ``blobs`` table of a run database, under that hash). A final answer, which reports
    show from this table, is kept whole up to :data:`ANSWER_CHARS`.
    """
    row = {k: preview_value(v, ANSWER_CHARS if k == "answer" else PREVIEW_CHARS)
           for k, v in event.items() if k in STEPS_COLUMNS and k != "id"}
    for key in JSON_COLUMNS:
        if key in row:
            row[key] = json.dumps(row[key], ensure_ascii=False, default=str)
    return row


def from_row(row: dict[str, Any]) -> StepEvent:
    """A ``steps`` row as an event: JSON decoded (PostgreSQL's come decoded), empty columns dropped."""
    event = {k: v for k, v in row.items() if v is not None}
    for key in JSON_COLUMNS:
        if isinstance(event.get(key), str):
            event[key] = json.loads(event[key])
    return event  # type: ignore[return-value]


class RunLog:
    """An event sink that appends every event to the ``steps`` table of a run database."""

    def __init__(self, db: str | Path | sqlite_utils.Database | ReinloopSaver) -> None:
        self.saver = db if isinstance(db, ReinloopSaver) else None
        self._owns = False
        self._lock = threading.Lock()
        if self.saver is not None:  # the saver's own connection and transactions: SQLite or PostgreSQL
            self.path = self.saver.location
            return
        self._owns = not isinstance(db, sqlite_utils.Database)
        self.db = open_database(db)
        self.path = self.db.execute("pragma database_list").fetchone()[2] or ":memory:"
        try:
            self.table = create_steps_table(self.db)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot create the steps table in {self.path!r}: {exc}") from None

    def __call__(self, event: StepEvent) -> None:
        """Append ``event`` as one row."""
        if self.saver is not None:
            try:
                self.saver.append_step(to_row(event))
            except StorageError as exc:
                raise StorageError(
                    f"cannot write the run log: {exc}; the run stopped before this {event.get('node')} step was saved "
                    "and can be resumed from its last checkpoint"
                ) from None
            return
        try:
            with self._lock:
                self.table.insert(to_row(event))
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot write the run log to {self.path!r}: {exc}; the run stopped before this "
                f"{event.get('node')} step was saved and can be resumed from its last checkpoint"
            ) from None

    def steps(self, thread_id: str) -> list[StepEvent]:
        """The events of ``thread_id``, in the order they happened."""
        return read_steps(self.saver if self.saver is not None else self.db, thread_id)

    def close(self) -> None:
        """Close the connection this log opened (one it was given stays open)."""
        if self._owns:
            self.db.conn.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_steps(db: str | Path | sqlite_utils.Database | ReinloopSaver, thread_id: str) -> list[StepEvent]:
    """The events stored for ``thread_id``, oldest first (none if the table does not exist).

    ``db`` is a SQLite path or database, a ``postgresql://`` URL, or a saver.
    """
    if isinstance(db, ReinloopSaver):
        return [from_row(row) for row in db.read_steps(thread_id)]
    if is_postgres_url(db):
        with open_saver(str(db), create=False) as saver:
            return [from_row(row) for row in saver.read_steps(thread_id)]
    if isinstance(db, sqlite_utils.Database):
        return _steps_of(db, thread_id)
    if not Path(db).exists():
        return []
    # only reading: a read-only file is read as it is, with no -wal/-shm made beside it
    database = sqlite_utils.Database(connect(db, timeout=DEFAULT_TIMEOUT, read_only=True, create=False))
    try:
        return _steps_of(database, thread_id)
    finally:
        database.conn.close()


def _steps_of(database: sqlite_utils.Database, thread_id: str) -> list[StepEvent]:
    if not database.table("steps").exists():
        return []
    rows = database.query("select * from steps where thread_id = ? order by id", [thread_id])
    return [from_row(row) for row in rows]
