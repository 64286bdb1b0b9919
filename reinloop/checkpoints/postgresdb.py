"""Opening a PostgreSQL run database safely: connect, check, then migrate under a lock.

The tables come from the same specs as SQLite's
(:mod:`reinloop.checkpoints.schema`), turned into PostgreSQL DDL here:
``text`` is ``TEXT``, ``integer`` ``BIGINT``, ``float`` ``DOUBLE PRECISION``,
``json`` ``JSONB`` (query it with ``->`` and ``->>``), ``value`` and ``blob``
``BYTEA`` (a ``value`` of type ``json`` is UTF-8 JSON text:
``convert_from(value, 'UTF8')::jsonb`` reads it in SQL); a single integer
primary key is an identity column.

Nothing is written before the database is known to be usable: an unreachable
server, a refused login, a missing database or schema, tables of the same
names that reinloop did not make (LangGraph's ``PostgresSaver`` has a
``checkpoints`` table too), and a schema written by a newer reinloop each get
a one-line :class:`~reinloop.errors.StorageError` that says what to do. The
tables live in the connection's current schema: put ``options=-csearch_path%3DNAME``
in the URL to keep them apart from other programs' tables.

Several workers may open a new database at once: each migration runs in one
transaction holding a transaction-level advisory lock, and re-checks whether
another worker applied it meanwhile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigurationError, StorageError
from ..observe.redact import redact_url, scrub
from .rows import now_iso
from .schema import (
    MIGRATIONS,
    MIGRATIONS_SPEC,
    MIGRATIONS_TABLE,
    Table,
    latest_version,
    missing_migrations,
    refuse_newer_schema,
    table,
    tables,
)

PG_TYPES = {"text": "TEXT", "integer": "BIGINT", "float": "DOUBLE PRECISION", "json": "JSONB", "value": "BYTEA", "blob": "BYTEA"}
MIGRATION_LOCK = 0x7265696E6C6F6F70 & 0x7FFFFFFFFFFFFFFF  # "reinloop": one advisory lock id for every worker
SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: object) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(db, str) and db.startswith(SCHEMES)


def safe_location(url: str) -> str:
    """The URL without its password or secret parameters (the user name stays), for messages and ``saver.location``."""
    return redact_url(url, keep_user=True)


def _target(url: str) -> tuple[str, str, str]:
    """(host:port, user, database) named by a URL, for messages."""
    parts = urlsplit(url)
    host = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    return host, parts.username or "(default user)", (parts.path or "/").lstrip("/") or "(default database)"


LOCKED = {"55P03", "57014"}
"""SQLSTATEs of a statement stopped waiting: lock_not_available, query_canceled (lock_timeout, statement_timeout)."""
READ_ONLY = {"25006"}
"""read_only_sql_transaction."""
CONNECTION_LOST_CLASSES = ("08", "57P")
"""SQLSTATE classes of a connection that broke or was ended: connection_exception, operator_intervention."""


def postgres_error_message(exc: Exception, url: str, connection: Any = None) -> str:
    """A one-line explanation of a psycopg error, naming the server and the fix.

    Decided by the error's SQLSTATE where the server sent one. A failure to connect has none: libpq reports
    it as text only (``sqlstate`` is ``None``, and ``pgconn``'s ``used_password`` is true for a wrong password
    and a missing database alike), so for those, and only those, libpq's own words are read.
    """
    text = scrub(" ".join(str(exc).split()), url) or type(exc).__name__
    host, user, database = _target(url)
    where = "--db (or REINLOOP_DB)"
    code = getattr(exc, "sqlstate", None)
    if code in LOCKED:
        return f"{safe_location(url)} is locked by another session ({text}); wait for it to finish, or use another database"
    if code in READ_ONLY:
        return f"{safe_location(url)} is read-only ({text}); use a writable database"
    if code is not None and code.startswith(CONNECTION_LOST_CLASSES) or _connection_lost(exc, connection):
        return f"lost the connection to PostgreSQL at {host} ({text}); the run's progress up to its last step is saved: resume it"
    if code is None and getattr(exc, "pgconn", None) is not None:  # the connection could not be made
        return _connect_failure(text, host, user, database, where)
    return f"{safe_location(url)}: PostgreSQL error: {text}"


def _connection_lost(exc: Exception, connection: Any) -> bool:
    """A connection that was open and is not any more: psycopg says so by the connection's state, not a SQLSTATE."""
    if connection is not None and (connection.closed or connection.broken):
        return True
    conn = getattr(exc, "pgconn", None)
    return conn is not None and getattr(conn, "server_version", 0) > 0 and getattr(conn, "status", 0) != 0


def _connect_failure(text: str, host: str, user: str, database: str, where: str) -> str:
    """Why a connection could not be made, from libpq's message: it gives no code for these."""
    lowered = text.lower()
    if "password authentication failed" in lowered or ("role" in lowered and "does not exist" in lowered) \
            or "no password supplied" in lowered:
        return f"PostgreSQL at {host} refused user {user!r} ({text}); check the user name and password in {where}"
    if "database" in lowered and "does not exist" in lowered:
        return f"PostgreSQL at {host} has no database {database!r}; create it (createdb {database}) or point {where} at one that exists"
    return f"cannot reach PostgreSQL at {host} ({text}); is the server running and is {host} right? check the URL in {where}"


