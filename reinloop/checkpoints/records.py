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

from ..errors import ConfigurationError, StoredDataError
from ..observe.redact import redact_urls
from ..state import Counters
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
from .shapes import check

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

        Every URL among them is stored without its credentials (:func:`~reinloop.observe.redact.redact_url`).
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

    def claim(self, thread_id: str, host: str, pid: int) -> None:
        """Record that the process ``pid`` on ``host`` runs ``thread_id`` now, with its first heartbeat."""
        now = now_iso()
        with self.db.write() as tx:
            tx.execute(
                "INSERT INTO runs (thread_id, created_at, updated_at, owner_host, owner_pid, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET owner_host = excluded.owner_host, "
                "owner_pid = excluded.owner_pid, heartbeat_at = excluded.heartbeat_at",
                (str(thread_id), now, now, host, int(pid), now),
            )

    def beat(self, thread_id: str, pid: int) -> None:
        """The heartbeat of the process ``pid`` that runs ``thread_id`` (none once another process took it over)."""
        with self.db.write() as tx:
            tx.execute("UPDATE runs SET heartbeat_at = ? WHERE thread_id = ? AND owner_pid = ?",
                       (now_iso(), str(thread_id), int(pid)))

    def interrupted(self, thread_id: str, task: str) -> None:
        """Mark a run that Ctrl-C or SIGTERM stopped while it ran as ``interrupted`` (``reinloop resume`` goes on)."""
        now = now_iso()
        with self.db.write() as tx:
            tx.execute(
                "UPDATE runs SET status = 'interrupted', task = COALESCE(task, ?), updated_at = ?, heartbeat_at = NULL "
                "WHERE thread_id = ? AND (status IS NULL OR status IN ('running', 'interrupted'))",
                (task, now, str(thread_id)),
            )

    def get(self, thread_id: str) -> RunRecord | None:
        """The ``runs`` row of a thread, or None."""
        rows = self.db.query("SELECT * FROM runs WHERE thread_id = ?", (str(thread_id),))
        return run_record(rows[0]) if rows else None

    def list(self, *, status: str | None = None) -> list[RunRecord]:
        """Every run, most recently updated first, optionally only those with ``status``.

        A row that cannot be read is listed as a damaged run (:func:`damaged_record`), not an error of the list.
        """
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        rows = self.db.query(f"SELECT * FROM runs {where} ORDER BY updated_at DESC", params)
        return [readable_record(r) for r in rows]

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


def json_value(data: Any, default: Any, field: str = "", kind: type = object) -> Any:
    """A JSON column's value: text (SQLite) is decoded, an already decoded value (PostgreSQL) kept.

    A value that is not JSON, or not of ``kind``, is a :class:`StoredDataError` naming ``field``.
    """
    if data is None or data == "":
        return default
    try:
        value = json.loads(data) if isinstance(data, (str, bytes)) else data
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoredDataError(field, f"it is not JSON ({exc})") from None
    if not isinstance(value, kind):
        raise StoredDataError(field, f"it is a {type(value).__name__}, not a JSON {JSON_KINDS.get(kind, kind.__name__)}")
    return value


JSON_KINDS = {dict: "object", list: "list"}


def counters_value(data: Any) -> dict[str, Any]:
    """The ``runs.counters`` column: a state's :class:`~reinloop.state.Counters` (or ``{}``), checked."""
    counters = json_value(data, {}, "runs.counters", dict)
    if counters:
        check(counters, Counters, "runs.counters", counts=True)
    return counters  # type: ignore[no-any-return]


def text_columns(row: Mapping[str, Any], table: str, names: Sequence[str], kind: type | tuple[type, ...] = str) -> dict[str, Any]:
    """``names`` of ``row``, each ``None`` or of ``kind``; another type is a :class:`StoredDataError` naming it."""
    for name in names:
        value = row[name]
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise StoredDataError(f"{table}.{name}", f"it is a {type(value).__name__} ({str(value)[:40]!r})")
    return {name: row[name] for name in names}


def run_record(row: Mapping[str, Any]) -> RunRecord:
    """A :class:`RunRecord` from a ``runs`` row (URLs redacted, also those an older reinloop stored whole)."""
    plain = ("paused", "counters", "tools", "limits", "options", "base_url", "spec", "steps", "owner_pid", "damage")
    try:
        return RunRecord(
            **text_columns(row, "runs", [k for k in RunRecord.__dataclass_fields__ if k not in plain]),
            **text_columns(row, "runs", ["steps", "owner_pid"], int),
            paused=bool(row["paused"]),
            counters=counters_value(row["counters"]),
            tools=json_value(row["tools"], None, "runs.tools", list),
            limits=json_value(row["limits"], None, "runs.limits", dict),
            options=redact_urls(json_value(row["options"], None, "runs.options", dict)),
            spec=redact_urls(json_value(row["spec"], None, "runs.spec", dict)),
            base_url=redact_urls(text_columns(row, "runs", ["base_url"])["base_url"]),
        )
    except StoredDataError as exc:
        raise exc.at(thread_id=str(row["thread_id"])) from None


def readable_record(row: Mapping[str, Any]) -> RunRecord:
    """:func:`run_record`, or for a row that cannot be read the run marked damaged (:func:`damaged_record`)."""
    try:
        return run_record(row)
    except StoredDataError as exc:
        return damaged_record(str(row["thread_id"]), exc)


def damaged_record(thread_id: str, error: StoredDataError) -> RunRecord:
    """A run that cannot be read, as ``runs list`` shows it: status ``damaged``, what cannot be read as its ``damage``."""
    return RunRecord(thread_id=thread_id, task=None, status="damaged", paused=False, answer=None, break_reason=None,
                     break_message=None, steps=None, counters={}, checkpoint_id=None, model=None, base_url=None,
                     protocol=None, tools=None, limits=None, system_prompt=None, created_at=None, updated_at=None,
                     damage=f"{error.field} cannot be read: {error.problem}")


def break_record(row: Mapping[str, Any]) -> BreakRecord:
    """A :class:`BreakRecord` from a ``breaks`` row."""
    try:
        return BreakRecord(
            id=row["id"],
            **text_columns(row, "breaks", ["thread_id", "checkpoint_id", "reason", "message", "created_at", "resolved_at"]),
            counters=json_value(row["counters"], {}, "breaks.counters", dict),
            limits=json_value(row["limits"], {}, "breaks.limits", dict),
            resolution=json_value(row["resolution"], None, "breaks.resolution", dict),
        )
    except StoredDataError as exc:
        raise exc.at(thread_id=str(row["thread_id"])) from None
