"""``sql_query`` (read-only SQL) and ``db_insert`` (one row into an allowed table).

``sql_query`` does not try to recognise safe SQL by looking at it (the seeds'
``startswith("SELECT")`` let ``SELECT 1; DROP TABLE users`` through). SQLite
itself enforces the rules, in three independent layers:

1. the database is opened read-only (URI ``mode=ro``), so the pager refuses
   any write;
2. an authorizer (``sqlite3.Connection.set_authorizer``) allows only reading
   (``SELECT``, column reads, functions, recursive CTEs) and denies
   everything else at compile time: every write, ``ATTACH`` (which, like
   ``VACUUM INTO``, would create files even on a read-only connection),
   ``PRAGMA``, transactions, schema changes, and functions with side effects
   such as ``load_extension``;
3. ``execute`` runs exactly one statement (stacked statements are refused
   by the driver).

And the work of a query is bounded: queries run in separate processes
(:mod:`.sqlengine`, one query at a time each), where a progress handler stops
a query at its time limit, SQLite's length limit bounds strings and blobs
(``zeroblob(1e9)``) and a heap limit bounds memory; a process stuck inside one
SQLite function call (which no handler interrupts) is killed half a second
after the limit and never reused. The
limit is the tool's ``max_seconds``, or what is left of the tool call's
deadline if that is less, so the worker thread always comes back in time.

Results come back as a compact ``|``-separated table, cut at a row limit and
at long cells, with a note saying what was left out.

``db_insert`` writes only the tables it is given (no default: every table would
include ones the model has no business writing), and caps each value's size.
Neither tool accepts reinloop's own run database (:func:`refuse_run_database`,
:func:`refuse_reinloop_schema`): the model would read every thread's runs, and
a row in ``migrations`` would lock reinloop out of the file.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import select
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field, create_model

from ..checkpoints.schema import MIGRATIONS_TABLE, tables as reinloop_tables
from ..errors import ConfigurationError, ToolDatabaseError
from . import sqlengine
from .options import function_tool
from .pool import seconds_left
from .sqlengine import open_read_only

MAX_ROWS = 50
MAX_QUERY_SECONDS = 5.0
KILL_GRACE_SECONDS = 0.5
"""How long after its time limit a query process that did not stop by itself is killed."""
ENGINE = Path(sqlengine.__file__)
from .settings import MAX_INSERT_VALUE_BYTES, REFUSAL, refuse_run_database  # noqa: E402, F401 (defaults live with ToolSettings; re-exported)


class QueryError(ValueError):
    """A query that was refused or failed; the message says why."""


class QueryProcesses:
    """The processes queries run in: reused while they behave, killed when a query overruns.

    A process answers one query at a time; a process whose query overran is
    killed (never reused), so a kill costs only that query. Idle processes
    wait on their stdin using no CPU; at most :attr:`max_idle` are kept, the
    rest end. Those left at exit are stopped, or see their stdin close and end.
    """

    max_idle = 2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[subprocess.Popen[bytes]] = []
        self._owner = os.getpid()  # a forked child must not use its parent's processes
        atexit.register(self.close)

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait at most ``timeout`` s for its answer (raises ``TimeoutError``)."""
        proc = self._take()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request).encode("ascii") + b"\n")
            proc.stdin.flush()
            line = read_line(proc.stdout.fileno(), time.monotonic() + timeout)
        except BaseException:
            self._stop(proc)
            raise
        if not line:  # it died (a crash, the OOM killer): say how
            self._stop(proc)
            return {"error": f"the query process ended unexpectedly (exit status {proc.returncode}); try a simpler query"}
        self._give_back(proc)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def pids(self) -> list[int]:
        """The process ids of the idle processes."""
        with self._lock:
            return [p.pid for p in self._idle]

    def close(self) -> None:
        """Stop the idle processes."""
        with self._lock:
            idle, self._idle = self._idle, []
        if self._owner == os.getpid():
            for proc in idle:
                self._stop(proc)

    def _take(self) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._owner != os.getpid():
                self._idle, self._owner = [], os.getpid()
            while self._idle:
                proc = self._idle.pop()
                if proc.poll() is None:
                    return proc
        return subprocess.Popen([sys.executable, "-I", "-S", str(ENGINE), str(os.getpid())], bufsize=0,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def _give_back(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle and self._owner == os.getpid():
                self._idle.append(proc)
                return
        self._stop(proc)

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        proc.kill()
        proc.communicate()


def read_line(fd: int, deadline: float) -> bytes:
    """One ``\\n``-terminated line from ``fd``, or ``b""`` at end of file; ``TimeoutError`` at ``deadline``."""
    data = bytearray()
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b""
        data += chunk
    return bytes(data)


PROCESSES = QueryProcesses()


def run_query(path: Path, query: str, max_rows: int = MAX_ROWS, max_seconds: float = MAX_QUERY_SECONDS) -> str:
    """Run one read-only query against ``path`` in a query process; the result as a compact table.

    The query gets ``max_seconds``, or what is left of the tool call's deadline
    if that is less; its process is killed :data:`KILL_GRACE_SECONDS` later if
    it has not answered, so the calling worker is always back in time.
    """
    seconds = seconds_left(max_seconds) or 0.0
    if seconds <= 0:
        raise QueryError(sqlengine.TOO_LONG.format(seconds=0))
    request = {"path": str(path), "query": query, "max_rows": max_rows, "max_seconds": seconds}
    try:
        answer = PROCESSES.ask(request, seconds + KILL_GRACE_SECONDS)
    except TimeoutError:  # stuck inside one SQLite call: no handler can stop it, the kill did
        raise QueryError(sqlengine.TOO_LONG.format(seconds=round(seconds, 2))) from None
    if "error" in answer:
        raise QueryError(answer["error"])
    return str(answer["table"])


def list_tables(path: Path) -> list[str]:
    """The table names of the database at ``path`` (read-only)."""
    conn = open_read_only(path, MAX_QUERY_SECONDS)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
        return [name for (name,) in rows if not name.startswith("sqlite_")]
    except sqlite3.Error as exc:
        raise ConfigurationError(f"{str(path)!r} is not a usable SQLite database: {exc}") from None
    finally:
        conn.close()


def table_columns(path: Path, tables: list[str]) -> str:
    """``"notes(key TEXT, value TEXT)"``: the columns of ``tables`` in the database at ``path`` (read-only)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)  # pragmas: not through the query authorizer
    try:
        shown = []
        for table in tables:
            rows = conn.execute("SELECT name, type FROM pragma_table_info(?)", (table,)).fetchall()
            shown.append(f"{table}({', '.join(f'{name} {kind}'.strip() for name, kind in rows)})")
        return "; ".join(shown)
    finally:
        conn.close()


class SqlQueryInput(BaseModel):
    """Arguments of sql_query."""

    query: str = Field(
        description="one read-only SQLite SELECT statement, e.g. \"SELECT name, age FROM users WHERE id = 1\". "
        "List the tables with \"SELECT name, sql FROM sqlite_master WHERE type = 'table'\".",
        min_length=1,
        max_length=5000,
    )


def _database(tool: str, path: str | os.PathLike[str] | None, option: str = "path") -> Path:
    if path is None:
        raise ConfigurationError(
            f"tool {tool!r} needs a SQLite database file: give --db-tool PATH (from Python: builtin({tool!r}, {option}=PATH))"
        )
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigurationError(f"database {str(path)!r} for tool {tool!r} is not an existing file; check the path")
    refuse_reinloop_schema(file.resolve(), tool)
    return file.resolve()


def refuse_reinloop_schema(file: Path, tool: str) -> None:
    """Refuse a tool database that carries reinloop's schema (its ``migrations`` table and a table of its own)."""
    names = set(list_tables(file))
    ours = sorted(names & {t.name for t in reinloop_tables()})
    if MIGRATIONS_TABLE in names and ours:
        raise ToolDatabaseError(
            f"{str(file)!r} is a reinloop run database (tables {MIGRATIONS_TABLE}, {', '.join(ours[:3])}, ...); "
            f"tool {tool!r} may not use it: {REFUSAL}", str(file))


def sql_query_tool(path: str | os.PathLike[str] | None = None, max_rows: int = MAX_ROWS, max_seconds: float = MAX_QUERY_SECONDS) -> BaseTool:
    """``sql_query``: read-only SELECT queries over the SQLite file at ``path``."""
    file = _database("sql_query", path)
    tables = list_tables(file)

    def sql_query(query: str) -> str:
        return run_query(file, query, max_rows, max_seconds)

    return function_tool(
        sql_query,
        name="sql_query",
        description=f"Run one read-only SQL SELECT on the SQLite database {file.name} "
        f"(tables: {', '.join(tables) or 'none'}). Returns at most {max_rows} rows as a table.",
        args_schema=SqlQueryInput,
        parallel_safe=True,
        transient=(),
    )


Scalar = str | int | float | bool | None


def db_insert_tool(
    path: str | os.PathLike[str] | None = None,
    tables: str | list[str] | None = None,
    max_value_bytes: int | None = MAX_INSERT_VALUE_BYTES,
) -> BaseTool:
    """``db_insert``: insert one row into one of ``tables`` of the SQLite file at ``path`` (side effects).

    ``tables`` is required: the tool writes only the tables it is given. ``max_value_bytes`` caps
    one value (``None``: no cap).
    """
    file = _database("db_insert", path)
    existing = list_tables(file)
    allowed = _allowed_tables(tables, existing, file)
    if max_value_bytes is not None and (type(max_value_bytes) is not int or max_value_bytes < 1):
        raise ConfigurationError(f"db_insert option max_value_bytes must be a number of bytes >= 1 or None, got {max_value_bytes!r}")
    args_schema = create_model(
        "DbInsertInput",
        __doc__="Arguments of db_insert.",
        table=(Literal[tuple(allowed)], Field(description=f"the table to insert into: one of {', '.join(allowed)}")),
        # The columns, not an example row: Qwen2.5-0.5B copied the example's {"name": ..., "age": 28} into its calls.
        row=(dict[str, Scalar], Field(description=f"column name -> value of the new row; the columns: {table_columns(file, allowed)}",
                                      min_length=1, max_length=50)),
    )

    def db_insert(table: str, row: dict[str, Any]) -> str:
        check_value_sizes(row, max_value_bytes)
        check_finite(row)
        return insert_row(file, table, row, allowed)

    return function_tool(
        db_insert,
        name="db_insert",
        description=f"Insert one row into a table of the SQLite database {file.name} (tables: {', '.join(allowed)}). "
        "Columns must already exist. Returns the new row's id.",
        args_schema=args_schema,
        side_effects=True,
        transient=(),
    )


def _allowed_tables(tables: str | list[str] | None, existing: list[str], file: Path) -> list[str]:
    names = [t.strip() for t in tables.split(",") if t.strip()] if isinstance(tables, str) else list(tables or [])
    if not names:
        raise ConfigurationError(
            f"db_insert writes only the tables it is given, and got none: give --db-tables T1,T2 (from Python: "
            f"builtin('db_insert', tables='t1,t2') or builtins(..., db_tables='t1,t2')); tables in {file.name}: "
            f"{', '.join(existing) or 'none'}"
        )
    missing = [t for t in names if t not in existing]
    if missing:
        raise ConfigurationError(
            f"db_insert: table(s) {', '.join(missing) or '(none)'} not in {file.name}; existing tables: {', '.join(existing) or 'none'}"
        )
    return names


def check_value_sizes(row: dict[str, Any], max_value_bytes: int | None) -> None:
    """Refuse a row with a value over the cap, saying which column, its size and how to raise the cap."""
    if max_value_bytes is None:
        return
    for column, value in row.items():
        size = len(value.encode("utf-8")) if isinstance(value, str) else 0
        if size > max_value_bytes:
            raise QueryError(
                f"the value of column {column!r} is {size:,} bytes, over db_insert's cap of {max_value_bytes:,} bytes "
                "per value; nothing was inserted: store a shorter value, or raise the cap with --max-value-bytes BYTES "
                "(from Python: builtin('db_insert', max_value_bytes=...))"
            )


def check_finite(row: dict[str, Any]) -> None:
    """Refuse NaN and infinities: SQLite stores NaN as NULL, so the row reported would not be the row stored."""
    for column, value in row.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise QueryError(
                f"the value of column {column!r} is {value!r}, which is not a number SQLite stores (NaN would become "
                "NULL); nothing was inserted: send a finite number, null, or the text you mean as a string"
            )


def insert_row(file: Path, table: str, row: dict[str, Any], allowed: list[str]) -> str:
    """Insert ``row`` into ``table`` if it is allowed and every column exists."""
    if table not in allowed:
        raise QueryError(f"table {table!r} is not allowed; allowed tables: {', '.join(allowed)}")
    import sqlite_utils  # only when a row is inserted: the tool catalog is imported by every run

    db = sqlite_utils.Database(file)
    try:
        columns = db.table(table).columns_dict
        unknown = sorted(set(row) - set(columns))
        if unknown:
            raise QueryError(f"unknown column(s) {', '.join(unknown)} in {table}; columns: {', '.join(columns)}")
        inserted = db.table(table).insert(row, alter=False)
        return f"inserted row {inserted.last_pk} into {table}: {row}"
    except sqlite3.Error as exc:
        raise QueryError(f"insert into {table} failed: {exc}") from None
    finally:
        db.close()