def psycopg_module() -> Any:
    """psycopg, or a clear error when the ``postgres`` extra is not installed."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            "a postgresql:// database needs psycopg: pip install 'reinloop[postgres]'"
        ) from None
    return psycopg


@contextmanager
def storage_errors(url: str, connection: Any = None) -> Iterator[None]:
    """Turn psycopg's exceptions on ``connection`` (``None`` while connecting) into :class:`StorageError` with a
    message that says what to do."""
    psycopg = psycopg_module()
    try:
        yield
    except psycopg.Error as exc:
        raise StorageError(postgres_error_message(exc, url, connection)) from exc


@lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """SQLite's parameters (``?``, ``:name``) as psycopg's (``%s``, ``%(name)s``)."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"%(\1)s", sql)


def column_ddl(spec: Table, name: str) -> str:
    """One column of ``CREATE TABLE``."""
    column = spec.column(name)
    if spec.identity == name and spec.name != MIGRATIONS_TABLE:
        return f"{name} BIGINT GENERATED BY DEFAULT AS IDENTITY"
    ddl = f"{name} {PG_TYPES[column.type]}"
    if column.not_null:
        ddl += " NOT NULL"
    if column.default is not None:
        default = column.default
        ddl += f" DEFAULT {default}" if isinstance(default, int) else " DEFAULT '" + str(default).replace("'", "''") + "'"
    return ddl


def table_ddl(spec: Table) -> list[str]:
    """``CREATE TABLE`` and ``CREATE INDEX`` statements for one table spec."""
    columns = [column_ddl(spec, c.name) for c in spec.columns]
    statements = [f"CREATE TABLE IF NOT EXISTS {spec.name} ({', '.join(columns)}, PRIMARY KEY ({', '.join(spec.pk)}))"]
    for cols, unique in [*((c, False) for c in spec.indexes), *((c, True) for c in spec.unique)]:
        statements.append(f"CREATE {'UNIQUE ' if unique else ''}INDEX IF NOT EXISTS {index_name(spec.name, cols)} "
                          f"ON {spec.name} ({', '.join(cols)})")
    return statements


def index_name(name: str, columns: tuple[str, ...]) -> str:
    """The name reinloop gives an index of table ``name`` on ``columns``."""
    return f"idx_{name}_{'_'.join(columns)}"


def rename_statements(old: str, new: str) -> list[str]:
    """``ALTER TABLE ... RENAME`` and the renames of its indexes (they are named after their table)."""
    spec = table(new)
    statements = [f"ALTER TABLE IF EXISTS {old} RENAME TO {new}"]
    for cols in (*spec.indexes, *spec.unique):
        statements.append(f"ALTER INDEX IF EXISTS {index_name(old, cols)} RENAME TO {index_name(new, cols)}")
    return statements


def existing_tables(conn: Any) -> set[str]:
    """The tables of the connection's current schema."""
    rows = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()
    return {r[0] for r in rows}


def applied_versions(conn: Any) -> set[int]:
    """The migrations this database has applied."""
    if MIGRATIONS_TABLE not in existing_tables(conn):
        return set()
    return {int(r[0]) for r in conn.execute(f"SELECT version FROM {MIGRATIONS_TABLE}").fetchall()}


def foreign_tables(location: str, names: list[str]) -> StorageError:
    """The error for a database whose tables of reinloop's names are another program's."""
    return StorageError(
        f"{location} has tables named like reinloop's that reinloop did not make ({', '.join(names)}); use another "
        "database, or a schema of its own: CREATE SCHEMA reinloop, then add options=-csearch_path%3Dreinloop to the URL"
    )


def check_schema(conn: Any, location: str, *, create: bool) -> set[int]:
    """The applied migrations; refuses a missing schema, foreign tables of reinloop's names, a newer schema."""
    schema = conn.execute("SELECT current_schema(), current_setting('search_path')").fetchone()
    if schema[0] is None:
        raise StorageError(f"{location}: no schema to create reinloop's tables in (search_path is {schema[1]!r}); "
                           "create it (CREATE SCHEMA name) or fix options=-csearch_path in the URL")
    names = existing_tables(conn)
    if MIGRATIONS_TABLE in names:
        columns = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                              "current_schema() AND table_name = %s", (MIGRATIONS_TABLE,)).fetchall()}
        if not {"version", "name", "applied_at"} <= columns:
            raise foreign_tables(location, [MIGRATIONS_TABLE])
    applied = applied_versions(conn)
    refuse_newer_schema(applied, location)
    if not applied:
        ours = {t.name for t in tables()} | {t.name for m in MIGRATIONS for t in m.tables} | {MIGRATIONS_TABLE}
        clash = sorted(names & ours)
        if clash:
            raise foreign_tables(location, clash)
        if not create:
            raise StorageError(
                f"{location} holds no runs yet; run a task first (reinloop run ...), "
                "or point --db (or REINLOOP_DB) at an existing database"
            )
    return applied


def migrate(conn: Any, location: str, *, read_only: bool = False, create: bool = True) -> int:
    """Check the schema, then apply the missing migrations, one locked transaction each; returns the version."""
    with conn.transaction():
        applied = check_schema(conn, location, create=create and not read_only)
    missing = missing_migrations(applied, location, read_only=read_only)
    for migration in missing:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            if migration.version in applied_versions(conn):  # another worker was first
                continue
            for statement in table_ddl(MIGRATIONS_SPEC):
                conn.execute(statement)
            for spec in migration.tables:
                for statement in table_ddl(spec):
                    conn.execute(statement)
            for name, column in migration.columns:
                conn.execute(f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {column.name} {PG_TYPES[column.type]}")
            for old, new in migration.renames:
                for statement in rename_statements(old, new):
                    conn.execute(statement)
            conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) VALUES (%s, %s, %s)",
                         (migration.version, migration.name, now_iso()))
    return latest_version()
