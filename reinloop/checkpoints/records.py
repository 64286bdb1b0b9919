"""reinloop's own tables, the same on every SQL backend: runs, breaks, steps, tool journal, memories.

:class:`RecordTables` is mixed into
:class:`~reinloop.checkpoints.sql.SqlCheckpointer`, which calls it from
``put`` (a reinloop state is mirrored into its ``runs`` row in the same
transaction as the checkpoint) and ``put_writes`` (an interrupt that reports a
circuit break becomes a ``breaks`` row; the operator's answer resolves it).

The rest is the seam through which :class:`~reinloop.runlog.RunLog` (the
``steps`` table), :class:`~reinloop.tools.ToolJournal` (``tool_journal``) and
:class:`~reinloop.memory.MemoryStore` (``memories``) write to whatever
database the run uses: each takes a saver and calls ``append_step``,
``journal_*`` and ``memory_*``. Rows go in and come out as plain dicts; JSON
columns go in as JSON text and come out decoded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import ConfigurationError
from ..redact import redact_urls
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
from .blobs import BLOB_MIN_CHARS, digest, preview
from .schema import table

JOURNAL_KEY = ("thread_id", "run", "step", "position", "call_id", "tool", "args_hash")
MEMORY_KEY = ("scope", "thread_id", "run", "first_step", "last_step")


def insert_sql(name: str, columns: Sequence[str]) -> str:
    """``INSERT INTO name (columns) VALUES (?, ...)``."""
    return f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


class RecordTables:
    """The ``runs``, ``breaks``, ``steps``, ``tool_journal`` and ``memories`` tables of a SQL run database."""

    location: str
    read_only: bool
    dialect: Any
    _read: Any
    _write: Any
    _store_blobs: Any
    _texts: Any

    # -- runs and breaks -----------------------------------------------------------------------

    def _project(self, tx: Any, thread_id: str, checkpoint_id: str, values: Mapping[str, Any]) -> None:
        """Mirror a reinloop state into its ``runs`` row."""
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

    def _record_breaks(self, tx: Any, key: tuple[str, str, str], writes: Sequence[tuple[str, Any]]) -> None:
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
        with self._write() as tx:
            tx.execute(
                f"INSERT INTO runs (thread_id, created_at, updated_at{', ' if columns else ''}{names}) "
                f"VALUES (?, ?, ?{', ?' * len(columns)}) ON CONFLICT (thread_id) DO UPDATE SET {updates}",
                (str(thread_id), now, now, *columns.values()),
            )

    def get_run(self, thread_id: str) -> RunRecord | None:
        """The ``runs`` row of a thread, or None."""
        rows = self.query("SELECT * FROM runs WHERE thread_id = ?", (str(thread_id),))
        return run_record(rows[0]) if rows else None

    def list_runs(self, *, status: str | None = None) -> list[RunRecord]:
        """Every run, most recently updated first, optionally only those with ``status``."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        return [run_record(r) for r in self.query(f"SELECT * FROM runs {where} ORDER BY updated_at DESC", params)]

    def list_breaks(self, thread_id: str) -> list[BreakRecord]:
        """The circuit breaks of a thread, oldest first."""
        rows = self.query("SELECT * FROM breaks WHERE thread_id = ? ORDER BY id", (str(thread_id),))
        return [break_record(r) for r in rows]

    def stale_threads(self, older_than_days: float | None) -> list[str]:
        """Threads with checkpoints whose run was not updated for ``older_than_days`` days (all for None)."""
        sql = "SELECT DISTINCT c.thread_id FROM checkpoints c LEFT JOIN runs r ON r.thread_id = c.thread_id"
        params: tuple[Any, ...] = ()
        if older_than_days is not None:
            cutoff = datetime.now(timezone.utc) - timedelta(days=float(older_than_days))
            sql += " WHERE r.updated_at IS NULL OR r.updated_at < ?"
            params = (cutoff.isoformat(timespec="milliseconds"),)
        return [r["thread_id"] for r in self.query(sql + " ORDER BY c.thread_id", params)]

    def count_checkpoints(self, thread_id: str | None = None) -> int:
        """How many checkpoints are stored (for one thread, or all)."""
        where, params = ("WHERE thread_id = ?", (str(thread_id),)) if thread_id is not None else ("", ())
        return int(self.query(f"SELECT count(*) AS n FROM checkpoints {where}", params)[0]["n"])

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows of one read-only statement (``?`` or ``:name`` parameters on both backends), as dicts."""
        with self._read() as tx:
            cursor = tx.execute(sql, params)
            rows = cursor.fetchall()  # first: in PostgreSQL's pipeline mode the description comes with the rows
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in rows]

    # -- steps: the run log's seam ------------------------------------------------------------

    def append_step(self, row: Mapping[str, Any]) -> None:
        """Append one ``steps`` row (:func:`reinloop.runlog.to_row` of an event)."""
        with self._write() as tx:
            tx.execute(insert_sql("steps", list(row)), tuple(row.values()))

    def read_steps(self, thread_id: str) -> list[dict[str, Any]]:
        """The ``steps`` rows of a thread, oldest first."""
        return self.query("SELECT * FROM steps WHERE thread_id = ? ORDER BY id", (str(thread_id),))

    # -- tool_journal: the side-effect journal's seam -----------------------------------------

    def journal_begin(self, row: Mapping[str, Any]) -> None:
        """Record a call's intent (its key, ``args`` and ``started_at``), committed before this returns."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in JOURNAL_KEY)
        with self._write() as tx:
            tx.execute(
                insert_sql("tool_journal", list(row)) + f" ON CONFLICT ({', '.join(JOURNAL_KEY)}) DO UPDATE SET {updates}"
                ", finished_at = NULL, observation = NULL, observation_hash = NULL, error = NULL",
                tuple(row.values()),
            )

    def journal_finish(self, key: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """Record the result (``finished_at``, ``observation``, ``error``) of a journaled call.

        A long observation is stored once, in ``blobs``; the row keeps a preview and its hash.
        """
        result = dict(result)
        text = result.get("observation")
        blobs = {}
        if isinstance(text, str) and len(text) >= BLOB_MIN_CHARS:
            blobs[digest(text)] = text
            result.update(observation=preview(text), observation_hash=digest(text))
        sets = ", ".join(f"{c} = ?" for c in result)
        with self._write() as tx:
            self._store_blobs(tx, str(key["thread_id"]), blobs)
            tx.execute(f"UPDATE tool_journal SET {sets} WHERE {_match(JOURNAL_KEY)}",
                       (*result.values(), *(key[c] for c in JOURNAL_KEY)))

    def journal_get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The journal row with this key (its whole observation), or None."""
        rows = self._journal(f"WHERE {_match(JOURNAL_KEY)}", tuple(key[c] for c in JOURNAL_KEY))
        return rows[0] if rows else None

    def journal_rows(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Every journal row (of one thread), oldest first, with whole observations."""
        where, params = ("WHERE thread_id = ?", (thread_id,)) if thread_id is not None else ("", ())
        return self._journal(f"{where} ORDER BY started_at", params)

    def _journal(self, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """Journal rows, each observation stored in ``blobs`` read back whole."""
        with self._read() as tx:
            cursor = tx.execute(f"SELECT * FROM tool_journal {where}", params)
            rows = cursor.fetchall()
            names = [d[0] for d in cursor.description]
            found = [dict(zip(names, row)) for row in rows]
            for row in found:
                if row.get("observation_hash"):
                    texts = self._texts(tx, row["thread_id"], {row["observation_hash"]}, None)
                    row["observation"] = texts[row["observation_hash"]]
        return found

    # -- memories: the memory store's seam -----------------------------------------------------

    def memory_add(self, row: Mapping[str, Any]) -> int:
        """Store a memory row; a row with the same folded steps of the same run is replaced. Its id."""
        with self._write() as tx:
            found = None
            if row.get("first_step"):
                found = tx.execute(f"SELECT id FROM memories WHERE {_match(MEMORY_KEY)}",
                                   tuple(row[c] for c in MEMORY_KEY)).fetchone()
            if found is not None:
                sets = ", ".join(f"{c} = ?" for c in row)
                tx.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*row.values(), found[0]))
                return int(found[0])
            cursor = tx.execute(insert_sql("memories", list(row)) + self.dialect.returning, tuple(row.values()))
            return int(cursor.fetchone()[0] if self.dialect.returning else cursor.lastrowid)

    def memory_count(self, scope: str | None = None) -> int:
        """Memories in ``scope`` (all when None)."""
        where, params = ("WHERE scope = ?", (scope,)) if scope is not None else ("", ())
        return int(self.query(f"SELECT count(*) AS n FROM memories {where}", params)[0]["n"])

    def memory_rows(self, scope: str | None = None, model: str | None = None, *, vectors: bool = True) -> list[dict[str, Any]]:
        """Memory rows, oldest first, of one scope (and embedding model); without embeddings unless ``vectors``."""
        conditions = [(c, v) for c, v in (("scope", scope), ("model", model)) if v is not None]
        where = ("WHERE " + " AND ".join(f"{c} = ?" for c, _ in conditions)) if conditions else ""
        columns = "*" if vectors else ", ".join(c.name for c in table("memories").columns if c.name != "embedding")
        rows = self.query(f"SELECT {columns} FROM memories {where} ORDER BY id", tuple(v for _, v in conditions))
        for r in rows:
            if "embedding" in r:
                r["embedding"] = bytes(r["embedding"])
        return rows


def _match(columns: Sequence[str]) -> str:
    return " AND ".join(f"{c} = ?" for c in columns)


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
