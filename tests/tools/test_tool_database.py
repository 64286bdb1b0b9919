"""The run database is never the model's database: sql_query/db_insert refuse it, however it is named."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlite_utils

from reinloop import ToolDatabaseError
from reinloop.checkpoints.schema import MIGRATIONS_TABLE
from reinloop.runs.api import open_db, run
from reinloop.testing import ScriptedChatModel
from reinloop.tools import ToolSettings, builtin


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def other_spellings(tmp_path: Path, file: Path) -> dict[str, str]:
    """The same file under other names: a symbolic link, a hard link, a path with ``..`` and ``.``."""
    (tmp_path / "sub").mkdir(exist_ok=True)
    (tmp_path / "link.db").symlink_to(file)
    os.link(file, tmp_path / "hard.db")
    return {
        "same": str(file),
        "symlink": str(tmp_path / "link.db"),
        "hardlink": str(tmp_path / "hard.db"),
        "dots": str(tmp_path / "sub" / ".." / "." / file.name),
    }


@pytest.fixture
def user_db(tmp_path):
    """A database of the user's, with no reinloop table yet."""
    path = tmp_path / "shop.db"
    sqlite_utils.Database(path)["notes"].insert({"id": 1, "text": "hello"}, pk="id")
    return path


@pytest.mark.parametrize("kind", ["a new run database", "an existing run database"])
@pytest.mark.parametrize("spelling", ["same", "symlink", "hardlink", "dots"])
def test_the_cli_refuses_a_tool_database_that_is_the_run_database_with_exit_2(tmp_path, user_db, spelling, kind):
    if kind == "an existing run database":
        user_db = tmp_path / "runs.db"
        with open_db(str(user_db), write=True, create=True):
            pass
    tool_db = other_spellings(tmp_path, user_db)[spelling]
    before = digest(user_db)
    proc = subprocess.run(
        [sys.executable, "-m", "reinloop", "run", "list the runs", "--db", str(user_db), "--db-tool", tool_db,
         "--tools", "sql_query,db_insert", "--db-tables", "notes", "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"reinloop: error: --db-tool {tool_db!r} is the run database --db {str(user_db)!r}")
    assert "give --db-tool a database of your own" in lines[0]
    assert digest(user_db) == before  # no reinloop tables were added to it


@pytest.mark.parametrize("name", ["sql_query", "db_insert"])
def test_a_database_with_reinloops_schema_is_refused_under_any_name(tmp_path, name):
    rundb = tmp_path / "runs.db"
    with open_db(str(rundb), write=True, create=True):
        pass
    before = digest(rundb)
    for path in other_spellings(tmp_path, rundb).values():
        with pytest.raises(ToolDatabaseError, match=rf"is a reinloop run database \(tables {MIGRATIONS_TABLE}, .*\); tool '{name}' may not use it"):
            builtin(name, path=path, **({"tables": "migrations"} if name == "db_insert" else {}))
    assert digest(rundb) == before


def test_the_cli_refuses_a_run_database_as_tool_database_before_running_with_exit_2(tmp_path):
    rundb = tmp_path / "runs.db"
    with open_db(str(rundb), write=True, create=True):
        pass
    other = tmp_path / "other-runs.db"
    proc = subprocess.run(
        [sys.executable, "-m", "reinloop", "run", "x", "--db", str(other), "--db-tool", str(rundb),
         "--tools", "db_insert", "--db-tables", "migrations", "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "is a reinloop run database" in proc.stderr and "give --db-tool a database of your own" in proc.stderr


def test_python_run_refuses_the_run_database_as_tool_database_and_leaves_it_alone(tmp_path, user_db):
    before = digest(user_db)
    (tmp_path / "sub").mkdir()
    with pytest.raises(ToolDatabaseError, match="is the run database"):
        run("x", db=user_db, model=ScriptedChatModel(), tools="sql_query",
            tool_settings=ToolSettings(db=str(tmp_path / "sub" / ".." / "shop.db")))
    assert digest(user_db) == before


def test_db_insert_without_tables_refuses_and_names_the_flag(user_db):
    with pytest.raises(ValueError, match=r"db_insert writes only the tables it is given, and got none: give --db-tables "
                                         r"T1,T2 \(from Python: builtin\('db_insert', tables='t1,t2'\).*tables in shop.db: notes"):
        builtin("db_insert", path=user_db)
    with pytest.raises(ValueError, match="got none"):
        builtin("db_insert", path=user_db, tables=" , ")


def test_the_cli_db_insert_without_db_tables_is_a_one_line_error(user_db):
    proc = subprocess.run(
        [sys.executable, "-m", "reinloop", "run", "x", "--db", str(user_db.parent / "runs.db"), "--db-tool", str(user_db),
         "--tools", "db_insert", "--base-url", "http://127.0.0.1:9/v1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2  # a flag missing, found before the run starts: a usage error
    assert proc.stderr.count("\n") == 1 and "give --db-tables T1,T2" in proc.stderr


def test_batch_refuses_the_run_database_as_tool_database_before_queueing(tmp_path, user_db):
    from reinloop.runs.batches import batch

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "count the notes"}\n')
    os.link(user_db, tmp_path / "hard.db")
    before = digest(user_db)
    with pytest.raises(ToolDatabaseError, match="is the run database"):
        batch(str(tasks), db=str(user_db), model=ScriptedChatModel(), tools="sql_query",
              tool_settings=ToolSettings(db=str(tmp_path / "hard.db")))
    assert digest(user_db) == before
