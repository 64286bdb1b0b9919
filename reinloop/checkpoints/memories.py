"""Long-term memories in the ``memories`` table of a run database, searched by cosine similarity in numpy.

Below ~50k records a full scan of float32 BLOBs is fast enough and needs no
SQLite extension (this Python's ``sqlite3`` cannot load one). Records are
scoped: ``thread:<id>`` keeps them to one thread, ``user:<key>`` shares them
across every thread that uses the key. Vectors from different embedders never
meet: a search only compares records of the query's embedding model.

The store is one store of a run database (``db.memories``, see
:mod:`reinloop.checkpoints.database`): the same SQL on a SQLite file,
PostgreSQL, or, by default, an in-memory SQLite database.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import Database, database_for
from .schema import table
from .sql import insert_sql, match

TABLE = "memories"
KEY_COLUMNS = ("scope", "thread_id", "run", "first_step", "last_step")
"""A record of the same folded steps of the same run replaces the one stored before (a resumed step folds again)."""


@dataclass(frozen=True)
class Recalled:
    """A memory found for a query, with its cosine similarity."""

    id: int
    score: float
    text: str
    thread_id: str
    run: int
    task: str


class MemoryStore:
    """Memory records with embeddings in the ``memories`` table of a run database.

    ``db`` is a :class:`~reinloop.checkpoints.Database` (or its checkpointer), a SQLite path or
    ``postgresql://`` URL, an open ``sqlite_utils.Database``, or ``None`` (in memory).
    """

    def __init__(self, db: Database | str | os.PathLike[str] | Any = None) -> None:
        self.db, self._owns = database_for(db)

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
        with self.db.write() as tx:
            found = None
            if first_step:
                found = tx.execute(f"SELECT id FROM {TABLE} WHERE {match(KEY_COLUMNS)}",
                                   tuple(row[c] for c in KEY_COLUMNS)).fetchone()
            if found is not None:
                sets = ", ".join(f"{c} = ?" for c in row)
                tx.execute(f"UPDATE {TABLE} SET {sets} WHERE id = ?", (*row.values(), found[0]))
                return int(found[0])
            returning = self.db.dialect.returning
            cursor = tx.execute(insert_sql(TABLE, list(row)) + returning, tuple(row.values()))
            return int(cursor.fetchone()[0] if returning else cursor.lastrowid)

    def count(self, scope: str | None = None) -> int:
        """Records in ``scope`` (all records when ``None``)."""
        where, params = ("WHERE scope = ?", (scope,)) if scope is not None else ("", ())
        return int(self.db.query(f"SELECT count(*) AS n FROM {TABLE} {where}", params)[0]["n"])

    def search(
        self, vector: Sequence[float], *, scope: str, model: str, k: int, exclude: Iterable[str] = ()
    ) -> list[Recalled]:
        """The ``k`` records of ``scope`` most similar to ``vector``, best first."""
        import numpy as np

        skip = set(exclude)
        rows = [r for r in self.rows(scope, model) if r["text"] not in skip]
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
        return self.rows(scope, vectors=False)

    def rows(self, scope: str | None = None, model: str | None = None, *, vectors: bool = True) -> list[dict[str, Any]]:
        """Stored rows, oldest first, of one scope (and embedding model); with their vectors unless ``vectors=False``."""
        conditions = [(c, v) for c, v in (("scope", scope), ("model", model)) if v is not None]
        where = ("WHERE " + match([c for c, _ in conditions])) if conditions else ""
        columns = "*" if vectors else ", ".join(c.name for c in table(TABLE).columns if c.name != "embedding")
        rows = self.db.query(f"SELECT {columns} FROM {TABLE} {where} ORDER BY id", tuple(v for _, v in conditions))
        for r in rows:
            if "embedding" in r:
                r["embedding"] = bytes(r["embedding"])
        return rows

    def close(self) -> None:
        """Close the database, if this store opened it (one it was given stays open: its owner closes it)."""
        if self._owns:
            self.db.close()
