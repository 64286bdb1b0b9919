"""The run log: every node transition of every run, in a ``node_events`` table you can query.

:class:`RunLog` is the node-event store of a run database (``db.events``, see
:mod:`reinloop.checkpoints.database`) and an event sink
(``build_graph(..., sinks=[RunLog("reinloop.db")])``): it writes each
:class:`~reinloop.observe.events.NodeEvent` as one row, beside the checkpoints of the
same run. Its columns are the event's keys, so a run explains itself after the
fact with plain SQL::

    sqlite-utils query reinloop.db "select step, node, latency_ms, error, decision
                                    from node_events where thread_id = 'demo-3' order by id"

A step of the loop is six node events (decide, parse, validate, execute,
memorize, guard). Lists and dicts (``actions``, ``counters``, ``hints``,
``memory``, ``data``) are JSON text, readable with SQLite's ``json_extract``
or ``->>``. A row points at its checkpoint by ``(thread_id, checkpoint_ns,
checkpoint_id)``: the checkpoint the node started from (see
:func:`reinloop.events.where`).

The same code writes to a SQLite file, to PostgreSQL, or to an in-memory
database (``RunLog(":memory:")``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

from . import Database, database_for, is_postgres_url, open_database
from .blobs import PREVIEW_CHARS, preview_value
from .schema import NODE_EVENTS
from .shapes import check
from .sql import insert_sql
from .sqlitedb import is_read_only
from ..errors import StorageError, StoredDataError
from ..observe.events import NodeEvent
from ..state import CallCost, Fallback
from ..state import Counters

TABLE = NODE_EVENTS.name

EVENT_COLUMNS: tuple[str, ...] = tuple(c.name for c in NODE_EVENTS.columns)
"""The ``node_events`` table: an autoincrement ``id`` (the order of events), then the event's keys."""

JSON_COLUMNS = ("actions", "hints", "counters", "memory", "data")

ANSWER_CHARS = 20_000
"""Longest final answer the ``node_events`` table keeps whole (a longer one is a preview with its hash)."""


def to_row(event: NodeEvent) -> dict[str, Any]:
    """An event as a ``node_events`` row: known columns only, lists and dicts as JSON, long strings as previews.

    A string longer than :data:`~reinloop.checkpoints.blobs.PREVIEW_CHARS` (a tool's arguments, an
    observation, a thought) keeps its start, its length and its sha256; the run's state holds it
    whole (in the ``blobs`` table of a run database, under that hash). A final answer, which reports
    show from this table, is kept whole up to :data:`ANSWER_CHARS`.
    """
    row = {k: preview_value(v, ANSWER_CHARS if k == "answer" else PREVIEW_CHARS)
           for k, v in event.items() if k in EVENT_COLUMNS and k != "id"}
    for key in JSON_COLUMNS:
        if key in row:
            row[key] = json.dumps(row[key], ensure_ascii=False, default=str)
    return row


class EventData(TypedDict, total=False):
    """The keys of an event's ``data`` that reports read, with their types (other keys are let through)."""

    cost: list[CallCost]
    model: str
    fallbacks: list[Fallback]
    feedback: str
    task: str
    wrapped_up: str | None
    decisions: list[dict[str, Any]]
    waiting: list[dict[str, Any]]
    prompt_parts: dict[str, int]


def from_row(row: dict[str, Any]) -> NodeEvent:
    """A ``node_events`` row as an event: JSON decoded (PostgreSQL's come decoded), empty columns dropped.

    A column that is not what an event holds is a :class:`~reinloop.errors.StoredDataError` naming it.
    """
    event = {k: v for k, v in row.items() if v is not None}
    try:
        for key in JSON_COLUMNS:
            if isinstance(event.get(key), str):
                try:
                    event[key] = json.loads(event[key])
                except ValueError as exc:
                    raise StoredDataError(key, f"it is not JSON ({exc})") from None
        check(event, NodeEvent, "")
        check(event.get("data"), EventData | None, "data")
        # an older log kept fewer counters: those it kept have their types
        check(event.get("counters"), Counters | None, "counters", counts=True, partial=True)
    except StoredDataError as exc:
        raise exc.at(f"node_events row {row.get('id')}", thread_id=row.get("thread_id")) from None
    return event  # type: ignore[return-value]


class RunLog:
    """The ``node_events`` table of a run database: an event sink that appends every event as one row.

    ``db`` is a :class:`~reinloop.checkpoints.Database` (or its checkpointer), a SQLite path or
    ``postgresql://`` URL, an open ``sqlite_utils.Database``, or ``":memory:"``.
    """

    def __init__(self, db: Database | str | os.PathLike[str] | Any) -> None:
        self.db, self._owns = database_for(db)
        self.path = self.db.location

    def __call__(self, event: NodeEvent) -> None:
        """Append ``event`` as one row."""
        row = to_row(event)
        try:
            with self.db.write() as tx:
                tx.execute(insert_sql(TABLE, list(row)), tuple(row.values()))
        except StorageError as exc:
            raise StorageError(
                f"cannot write the run log: {exc}; the run stopped before this {event.get('node')} step was saved "
                "and can be resumed from its last checkpoint"
            ) from None

    def events(self, thread_id: str) -> list[NodeEvent]:
        """The events of ``thread_id``, in the order they happened."""
        rows = self.db.query(f"SELECT * FROM {TABLE} WHERE thread_id = ? ORDER BY id", (str(thread_id),))
        return [from_row(row) for row in rows]

    steps = events
    """Deprecated name of :meth:`events` (a step is six node events)."""

    def close(self) -> None:
        """Close the database, if this log opened it (one it was given stays open: its owner closes it)."""
        if self._owns:
            self.db.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(db: Database | str | os.PathLike[str] | Any, thread_id: str) -> list[NodeEvent]:
    """The node events stored for ``thread_id``, oldest first (none when the file does not exist).

    ``db`` is anything :class:`RunLog` takes. A read-only SQLite file is read as it is, without
    a ``-wal`` or ``-shm`` file made beside it.
    """
    if isinstance(db, (str, os.PathLike)) and not is_postgres_url(db) and str(db) != ":memory:":
        path = Path(db)
        if not path.exists():
            return []
        with open_database(path, create=False, read_only=is_read_only(path)) as opened:
            return RunLog(opened).events(thread_id)
    log = RunLog(db)
    try:
        return log.events(thread_id)
    finally:
        log.close()


read_steps = read_events
"""Deprecated name of :func:`read_events`."""
