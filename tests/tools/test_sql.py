"""sql_query can only read; db_insert can only add a row to an allowed table."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlite_utils

from reinloop import Limits
from reinloop.errors import ConfigurationError
from reinloop.testing import tool_call
from reinloop.tools import ToolExecutor, builtin, options_of, run_tool
from reinloop.tools.sql import ENGINE, PROCESSES, QueryError, run_query
from reinloop.tools.sqlengine import MAX_VALUE_BYTES


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


@pytest.mark.parametrize(
    "query", ["SELECT [not authorized] FROM users", "SELECT [interrupted] FROM users", "SELECT * FROM readonly_too_big"],
)
def test_a_plain_sql_error_whose_text_sounds_like_a_refusal_is_reported_as_the_error_it_is(shop, query):
    tool = builtin("sql_query", path=shop, max_seconds=5)
    with pytest.raises(QueryError) as raised:
        tool.invoke({"query": query})
    assert str(raised.value).startswith("SQL error: no such ")  # not "can only read", "ran too long", "read-only"


def test_a_driver_error_about_parameters_is_not_taken_for_several_statements(shop):
    with pytest.raises(QueryError, match="SQL error: .*bindings") as raised:
        builtin("sql_query", path=shop).invoke({"query": "SELECT name FROM users WHERE id = ?; "})
    assert "exactly one SELECT" not in str(raised.value)


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


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_db_insert_refuses_nan_and_infinities_instead_of_storing_null(shop, value):
    before = shop.read_bytes()
    result = run_tool(builtin("db_insert", path=shop, tables="users"), {"table": "users", "row": {"name": "x", "age": value}})
    assert result.error and result.observation == (
        f"ERROR: QueryError: the value of column 'age' is {value!r}, which is not a number SQLite stores (NaN would "
        "become NULL); nothing was inserted: send a finite number, null, or the text you mean as a string")
    assert shop.read_bytes() == before


def test_a_models_nan_in_a_native_call_is_refused_and_the_model_told(shop, make_graph):
    from reinloop.testing import tool_call

    call = tool_call("db_insert", {"table": "users", "row": {"name": "x", "age": float("nan")}})  # json.loads reads NaN
    graph, _ = make_graph([[call], "done"], tools=[builtin("db_insert", path=shop, tables="users")],
                          approve="none")
    result = graph.invoke({"task": "add x"})
    (action,) = result["scratchpad"][0]["actions"]
    assert action["error"] and "is nan, which is not a number SQLite stores" in action["observation"]
    assert list(sqlite_utils.Database(shop)["users"].rows_where("name = 'x'")) == []


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


def attacks() -> dict[str, str]:
    """Queries that make SQLite work for seconds to minutes, most of it inside single function calls,
    where neither a progress handler nor ``interrupt()`` is ever looked at."""
    n = MAX_VALUE_BYTES - 1  # as long as a value may be
    rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < {}) "
    return {
        "printf width loop": f"SELECT printf('%.*c', {2**31 - 1}, 'x')",
        "printf per row": f"SELECT count(printf('%.*c', {10**8} + id, 'x')) FROM users",
        "instr n*m": f"SELECT instr(printf('%.*c', {n}, 'a'), printf('%.*c', {n // 2}, 'a') || 'b')",
        "instr over hex(zeroblob)": f"SELECT instr(hex(zeroblob({n // 2})), hex(zeroblob({n // 4})) || 'x')",
        "replace n*m, many rows": rows.format(1000) + f"SELECT count(replace(printf('%.*c', {n}, 'a'), printf('%.*c', {n // 2}, 'a') || 'b', '')) FROM c",
        "like with a huge pattern": f"SELECT printf('%.*c', {n}, 'a') LIKE printf('%.*c', 49999, '%') || 'b'",
        "zeroblob": f"SELECT zeroblob({10**9})",
        "randomblob": f"SELECT length(randomblob({10**9}))",
        "group_concat": rows.format(10**7) + "SELECT length(group_concat(hex(randomblob(1000)))) FROM c",
        "endless recursive cte": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
        "sort of many rows": rows.format(10**8) + "SELECT x FROM c ORDER BY random() LIMIT 1",
    }


def busy_query_processes(parent: int | None = None) -> list[int]:
    """The query processes of ``parent`` (this process) still alive, besides those waiting idle for the next query.

    Only its own: another reinloop on the machine (a benchmark, a second test run) has query processes too."""
    owner = str(parent if parent is not None else os.getpid()).encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if str(ENGINE).encode() in argv and owner in argv:
                found.append(int(proc.name))
    return sorted(set(found) - set(PROCESSES.pids()))


ATTACKS = attacks()


@pytest.mark.parametrize("query", ATTACKS.values(), ids=ATTACKS.keys())
def test_an_expensive_query_stops_by_its_deadline_and_gives_its_worker_back(shop, query):
    executor = ToolExecutor(Limits(tool_timeout=0.5))  # the tool's own limit (5 s) is longer
    began = time.monotonic()
    executor.run_one(builtin("sql_query", path=shop), {"query": query})  # an error, or a result in time
    while executor.pool.stats()["running"] and time.monotonic() - began < 15:
        time.sleep(0.02)
    assert time.monotonic() - began < 0.5 + 2  # the timeout, the kill 0.5 s after it, and slack
    assert (executor.pool.stats()["running"], executor.pool.stats()["overdue"]) == (0, 0)
    assert busy_query_processes() == []  # the work really stopped: no process left burning CPU


@pytest.mark.parametrize("query", [ATTACKS["printf width loop"], ATTACKS["instr n*m"]], ids=["printf", "instr"])
def test_a_query_stuck_in_one_function_call_is_stopped_at_the_tools_own_limit(shop, query):
    began = time.monotonic()
    with pytest.raises(QueryError, match=r"ran too long and was stopped after 0.5 s; add a LIMIT"):
        run_query(shop, query, max_seconds=0.5)
    assert time.monotonic() - began < 0.5 + 2


def test_a_reply_of_eight_runaway_queries_does_not_exhaust_the_graphs_workers(shop, make_graph):
    runaway = [tool_call("sql_query", {"query": ATTACKS["printf width loop"]}, id=f"q{i}") for i in range(8)]
    fine = [tool_call("sql_query", {"query": "SELECT name FROM users ORDER BY id"})]
    graph, _ = make_graph([runaway, fine, "张三, 李四"], tools=[builtin("sql_query", path=shop)], limits=Limits(tool_timeout=1))
    out = graph.invoke({"task": "names?"})
    first, second = out["scratchpad"][:2]
    assert all(a["observation"].startswith("ERROR: ToolTimeout: sql_query did not finish within 1 s") for a in first["actions"])
    assert second["actions"][0]["observation"] == "name\n张三\n李四\n(2 rows)"  # not WorkersExhausted
    assert out["status"] == "done"
    pool = graph.reinloop_context.workers
    deadline = time.monotonic() + 5
    while pool.stats()["running"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.stats()["overdue"] == 0 and pool.stats()["running"] == 0


def test_query_processes_are_reused_until_one_overruns(shop):
    run_query(shop, "SELECT 1")
    [idle] = PROCESSES.pids()[-1:]
    assert run_query(shop, "SELECT name FROM users WHERE id = 1") == "name\n张三\n(1 row)"
    assert idle in PROCESSES.pids()  # the same process answered again
    for _ in range(len(PROCESSES.pids())):  # use up the idle ones: the next query overruns in one of them
        with pytest.raises(QueryError, match="ran too long"):
            run_query(shop, ATTACKS["printf width loop"], max_seconds=0.2)
    assert idle not in PROCESSES.pids() and not Path(f"/proc/{idle}").exists()  # killed, never reused


def test_a_huge_result_is_cut_before_it_leaves_the_query_process(shop):
    columns = ", ".join(f"printf('%.200c', 'x') AS c{i}" for i in range(600))
    rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 60) "
    out = run_query(shop, rows + f"SELECT {columns} FROM c")
    assert len(out) < 101_000 and out.endswith("(cut at 100000 characters: select fewer columns or rows)")


def stat(pid: int) -> list[str]:
    """``/proc/PID/stat`` fields (state at [2], parent at [3]); [] once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
    except OSError:
        return []


