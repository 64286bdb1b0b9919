"""The side-effects journal: at-most-once tool calls across crashes.

Before the executor runs a tool declared ``side_effects=True`` it writes an
*intent* row (thread, run, step, position, call id, tool, hash of the
arguments) and commits it; when the tool returns, it fills in the result. A
resumed run re-executes the node that was interrupted, so the same call comes
around again with the same key, and the journal decides:

- no row: the call never started; run it;
- a row with a result: the call finished but the step was not checkpointed;
  the recorded observation is replayed, the tool is not run again;
- an intent without a result: the process died during the call. Whether the
  effect happened is unknown, so the call is *not* repeated; the model is
  told the outcome is unknown and can check.

Idempotent tools are not journaled: re-running them is harmless.

Both records a process depends on are one ``INSERT`` that does nothing on a
duplicate key, never a check and then an insert: of two processes that reach
the same call at once, exactly one records its intent and runs it
(:meth:`ToolJournal.begin`); of two ``reinloop approve`` commands that answer
the same waiting checkpoint, exactly one claims the answer and resumes the
run (:meth:`ToolJournal.decide`), so the thread is never forked.

The journal is one store of a run database (``db.journal``, see
:mod:`reinloop.checkpoints.database`): the same SQL on a SQLite file,
PostgreSQL, or, by default, an in-memory SQLite database that keeps it for
the life of the process. A long observation is stored once, in ``blobs``;
the row keeps a preview and its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import Database, database_for
from .blobs import BLOB_MIN_CHARS, digest, preview, preview_value
from .sql import dict_rows, insert_sql, match, read_blobs, store_blobs

TABLE = "tool_journal"
KEY_COLUMNS = ("thread_id", "run", "step", "position", "call_id", "tool", "args_hash")
DECISION_TOOL = "reinloop.approval"
"""The ``tool`` of a journal row that claims an operator's answer (position -1, call id: the answered checkpoint)."""


def args_hash(args: dict[str, Any]) -> str:
    """A stable hash of a call's arguments (key order does not matter)."""
    text = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class CallKey:
    """Where a call belongs: the same call after a resume has the same key."""

    thread_id: str
    run: int
    step: int
    position: int
    call_id: str
    tool: str
    args_hash: str

    def as_row(self) -> dict[str, Any]:
        """The key as column values."""
        return {c: getattr(self, c) for c in KEY_COLUMNS}


@dataclass(frozen=True)
class JournalEntry:
    """One journaled call: its intent, and its result once it finished."""

    key: CallKey
    started_at: float
    finished_at: float | None
    observation: str | None
    error: bool

    @property
    def finished(self) -> bool:
        """Did the call return (its result is recorded)?"""
        return self.finished_at is not None


