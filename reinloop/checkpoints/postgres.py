"""``PostgresCheckpointer``: reinloop's storage backend on a PostgreSQL database, through psycopg 3.

The same statements as the SQLite backend (:mod:`reinloop.checkpoints.sql`),
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
threads LangGraph writes from, behind a lock. Reads run in a ``REPEATABLE
READ`` read-only transaction, so a checkpoint, its values and its writes come
from one snapshot; writes wait at most ``timeout`` seconds for a row lock
(``lock_timeout``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import StorageError
from .postgresdb import is_postgres_url, migrate, pg_sql, psycopg_module, safe_location, storage_errors
from .schema import tables
from .sql import Dialect, SqlCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT

__all__ = ["POSTGRES", "PostgresCheckpointer", "is_postgres_url"]


def metadata_filter(key: str, value: Any) -> tuple[str, list[Any]]:
    """One condition of ``list(filter=...)`` on the JSONB metadata: JSON equality (a missing key is null)."""
    return "COALESCE(metadata -> ?, 'null'::jsonb) = ?::jsonb", [key, json.dumps(value)]


POSTGRES = Dialect(
    name="postgresql",
    metadata_filter=metadata_filter,
    now="extract(epoch from clock_timestamp())::float8",
    claim_lock=" FOR UPDATE SKIP LOCKED",
    returning=" RETURNING id",
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


class PostgresCheckpointer(SqlCheckpointer):
    """A LangGraph checkpointer on PostgreSQL with the SQLite backend's layout and semantics.

    Create it with :meth:`open` and a ``postgresql://`` URL.
    """

    dialect = POSTGRES

    def __init__(
        self,
        conn: Any,
        *,
        url: str,
        serde: SerializerProtocol | None = None,
        read_only: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        create: bool = True,
    ) -> None:
        super().__init__(serde=serde, location=safe_location(url), read_only=read_only)
        self.conn = conn
        self.url = url
        self.timeout = timeout
        self._idle = psycopg_module().pq.TransactionStatus.IDLE
        with self.lock, storage_errors(url):
            conn.execute(f"SET lock_timeout = {int(timeout * 1000)}")
            migrate(conn, self.location, read_only=read_only, create=create)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        read_only: bool = False,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        serde: SerializerProtocol | None = None,
    ) -> PostgresCheckpointer:
        """Connect to the database at ``url`` (``postgresql://user:password@host:port/dbname``) and migrate it.

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
            return cls(conn, url=url, serde=serde, read_only=read_only, timeout=timeout, create=create)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[PgTx]:
        # Pipeline mode sends BEGIN, the statements and COMMIT without waiting for each answer: a write
        # whose results nobody reads costs one round trip to the server instead of one per statement.
        with self.lock, storage_errors(self.url):
            try:
                with self.conn.pipeline() as pipeline:
                    self.conn.execute(begin)
                    yield PgTx(self.conn, pipeline)
                    self.conn.execute("COMMIT")
            except BaseException:
                if not self.conn.closed and self.conn.info.transaction_status != self._idle:
                    self.conn.execute("ROLLBACK")
                raise

    def _read(self) -> Any:
        return self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")

    def _write(self) -> Any:
        self._refuse_read_only()
        return self._transaction("BEGIN")

    def _blob(self, data: str | bytes | None) -> Any:
        return data.encode() if isinstance(data, str) else data

    def compact(self) -> None:
        """``VACUUM FULL`` reinloop's tables, giving their free space back (it locks each table while it runs)."""
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; it cannot be compacted")
        with self.lock, storage_errors(self.url):
            for spec in tables():
                self.conn.execute(f"VACUUM FULL {spec.name}")

    def storage_bytes(self) -> int | None:
        """The bytes reinloop's tables take, indexes and TOAST included."""
        with self._read() as tx:
            row = tx.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(?)",
                ([spec.name for spec in tables()],),
            ).fetchone()
        return int(row[0] or 0)
