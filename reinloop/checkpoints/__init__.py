"""Checkpoints and run records: LangGraph savers that also keep reinloop's ``runs`` and ``breaks``.

- :mod:`.schema`: reinloop's tables, defined once as numbered migrations;
- :mod:`.base`: the contract a backend fulfils (:class:`ReinloopSaver`) and the
  storage logic every backend shares (change-only values, append chains);
- :mod:`.sqlite`: :class:`SqliteCheckpointer`, the SQLite backend;
- :mod:`.sqlitedb`: opening a SQLite file safely (checks, WAL, migrations).

Open one with ``SqliteCheckpointer.open("reinloop.db")`` and pass it to
``build_graph(..., checkpointer=...)``.
"""

from .base import BreakRecord, ReinloopSaver, RunRecord
from .schema import MIGRATIONS, Migration
from .sqlite import SqliteCheckpointer
from .sqlitedb import DEFAULT_TIMEOUT

__all__ = [
    "DEFAULT_TIMEOUT",
    "MIGRATIONS",
    "BreakRecord",
    "Migration",
    "ReinloopSaver",
    "RunRecord",
    "SqliteCheckpointer",
]
