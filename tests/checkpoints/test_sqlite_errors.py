"""A SQLite error is explained from its result code, not from its wording."""

from __future__ import annotations

import sqlite3

import pytest

from reinloop.checkpoints.sqlitedb import sqlite_error_message


def error_of(conn: sqlite3.Connection, sql: str) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as raised:
        conn.execute(sql)
    return raised.value


def test_an_error_whose_text_says_locked_read_only_or_corrupt_is_reported_as_the_plain_error_it_is():
    error = error_of(sqlite3.connect(":memory:"), "SELECT * FROM [locked busy readonly malformed]")
    message = sqlite_error_message(error, "run.db", 30)
    assert message == "run.db: SQLite error: no such table: locked busy readonly malformed"


def test_a_real_lock_is_recognised_by_its_code(tmp_path):
    path = tmp_path / "run.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0)
    message = sqlite_error_message(error_of(other, "INSERT INTO t VALUES (1)"), "run.db", 0.0)
    assert message.startswith("run.db is locked by another process (waited 0 s for it)")
    holder.execute("ROLLBACK")
