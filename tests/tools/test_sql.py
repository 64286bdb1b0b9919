"""sql_query can only read; db_insert can only add a row to an allowed table."""

from __future__ import annotations

import re
import sqlite3
import time

import pytest
import sqlite_utils

from reinloop.errors import ConfigurationError
from reinloop.tools import builtin, options_of, run_tool
from reinloop.tools.sql import QueryError


@pytest.fixture
def shop(tmp_path):
    """A real SQLite file with users and orders."""
    path = tmp_path / "shop.db"
    db = sqlite_utils.Database(path)
    db["users"].insert_all([{"id": 1, "name": "张三", "age": 30}, {"id": 2, "name": "李四", "age": 25}], pk="id")
    db["orders"].insert_all([{"id": i, "user_id": 1 + i % 2, "amount": 10 * i} for i in range(1, 121)], pk="id")
    db.close()
    return path


def test_sql_query_returns_a_compact_table(shop):
    query = builtin("sql_query", path=shop)
    assert query.invoke({"query": "SELECT name, age FROM users ORDER BY id"}) == "name | age\n张三 | 30\n李四 | 25\n(2 rows)"
    assert query.invoke({"query": "SELECT name FROM users WHERE id = 9"}) == "name\n(0 rows)"
    assert "tables: orders, users" in query.description or "tables: users, orders" in query.description


def test_sql_query_cuts_rows_and_long_cells_with_a_note(shop):
    out = builtin("sql_query", path=shop, max_rows=3).invoke({"query": "SELECT id, amount FROM orders"})
    assert out.splitlines() == ["id | amount", "1 | 10", "2 | 20", "3 | 30",
                                "(showing the first 3 rows; more rows match: add LIMIT/WHERE or aggregate)"]
    long = builtin("sql_query", path=shop).invoke({"query": "SELECT printf('%.300c', 'x') AS s, NULL AS n, x'00ff' AS b"})
    assert long.splitlines()[1] == "x" * 200 + "… | NULL | <blob 2 bytes>"


def test_sql_query_allows_recursive_ctes_and_reading_the_schema(shop):
    query = builtin("sql_query", path=shop)
    assert query.invoke({"query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 3) SELECT sum(x) FROM c"}).endswith("6\n(1 row)")
    assert 'CREATE TABLE "users"' in query.invoke({"query": "SELECT sql FROM sqlite_master WHERE name = 'users'"})


HOSTILE = [
    ("DROP TABLE users", "can only read"),
    ("DELETE FROM users", "can only read"),
    ("UPDATE users SET age = 0", "can only read"),
    ("INSERT INTO users (name) VALUES ('x')", "can only read"),
    ("CREATE TABLE evil (x)", "can only read"),
    ("SELECT 1; DROP TABLE users", "exactly one SELECT statement"),
    ("SELECT 1; DELETE FROM users; --", "exactly one SELECT statement"),
    ("/* hello */ DELETE FROM users -- bye", "can only read"),
    ("SELECT 1 /* ; */; DROP TABLE users", "exactly one SELECT statement"),
    ("WITH x AS (SELECT 1) DELETE FROM users", "can only read"),
    ("ATTACH DATABASE '{tmp}/evil.db' AS evil", "can only read"),
    ("VACUUM INTO '{tmp}/copy.db'", "can only read"),
    ("VACUUM", "can only read"),
    ("PRAGMA writable_schema = 1", "can only read"),
    ("PRAGMA journal_mode = DELETE", "can only read"),
    ("SELECT * FROM pragma_table_info('users')", "can only read"),
    ("SELECT load_extension('/tmp/evil.so')", "can only read"),
    ("SELECT fts3_tokenizer('simple')", "can only read|no such function"),
    ("BEGIN IMMEDIATE", "can only read"),
    ("REINDEX", "can only read|no result set"),  # no authorizer callback; mode=ro keeps it harmless
    ("ANALYZE", "can only read"),
    ("SELECT zeroblob(1000000000)", "too big"),
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c", "ran too long"),
    ("SELEC name FROM users", "SQL error: near \"SELEC\": syntax error"),
]


