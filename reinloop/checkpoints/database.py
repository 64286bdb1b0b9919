"""``Database``: one run database, one connection, and the stores that share it.

A run database is a SQLite file (or ``":memory:"``) or a PostgreSQL
database. :class:`Database` holds its one connection and hands out one store
per job, all writing through that connection's transactions:

- ``db.checkpointer``: LangGraph's ``BaseCheckpointSaver`` contract and
  nothing else (:class:`~reinloop.checkpoints.sql.SqlCheckpointer`; tables
  ``checkpoints``, ``channel_values``, ``checkpoint_writes``, ``blobs``);
- ``db.runs``: how each run was started and where it stands, and its circuit
  breaks (:class:`~reinloop.checkpoints.records.RunStore`; ``runs``, ``breaks``);
- ``db.events``: one row per node transition
  (:class:`~reinloop.checkpoints.runlog.RunLog`; ``node_events``);
- ``db.journal``: side-effecting tool calls, at most once
  (:class:`~reinloop.checkpoints.journal.ToolJournal`; ``tool_journal``);
- ``db.memories``: long-term memories and their embeddings
  (:class:`~reinloop.checkpoints.memories.MemoryStore`; ``memories``);
- ``db.queue``: the batch queue (:class:`~reinloop.checkpoints.queue.TaskQueue`; ``tasks``).

Every store is the same code on both backends: what differs is the
:class:`~reinloop.checkpoints.sql.Dialect` (a few SQL spellings) and the
connection (:mod:`.sqlite`, :mod:`.postgres`: how a transaction begins, how
errors read). Without a database the stores run on an in-memory SQLite one
(:func:`~reinloop.checkpoints.open_database` with ``":memory:"``), so callers
never branch on "is there a store".

The checkpointer mirrors a reinloop state into ``runs`` and an interrupt that
reports a circuit break into ``breaks`` in the checkpoint's own transaction,
through :class:`~.records.RunStore`: a run row is never behind its checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import StorageError
from .queue import TaskQueue
from .records import RunStore
from .sql import Dialect, SqlCheckpointer, Tx, dict_rows

if TYPE_CHECKING:
    from .memories import MemoryStore
    from .runlog import RunLog
    from .journal import ToolJournal


class Connection(Protocol):
    """What a backend's connection gives a :class:`Database`: transactions, and its own upkeep."""

    location: str
    """Where the data lives (a file path, a URL without its password), for messages."""
    lock: threading.RLock
    """Held by every transaction: the stores share one connection across LangGraph's threads."""
    raw: Any
    """The driver's connection (``sqlite3.Connection``, ``psycopg.Connection``)."""

    def read(self) -> AbstractContextManager[Tx]:
        """A read transaction: every query in it sees one moment of the database."""

    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction, committed when the block ends, rolled back if it raises."""

    def compact(self) -> None:
        """Give the space of deleted rows back."""

    def storage_bytes(self) -> int | None:
        """The space the run database takes, if known."""

    def close(self) -> None:
        """Close the connection."""


class Database:
    """One run database: its connection, its dialect, and one store per job over them.

    Open one with :func:`reinloop.checkpoints.open_database`; close it (or use
    ``with``) when done: the stores it handed out close with it.
    """

    def __init__(
        self,
        connection: Connection,
        dialect: Dialect,
        *,
        read_only: bool = False,
        serde: SerializerProtocol | None = None,
        saver: type[SqlCheckpointer] = SqlCheckpointer,
    ) -> None:
        self.connection = connection
        self.dialect = dialect
        self.read_only = read_only
        self.checkpointer: SqlCheckpointer = saver(self, serde=serde)
        """LangGraph's checkpointer on this database: pass it to ``build_graph(..., checkpointer=...)``."""
        self.runs = RunStore(self)
        """How each run was started and where it stands (``runs``), and its circuit breaks (``breaks``)."""
        self.queue = TaskQueue(self)
        """The batch queue (``tasks``)."""

    @cached_property
    def events(self) -> RunLog:
        """The node events (``node_events``): an event sink for ``build_graph(..., sinks=[...])``."""
        from .runlog import RunLog

        return RunLog(self)

    @cached_property
    def journal(self) -> ToolJournal:
        """The side-effect journal (``tool_journal``): for ``build_graph(..., journal=...)``."""
        from .journal import ToolJournal

        return ToolJournal(self)

    @cached_property
    def memories(self) -> MemoryStore:
        """Long-term memories (``memories``): for ``Memory(store=...)``."""
        from .memories import MemoryStore

        return MemoryStore(self)

    @property
    def location(self) -> str:
        """Where the data lives (a file path, a URL without its password), for messages."""
        return self.connection.location

    @property
    def lock(self) -> threading.RLock:
        """The connection's lock (held by every transaction)."""
        return self.connection.lock

    def read(self) -> AbstractContextManager[Tx]:
        """A read transaction: every query in it sees one moment of the database."""
        return self.connection.read()

    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction; refused on a database opened read-only."""
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; open it without read_only to change it")
        return self.connection.write()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows of one read-only statement (``?`` or ``:name`` parameters on both backends), as dicts."""
        with self.read() as tx:
            return dict_rows(tx.execute(sql, params))

    def count_checkpoints(self, thread_id: str | None = None) -> int:
        """How many checkpoints are stored (for one thread, or all)."""
        where, params = ("WHERE thread_id = ?", (str(thread_id),)) if thread_id is not None else ("", ())
        return int(self.query(f"SELECT count(*) AS n FROM checkpoints {where}", params)[0]["n"])

    def compact(self) -> None:
        """Give the space of deleted rows back (SQLite: ``VACUUM``; PostgreSQL: ``VACUUM FULL``)."""
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; it cannot be compacted")
        self.connection.compact()

    def storage_bytes(self) -> int | None:
        """The space the run database takes (SQLite: the file and its WAL; None in memory)."""
        return self.connection.storage_bytes()

    def close(self) -> None:
        """Close the connection (every store of this database with it)."""
        self.connection.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Database {self.dialect.name} {self.location}>"
