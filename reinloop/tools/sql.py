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
   by the driver), a progress handler stops a query at its time limit, and
   SQLite's own length limit bounds strings and blobs (``zeroblob(1e9)``).

Results come back as a compact ``|``-separated table, cut at a row limit and
at long cells, with a note saying what was left out.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any, Literal

import sqlite_utils
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, create_model

from ..errors import ConfigurationError
from .options import configure

MAX_ROWS = 50
MAX_CELL_CHARS = 200
MAX_QUERY_SECONDS = 5.0
MAX_VALUE_BYTES = 1_000_000

ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
DENIED_FUNCTIONS = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "sqlite_rename_table"}
"""Functions with side effects (the last four exist only in some builds; denied wherever they exist)."""


class QueryError(ValueError):
    """A query that was refused or failed; the message says why."""


def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    """The read-only authorizer: reads and side-effect-free functions only."""
    if action not in ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def open_read_only(path: Path, max_seconds: float) -> sqlite3.Connection:
    """A connection that can only read ``path``, and only for ``max_seconds`` per query."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(authorize)
    deadline = time.monotonic() + max_seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return conn


def cell(value: Any) -> str:
    """One value as table text: NULL, blobs by size, long text cut."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    text = str(value).replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS] + "…"


def format_table(columns: list[str], rows: list[tuple[Any, ...]], more: bool, max_rows: int) -> str:
    """A compact ``a | b`` table with a row count, noting rows left out."""
    lines = [" | ".join(columns)] + [" | ".join(cell(v) for v in row) for row in rows]
    if more:
        lines.append(f"(showing the first {max_rows} rows; more rows match: add LIMIT/WHERE or aggregate)")
    else:
        lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def explain(exc: sqlite3.Error, query: str) -> str:
    """A model-facing reason for a failed query."""
    text = str(exc)
    if "not authorized" in text or "authorization denied" in text or "prohibited" in text:
        return "refused: this tool can only read (one SELECT statement; no writes, ATTACH, PRAGMA or extension loading)"
    if "one statement at a time" in text:
        return "refused: send exactly one SELECT statement (no ';' followed by another statement)"
    if "interrupted" in text:
        return "the query ran too long and was stopped; add a LIMIT or a narrower WHERE"
    if "readonly" in text:
        return "refused: the database is opened read-only"
    return f"SQL error: {text}"


def run_query(path: Path, query: str, max_rows: int = MAX_ROWS, max_seconds: float = MAX_QUERY_SECONDS) -> str:
    """Run one read-only query against ``path``; the result as a compact table."""
    conn = open_read_only(path, max_seconds)
    try:
        cursor = conn.execute(query)
        if cursor.description is None:
            raise QueryError("the statement returned no result set; send one SELECT statement")
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(max_rows + 1)
    except (sqlite3.Error, sqlite3.Warning) as exc:  # Warning: "You can only execute one statement" on 3.11
        raise QueryError(explain(exc, query)) from None  # type: ignore[arg-type]
    finally:
        conn.close()
    return format_table(columns, rows[:max_rows], len(rows) > max_rows, max_rows)


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
    return file.resolve()


def sql_query_tool(path: str | os.PathLike[str] | None = None, max_rows: int = MAX_ROWS, max_seconds: float = MAX_QUERY_SECONDS) -> BaseTool:
    """``sql_query``: read-only SELECT queries over the SQLite file at ``path``."""
    file = _database("sql_query", path)
    tables = list_tables(file)

    def sql_query(query: str) -> str:
        return run_query(file, query, max_rows, max_seconds)

    return configure(
        StructuredTool.from_function(
            sql_query,
            name="sql_query",
            description=f"Run one read-only SQL SELECT on the SQLite database {file.name} "
            f"(tables: {', '.join(tables) or 'none'}). Returns at most {max_rows} rows as a table.",
            args_schema=SqlQueryInput,
        ),
        parallel_safe=True,
        transient=(),
    )


Scalar = str | int | float | bool | None


def db_insert_tool(path: str | os.PathLike[str] | None = None, tables: str | list[str] | None = None) -> BaseTool:
    """``db_insert``: insert one row into an allowed table of the SQLite file at ``path`` (side effects)."""
    file = _database("db_insert", path)
    existing = list_tables(file)
    allowed = _allowed_tables(tables, existing, file)
    args_schema = create_model(
        "DbInsertInput",
        __doc__="Arguments of db_insert.",
        table=(Literal[tuple(allowed)], Field(description=f"the table to insert into: one of {', '.join(allowed)}")),
        row=(dict[str, Scalar], Field(description="column name -> value of the new row, e.g. {\"name\": \"王五\", \"age\": 28}", min_length=1, max_length=50)),
    )

    def db_insert(table: str, row: dict[str, Any]) -> str:
        return insert_row(file, table, row, allowed)

    return configure(
        StructuredTool.from_function(
            db_insert,
            name="db_insert",
            description=f"Insert one row into a table of the SQLite database {file.name} (tables: {', '.join(allowed)}). "
            "Columns must already exist. Returns the new row's id.",
            args_schema=args_schema,
        ),
        side_effects=True,
        transient=(),
    )


def _allowed_tables(tables: str | list[str] | None, existing: list[str], file: Path) -> list[str]:
    names = [t.strip() for t in tables.split(",")] if isinstance(tables, str) else list(tables or existing)
    missing = [t for t in names if t not in existing]
    if missing or not names:
        raise ConfigurationError(
            f"db_insert: table(s) {', '.join(missing) or '(none)'} not in {file.name}; existing tables: {', '.join(existing) or 'none'}"
        )
    return names


def insert_row(file: Path, table: str, row: dict[str, Any], allowed: list[str]) -> str:
    """Insert ``row`` into ``table`` if it is allowed and every column exists."""
    if table not in allowed:
        raise QueryError(f"table {table!r} is not allowed; allowed tables: {', '.join(allowed)}")
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
