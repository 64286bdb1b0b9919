"""Long-term memories in a plain SQLite table, searched by cosine similarity in numpy.

Below ~50k records a full scan of float32 BLOBs is fast enough and needs no
SQLite extension (this Python's ``sqlite3`` cannot load one). Records are
scoped: ``thread:<id>`` keeps them to one thread, ``user:<key>`` shares them
across every thread that uses the key. Vectors from different embedders never
meet: a search only compares records of the query's embedding model.

The table is created by :func:`create_memories_table`, one function the run
database's numbered migrations can call. Given a saver (or a
``postgresql://`` URL), the store keeps its records in that run database
through the saver's ``memory_*`` methods instead, SQLite or PostgreSQL alike.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from ..checkpoints import ReinloopSaver, is_postgres_url, open_saver
from ..checkpoints.schema import MEMORIES
from ..checkpoints.sqlitedb import create_table
from ..errors import ConfigurationError, StorageError

TABLE = "memories"


@dataclass(frozen=True)
class Recalled:
    """A memory found for a query, with its cosine similarity."""

    id: int
    score: float
    text: str
    thread_id: str
    run: int
    task: str


def create_memories_table(db: sqlite_utils.Database) -> sqlite_utils.db.Table:
    """Create the ``memories`` table (spec: :data:`reinloop.checkpoints.schema.MEMORIES`) if missing."""
    create_table(db, MEMORIES)
    return db.table(TABLE)  # type: ignore[return-value]


def open_database(target: str | Path | sqlite_utils.Database | None) -> sqlite_utils.Database:
    """A database from a path, an open database, or ``None`` (in memory)."""
    if target is None:
        return sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False))
    if isinstance(target, sqlite_utils.Database):
        return target
    if isinstance(target, (str, Path)):
        path = Path(target)
        if path.parent and not path.parent.exists():
            raise StorageError(f"memory store {str(path)!r}: directory {str(path.parent)!r} does not exist")
        # async runs call sync nodes from worker threads; the store serialises access itself
        return sqlite_utils.Database(sqlite3.connect(path, check_same_thread=False))
    raise ConfigurationError(
        f"a memory store must be a SQLite path, a sqlite_utils.Database or a MemoryStore, got {type(target).__name__}"
    )


class MemoryStore:
    """Memory records with embeddings in a ``memories`` table: a SQLite file's, or a run database's."""

    def __init__(self, db: str | Path | sqlite_utils.Database | ReinloopSaver | None = None) -> None:
        self.lock = threading.Lock()
        if is_postgres_url(db):
            db = open_saver(str(db))
        self.saver = db if isinstance(db, ReinloopSaver) else None
        if self.saver is None:
            self.db = open_database(db)  # type: ignore[arg-type]
            self.table = create_memories_table(self.db)

    def add(
        self,
        *,
        scope: str,
        text: str,
        embedding: Sequence[float],
        model: str,
        thread_id: str = "",
        run: int = 0,
        first_step: int = 0,
        last_step: int = 0,
        task: str = "",
    ) -> int:
        """Store one record; its id. A record of the same folded steps of the same run is replaced."""
        import numpy as np

        vector = np.asarray(embedding, dtype=np.float32)
        row = {
            "scope": scope, "thread_id": thread_id, "run": run, "first_step": first_step,
            "last_step": last_step, "task": task, "text": text, "model": model,
            "dim": int(vector.size), "embedding": vector.tobytes(), "created_at": time.time(),
        }
        if self.saver is not None:
            return self.saver.memory_add(row)
        key = ["scope", "thread_id", "run", "first_step", "last_step"]
        with self.lock:  # a resumed step may fold the same steps again: replace, never duplicate
            found = [] if not first_step else list(
                self.table.rows_where(" and ".join(f"{k} = ?" for k in key), [row[k] for k in key], select="id"))
            if found:
                self.table.update(found[0]["id"], row)
                return int(found[0]["id"])
            return int(self.table.insert(row).last_pk)

    def count(self, scope: str | None = None) -> int:
        """Records in ``scope`` (all records when ``None``)."""
        if self.saver is not None:
            return self.saver.memory_count(scope)
        with self.lock:
            return self.table.count if scope is None else self.table.count_where("scope = ?", [scope])

    def search(
        self, vector: Sequence[float], *, scope: str, model: str, k: int, exclude: Iterable[str] = ()
    ) -> list[Recalled]:
        """The ``k`` records of ``scope`` most similar to ``vector``, best first."""
        import numpy as np

        skip = set(exclude)
        if self.saver is not None:
            rows = [r for r in self.saver.memory_rows(scope, model) if r["text"] not in skip]
        else:
            with self.lock:
                found = self.table.rows_where("scope = ? and model = ?", [scope, model])
                rows = [r for r in found if r["text"] not in skip]
        query = np.asarray(vector, dtype=np.float32)
        rows = [r for r in rows if r["dim"] == query.size]
        if not rows or k <= 0:
            return []
        matrix = np.stack([np.frombuffer(r["embedding"], dtype=np.float32) for r in rows])
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        scores = matrix @ query / np.where(norms == 0, 1.0, norms)
        best = np.argsort(-scores, kind="stable")[:k]
        return [
            Recalled(id=rows[i]["id"], score=float(scores[i]), text=rows[i]["text"],
                     thread_id=rows[i]["thread_id"], run=rows[i]["run"], task=rows[i]["task"])
            for i in best
        ]

    def records(self, scope: str | None = None) -> list[dict[str, Any]]:
        """Stored records without their vectors, oldest first."""
        if self.saver is not None:
            return self.saver.memory_rows(scope, vectors=False)
        where, args = ("scope = ?", [scope]) if scope is not None else (None, None)
        with self.lock:
            return [{k: v for k, v in r.items() if k != "embedding"}
                    for r in self.table.rows_where(where, args, order_by="id")]
