"""Checkpoints and run records: LangGraph savers that also keep reinloop's own tables.

- :mod:`.schema`: reinloop's tables, defined once as numbered migrations;
- :mod:`.base`: the contract a backend fulfils (:class:`ReinloopSaver`) and the
  storage logic every backend shares (change-only values, append chains);
- :mod:`.sql`, :mod:`.records`, :mod:`.queue`: that contract in SQL, written
  once for both databases (checkpoints; runs, breaks, steps, journal,
  memories; the batch queue);
- :mod:`.sqlite` / :mod:`.sqlitedb`: :class:`SqliteCheckpointer`, on one SQLite file;
- :mod:`.postgres` / :mod:`.postgresdb`: :class:`PostgresCheckpointer`, on PostgreSQL.

Open one with :func:`open_saver` (a path or a ``postgresql://`` URL), or
``SqliteCheckpointer.open("reinloop.db")``, and pass it to
``build_graph(..., checkpointer=...)``.
"""

from __future__ import annotations

from pathlib import Path

from .base import BreakRecord, ReinloopSaver, RunRecord
from .postgres import PostgresCheckpointer, is_postgres_url
from .schema import MIGRATIONS, Migration
from .sqlite import SqliteCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT


def open_saver(
    db: str | Path, *, read_only: bool = False, create: bool = True, timeout: float = DEFAULT_TIMEOUT
) -> ReinloopSaver:
    """Open the run database ``db``: a ``postgresql://`` URL, else a SQLite file path (or ``":memory:"``)."""
    if is_postgres_url(db):
        return PostgresCheckpointer.open(str(db), read_only=read_only, create=create, timeout=timeout)
    return SqliteCheckpointer.open(db, read_only=read_only, create=create, timeout=timeout)


__all__ = [
    "DEFAULT_TIMEOUT",
    "MIGRATIONS",
    "BreakRecord",
    "Migration",
    "PostgresCheckpointer",
    "ReinloopSaver",
    "RunRecord",
    "SqliteCheckpointer",
    "is_postgres_url",
    "open_saver",
]
