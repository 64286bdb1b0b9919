"""Opening a SQLite run database safely: checks first, then WAL, a busy timeout and migrations.

Nothing is written to a file before it is known to be a SQLite database that
reinloop may use: a file that does not start with SQLite's header, is
shorter than its header says, belongs to another program (LangGraph's
``SqliteSaver`` tables), or was written by a newer reinloop is refused with a
one-line :class:`~reinloop.errors.StorageError` that names the file and says
what to do, and its bytes stay as they were.

Concurrency: WAL mode lets readers run beside one writer; every write
transaction starts with ``BEGIN IMMEDIATE`` so it takes the write lock before
reading anything (a deferred transaction that upgrades can fail at once with
"database is locked", whatever the timeout); the busy timeout makes a second
process wait for the lock instead of failing. ``synchronous=NORMAL`` keeps
every committed checkpoint across a killed process (not across a power cut).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import StorageError
from .rows import dict_rows, now_iso
from .schema import (
    MIGRATIONS_SPEC,
    MIGRATIONS_TABLE,
    Column,
    Table,
    latest_version,
    missing_migrations,
    refuse_newer_schema,
    table,
)

if TYPE_CHECKING:  # sqlite-utils (and the numpy it imports) is loaded only to create or change tables (migrate)
    import sqlite_utils

HEADER = b"SQLite format 3\x00"
DEFAULT_TIMEOUT = 30.0
"""Seconds a writer waits for another process's write lock before giving up."""

SQL_TYPES = {"text": str, "integer": int, "float": float, "json": str, "value": bytes, "blob": bytes}


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error (``SQLITE_BUSY`` ...; extended codes folded), if SQLite gave one."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


SQLITE_PROBLEMS: dict[int, str] = {
    sqlite3.SQLITE_BUSY: "{location} is locked by another process (waited {timeout:g} s for it); "
                         "wait for that process to finish, or use another database with --db",
    sqlite3.SQLITE_READONLY: "{location} is read-only ({text}); make it writable, or use another database with --db",
    sqlite3.SQLITE_NOTADB: "{location} is damaged or not a SQLite database ({text}); restore it from a backup, "
                           "or use another database with --db",
    sqlite3.SQLITE_CANTOPEN: "cannot open {location} ({text}); check the path and its directory's permissions",
}
"""What a SQLite result code means for the run database, and the fix (``LOCKED`` reads as ``BUSY``,
``CORRUPT`` as ``NOTADB``); any other code is said as SQLite says it."""
SAME_PROBLEM = {sqlite3.SQLITE_LOCKED: sqlite3.SQLITE_BUSY, sqlite3.SQLITE_CORRUPT: sqlite3.SQLITE_NOTADB}


def sqlite_error_message(exc: sqlite3.Error, location: str, timeout: float) -> str:
    """A one-line explanation of a SQLite error (from its result code), naming the file and the fix."""
    code = primary_code(exc) or sqlite3.SQLITE_ERROR  # no code given: SQLite's generic error
    problem = SQLITE_PROBLEMS.get(SAME_PROBLEM.get(code, code), "{location}: SQLite error: {text}")
    return problem.format(location=location, timeout=timeout, text=str(exc))


@contextmanager
def storage_errors(location: str, timeout: float) -> Iterator[None]:
    """Turn SQLite's exceptions into :class:`StorageError` with a message that says what to do."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StorageError(sqlite_error_message(exc, location, timeout)) from exc


def check_file(path: Path) -> None:
    """Refuse a file that is not a whole SQLite database, without writing to it."""
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb") as f:
        head = f.read(100)
    if not head.startswith(HEADER):
        raise StorageError(
            f"{path} is not a SQLite database (it starts with {head[:16]!r}); "
            "point --db (or REINLOOP_DB) at a reinloop run database or a new file"
        )
    if len(head) < 100:
        raise StorageError(f"{path} is truncated ({size} bytes, shorter than a SQLite header); restore it from a backup")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    has_wal = wal_size(path) > 0
    if pages and pages * page_size > size and not has_wal:
        raise StorageError(
            f"{path} is truncated: its header says {pages * page_size} bytes but the file has {size}; "
            "restore it from a backup"
        )


def wal_size(path: Path) -> int:
    """The size of the database's ``-wal`` file, 0 when there is none (another process may remove it at any moment)."""
    try:
        return path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        return 0