class ToolJournal:
    """The ``tool_journal`` table of a run database, safe to use from worker threads.

    ``db`` is a :class:`~reinloop.checkpoints.Database` (or its checkpointer), a SQLite path or
    ``postgresql://`` URL, an open ``sqlite_utils.Database``; ``":memory:"`` (the default) keeps it in memory.
    """

    def __init__(self, db: Database | str | os.PathLike[str] | Any = ":memory:") -> None:
        self.db, self._owns = database_for(db)
        self.path = self.db.location

    def begin(self, key: CallKey, args: dict[str, Any]) -> bool:
        """Record the intent to run a call (committed before this returns); ``False`` when a row with this key
        was there already (another process started the call): then the caller must not run it.

        One insert that does nothing on a duplicate key, so of two processes exactly one gets ``True``.
        ``args`` is kept as a preview (long strings cut, with their length and sha256): the key's
        ``args_hash`` identifies the whole arguments, which the run's state holds.
        """
        text = json.dumps(preview_value(args), ensure_ascii=False, default=str)
        return self._insert({**key.as_row(), "args": text, "started_at": time.time()})

    def decide(self, thread_id: str, run: int, step: int, answered: str, decisions: Mapping[str, Any],
               by: Mapping[str, Any]) -> JournalEntry | None:
        """Claim the answer to the approval that waits at checkpoint ``answered``: ``None`` when this claim is
        the first, else the claim that came first (its ``observation``: who made it, ``by``, as JSON).

        One insert that does nothing on a duplicate key: two concurrent answers cannot both resume the run.
        """
        key = CallKey(thread_id, run, step, -1, answered, DECISION_TOOL, "")
        row = {**key.as_row(), "args": json.dumps(dict(decisions), ensure_ascii=False, default=str),
               "started_at": time.time(), "observation": json.dumps(dict(by), default=str)}
        return None if self._insert(row) else self.get(key)

    def release(self, thread_id: str, run: int, step: int, answered: str, by: Mapping[str, Any]) -> None:
        """Drop the claim ``by`` made on checkpoint ``answered`` (its answer was refused before the run moved)."""
        key = CallKey(thread_id, run, step, -1, answered, DECISION_TOOL, "")
        with self.db.write() as tx:
            tx.execute(f"DELETE FROM {TABLE} WHERE {match(KEY_COLUMNS)} AND observation = ?",
                       (*key.as_row().values(), json.dumps(dict(by), default=str)))

    def take_over(self, entry: JournalEntry, by: Mapping[str, Any]) -> bool:
        """Move ``entry``'s claim to ``by`` if it is still the one read (its process is gone); ``True`` if moved."""
        with self.db.write() as tx:
            cursor = tx.execute(f"UPDATE {TABLE} SET observation = ?, started_at = ? WHERE {match(KEY_COLUMNS)} "
                                "AND observation = ?", (json.dumps(dict(by), default=str), time.time(),
                                                       *entry.key.as_row().values(), entry.observation))
            return bool(cursor.rowcount == 1)

    def _insert(self, row: Mapping[str, Any]) -> bool:
        """Insert ``row`` unless its key is taken; ``True`` if this insert made it."""
        with self.db.write() as tx:
            cursor = tx.execute(insert_sql(TABLE, list(row)) + f" ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO NOTHING",
                                tuple(row.values()))
            return bool(cursor.rowcount == 1)

    def finish(self, key: CallKey, observation: str, error: bool) -> None:
        """Record the result of a call that returned; a long observation goes to ``blobs`` once."""
        result: dict[str, Any] = {"finished_at": time.time(), "observation": observation, "error": int(error)}
        blobs = {}
        if len(observation) >= BLOB_MIN_CHARS:
            blobs[digest(observation)] = observation
            result.update(observation=preview(observation), observation_hash=digest(observation))
        sets = ", ".join(f"{c} = ?" for c in result)
        with self.db.write() as tx:
            store_blobs(tx, self.db.dialect, key.thread_id, blobs)
            tx.execute(f"UPDATE {TABLE} SET {sets} WHERE {match(KEY_COLUMNS)}",
                       (*result.values(), *key.as_row().values()))

    def get(self, key: CallKey) -> JournalEntry | None:
        """The journaled call with this key, or ``None``."""
        rows = self._rows(f"WHERE {match(KEY_COLUMNS)}", tuple(key.as_row().values()))
        return self._entry(rows[0]) if rows else None

    def entries(self, thread_id: str | None = None) -> list[JournalEntry]:
        """Every journaled call (of one thread), oldest first."""
        return [self._entry(r) for r in self.rows(thread_id)]

    def rows(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Every journaled call's row (of one thread), oldest first, as stored, each observation whole
        (the operators' claims, :meth:`decide`, left out)."""
        where, params = ("WHERE thread_id = ? AND", (thread_id,)) if thread_id is not None else ("WHERE", ())
        return self._rows(f"{where} tool != ? ORDER BY started_at", (*params, DECISION_TOOL))

    def _rows(self, where: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        """Journal rows, each observation stored in ``blobs`` read back whole."""
        with self.db.read() as tx:
            found = dict_rows(tx.execute(f"SELECT * FROM {TABLE} {where}", params))
            for row in found:
                if row.get("observation_hash"):
                    texts = read_blobs(tx, self.db.location, row["thread_id"], {row["observation_hash"]})
                    row["observation"] = texts[row["observation_hash"]]
        return found

    def close(self) -> None:
        """Close the database, if this journal opened it (one it was given stays open: its owner closes it)."""
        if self._owns:
            self.db.close()

    @staticmethod
    def _entry(row: Mapping[str, Any]) -> JournalEntry:
        return JournalEntry(
            key=CallKey(**{c: row[c] for c in KEY_COLUMNS}),
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            observation=row["observation"],
            error=bool(row["error"]),
        )
