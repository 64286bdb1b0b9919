"""The engine of ``sql_query``: read-only queries, run in a process of their own.

This module uses the standard library only, so that :mod:`.sql` can run it
as a script (``python -I -S sqlengine.py``, 50-100 ms to start, then reused)
without importing reinloop. Why a process: SQLite checks its progress handler and
``sqlite3_interrupt()`` between VM steps, never inside one function call,
and one call can run for minutes (``printf('%.*c', 2147483647, 'x')`` loops
2^31 times whatever the length limit says; ``instr``, ``replace`` and
``LIKE`` compare long strings in O(n·m)). A thread stuck in such a call
cannot be stopped, and it would hold its tool worker and a CPU long after
the call was abandoned. A process can be killed: :mod:`.sql` kills it
shortly after its time limit, so the worker comes back in time, whatever
the query does.

Inside the process the query is still bounded the polite way, so that most
runaway queries stop by themselves with a clear message: a progress handler
at the time limit, SQLite's length limit for strings and blobs, a heap limit
for memory, and the read-only layers described in :mod:`.sql`.

Protocol: one JSON request per line on stdin (``path``, ``query``,
``max_rows``, ``max_seconds``), one JSON answer per line on stdout:
``{"table": text}`` or ``{"error": reason}``. The process serves requests
until its stdin closes; :mod:`.sql` reuses it while it answers in time and
kills it when it does not.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

MAX_CELL_CHARS = 200
MAX_VALUE_BYTES = 1_000_000
"""Longest string or blob a query may make (SQLITE_LIMIT_LENGTH)."""
MAX_HEAP_BYTES = 256_000_000
"""Memory SQLite may allocate in the query process (``PRAGMA hard_heap_limit``)."""
PROGRESS_STEPS = 1_000
"""VM steps between two looks at the clock."""
MAX_TABLE_CHARS = 100_000
"""Longest answer (2,000 columns of long cells would make megabytes that no prompt can hold)."""

ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
DENIED_FUNCTIONS = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "sqlite_rename_table"}
"""Functions with side effects (the last four exist only in some builds; denied wherever they exist)."""


class Refused(Exception):
    """A query that was refused or failed; the message is the model-facing reason."""


class ReadOnlyConnection(sqlite3.Connection):
    """A connection that remembers what its authorizer denied and whether its clock stopped a query.

    A failed query is then explained from those facts and SQLite's error code,
    never from the wording of the error.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.denied: list[str] = []
        """What the read-only authorizer refused (an action code, or a function's name)."""
        self.timed_out = False
        """True once the progress handler stopped a query for running past its time."""

    def authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        """The read-only authorizer: reads and side-effect-free functions only."""
        verdict = authorize(action, arg1, arg2, db, trigger)
        if verdict == sqlite3.SQLITE_DENY:
            self.denied.append(arg2 if action == sqlite3.SQLITE_FUNCTION and arg2 else str(action))
        return verdict

    def watch_clock(self, deadline: float) -> int:
        """The progress handler: non-zero (stop the query) once ``deadline`` has passed."""
        self.timed_out = self.timed_out or time.monotonic() > deadline
        return int(self.timed_out)


def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    """The read-only rule: reads and side-effect-free functions only."""
    if action not in ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def open_read_only(path: Path, max_seconds: float) -> ReadOnlyConnection:
    """A connection that can only read ``path``, and only for ``max_seconds`` per query."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=ReadOnlyConnection)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(conn.authorize)
    deadline = time.monotonic() + max_seconds
    conn.set_progress_handler(lambda: conn.watch_clock(deadline), PROGRESS_STEPS)
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


TOO_LONG = "the query ran too long and was stopped after {seconds:g} s; add a LIMIT or a narrower WHERE, or compute less per row"


def several_statements(sql: str) -> bool:
    """True when ``sql`` holds more than one statement, which Python's driver refuses to run.

    After the first complete statement, anything but blanks and comments counts
    (even a lone ``;``), as in the driver's own check.
    """
    end = next((i for i, ch in enumerate(sql) if ch == ";" and sqlite3.complete_statement(sql[: i + 1])), None)
    rest = sql[end + 1:] if end is not None else ""
    while rest := rest.lstrip():
        if rest.startswith("--"):
            rest = rest.partition("\n")[2]
        elif rest.startswith("/*"):
            rest = rest.partition("*/")[2]
        else:
            return True
    return False


def explain(exc: BaseException, seconds: float, conn: ReadOnlyConnection | None = None, sql: str = "") -> str:
    """A model-facing reason for a failed query, from SQLite's error code and what ``conn`` saw."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_AUTH or (conn is not None and conn.denied):
        return "refused: this tool can only read (one SELECT statement; no writes, ATTACH, PRAGMA or extension loading)"
    if code is None and isinstance(exc, (sqlite3.ProgrammingError, sqlite3.Warning)) and several_statements(sql):
        return "refused: send exactly one SELECT statement (no ';' followed by another statement)"
    if code == sqlite3.SQLITE_INTERRUPT or (conn is not None and conn.timed_out):
        return TOO_LONG.format(seconds=round(seconds, 2))
    if code == sqlite3.SQLITE_READONLY:
        return "refused: the database is opened read-only"
    if code in (sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_NOMEM) or isinstance(exc, MemoryError):
        return f"SQL error: {text}: the query builds values or results too large; compute less (at most {MAX_VALUE_BYTES} bytes per value)"
    return f"SQL error: {text}"


def query(path: Path, sql: str, max_rows: int, max_seconds: float) -> str:
    """Run one read-only query against ``path``; the result as a compact table (raises :class:`Refused`)."""
    conn = open_read_only(path, max_seconds)
    try:
        cursor = conn.execute(sql)
        if cursor.description is None:
            raise Refused("the statement returned no result set; send one SELECT statement")
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(max_rows + 1)
    except (sqlite3.Error, sqlite3.Warning, MemoryError) as exc:  # Warning: several statements, on some 3.11 releases
        raise Refused(explain(exc, max_seconds, conn, sql)) from None
    finally:
        conn.close()
    table = format_table(columns, rows[:max_rows], len(rows) > max_rows, max_rows)
    if len(table) > MAX_TABLE_CHARS:
        table = table[:MAX_TABLE_CHARS] + f"\n(cut at {MAX_TABLE_CHARS} characters: select fewer columns or rows)"
    return table


def answer(line: bytes) -> dict[str, str]:
    """The answer to one request line."""
    try:
        request = json.loads(line)
        return {"table": query(Path(request["path"]), request["query"], request["max_rows"], request["max_seconds"])}
    except Refused as exc:
        return {"error": str(exc)}
    except Exception as exc:  # e.g. a lone surrogate in the query: still one clear answer
        return {"error": f"SQL error: {type(exc).__name__}: {exc}"}


def watch_parent(parent: int, every: float = 0.5) -> None:
    """End this process once its parent is gone: a hard-killed reinloop leaves no query burning CPU.

    It runs in a thread of its own, which runs even while the query is stuck in
    SQLite (the driver releases the GIL around each step).
    """
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(3)


def main() -> None:
    """Answer requests from stdin, one per line, until it closes (the parent is done, or gone)."""
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()  # given: it may be gone before we start
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {MAX_HEAP_BYTES}")  # for the whole process
    for line in sys.stdin.buffer:
        sys.stdout.buffer.write(json.dumps(answer(line)).encode("ascii") + b"\n")  # ASCII: whatever the locale
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
