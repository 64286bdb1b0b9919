"""``RunStore``: the ``runs`` and ``breaks`` tables, the same SQL on every backend.

``runs`` holds one row per thread: how the run was started
(:meth:`RunStore.record_settings`) and where it stands, mirrored from its
latest checkpoint by :meth:`RunStore.mirror`, which the checkpointer calls in
the checkpoint's own transaction. ``breaks`` holds one row per circuit break
that paused a run: an interrupt that reports one becomes a row
(:meth:`RunStore.record_breaks`, called from ``put_writes``), and the
operator's answer resolves it. Rows come out as :class:`RunRecord` and
:class:`BreakRecord`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..redact import redact_urls
from .rows import (
    RUN_SETTINGS,
    BreakRecord,
    RunRecord,
    break_interrupts,
    dumps_json,
    now_iso,
    resume_value,
    run_summary,
)

if TYPE_CHECKING:
    from .database import Database
    from .sql import Tx


class RunStore:
    """The ``runs`` and ``breaks`` tables of a run database: what each run is, where it stands, where it broke."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def mirror(self, tx: Tx, thread_id: str, checkpoint_id: str, values: Mapping[str, Any]) -> None:
        """Mirror a reinloop state into its ``runs`` row, in the checkpoint's transaction ``tx``."""
        summary = run_summary(values)
        if summary is None:
            return
        columns = {**summary, "checkpoint_id": checkpoint_id, "updated_at": now_iso()}
        names = ", ".join(columns)
        updates = ", ".join(f"{k} = excluded.{k}" for k in columns)
        tx.execute(
            f"INSERT INTO runs (thread_id, created_at, {names}) VALUES (?, ?, {', '.join('?' * len(columns))}) "
            f"ON CONFLICT (thread_id) DO UPDATE SET {updates}",
            (thread_id, columns["updated_at"], *columns.values()),
        )

    def record_breaks(self, tx: Tx, key: tuple[str, str, str], writes: Sequence[tuple[str, Any]]) -> None:
        """A ``breaks`` row for each circuit break among a task's ``writes``; the operator's answer resolves it."""
        for interrupt_id, payload in break_interrupts(writes):
            tx.execute(
                "INSERT INTO breaks (thread_id, checkpoint_ns, checkpoint_id, interrupt_id, reason, message, "
                "counters, limits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (*key, interrupt_id, payload.get("reason"), payload.get("message"),
                 json.dumps(payload.get("counters"), default=str), json.dumps(payload.get("limits"), default=str), now_iso()),
            )
        answer = resume_value(writes)
        if answer is not None:
            tx.execute(
                "UPDATE breaks SET resolution = ?, resolved_at = ? WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND checkpoint_id = ? AND resolution IS NULL",
                (json.dumps(answer, ensure_ascii=False, default=str), now_iso(), *key),
            )

    def record_settings(self, thread_id: str, settings: Mapping[str, Any]) -> None:
        """Store how a run was started (model, base_url, protocol, tools, limits, system_prompt).

        Every URL among them is stored without its credentials (:func:`~reinloop.redact.redact_url`).
        """
        unknown = sorted(set(settings) - set(RUN_SETTINGS))
        if unknown:
            raise ConfigurationError(f"unknown run setting(s) {', '.join(unknown)}; valid: {', '.join(RUN_SETTINGS)}")
        settings = {k: redact_urls(v) if k in ("base_url", "options", "spec") else v for k, v in settings.items()}
        columns = {k: (dumps_json(v) if k in ("tools", "limits", "options", "spec") and v is not None else v)
                   for k, v in settings.items()}
        now = now_iso()
        names = ", ".join(columns)
        updates = ", ".join(f"{k} = excluded.{k}" for k in [*columns, "updated_at"])
        with self.db.write() as tx:
            tx.execute(
                f"INSERT INTO runs (thread_id, created_at, updated_at{', ' if columns else ''}{names}) "
                f"VALUES (?, ?, ?{', ?' * len(columns)}) ON CONFLICT (thread_id) DO UPDATE SET {updates}",
                (str(thread_id), now, now, *columns.values()),
            )

    def record_spec(self, thread_id: str, spec: Any) -> None:
        """Store how a run is made (a :class:`~reinloop.RunSpec`): the spec's JSON, and copies of its main
        fields in their own columns for SQL readers."""
        self.record_settings(thread_id, {
            "model": spec.model, "base_url": spec.base_url, "protocol": spec.protocol, "tools": list(spec.tools),
            "limits": spec.limits.as_dict(), "system_prompt": spec.system_prompt, "spec": spec.stored(),
        })

    def get(self, thread_id: str) -> RunRecord | None:
        """The ``runs`` row of a thread, or None."""
        rows = self.db.query("SELECT * FROM runs WHERE thread_id = ?", (str(thread_id),))
        return run_record(rows[0]) if rows else None

    def list(self, *, status: str | None = None) -> list[RunRecord]:
        """Every run, most recently updated first, optionally only those with ``status``."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        return [run_record(r) for r in self.db.query(f"SELECT * FROM runs {where} ORDER BY updated_at DESC", params)]

    def breaks(self, thread_id: str) -> list[BreakRecord]:
        """The circuit breaks of a thread, oldest first."""
        rows = self.db.query("SELECT * FROM breaks WHERE thread_id = ? ORDER BY id", (str(thread_id),))
        return [break_record(r) for r in rows]

    def stale_threads(self, older_than_days: float | None) -> list[str]:
        """Threads with checkpoints whose run was not updated for ``older_than_days`` days (all for None)."""
        sql = "SELECT DISTINCT c.thread_id FROM checkpoints c LEFT JOIN runs r ON r.thread_id = c.thread_id"
        params: tuple[Any, ...] = ()
        if older_than_days is not None:
            cutoff = datetime.now(timezone.utc) - timedelta(days=float(older_than_days))
            sql += " WHERE r.updated_at IS NULL OR r.updated_at < ?"
            params = (cutoff.isoformat(timespec="milliseconds"),)
        return [r["thread_id"] for r in self.db.query(sql + " ORDER BY c.thread_id", params)]


def json_value(data: Any, default: Any) -> Any:
    """A JSON column's value: text (SQLite) is decoded, an already decoded value (PostgreSQL) kept."""
    if data is None or data == "":
        return default
    return json.loads(data) if isinstance(data, (str, bytes)) else data


def run_record(row: Mapping[str, Any]) -> RunRecord:
    """A :class:`RunRecord` from a ``runs`` row (URLs redacted, also those an older reinloop stored whole)."""
    plain = ("paused", "counters", "tools", "limits", "options", "base_url", "spec")
    return RunRecord(
        **{k: row[k] for k in RunRecord.__dataclass_fields__ if k not in plain},
        paused=bool(row["paused"]),
        counters=json_value(row["counters"], {}),
        tools=json_value(row["tools"], None),
        limits=json_value(row["limits"], None),
        options=redact_urls(json_value(row["options"], None)),
        spec=redact_urls(json_value(row["spec"], None)),
        base_url=redact_urls(row["base_url"]),
    )


def break_record(row: Mapping[str, Any]) -> BreakRecord:
    """A :class:`BreakRecord` from a ``breaks`` row."""
    return BreakRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        checkpoint_id=row["checkpoint_id"],
        reason=row["reason"],
        message=row["message"],
        counters=json_value(row["counters"], {}),
        limits=json_value(row["limits"], {}),
        created_at=row["created_at"],
        resolution=json_value(row["resolution"], None),
        resolved_at=row["resolved_at"],
    )
