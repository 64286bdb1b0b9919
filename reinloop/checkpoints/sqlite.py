"""``SqliteCheckpointer``: reinloop's storage backend on one SQLite file, through sqlite-utils.

The layout and its reasons are in :mod:`reinloop.checkpoints.base`; the
statements are shared with PostgreSQL in :mod:`reinloop.checkpoints.sql`; the
tables are defined in :mod:`reinloop.checkpoints.schema` and can be read with
plain SQL::

    sqlite-utils tables reinloop.db --counts
    sqlite-utils query reinloop.db "select thread_id, status, steps, break_reason from runs"

One connection is shared by the threads LangGraph writes from, behind a
lock. Reads run in one transaction so they see a single moment of the file;
writes take the write lock first (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import StorageError
from .sql import CHAIN_SQL, Dialect, SqlCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT, connect, migrate, storage_errors, wal_size

__all__ = ["CHAIN_SQL", "SQLITE", "SqliteCheckpointer"]


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


class SqliteCheckpointer(SqlCheckpointer):
    """A LangGraph checkpointer on SQLite that stores each change once and records runs and breaks.

    Create it with :meth:`open`; the constructor takes an open ``sqlite3``
    connection (made with ``check_same_thread=False`` if LangGraph will use it
    from its worker threads).
    """

    dialect = SQLITE

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        location: str = ":memory:",
        serde: SerializerProtocol | None = None,
        read_only: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        create: bool = True,
    ) -> None:
        super().__init__(serde=serde, location=location, read_only=read_only)
        conn.isolation_level = None  # transactions are explicit: BEGIN for reads, BEGIN IMMEDIATE for writes
        self.conn = conn
        self.db = sqlite_utils.Database(conn, execute_plugins=False)
        self.timeout = timeout
        with self.lock, storage_errors(location, timeout):
            migrate(self.db, location, read_only=read_only, create=create)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        read_only: bool = False,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        serde: SerializerProtocol | None = None,
    ) -> SqliteCheckpointer:
        """Open (or create) the run database at ``path``; ``":memory:"`` for a throwaway one.

        ``create=False`` refuses a missing file; ``read_only=True`` never writes.
        Raises :class:`~reinloop.errors.StorageError` for a file that cannot be used.
        """
        conn = connect(path, timeout=timeout, read_only=read_only, create=create)
        try:
            return cls(conn, location=str(path), serde=serde, read_only=read_only, timeout=timeout, create=create)
        except BaseException:
            conn.close()
            raise

    from_path = open

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._refuse_read_only()
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def compact(self) -> None:
        """``VACUUM`` the file, giving the space of deleted rows back to the file system."""
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; it cannot be compacted")
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode the file shrinks only here

    def storage_bytes(self) -> int | None:
        """The file's bytes on disk, its write-ahead log included (None in memory)."""
        path = Path(self.location)
        if not path.is_file():
            return None
        return path.stat().st_size + wal_size(path)
