"""Bad database files get one clear line naming the file and the fix, and are never changed."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import stat
import subprocess
import sys

import pytest

from reinloop import Limits
from reinloop.checkpoints import SqliteCheckpointer
from reinloop.cli.app import main
from reinloop.errors import StorageError
from reinloop.testing import tool_call

from ..openai_server import completion


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def good_db(tmp_path, make_graph):
    """A real run database with one finished 20-step run, closed (its WAL merged)."""
    path = tmp_path / "good.db"
    with SqliteCheckpointer.open(path) as saver:
        replies = [[tool_call("calculator", {"expression": f"{i}*2"})] for i in range(20)] + ["done"]
        graph, _ = make_graph(replies, checkpointer=saver, limits=Limits(max_steps=None, max_repeats=None))
        graph.invoke({"task": "double"}, {"configurable": {"thread_id": "t1"}})
    assert not path.with_name("good.db-wal").exists()
    return path


def cli_error(capsys, *argv: str) -> str:
    """Run the CLI, expect exit 1 and exactly one stderr line; return it."""
    assert main(list(argv)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("reinloop: error: ")
    return err[0]


def test_a_missing_database_is_named_and_not_created(tmp_path, capsys):
    missing = tmp_path / "nope.db"
    line = cli_error(capsys, "runs", "list", "--db", str(missing))
    assert line == f"reinloop: error: no run database at {missing}; run a task first (reinloop run ...), or point --db (or REINLOOP_DB) at an existing database"
    assert not missing.exists()
    with pytest.raises(StorageError, match="the directory .* does not exist"):
        SqliteCheckpointer.open(tmp_path / "no" / "such" / "dir.db")


def test_random_bytes_are_refused_untouched(tmp_path, capsys, openai_server):
    junk = tmp_path / "junk.db"
    junk.write_bytes(random.Random(1).randbytes(5000))
    before = digest(junk)
    for argv in (["runs", "list"], ["runs", "show", "t1"], ["resume", "t1"], ["run", "hi", "--base-url", openai_server.base_url]):
        line = cli_error(capsys, *argv, "--db", str(junk))
        assert f"{junk} is not a SQLite database" in line
    assert digest(junk) == before and sorted(p.name for p in tmp_path.iterdir()) == ["junk.db"]
    assert openai_server.requests == []


def test_a_truncated_database_is_refused_untouched(good_db, capsys):
    data = good_db.read_bytes()
    good_db.write_bytes(data[: len(data) // 2])
    before = digest(good_db)
    line = cli_error(capsys, "runs", "show", "t1", "--db", str(good_db))
    assert f"{good_db} is truncated: its header says {len(data)} bytes but the file has {len(data) // 2}" in line
    assert "restore it from a backup" in line
    assert digest(good_db) == before


def test_a_database_damaged_inside_gives_one_line_and_is_not_written(good_db, capsys):
    data = bytearray(good_db.read_bytes())
    rng = random.Random(2)
    for i in range(8192, len(data)):
        data[i] = rng.randrange(256)
    good_db.write_bytes(bytes(data))
    before = digest(good_db)
    line = cli_error(capsys, "runs", "show", "t1", "--db", str(good_db))
    assert f"{good_db} is damaged or not a SQLite database (database disk image is malformed)" in line
    assert digest(good_db) == before


def test_a_read_only_database_can_be_read_but_not_written(good_db, capsys, openai_server):
    os.chmod(good_db, 0o444)
    before = digest(good_db)
    assert main(["runs", "list", "--db", str(good_db)]) == 0
    assert "t1" in capsys.readouterr().out
    openai_server.responses.append(completion("hi"))
    line = cli_error(capsys, "run", "hello", "--base-url", openai_server.base_url, "--db", str(good_db))
    assert line == (
        f"reinloop: error: {good_db} is read-only (mode -r--r--r--); make it writable (chmod u+w {good_db}), "
        "or use another database with --db"
    )
    assert cli_error(capsys, "runs", "delete", "t1", "--db", str(good_db)).endswith("use another database with --db")
    assert digest(good_db) == before and openai_server.requests == []


def test_a_locked_database_fails_after_the_timeout_with_one_line(tmp_path, capsys, monkeypatch, openai_server):
    db = tmp_path / "busy.db"
    SqliteCheckpointer.open(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO runs (thread_id, task) VALUES ('other', 'kept')")
    monkeypatch.setenv("REINLOOP_DB_TIMEOUT", "0.2")
    openai_server.responses.append(completion("hi"))
    line = cli_error(capsys, "run", "hello", "--base-url", openai_server.base_url, "--db", str(db), "--thread", "t9")
    assert line == (
        f"reinloop: error: {db} is locked by another process (waited 0.2 s for it); wait for that process to "
        "finish, or use another database with --db"
    )
    holder.execute("COMMIT")
    rows = list(sqlite3.connect(db).execute("select thread_id, task from runs"))
    assert rows == [("other", "kept")]


def test_a_locked_database_during_a_run_raises_a_storage_error(tmp_path, make_graph):
    db = tmp_path / "busy.db"
    with SqliteCheckpointer.open(db, timeout=0.1) as saver:
        graph, _ = make_graph(["42"], checkpointer=saver)
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("DELETE FROM migrations WHERE version = 0")
        with pytest.raises(StorageError, match="is locked by another process"):
            graph.invoke({"task": "t"}, {"configurable": {"thread_id": "t1"}})
        holder.execute("ROLLBACK")
        assert graph.invoke({"task": "t"}, {"configurable": {"thread_id": "t2"}})["answer"] == "42"


def test_another_programs_database_is_refused_untouched(tmp_path, capsys, openai_server):
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver_db = tmp_path / "langgraph.db"
    conn = sqlite3.connect(saver_db, check_same_thread=False)
    SqliteSaver(conn).setup()
    conn.close()
    app_db = tmp_path / "app.db"
    conn = sqlite3.connect(app_db)  # rollback-journal mode: switching it to WAL would rewrite its header
    conn.execute("create table notes (body text)")
    conn.commit()
    conn.close()
    for path, tables in ((saver_db, "checkpoints, writes"), (app_db, "notes")):
        before = digest(path)
        for argv in (["runs", "list"], ["run", "hi", "--base-url", openai_server.base_url]):
            line = cli_error(capsys, *argv, "--db", str(path))
            assert line == (f"reinloop: error: {path} is not a reinloop run database (it has other tables: {tables}); "
                            "use a new file for --db")
        assert digest(path) == before
    assert openai_server.requests == []


def test_an_empty_file_is_not_a_database_to_read_but_can_be_started(tmp_path, capsys):
    empty = tmp_path / "empty.db"
    empty.touch()
    line = cli_error(capsys, "runs", "list", "--db", str(empty))
    assert line.endswith(f"{empty} holds no runs yet; run a task first (reinloop run ...), or point --db (or REINLOOP_DB) at an existing database")
    assert empty.stat().st_size == 0
    SqliteCheckpointer.open(empty).close()
    assert main(["runs", "list", "--db", str(empty)]) == 0


def test_a_database_from_a_newer_reinloop_is_refused(good_db):
    conn = sqlite3.connect(good_db)
    conn.execute("INSERT INTO migrations (version, name) VALUES (99, 'from the future')")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="has schema version 99, newer than this reinloop knows .*; upgrade reinloop"):
        SqliteCheckpointer.open(good_db)


def test_a_directory_is_not_a_database(tmp_path):
    with pytest.raises(StorageError, match="is a directory; --db needs a database file"):
        SqliteCheckpointer.open(tmp_path)


def test_an_unknown_thread_is_named_with_the_fix(good_db, capsys):
    for argv in (["runs", "show", "zzz"], ["resume", "zzz"], ["runs", "delete", "zzz"]):
        line = cli_error(capsys, *argv, "--db", str(good_db))
        assert line == (
            f"reinloop: error: no run with thread id 'zzz' in {good_db}; `reinloop runs list` shows the stored runs"
        )


def test_resuming_a_finished_run_is_refused_and_changes_nothing(good_db, capsys):
    before = digest(good_db)
    line = cli_error(capsys, "resume", "t1", "--db", str(good_db), "--model", "openai:gpt-4o-mini",
                     "--base-url", "http://127.0.0.1:9/v1")
    assert line == (
        "reinloop: error: run 't1' is finished (answer: 'done'); start a new task on it with "
        "`reinloop run TASK --thread t1`"
    )
    assert digest(good_db) == before


# --- odd files, through the CLI in a new process -------------------------------------------------------


def cli(*argv: str, cwd=None) -> subprocess.CompletedProcess[str]:
    """``reinloop ARGV`` in a new process; a hang fails the test after 60 s instead of blocking the suite."""
    return subprocess.run([sys.executable, "-m", "reinloop", *argv], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, "OPENAI_API_KEY": "sk-test"})


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.args, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reinloop: error: ") and proc.stdout == "", proc.args
    return lines[0]


def snapshot(folder) -> dict[str, str]:
    """Every file in ``folder`` with its content hash: shows a changed byte or a new -wal/-shm file."""
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def cli_db(tmp_path, openai_server):
    """A run database made by ``reinloop run`` (two steps, in the steps table too), closed."""
    folder = tmp_path / "runs"
    folder.mkdir()
    path = folder / "runs.db"
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}]),
                                completion("42")]
    made = cli("run", "multiply", "--base-url", openai_server.base_url, "--db", str(path), "--thread", "t1",
               "--tools", "calculator")
    assert made.returncode == 0, made.stderr
    assert snapshot(folder).keys() == {"runs.db"}
    return path


def test_run_on_a_database_damaged_inside_refuses_before_writing_anything(cli_db, openai_server):
    data = bytearray(cli_db.read_bytes())
    data[2 * 4096: 5 * 4096] = b"\x5a" * (3 * 4096)  # pages 3-5; the header and the schema page are intact
    cli_db.write_bytes(bytes(data))
    before, asked = snapshot(cli_db.parent), len(openai_server.requests)
    openai_server.responses.append(completion("hi"))
    line = one_error_line(cli("run", "hello", "--base-url", openai_server.base_url, "--db", str(cli_db)))
    assert line.startswith(f"reinloop: error: {cli_db} is damaged (") and "nothing was written to it" in line
    assert snapshot(cli_db.parent) == before and len(openai_server.requests) == asked


def test_reading_a_read_only_database_leaves_no_wal_or_shm_beside_it(cli_db):
    os.chmod(cli_db, 0o444)
    before = snapshot(cli_db.parent)
    for argv in (["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "t1"], ["runs", "show", "t1", "--json"],
                 ["runs", "show", "t1", "--format", "html"]):
        proc = cli(*argv, "--db", str(cli_db))
        assert proc.returncode == 0 and "t1" in proc.stdout, (argv, proc.stderr)
        assert snapshot(cli_db.parent) == before, argv


def odd_paths(tmp_path) -> dict[str, tuple[str, str]]:
    """Paths that are not database files, with what the error calls them."""
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    return {"/dev/null": ("/dev/null", "a character device"), "fifo": (str(tmp_path / "pipe"), "a named pipe (FIFO)"),
            "dir": (str(tmp_path / "folder"), "a directory")}


@pytest.mark.parametrize("kind", ["/dev/null", "fifo", "dir"])
def test_a_device_a_fifo_or_a_directory_as_db_gets_one_line_and_no_hang(kind, tmp_path, openai_server):
    path, called = odd_paths(tmp_path)[kind]
    before = snapshot(tmp_path)
    for argv in (["run", "hi", "--base-url", openai_server.base_url], ["runs", "list"], ["runs", "show", "t1"],
                 ["resume", "t1"]):
        line = one_error_line(cli(*argv, "--db", path))
        assert line == f"reinloop: error: {path} is {called}; --db needs a database file", argv
    assert snapshot(tmp_path) == before and openai_server.requests == []
    assert not list((tmp_path / "folder").iterdir()) and stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
