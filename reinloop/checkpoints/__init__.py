"""The run database: checkpoints, runs, node events, tool journal, memories and the batch queue.

- :mod:`.schema`: reinloop's tables, defined once as numbered migrations;
- :mod:`.database`: :class:`Database`, one connection and one store per job
  (``db.checkpointer``, ``db.runs``, ``db.events``, ``db.journal``,
  ``db.memories``, ``db.queue``);
- :mod:`.base`: the storage logic every backend shares (change-only values,
  append chains); :mod:`.rows`: what a ``runs`` or ``breaks`` row holds
  (no LangGraph, so ``runs list`` reads without it);
- :mod:`.sql`, :mod:`.records`, :mod:`.queue`: the checkpointer, the runs and
  breaks, and the batch queue in SQL, written once for both databases;
- :mod:`.sqlite` / :mod:`.sqlitedb` and :mod:`.postgres` / :mod:`.postgresdb`:
  the dialect and connection of each backend, and how each is opened safely.

Open a database with :func:`open_database` (a path, ``":memory:"`` or a
``postgresql://`` URL) and pass ``db.checkpointer`` to
``build_graph(..., checkpointer=...)``; or open just a checkpointer with
:func:`open_saver` / ``SqliteCheckpointer.open("reinloop.db")``, whose
``.db`` is its database.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .. import exports
from .postgresdb import is_postgres_url
from .sqlitedb import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from langgraph.checkpoint.serde.base import SerializerProtocol

    from .database import Database
    from .sql import SqlCheckpointer

EXPORTS = {
    "BreakRecord": ".rows",
    "Database": ".database",
    "MIGRATIONS": ".schema",
    "Migration": ".schema",
    "PostgresCheckpointer": ".postgres",
    "RunRecord": ".rows",
    "RunStore": ".records",
    "SqlCheckpointer": ".sql",
    "SqliteCheckpointer": ".sqlite",
    "TaskQueue": ".queue",
    "open_postgres": ".postgres",
    "open_sqlite": ".sqlite",
    "sqlite_database": ".sqlite",
}
"""Names loaded on first use (:mod:`reinloop`): the savers load LangGraph, the SQLite tables sqlite-utils."""

__getattr__, __dir__, _exported = exports(__name__, EXPORTS)


def open_database(
    db: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    create: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    serde: SerializerProtocol | None = None,
) -> Database:
    """Open the run database ``db``: a ``postgresql://`` URL, else a SQLite file path (``None``: in memory)."""
    if is_postgres_url(db):
        from .postgres import open_postgres

        return open_postgres(str(db), read_only=read_only, create=create, timeout=timeout, serde=serde)
    from .sqlite import open_sqlite

    return open_sqlite(":memory:" if db is None else db, read_only=read_only, create=create, timeout=timeout, serde=serde)


def open_saver(
    db: str | os.PathLike[str], *, read_only: bool = False, create: bool = True, timeout: float = DEFAULT_TIMEOUT,
    serde: SerializerProtocol | None = None,
) -> SqlCheckpointer:
    """The checkpointer of the run database ``db`` (see :func:`open_database`); closing it closes the database."""
    return open_database(db, read_only=read_only, create=create, timeout=timeout, serde=serde).checkpointer


def database_for(target: Any) -> tuple[Database, bool]:
    """The run database a store is given, and whether the store opened it (and so closes it).

    ``target`` is a :class:`Database`, a checkpointer of one, ``None`` (a new
    in-memory database), a SQLite path or ``postgresql://`` URL, or an open
    ``sqlite_utils.Database`` / ``sqlite3.Connection`` (its tables are
    migrated; it stays open when the store closes).
    """
    from .database import Database
    from .sql import SqlCheckpointer
    from .sqlite import sqlite_database

    if isinstance(target, Database):
        return target, False
    if isinstance(target, SqlCheckpointer):
        return target.db, False
    if target is None or isinstance(target, (str, os.PathLike)):
        return open_database(target), True
    conn = getattr(target, "conn", target)  # a sqlite_utils.Database holds its connection as .conn
    if isinstance(conn, sqlite3.Connection):
        location = conn.execute("PRAGMA database_list").fetchone()[2] or ":memory:"
        return sqlite_database(conn, location=location, owned=False), True
    raise ConfigurationError(
        f"a store needs a run database: a Database, a SQLite path, a postgresql:// URL, a sqlite_utils.Database "
        f"or None (in memory); got {type(target).__name__}"
    )


__all__ = [
    "DEFAULT_TIMEOUT",
    "MIGRATIONS",
    "BreakRecord",
    "Database",
    "Migration",
    "PostgresCheckpointer",
    "RunRecord",
    "RunStore",
    "SqlCheckpointer",
    "SqliteCheckpointer",
    "TaskQueue",
    "database_for",
    "is_postgres_url",
    "open_database",
    "open_saver",
]
