"""SQLite: the dialect and the connection of a run database on one SQLite file, through sqlite-utils.

The layout and its reasons are in :mod:`reinloop.checkpoints.base`; the
statements are shared with PostgreSQL (:mod:`reinloop.checkpoints.sql`, the
stores); the tables are defined in :mod:`reinloop.checkpoints.schema` and can
be read with plain SQL::

    sqlite-utils tables reinloop.db --counts
    sqlite-utils query reinloop.db "select thread_id, status, steps, break_reason from runs"

One connection is shared by the stores and by the threads LangGraph writes
from, behind a lock. Reads run in one transaction so they see a single moment
of the file; writes take the write lock first (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from .database import Database
from .sql import CHAIN_SQL, Dialect, SqlCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT, connect, migrate, storage_errors, wal_size

__all__ = ["CHAIN_SQL", "SQLITE", "SqliteCheckpointer", "SqliteConnection", "open_sqlite", "sqlite_database"]


def metadata_filter(key: str, value: Any) -> tuple[str, list[Any]]:
    """One condition of ``list(filter=...)`` on the JSON metadata text."""
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, (dict, list)):
        value = json.dumps(value, separators=(",", ":"))
    sql = "json_extract(metadata, ?) IS ?" if value is None else "json_extract(metadata, ?) = ?"
    return sql, [f'$."{key}"', value]


SQLITE = Dialect(
    name="sqlite",
    metadata_filter=metadata_filter,
    now="((julianday('now') - 2440587.5) * 86400.0)",
)


class SqliteConnection:
    """One ``sqlite3`` connection in autocommit mode, with explicit transactions behind one lock."""

    def __init__(self, conn: sqlite3.Connection, *, location: str = ":memory:", timeout: float = DEFAULT_TIMEOUT,
                 owned: bool = True) -> None:
        conn.isolation_level = None  # transactions are explicit: BEGIN for reads, BEGIN IMMEDIATE for writes
        self.raw = conn
        self.location = location
        self.timeout = timeout
        self.owned = owned
        self.lock = threading.RLock()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (``BEGIN``)."""
        with self.lock, storage_errors(self.location, self.timeout):
            self.raw.execute("BEGIN")
            try:
                yield self.raw
            finally:
                self.raw.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the file's write lock first (``BEGIN IMMEDIATE``)."""
        with self.lock, storage_errors(self.location, self.timeout):
            self.raw.execute("BEGIN IMMEDIATE")
            try:
                yield self.raw
            except BaseException:
                if self.raw.in_transaction:
                    self.raw.execute("ROLLBACK")
                raise
            self.raw.execute("COMMIT")

    def compact(self) -> None:
        """``VACUUM`` the file, giving the space of deleted rows back to the file system."""
        with self.lock, storage_errors(self.location, self.timeout):
            self.raw.execute("VACUUM")
            self.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode the file shrinks only here

    def storage_bytes(self) -> int | None:
        """The file's bytes on disk, its write-ahead log included (None in memory)."""
        path = Path(self.location)
        if not path.is_file():
            return None
        return path.stat().st_size + wal_size(path)

    def close(self) -> None:
        """Close the connection, unless it was handed in by its owner (an open ``sqlite_utils.Database``)."""
        if self.owned:
            with self.lock:
                self.raw.close()


def sqlite_database(
    conn: sqlite3.Connection,
    *,
    location: str = ":memory:",
    read_only: bool = False,
    create: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    serde: SerializerProtocol | None = None,
    owned: bool = True,
) -> Database:
    """A run database on an open ``sqlite3`` connection, migrated (made with ``check_same_thread=False``
    if LangGraph will use it from its worker threads)."""
    connection = SqliteConnection(conn, location=location, timeout=timeout, owned=owned)
    with connection.lock, storage_errors(location, timeout):
        migrate(conn, location, read_only=read_only, create=create)
    return Database(connection, SQLITE, read_only=read_only, serde=serde, saver=SqliteCheckpointer)


def open_sqlite(
    path: str | Path,
    *,
    read_only: bool = False,
    create: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    serde: SerializerProtocol | None = None,
) -> Database:
    """Open (or create) the run database at ``path``; ``":memory:"`` for a throwaway one.

    ``create=False`` refuses a missing file; ``read_only=True`` never writes.
    Raises :class:`~reinloop.errors.StorageError` for a file that cannot be used.
    """
    conn = connect(path, timeout=timeout, read_only=read_only, create=create)
    try:
        return sqlite_database(conn, location=str(path), read_only=read_only, create=create, timeout=timeout, serde=serde)
    except BaseException:
        conn.close()
        raise


class SqliteCheckpointer(SqlCheckpointer):
    """LangGraph's checkpointer on a SQLite run database: ``SqliteCheckpointer.open("reinloop.db")``.

    The same code as PostgreSQL's (:class:`~reinloop.checkpoints.sql.SqlCheckpointer`);
    ``checkpointer.db`` is its :class:`~reinloop.checkpoints.database.Database`.
    """

    opener = staticmethod(open_sqlite)
