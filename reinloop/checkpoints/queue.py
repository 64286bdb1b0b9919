"""The batch queue in the run database: the ``tasks`` table, claimed with the database's own locks.

A batch (:mod:`reinloop.runs.batches`) puts one row per task into ``tasks``; every
worker, on any machine, then loops: claim one task, run (or resume) it,
record how it ended. There is no coordinator. What keeps two workers off the
same task is the database:

- **PostgreSQL**: the claim is ``SELECT ... FOR UPDATE SKIP LOCKED`` and an
  ``UPDATE`` in one transaction, so concurrent claimers each lock a different
  row and never wait for each other;
- **SQLite**: the claim is the same two statements in a ``BEGIN IMMEDIATE``
  transaction, which holds the file's write lock (one machine only).

A claimed task carries a lease (``lease_until``, on the database's clock) that
the worker's heartbeat renews. A worker that dies stops renewing; once its
lease has run out the task is claimable again, and the next worker resumes
the run from its last checkpoint. A worker records a task's end only while it
still holds it (``worker`` matches), so a worker that stalled past its lease
cannot overwrite the outcome of the one that took over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .rows import dumps_json, now_iso
from .records import json_value

if TYPE_CHECKING:
    from .database import Database

CHUNK = 500
"""Task ids per ``IN (...)`` list when a batch is enqueued."""

CLAIMABLE = "batch = ? AND (status = 'queued' OR (status = 'running' AND lease_until < {now}))"


class TaskQueue:
    """The ``tasks`` table of a run database: enqueue, claim, renew, finish."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def enqueue(self, batch: str, tasks: Sequence[Mapping[str, Any]]) -> int:
        """Add a batch's tasks (``thread_id``, ``line``, ``task``, ``spec``) once; how many were new.

        Starting the same batch again (on another machine, or after a crash)
        adds nothing. A thread id that already belongs to another batch is
        refused before anything is written.
        """
        ids = [str(t["thread_id"]) for t in tasks]
        with self.db.write() as tx:
            for start in range(0, len(ids), CHUNK):
                chunk = ids[start : start + CHUNK]
                taken = tx.execute(
                    f"SELECT thread_id, batch FROM tasks WHERE batch <> ? AND thread_id IN ({', '.join('?' * len(chunk))})",
                    (batch, *chunk),
                ).fetchall()
                if taken:
                    thread, other = taken[0]
                    raise ConfigurationError(
                        f"thread id {thread!r} is already a task of batch {other!r} in {self.db.location}; give the task "
                        "another thread_id, or leave thread_id out to get one per batch and line"
                    )
            before = tx.execute("SELECT count(*) FROM tasks WHERE batch = ?", (batch,)).fetchone()[0]
            now = now_iso()
            tx.executemany(
                "INSERT INTO tasks (thread_id, batch, line, task, spec, status, attempts, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'queued', 0, ?) ON CONFLICT DO NOTHING",
                [(str(t["thread_id"]), batch, int(t["line"]), str(t["task"]), dumps_json(t.get("spec") or {}), now)
                 for t in tasks],
            )
            after = tx.execute("SELECT count(*) FROM tasks WHERE batch = ?", (batch,)).fetchone()[0]
        return int(after - before)

    def claim(self, batch: str, worker_id: str, lease: float) -> dict[str, Any] | None:
        """Take the next queued task of ``batch`` (or one whose lease ran out) for ``lease`` seconds; None if none."""
        now = self.db.dialect.now
        with self.db.write() as tx:
            row = tx.execute(
                f"SELECT thread_id, line, task, spec, attempts FROM tasks WHERE {CLAIMABLE.format(now=now)} "
                f"ORDER BY line LIMIT 1{self.db.dialect.claim_lock}",
                (batch,),
            ).fetchone()
            if row is None:
                return None
            tx.execute(
                f"UPDATE tasks SET status = 'running', worker = ?, attempts = attempts + 1, "
                f"lease_until = {now} + ?, claimed_at = {now} WHERE thread_id = ?",
                (worker_id, float(lease), row[0]),
            )
        thread_id, line, task, spec, attempts = row
        return {"thread_id": thread_id, "line": line, "task": task, "spec": json_value(spec, {}), "attempts": attempts + 1}

    def renew(self, worker_id: str, lease: float, thread_ids: Iterable[str]) -> set[str]:
        """Extend the leases ``worker_id`` holds on ``thread_ids``; the ones it still holds (others were taken over)."""
        ids = list(thread_ids)
        if not ids:
            return set()
        with self.db.write() as tx:
            rows = tx.execute(
                f"UPDATE tasks SET lease_until = {self.db.dialect.now} + ? WHERE worker = ? AND status = 'running' "
                f"AND thread_id IN ({', '.join('?' * len(ids))}) RETURNING thread_id",
                (float(lease), worker_id, *ids),
            ).fetchall()
            return {r[0] for r in rows}

    def finish(self, thread_id: str, worker_id: str, result: Mapping[str, Any]) -> bool:
        """Record how a task ended (``status`` done/broken/error, ``answer``, ``tokens`` ...); False if it was lost."""
        sets = ", ".join(f"{k} = ?" for k in result)
        with self.db.write() as tx:
            cursor = tx.execute(
                f"UPDATE tasks SET {sets}, finished_at = {self.db.dialect.now}, lease_until = NULL "
                "WHERE thread_id = ? AND worker = ? AND status = 'running'",
                (*result.values(), thread_id, worker_id),
            )
            return cursor.rowcount == 1

    def counts(self, batch: str) -> dict[str, int]:
        """How many tasks of ``batch`` are queued, running, done, broken or error."""
        rows = self.db.query("SELECT status, count(*) AS n FROM tasks WHERE batch = ? GROUP BY status", (batch,))
        return {r["status"]: int(r["n"]) for r in rows}

    def tasks(self, batch: str) -> list[dict[str, Any]]:
        """Every task row of ``batch``, in file order."""
        rows = self.db.query("SELECT * FROM tasks WHERE batch = ? ORDER BY line", (batch,))
        for r in rows:
            r["spec"] = json_value(r["spec"], {})
        return rows