def file_kind(mode: int) -> str | None:
    """What a path that is not a regular file is ("a directory", "a named pipe (FIFO)" ...), or None for a file."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def check_regular(path: Path) -> None:
    """Refuse a directory, a FIFO (reading it would wait forever), a device such as /dev/null, a socket."""
    kind = file_kind(path.stat().st_mode)
    if kind is not None:
        raise StorageError(f"{path} is {kind}; --db needs a database file")


_checked: set[tuple[int, int, int, int]] = set()
"""Files (device, inode, size, mtime) this process found whole: not read again until they change."""


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged database before anything is written to it (``PRAGMA quick_check``: every page is read).

    A file is not read again while it has not changed since it was found whole.
    """
    info = path.stat()
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key in _checked:
        return
    problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
    if problems == ["ok"]:
        _checked.add(key)
    else:
        lines = [line.strip() for p in problems for line in p.splitlines() if line.strip() and "in database" not in line]
        found = "; ".join(lines[:3]) or "quick_check failed"
        raise StorageError(
            f"{path} is damaged ({found}); nothing was written to it: restore it from a backup, "
            "or use another database with --db"
        )


def is_read_only(path: Path) -> bool:
    """True when the file is not writable, or marked read-only (mode bits) even for root."""
    return not os.access(path, os.W_OK) or not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def connect(path: str | Path, *, timeout: float, read_only: bool, create: bool) -> sqlite3.Connection:
    """A checked connection to ``path`` in autocommit mode (transactions are explicit)."""
    if str(path) == ":memory:":
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    p = Path(path)
    if not p.exists():
        if not create or read_only:
            raise StorageError(
                f"no run database at {p}; run a task first (reinloop run ...), "
                "or point --db (or REINLOOP_DB) at an existing database"
            )
        if not p.parent.is_dir():
            raise StorageError(f"cannot create {p}: the directory {p.parent} does not exist")
    else:
        check_regular(p)
        check_file(p)
        if not read_only and is_read_only(p):
            raise StorageError(
                f"{p} is read-only (mode {stat.filemode(p.stat().st_mode)}); make it writable "
                f"(chmod u+w {p}), or use another database with --db"
            )
    uri = f"file:{quote(str(p.resolve()))}?mode={'ro' if read_only else 'rwc'}"
    wal = p.with_name(p.name + "-wal")
    if read_only and p.exists() and is_read_only(p) and not wal.exists():
        uri += "&immutable=1"  # nobody writes a read-only file: read it without creating -wal and -shm beside it
    with storage_errors(str(p), timeout):
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fails now on a damaged file
            if not read_only and p.stat().st_size > 0:
                check_integrity(conn, p)
        except BaseException:
            conn.close()
            raise
    return conn


def create_table(db: sqlite_utils.Database, spec: Table) -> None:
    """Create one table from its spec, with its indexes."""
    columns = {c.name: SQL_TYPES[c.type] for c in spec.columns}
    db[spec.name].create(  # type: ignore[union-attr]
        columns,
        pk=spec.pk[0] if len(spec.pk) == 1 else spec.pk,
        not_null={c.name for c in spec.columns if c.not_null},
        defaults={c.name: c.default for c in spec.columns if c.default is not None},
        if_not_exists=True,
    )
    for cols in spec.indexes:
        db[spec.name].create_index(cols, if_not_exists=True)  # type: ignore[union-attr]
    for cols in spec.unique:
        db[spec.name].create_index(cols, unique=True, if_not_exists=True)  # type: ignore[union-attr]


def add_column(db: sqlite_utils.Database, name: str, column: Column) -> None:
    """Add a column to a table, unless it has it already."""
    if column.name not in db[name].columns_dict:  # type: ignore[union-attr]
        db[name].add_column(column.name, SQL_TYPES[column.type])  # type: ignore[union-attr]


