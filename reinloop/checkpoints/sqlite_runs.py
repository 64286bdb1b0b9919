"""reinloop's own tables in the SQLite backend: ``runs`` and ``breaks``.

:class:`SqliteRunTables` is mixed into
:class:`~reinloop.checkpoints.sqlite.SqliteCheckpointer`, which calls it from
``put`` (a reinloop state is mirrored into its ``runs`` row in the same
transaction as the checkpoint) and ``put_writes`` (an interrupt that reports a
circuit break becomes a ``breaks`` row; the operator's answer resolves it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError, StorageError
from .base import (
    RUN_SETTINGS,
    BreakRecord,
    RunRecord,
    break_interrupts,
    dumps_json,
    now_iso,
    resume_value,
    run_summary,
)
from .sqlitedb import storage_errors


class SqliteRunTables:
    """The ``runs`` and ``breaks`` tables of a SQLite run database."""

    location: str
    read_only: bool
    timeout: float
    conn: sqlite3.Connection
    lock: Any
    _read: Any
    _write: Any

    def _project(self, conn: sqlite3.Connection, thread_id: str, checkpoint_id: str, values: Mapping[str, Any]) -> None:
        """Mirror a reinloop state into its ``runs`` row."""
        summary = run_summary(values)
        if summary is None:
            return
        columns = {**summary, "checkpoint_id": checkpoint_id, "updated_at": now_iso()}
        names = ", ".join(columns)
        updates = ", ".join(f"{k} = excluded.{k}" for k in columns)
        conn.execute(
            f"INSERT INTO runs (thread_id, created_at, {names}) VALUES (?, ?, {', '.join('?' * len(columns))}) "
            f"ON CONFLICT(thread_id) DO UPDATE SET {updates}",
            (thread_id, columns["updated_at"], *columns.values()),
        )

    def _record_breaks(self, conn: sqlite3.Connection, key: tuple[str, str, str], writes: Sequence[tuple[str, Any]]) -> None:
        for interrupt_id, payload in break_interrupts(writes):
            conn.execute(
                "INSERT OR IGNORE INTO breaks (thread_id, checkpoint_ns, checkpoint_id, interrupt_id, reason, message, "
                "counters, limits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, interrupt_id, payload.get("reason"), payload.get("message"),
                 json.dumps(payload.get("counters"), default=str), json.dumps(payload.get("limits"), default=str), now_iso()),
            )
        answer = resume_value(writes)
        if answer is not None:
            conn.execute(
                "UPDATE breaks SET resolution = ?, resolved_at = ? WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND checkpoint_id = ? AND resolution IS NULL",
                (json.dumps(answer, ensure_ascii=False, default=str), now_iso(), *key),
            )

    def record_settings(self, thread_id: str, settings: Mapping[str, Any]) -> None:
        """Store how a run was started (model, base_url, protocol, tools, limits, system_prompt)."""
        unknown = sorted(set(settings) - set(RUN_SETTINGS))
        if unknown:
            raise ConfigurationError(f"unknown run setting(s) {', '.join(unknown)}; valid: {', '.join(RUN_SETTINGS)}")
        columns = {k: (dumps_json(v) if k in ("tools", "limits", "options") and v is not None else v) for k, v in settings.items()}
        now = now_iso()
        names = ", ".join(columns)
        updates = ", ".join(f"{k} = excluded.{k}" for k in [*columns, "updated_at"])
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO runs (thread_id, created_at, updated_at{', ' if columns else ''}{names}) "
                f"VALUES (?, ?, ?{', ?' * len(columns)}) ON CONFLICT(thread_id) DO UPDATE SET {updates}",
                (str(thread_id), now, now, *columns.values()),
            )

    def get_run(self, thread_id: str) -> RunRecord | None:
        """The ``runs`` row of a thread, or None."""
        rows = self._query("SELECT * FROM runs WHERE thread_id = ?", (str(thread_id),))
        return run_record(rows[0]) if rows else None

    def list_runs(self, *, status: str | None = None) -> list[RunRecord]:
        """Every run, most recently updated first, optionally only those with ``status``."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        return [run_record(r) for r in self._query(f"SELECT * FROM runs {where} ORDER BY updated_at DESC", params)]

    def list_breaks(self, thread_id: str) -> list[BreakRecord]:
        """The circuit breaks of a thread, oldest first."""
        rows = self._query("SELECT * FROM breaks WHERE thread_id = ? ORDER BY id", (str(thread_id),))
        return [break_record(r) for r in rows]

    def stale_threads(self, older_than_days: float | None) -> list[str]:
        """Threads with checkpoints whose run was not updated for ``older_than_days`` days (all for None)."""
        sql = "SELECT DISTINCT c.thread_id FROM checkpoints c LEFT JOIN runs r ON r.thread_id = c.thread_id"
        params: tuple[Any, ...] = ()
        if older_than_days is not None:
            sql += " WHERE r.updated_at IS NULL OR r.updated_at < strftime('%Y-%m-%dT%H:%M:%f', 'now', ?)"
            params = (f"-{float(older_than_days)} days",)
        return [r["thread_id"] for r in self._query(sql + " ORDER BY c.thread_id", params)]

    def count_checkpoints(self, thread_id: str | None = None) -> int:
        """How many checkpoints are stored (for one thread, or all)."""
        where, params = ("WHERE thread_id = ?", (str(thread_id),)) if thread_id is not None else ("", ())
        return int(self._query(f"SELECT count(*) AS n FROM checkpoints {where}", params)[0]["n"])

    def compact(self) -> None:
        """``VACUUM`` the file, giving the space of deleted rows back to the file system."""
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; it cannot be compacted")
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode the file shrinks only here

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._read() as conn:
            cursor = conn.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]


def _json(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


def run_record(row: Mapping[str, Any]) -> RunRecord:
    """A :class:`RunRecord` from a ``runs`` row."""
    return RunRecord(
        **{k: row[k] for k in RunRecord.__dataclass_fields__ if k not in ("paused", "counters", "tools", "limits", "options")},
        paused=bool(row["paused"]),
        counters=_json(row["counters"], {}),
        tools=_json(row["tools"], None),
        limits=_json(row["limits"], None),
        options=_json(row["options"], None),
    )


def break_record(row: Mapping[str, Any]) -> BreakRecord:
    """A :class:`BreakRecord` from a ``breaks`` row."""
    return BreakRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        checkpoint_id=row["checkpoint_id"],
        reason=row["reason"],
        message=row["message"],
        counters=_json(row["counters"], {}),
        limits=_json(row["limits"], {}),
        created_at=row["created_at"],
        resolution=_json(row["resolution"], None),
        resolved_at=row["resolved_at"],
    )