@pytest.mark.parametrize(("query", "message"), HOSTILE, ids=[q for q, _ in HOSTILE])
def test_sql_query_refuses_writes_attach_pragma_and_tricks(shop, tmp_path, unchanged, query, message):
    tool = builtin("sql_query", path=shop, max_seconds=0.5)
    began = time.monotonic()
    with pytest.raises(QueryError, match=message):
        tool.invoke({"query": query.format(tmp=tmp_path)})
    assert time.monotonic() - began < 3
    unchanged()  # no file created (evil.db, copy.db), the database untouched


def test_refusals_reach_the_model_as_observations(shop):
    result = run_tool(builtin("sql_query", path=shop), {"query": "SELECT 1; DROP TABLE users"})
    assert result.error
    assert result.observation == (
        "ERROR: QueryError: refused: send exactly one SELECT statement (no ';' followed by another statement)"
    )


def test_sql_query_needs_an_existing_database(tmp_path):
    with pytest.raises(ConfigurationError, match=r"tool 'sql_query' needs a SQLite database file: give --db-tool PATH"):
        builtin("sql_query")
    with pytest.raises(ConfigurationError, match="is not an existing file"):
        builtin("sql_query", path=tmp_path / "nope.db")
    (tmp_path / "junk.db").write_text("not a database")
    with pytest.raises(ConfigurationError, match="is not a usable SQLite database"):
        builtin("sql_query", path=tmp_path / "junk.db")


def test_a_path_with_uri_characters_is_not_reinterpreted(tmp_path):
    path = tmp_path / "odd?mode=rwc#x.db"
    sqlite_utils.Database(path)["t"].insert({"a": 1})
    assert builtin("sql_query", path=path).invoke({"query": "SELECT a FROM t"}) == "a\n1\n(1 row)"


def test_db_insert_adds_a_row_to_an_allowed_table(shop):
    insert = builtin("db_insert", path=shop, tables="users")
    assert options_of(insert).side_effects
    assert insert.invoke({"table": "users", "row": {"name": "王五", "age": 28}}) == "inserted row 3 into users: {'name': '王五', 'age': 28}"
    rows = list(sqlite_utils.Database(shop)["users"].rows_where("id = 3"))
    assert rows == [{"id": 3, "name": "王五", "age": 28}]


def test_db_insert_schema_lists_the_allowed_tables(shop):
    schema = builtin("db_insert", path=shop, tables="users,orders").get_input_schema().model_json_schema()
    assert schema["properties"]["table"]["enum"] == ["users", "orders"]
    assert "one of users, orders" in schema["properties"]["table"]["description"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"table": "orders", "row": {"amount": 1}}, "Input should be 'users'"),
        ({"table": "users; DROP TABLE users", "row": {"name": "x"}}, "Input should be 'users'"),
        ({"table": "sqlite_master", "row": {"name": "x"}}, "Input should be 'users'"),
        ({"table": "users", "row": {"password": "x"}}, r"unknown column\(s\) password in users; columns: id, name, age"),
        ({"table": "users", "row": {"id": 1, "name": "dup"}}, "insert into users failed: UNIQUE constraint failed"),
        ({"table": "users", "row": {}}, "at least 1 item"),
        ({"table": "users", "row": {"name": {"nested": 1}}}, "Input should be a valid string"),
    ],
)
def test_db_insert_refuses_other_tables_columns_and_values(shop, args, message):
    before = shop.read_bytes()
    result = run_tool(builtin("db_insert", path=shop, tables="users"), args)
    assert result.error and re.search(message, result.observation), result.observation
    assert shop.read_bytes() == before


def test_db_insert_refuses_tables_that_do_not_exist(shop):
    with pytest.raises(ConfigurationError, match=r"db_insert: table\(s\) payments not in shop.db; existing tables: users, orders"):
        builtin("db_insert", path=shop, tables="users,payments")


def test_read_only_connection_really_is_read_only(shop):
    from reinloop.tools.sql import open_read_only

    conn = open_read_only(shop, 1.0)
    conn.set_authorizer(None)  # even without the authorizer, mode=ro refuses writes
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM users")
    conn.close()
