"""Every one-field edit of a recorded run database: the attack inputs of tests/test_stored_runs.py.

An edit changes one thing of one run's rows, as someone with write access to the file could: a whole column
(of every row of a table, or of one channel's rows), or one field inside a JSON value (a key of the stored
spec, of a checkpoint, of a channel's latest value, of a node event). Each is replaced by values of other
types, null, huge and negative numbers and bytes that are no text. The edits are made from what the database
holds, so a new column, channel or spec field is edited too without a change here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WHOLE = {  # a whole stored value replaced
    "null": None, "number": 12345, "negative": -7, "float": 1e308, "text": "x", "bad JSON": "{not json",
    "garbage bytes": b"\xc1\xff\x00", "list": "[1, [2]]", "object": '{"a": {"b": 1}}', "huge number": str(10**30),
}
INNER = {  # one field inside a JSON value replaced (the value stays JSON)
    "null": None, "number": 12345, "negative": -7, "huge": 10**30, "float": 1e308, "text": "x",
    "list": [1, [2]], "object": {"a": {"b": 1}}, "true": True,
}
TABLES = ("runs", "checkpoints", "channel_values", "checkpoint_writes", "node_events", "tool_journal", "breaks", "blobs")
BY_CHANNEL = ("channel_values", "checkpoint_writes")  # their values are edited one channel at a time
JSON_CELLS = {  # (table, column): the JSON values whose fields are edited one at a time
    ("runs", "spec"), ("runs", "counters"), ("runs", "tools"), ("runs", "limits"), ("runs", "options"),
    ("checkpoints", "checkpoint"), ("checkpoints", "metadata"), ("channel_values", "value"),
    ("checkpoint_writes", "value"), ("node_events", "actions"), ("node_events", "data"), ("node_events", "counters"), ("tool_journal", "args"),
}
MAX_DEPTH = 4  # fields deeper than this are edited through their parents


@dataclass(frozen=True)
class Edit:
    """Set ``column`` of ``table``'s rows selected by ``where`` (or the ``path`` inside their JSON) to ``value``."""

    table: str
    column: str
    where: str  # SQL condition on the table's rows of run 't1' (one channel, the latest row ...)
    path: tuple[str | int, ...]  # () for the whole column
    value: str  # a key of WHOLE (path empty) or INNER

    def __str__(self) -> str:
        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)
        return f"{self.table}.{self.column}{inner} ({self.where}) = {self.value}"

    def apply(self, db: Path) -> bool:
        """Make the edit in ``db``; False when there is nothing to edit or the database refuses it (a constraint)."""
        with sqlite3.connect(db) as conn:
            try:
                if not self.path:
                    return conn.execute(f"UPDATE {self.table} SET {self.column} = ? WHERE thread_id = 't1' AND "
                                        f"{self.where}", (WHOLE[self.value],)).rowcount > 0
                rows = conn.execute(f"SELECT rowid, {self.column} FROM {self.table} WHERE thread_id = 't1' AND "
                                    f"{self.where}").fetchall()
                for rowid, cell in rows:
                    data = json.loads(cell)
                    set_path(data, self.path, INNER[self.value])
                    conn.execute(f"UPDATE {self.table} SET {self.column} = ? WHERE rowid = ?", (json.dumps(data), rowid))
                return bool(rows)
            except sqlite3.IntegrityError:
                return False


def set_path(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def leaves(value: Any, depth: int = 0) -> Iterator[tuple[str | int, ...]]:
    """The paths of ``value``'s fields: every key and the first item of every list, to ``MAX_DEPTH`` levels."""
    items = value.items() if isinstance(value, dict) else [(0, value[0])] if isinstance(value, list) and value else []
    for key, inner in items:
        yield (key,)
        if depth + 1 < MAX_DEPTH:
            for rest in leaves(inner, depth + 1):
                yield (key, *rest)


def row_groups(conn: sqlite3.Connection, table: str, column: str) -> list[str]:
    """The WHERE conditions that select the groups of ``table``'s rows whose ``column`` is edited together."""
    if table not in BY_CHANNEL or column != "value":
        return ["1 = 1"]
    channels = [r[0] for r in conn.execute(f"SELECT DISTINCT channel FROM {table} WHERE thread_id = 't1'")]
    return [f"channel = {quote(c)}" for c in channels]


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def latest(conn: sqlite3.Connection, table: str, column: str, where: str) -> tuple[str, Any] | None:
    """The condition selecting the latest row of a group that holds JSON in ``column``, and that JSON."""
    order = {"channel_values": "version", "checkpoints": "checkpoint_id"}.get(table, "rowid")
    extra = " AND type = 'json'" if table == "channel_values" else ""
    row = conn.execute(f"SELECT rowid, {column} FROM {table} WHERE thread_id = 't1' AND {where}{extra} AND {column} "
                       f"IS NOT NULL ORDER BY {order} DESC LIMIT 1").fetchone()
    if row is None:
        return None
    try:
        return f"rowid = {row[0]}", json.loads(row[1])
    except (TypeError, ValueError):
        return None


def edits(db: Path) -> list[Edit]:
    """Every one-field edit of run ``t1`` in ``db``."""
    found: list[Edit] = []
    with sqlite3.connect(db) as conn:
        for table in TABLES:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            for column in columns:
                for where in row_groups(conn, table, column):
                    found += [Edit(table, column, where, (), v) for v in WHOLE]
                    if (table, column) in JSON_CELLS and (cell := latest(conn, table, column, where)):
                        row, data = cell
                        paths = dict.fromkeys(leaves(data))  # each field once, in order
                        found += [Edit(table, column, row, p, v) for p in paths for v in INNER]
    return found