def rename_table(db: sqlite_utils.Database, old: str, new: str) -> None:
    """Rename a table (unless that was done); its indexes are made again under the new name."""
    if old not in db.table_names():
        return
    indexes = [i.name for i in db[old].indexes if not i.name.startswith("sqlite_autoindex")]  # type: ignore[union-attr]
    db.conn.execute(f"ALTER TABLE {old} RENAME TO {new}")
    for name in indexes:
        db.conn.execute(f"DROP INDEX {name}")
    create_table(db, table(new))


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The tables of a database (what ``sqlite_utils.Database.table_names`` lists), read without sqlite-utils."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    """The migrations this database has applied."""
    if MIGRATIONS_TABLE not in table_names(conn):
        return set()
    return {row[0] for row in conn.execute(f"SELECT version FROM {MIGRATIONS_TABLE}")}


STANDALONE_TABLES = frozenset({"steps", "tool_journal", "memories"})
"""Tables an older reinloop's ``RunLog``, ``ToolJournal`` or ``MemoryStore`` made in a file of their own (without
``migrations``): such a file is migrated into a run database, its rows kept."""


def check_schema(conn: sqlite3.Connection, location: str, *, create: bool) -> set[int]:
    """The applied migrations; refuses another program's database, an empty one to read, a newer schema."""
    applied = applied_versions(conn)
    refuse_newer_schema(applied, location)
    if not applied:
        names = table_names(conn)
        if foreign := sorted(names - STANDALONE_TABLES):
            raise StorageError(
                f"{location} is not a reinloop run database (it has other tables: {', '.join(foreign)}); "
                "use a new file for --db"
            )
        if not create and not names:
            raise StorageError(
                f"{location} holds no runs yet; run a task first (reinloop run ...), "
                "or point --db (or REINLOOP_DB) at an existing database"
            )
    return applied


class PlainReader:
    """Read-only statements on a plain connection, rows as dicts: what :class:`~.records.RunStore` reads through
    when no saver is needed (``runs list``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        return dict_rows(self.conn.execute(sql, params))


@contextmanager
def plain_reader(path: str | Path, *, timeout: float) -> Iterator[PlainReader | None]:
    """A reader of the run database at ``path`` on a read-only ``sqlite3`` connection, in one snapshot, checked
    like any open (another program's file, a newer schema are refused); ``None`` when the database still needs
    migrations (open it with :func:`~reinloop.checkpoints.open_database`, which applies them).

    It loads neither LangGraph nor sqlite-utils, and runs no ``quick_check`` (a read never writes damage on).
    """
    location = str(path)
    conn = connect(path, timeout=timeout, read_only=True, create=False)
    try:
        with storage_errors(location, timeout):
            conn.execute("BEGIN")
            try:
                applied = check_schema(conn, location, create=False)
                yield None if missing_migrations(applied, location, read_only=False) else PlainReader(conn)
            finally:
                conn.execute("COMMIT")
    finally:
        conn.close()


def use_wal(conn: sqlite3.Connection, attempts: int = 200) -> None:
    """Switch a database to WAL, once.

    The switch needs the file to itself, and SQLite answers "locked" at once
    (no busy wait) when another connection opens the same new file at that
    moment: wait a little and look again, since the other one switches it.
    """
    for _ in range(attempts):
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            return
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if primary_code(exc) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            time.sleep(0.05)
    conn.execute("PRAGMA journal_mode=WAL")  # still locked: let the caller report it


def migrate(conn: sqlite3.Connection, location: str, *, read_only: bool = False, create: bool = True) -> int:
    """Check the schema, then (writable) switch to WAL and apply the missing migrations; returns the version.

    Nothing is written before the checks pass, not even the journal mode. The checks read ``sqlite_master``
    directly; sqlite-utils (and the numpy it imports when installed, 0.15 s) is loaded only to create or
    change tables, so opening a database that is up to date (``runs list``, ``resume``) does without it.
    """
    conn.execute("BEGIN")  # one snapshot: another process may be creating the tables right now
    try:
        applied = check_schema(conn, location, create=create and not read_only)
    finally:
        conn.execute("COMMIT")
    if not read_only:
        use_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
    missing = missing_migrations(applied, location, read_only=read_only)
    if not missing:
        return latest_version()
    import sqlite_utils

    db = sqlite_utils.Database(conn, execute_plugins=False)
    for migration in missing:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if migration.version not in applied_versions(conn):  # another process may have been first
                create_table(db, MIGRATIONS_SPEC)
                for spec in migration.tables:
                    create_table(db, spec)
                for name, column in migration.columns:
                    add_column(db, name, column)
                for old, new in migration.renames:
                    rename_table(db, old, new)
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, now_iso()),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return latest_version()