def running(pid: int) -> bool:
    return stat(pid)[:1] not in ([], ["Z"])  # a zombie waits for a reaper, but runs no more


def test_a_query_process_does_not_outlive_a_hard_killed_parent(shop, tmp_path):
    script = tmp_path / "parent.py"
    script.write_text("from reinloop.tools.sql import run_query\n"
                      f"run_query({str(shop)!r}, {ATTACKS['printf width loop']!r}, max_seconds=60)\n")
    parent = subprocess.Popen([sys.executable, str(script)])
    began = time.monotonic()
    children: list[int] = []
    while not children and time.monotonic() - began < 30:  # until its query process has started
        children = [p for p in busy_query_processes(parent.pid) if stat(p)[1:] == [str(parent.pid)]]
        time.sleep(0.05)
    assert children, "the parent never started its query"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    killed = time.monotonic()
    while any(running(p) for p in children) and time.monotonic() - killed < 10:
        time.sleep(0.05)
    assert time.monotonic() - killed < 3  # not the parent's 60 s limit, nor the minutes printf takes


def test_db_insert_describes_the_rows_by_the_tables_real_columns_not_an_example_row(shop):
    # Qwen2.5-0.5B copied the old example {"name": "王五", "age": 28} into a row for a key/value table.
    row = builtin("db_insert", path=shop, tables="users,orders").get_input_schema().model_json_schema()["properties"]["row"]
    assert row["description"] == ("column name -> value of the new row; the columns: "
                                  "users(id INTEGER, name TEXT, age INTEGER); orders(id INTEGER, user_id INTEGER, amount INTEGER)")
    assert "王五" not in row["description"] and "28" not in row["description"]
