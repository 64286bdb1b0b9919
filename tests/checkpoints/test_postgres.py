"""PostgreSQL-only bad input: a server that is not there, a refused login, a missing database or schema.

Each gets one line naming the server and the fix, and nothing is written
(no model call is made either: the database is opened first).
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from reinloop.checkpoints import MIGRATIONS, PostgresCheckpointer, open_saver
from reinloop.checkpoints.postgresdb import pg_sql, safe_location
from reinloop.errors import StorageError

from ..conftest import with_schema


def replace_login(url: str, user: str, password: str | None) -> str:
    parts = urlsplit(url)
    login = user + (f":{password}" if password else "")
    return urlunsplit(parts._replace(netloc=f"{login}@{parts.hostname}:{parts.port}"))


def test_an_unreachable_server_is_one_line_and_no_model_is_called(cli_error, openai_server):
    url = "postgresql://postgres@127.0.0.1:1/postgres"
    for argv in (["runs", "list"], ["run", "hi", "--base-url", openai_server.base_url]):
        line = cli_error(*argv, "--db", url)
        assert line.startswith("reinloop: error: cannot reach PostgreSQL at 127.0.0.1:1 (")
        assert line.endswith("is the server running and is 127.0.0.1:1 right? check the URL in --db (or REINLOOP_DB)")
    assert openai_server.requests == []


def test_a_refused_login_names_the_user_and_never_shows_the_password(pg_server_url, cli_error):
    nobody = replace_login(pg_server_url, "reinloop_nobody", "not-the-password")
    line = cli_error("runs", "list", "--db", nobody)
    assert "refused user 'reinloop_nobody'" in line and "check the user name and password in --db" in line
    assert "not-the-password" not in line
    password = urlsplit(pg_server_url).password
    if password:  # the test servers require one over TCP: a wrong one is refused too
        line = cli_error("runs", "list", "--db", replace_login(pg_server_url, "postgres", "wrong-" + password))
        assert "refused user 'postgres' (" in line and "password authentication failed" in line


def test_a_missing_database_and_a_missing_schema_say_how_to_make_them(pg_server_url, cli_error):
    parts = urlsplit(pg_server_url)
    missing = urlunsplit(parts._replace(path="/no_such_db"))
    assert cli_error("runs", "list", "--db", missing).endswith(
        "has no database 'no_such_db'; create it (createdb no_such_db) or point --db (or REINLOOP_DB) at one that exists")
    line = cli_error("run", "hi", "--db", with_schema(pg_server_url, "no_such_schema"), "--base-url", "http://127.0.0.1:9/v1")
    assert "no schema to create reinloop's tables in (search_path is 'no_such_schema')" in line


def test_the_location_never_holds_the_password(pg_url):
    with open_saver(pg_url) as saver:
        password = urlsplit(pg_url).password
        assert password is None or password not in saver.location
        assert saver.location == safe_location(pg_url) and saver.location.startswith("postgresql://postgres@")


def test_a_memory_store_on_a_url_keeps_its_records_in_that_database(pg_url):
    from reinloop.protocols.memory import MemoryStore

    MemoryStore(pg_url).add(scope="user:ann", text="likes tea", embedding=[1.0, 0.0], model="m")
    with open_saver(pg_url) as saver:
        assert [r["text"] for r in saver.db.memories.rows("user:ann", vectors=False)] == ["likes tea"]


def test_a_read_only_saver_refuses_to_write(pg_url):
    open_saver(pg_url).close()
    with PostgresCheckpointer.open(pg_url, read_only=True) as saver:
        assert saver.db.runs.list() == []
        with pytest.raises(StorageError, match="was opened read-only; open it without read_only to change it"):
            saver.db.runs.record_settings("t1", {"model": "m"})


def test_workers_opening_a_new_database_at_once_apply_each_migration_once(pg_url):
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            open_saver(pg_url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(pg_url) as conn:
        assert [r[0] for r in conn.execute("SELECT version FROM migrations ORDER BY version")] == [
            m.version for m in MIGRATIONS]


def test_sqlite_style_parameters_become_psycopg_ones():
    assert pg_sql("SELECT ? WHERE a = :name AND b::jsonb = ? AND c LIKE '5%'") == (
        "SELECT %s WHERE a = %(name)s AND b::jsonb = %s AND c LIKE '5%%'")


def test_errors_after_connecting_are_explained_by_their_sqlstate(pg_url):
    """Locked, read-only and terminated sessions, each told by its SQLSTATE (55P03, 25006, 57P01), not its wording."""
    from reinloop.checkpoints.postgresdb import postgres_error_message

    def error_of(action) -> str:
        with pytest.raises(psycopg.Error) as caught:
            action()
        return postgres_error_message(caught.value, pg_url)

    with psycopg.connect(pg_url, autocommit=True) as holder, psycopg.connect(pg_url, autocommit=True) as waiter:
        holder.execute("CREATE TABLE IF NOT EXISTS held (x int)")
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
        waiter.execute("SET lock_timeout = '100ms'")
        assert "is locked by another session" in error_of(lambda: waiter.execute("SELECT * FROM held"))
        holder.execute("ROLLBACK")
        waiter.execute("SET default_transaction_read_only = on")
        assert "is read-only (" in error_of(lambda: waiter.execute("INSERT INTO held VALUES (1)"))
        victim = psycopg.connect(pg_url, autocommit=True)
        holder.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        assert error_of(lambda: victim.execute("SELECT 1")).startswith("lost the connection to PostgreSQL at ")
        victim.close()


def test_a_saver_whose_connection_was_closed_says_the_connection_is_lost(pg_url):
    saver = open_saver(pg_url)
    saver.db.connection.raw.close()
    with pytest.raises(StorageError, match=r"^lost the connection to PostgreSQL at .*: resume it$"):
        saver.db.runs.list()
