"""PostgreSQL: the dialect and the connection of a run database on PostgreSQL, through psycopg 3.

The same statements as the SQLite backend (:mod:`reinloop.checkpoints.sql` and the stores),
the same tables from the same specs (:mod:`reinloop.checkpoints.schema`,
turned into PostgreSQL DDL by :mod:`reinloop.checkpoints.postgresdb`), and so
the same semantics: each change stored once, the scratchpad as appended
steps, ``runs`` refreshed with every checkpoint in the same transaction,
``breaks`` written with the interrupt, prune / copy / delete. What
PostgreSQL adds is many processes on many machines writing one database at
once; :mod:`reinloop.checkpoints.queue` uses its row locks for the batch queue.

Why not LangGraph's ``PostgresSaver`` for the checkpoint tables: it stores a
channel's whole value at every version, so the scratchpad (every step so far)
is written again at each step and a run's storage grows with the square of its
steps; ``benchmarks/postgres_checkpoints.py`` measures both on one server (see
BENCHMARKS.md). It also lacks ``copy_thread`` and ``delete_for_runs``, and has
no hook to update reinloop's ``runs`` and ``breaks`` in the checkpoint's
transaction.

One connection (autocommit, with explicit transactions) is shared by the
stores and the threads LangGraph writes from, behind a lock. Reads run in a ``REPEATABLE
READ`` read-only transaction, so a checkpoint, its values and its writes come
from one snapshot; writes wait at most ``timeout`` seconds for a row lock
(``lock_timeout``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import StorageError
from .database import Database
from .postgresdb import is_postgres_url, migrate, pg_sql, psycopg_module, safe_location, storage_errors
from .schema import tables
from .sql import Dialect, SqlCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT

__all__ = ["POSTGRES", "PostgresCheckpointer", "PostgresConnection", "is_postgres_url", "open_postgres"]


def metadata_filter(key: str, value: Any) -> tuple[str, list[Any]]:
    """One condition of ``list(filter=...)`` on the JSONB metadata: JSON equality (a missing key is null)."""
    return "COALESCE(metadata -> ?, 'null'::jsonb) = ?::jsonb", [key, json.dumps(value)]


POSTGRES = Dialect(
    name="postgresql",
    metadata_filter=metadata_filter,
    now="extract(epoch from clock_timestamp())::float8",
    claim_lock=" FOR UPDATE SKIP LOCKED",
    returning=" RETURNING id",
    value=lambda data: data.encode() if isinstance(data, str) else data,
)


def clean(value: Any) -> Any:
    """A parameter PostgreSQL accepts: TEXT and JSONB cannot hold NUL, so it becomes U+FFFD.

    Only the readable columns change (a run's state is stored as bytes and
    keeps every character): a NUL character, and the JSON escape ``\\u0000``.
    """
    if type(value) is str and ("\x00" in value or "\\u0000" in value):
        return value.replace("\x00", "\ufffd").replace("\\u0000", "\\ufffd")
    return value


class PgCursor:
    """A cursor of a pipelined statement: reading ``rowcount`` waits for the statement's result."""

    def __init__(self, cursor: Any, pipeline: Any) -> None:
        self.cursor = cursor
        self.pipeline = pipeline

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""
        self.pipeline.sync()
        return int(self.cursor.rowcount)

    def __getattr__(self, name: str) -> Any:  # fetchone, fetchall and description wait by themselves
        return getattr(self.cursor, name)


class PgTx:
    """A transaction's connection with SQLite-style parameters (what :class:`~reinloop.checkpoints.sql.Tx` needs)."""

    def __init__(self, conn: Any, pipeline: Any) -> None:
        self.conn = conn
        self.pipeline = pipeline

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> PgCursor:
        """Run one statement; returns its cursor."""
        if isinstance(params, Mapping):
            cursor = self.conn.execute(pg_sql(sql), {k: clean(v) for k, v in params.items()})
        else:
            cursor = self.conn.execute(pg_sql(sql), [clean(v) for v in params])
        return PgCursor(cursor, self.pipeline)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each row (pipelined by psycopg)."""
        with self.conn.cursor() as cursor:
            cursor.executemany(pg_sql(sql), [[clean(v) for v in row] for row in rows])


class PostgresConnection:
    """One psycopg connection (autocommit, explicit transactions in pipeline mode) behind one lock."""

    def __init__(self, conn: Any, *, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.raw = conn
        self.url = url
        self.location = safe_location(url)
        self.timeout = timeout
        self.lock = threading.RLock()
        self._idle = psycopg_module().pq.TransactionStatus.IDLE

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[PgTx]:
        # Pipeline mode sends BEGIN, the statements and COMMIT without waiting for each answer: a write
        # whose results nobody reads costs one round trip to the server instead of one per statement.
        with self.lock, storage_errors(self.url, self.raw):
            try:
                with self.raw.pipeline() as pipeline:
                    self.raw.execute(begin)
                    yield PgTx(self.raw, pipeline)
                    self.raw.execute("COMMIT")
            except BaseException:
                if not self.raw.closed and self.raw.info.transaction_status != self._idle:
                    self.raw.execute("ROLLBACK")
                raise

    def read(self) -> Any:
        """A ``REPEATABLE READ`` read-only transaction: one snapshot."""
        return self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")

    def write(self) -> Any:
        """A write transaction."""
        return self._transaction("BEGIN")

    def compact(self) -> None:
        """``VACUUM FULL`` reinloop's tables, giving their free space back (it locks each table while it runs)."""
        with self.lock, storage_errors(self.url, self.raw):
            for spec in tables():
                self.raw.execute(f"VACUUM FULL {spec.name}")

    def storage_bytes(self) -> int | None:
        """The bytes reinloop's tables take, indexes and TOAST included."""
        with self.read() as tx:
            row = tx.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(?)",
                ([spec.name for spec in tables()],),
            ).fetchone()
        return int(row[0] or 0)

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.raw.close()


def open_postgres(
    url: str,
    *,
    read_only: bool = False,
    create: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    serde: SerializerProtocol | None = None,
) -> Database:
    """Connect to the run database at ``url`` (``postgresql://user:password@host:port/dbname``) and migrate it.

    ``create=False`` refuses a database without reinloop's tables;
    ``read_only=True`` never writes. Raises
    :class:`~reinloop.errors.StorageError` with one line for a server that
    cannot be reached, a refused login, or a database reinloop cannot use.
    """
    psycopg = psycopg_module()
    if not is_postgres_url(url):
        raise StorageError(f"{url!r} is not a PostgreSQL URL; use postgresql://user:password@host:port/dbname")
    with storage_errors(url):
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, min(int(timeout), 30)))
    try:
        connection = PostgresConnection(conn, url=url, timeout=timeout)
        with connection.lock, storage_errors(url, conn):
            conn.execute(f"SET lock_timeout = {int(timeout * 1000)}")
            migrate(conn, connection.location, read_only=read_only, create=create)
        return Database(connection, POSTGRES, read_only=read_only, serde=serde, saver=PostgresCheckpointer)
    except BaseException:
        conn.close()
        raise


class PostgresCheckpointer(SqlCheckpointer):
    """LangGraph's checkpointer on a PostgreSQL run database: ``PostgresCheckpointer.open("postgresql://...")``.

    The same code as SQLite's (:class:`~reinloop.checkpoints.sql.SqlCheckpointer`);
    ``checkpointer.db`` is its :class:`~reinloop.checkpoints.database.Database`.
    """

    opener = staticmethod(open_postgres)
