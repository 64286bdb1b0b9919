"""Stored runs are data: a run database names no code to run, no process to start, no place to write.

Each test records a real run (the real OpenAI client against tests/openai_server.py, a real SQLite run
database), edits the file as an attacker with write access to it would, and runs the CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import ormsgpack
import pytest

from reinloop.runs import run

from .openai_server import completion

SANDBOX_CALL = {"path": "out.txt", "content": "6"}
ORDER_CALL = {"table": "orders", "row": {"item": "tea"}}


def reply(name: str, args: dict) -> dict:
    return completion(tool_calls=[{"name": name, "args": args}])


@pytest.fixture
def recorded(openai_server, run_db, tmp_path) -> Path:
    """Run ``t1``: a calculation, a file written in the sandbox, an order placed in a tool database, an answer."""
    (tmp_path / "work").mkdir()
    with sqlite3.connect(tmp_path / "shop.db") as shop:
        shop.execute("CREATE TABLE orders (item TEXT)")
    openai_server.responses += [reply("calculator", {"expression": "2*3"}), reply("write_file", SANDBOX_CALL),
                                reply("db_insert", ORDER_CALL), completion("6, written and ordered")]
    outcome = run("compute, write, order", model="openai:gpt-4o-mini", base_url=openai_server.base_url,
                  tools="calculator,write_file,db_insert", approve="none", thread_id="t1",
                  tool_settings={"sandbox": str(tmp_path / "work"), "db": str(tmp_path / "shop.db"), "db_tables": "orders"})
    assert outcome.status == "done", outcome
    assert orders(tmp_path / "shop.db") == ["tea"]
    return run_db


def orders(path: Path) -> list[str]:
    with sqlite3.connect(path) as shop:
        return [row[0] for row in shop.execute("SELECT item FROM orders")]


def cli(db: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``reinloop ARGV --db DB`` in a subprocess, with an API key that no command here may use."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-never-used", "PYTHONPATH": str(Path(__file__).parents[1])}
    env.pop("REINLOOP_DB", None)
    return subprocess.run([sys.executable, "-m", "reinloop", *argv, "--db", str(db)], capture_output=True, text=True,
                          env=env, cwd=cwd or db.parent, timeout=120)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command prints: exit 1, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("reinloop: error: "), done.stderr
    return lines[0]


def edit_spec(db: Path, change) -> dict:
    """Change the stored spec of ``t1`` in place (as JSON data); the new spec."""
    with sqlite3.connect(db) as conn:
        spec = json.loads(conn.execute("SELECT spec FROM runs WHERE thread_id = 't1'").fetchone()[0])
        change(spec)
        conn.execute("UPDATE runs SET spec = ? WHERE thread_id = 't1'", (json.dumps(spec),))
    return spec


# --- checkpoints read only data ---------------------------------------------------------------------


def ext(code: int, *parts) -> bytes:
    """A msgpack value LangGraph's default reader would rebuild by importing and calling ``parts[0].parts[1]``."""
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(list(parts))))


def code_payloads(marker: Path) -> dict[str, bytes]:
    """Stored values that run a command making ``marker``, each through another of LangGraph's constructors."""
    shell = f"touch {marker}"
    return {
        "os.system": ext(0, "os", "system", shell),  # module.name(arg)
        "subprocess.call": ext(1, "subprocess", "call", [["touch", str(marker)]]),  # module.name(*args)
        "subprocess.run": ext(2, "subprocess", "run", {"args": ["touch", str(marker)]}),  # module.name(**kwargs)
        "os.system.__call__": ext(3, "os", "system", shell, "__call__"),  # module.name.method(arg)
    }


@pytest.mark.parametrize("name", ["os.system", "subprocess.call", "subprocess.run", "os.system.__call__"])
def test_a_stored_python_object_is_refused_by_name_and_never_run(recorded, tmp_path, name):
    marker = tmp_path / "pwned"
    with sqlite3.connect(recorded) as conn:
        conn.execute("UPDATE channel_values SET type = 'msgpack', value = ? WHERE thread_id = 't1' AND channel = 'task'",
                     (code_payloads(marker)[name],))
    for argv in (["runs", "show", "t1"], ["runs", "show", "t1", "--json"], ["replay", "t1"]):
        line = one_error_line(cli(recorded, *argv))
        assert "channel 'task' of run 't1'" in line and name.removesuffix(".__call__") in line, line
        assert not marker.exists(), argv


def test_a_pickled_value_is_refused_by_name(recorded, tmp_path):
    import pickle

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with sqlite3.connect(recorded) as conn:
        conn.execute("UPDATE channel_values SET type = 'pickle', value = ? WHERE thread_id = 't1' AND channel = 'task'",
                     (pickle.dumps(Payload()),))
    line = one_error_line(cli(recorded, "runs", "show", "t1"))
    assert "channel 'task'" in line and "'pickle'" in line and not marker.exists()


# --- what a stored spec names is shown, and used only when the user says so -------------------------


def test_runs_show_never_imports_the_output_model_a_stored_spec_names(recorded, tmp_path):
    marker = tmp_path / "imported"
    (tmp_path / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass City: pass\n")
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    edit_spec(recorded, lambda spec: spec.update(output={"schema": schema, "model": "evilmod:City"}))
    for argv in (["runs", "show", "t1"], ["runs", "show", "t1", "--json"], ["runs", "show", "t1", "--format", "html"]):
        done = cli(recorded, *argv, cwd=tmp_path)  # evilmod.py would import from here
        assert done.returncode == 0, done.stderr
        assert not marker.exists(), argv
    shown = cli(recorded, "runs", "show", "t1", "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["spec"]["output"] == {"schema": schema}  # the schema is what a resume validates with


def test_replay_starts_no_mcp_server_a_stored_spec_names_without_start_mcp(recorded, tmp_path):
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    edit_spec(recorded, lambda spec: spec.update(mcp={"mcpServers": {"evil": {"command": command[0], "args": command[1:]}}}))
    shown = cli(recorded, "runs", "show", "t1")
    assert shown.returncode == 0 and '"evil"' in shown.stdout  # what the spec names is shown
    for argv in (["replay", "t1", "--stub-tools"], ["replay", "t1"], ["replay", "t1", "--json"]):
        line = one_error_line(cli(recorded, *argv))
        assert "spec.mcp" in line and "evil: " + " ".join(command)[:60] in line and "--start-mcp" in line, line
    assert not marker.exists()


def test_replay_writes_in_no_sandbox_a_stored_spec_names(recorded, tmp_path):
    elsewhere, mine = tmp_path / "elsewhere", tmp_path / "mine"
    elsewhere.mkdir(), mine.mkdir()
    edit_spec(recorded, lambda spec: spec["tool_settings"].update(sandbox=str(elsewhere)))
    done = cli(recorded, "replay", "t1")
    assert done.returncode == 0, done.stderr  # write_file served from the store: identical, nothing written
    assert list(elsewhere.iterdir()) == []
    line = one_error_line(cli(recorded, "replay", "t1", "--run-side-effects", "--db-tool", str(tmp_path / "shop.db")))
    assert f"spec.tool_settings.sandbox = {elsewhere}" in line and "--sandbox DIR" in line
    with sqlite3.connect(mine / "shop.db") as shop:  # a fresh tool database: the order gets row 1 again
        shop.execute("CREATE TABLE orders (item TEXT)")
    again = cli(recorded, "replay", "t1", "--run-side-effects", "--sandbox", str(mine), "--db-tool", str(mine / "shop.db"))
    assert again.returncode == 0, again.stderr + again.stdout
    assert (mine / "out.txt").read_text() == "6" and list(elsewhere.iterdir()) == []


# --- replay never re-runs a side-effecting tool unless told to --------------------------------------


def test_replay_serves_side_effecting_calls_from_the_store_unless_told_to_run_them(recorded, tmp_path):
    shop = tmp_path / "shop.db"
    same = cli(recorded, "replay", "t1")
    assert (same.returncode, same.stdout) == (0, "replay of t1: identical (4 steps, 4 model calls)\n"), same.stderr
    assert orders(shop) == ["tea"]  # not ordered twice
    assert (tmp_path / "work" / "out.txt").read_text() == "6"
    told = cli(recorded, "replay", "t1", "--run-side-effects", "--sandbox", str(tmp_path / "work"), "--db-tool", str(shop))
    assert told.returncode == 5, told.stderr + told.stdout  # asked for: run again, on a shop that has the first order
    assert "step 3: the tools' observations differ" in told.stdout and "inserted row 2" in told.stdout
    assert orders(shop) == ["tea", "tea"]


# --- a tampered field is a one-line error, never a traceback ----------------------------------------

FIELDS = [  # (table, column, where): every row the commands below read
    ("runs", "task", "thread_id = 't1'"), ("runs", "status", "thread_id = 't1'"), ("runs", "steps", "thread_id = 't1'"),
    ("runs", "counters", "thread_id = 't1'"), ("runs", "spec", "thread_id = 't1'"), ("runs", "answer", "thread_id = 't1'"),
    ("runs", "updated_at", "thread_id = 't1'"),
    *[("channel_values", "value", f"channel = '{c}'") for c in ("task", "scratchpad", "counters", "status", "reply",
                                                                  "run", "answer", "extensions")],
    ("checkpoints", "checkpoint", "1 = 1"), ("checkpoints", "metadata", "1 = 1"),
    ("checkpoint_writes", "value", "1 = 1"),
    ("node_events", "actions", "actions IS NOT NULL"), ("node_events", "data", "data IS NOT NULL"),
    ("node_events", "decision", "node = 'guard'"), ("node_events", "step", "1 = 1"),
]
VALUES = {"null": None, "number": 12345, "text": "x", "bad JSON": "{not json", "huge": str(10**30),
          "bad msgpack": b"\xc1\xff", "list": "[1, [2]]", "object": '{"a": {"b": 1}}', "float": 1e308}
COMMANDS = [["runs", "list"], ["runs", "show", "t1"], ["runs", "show", "t1", "--json"],
            ["runs", "show", "t1", "--format", "html"], ["replay", "t1", "--stub-tools"], ["resume", "t1"]]
EDITS = [(t, c, w, v, cmd) for (t, c, w) in FIELDS for v in VALUES for cmd in range(len(COMMANDS))]


def check_edit(db: Path, table: str, column: str, where: str, value: str, command: list[str]) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE thread_id = 't1' AND {where}", (VALUES[value],))
    done = cli(db, *command)
    assert "Traceback" not in done.stderr, f"{table}.{column} = {value}: {command}\n{done.stderr[-2000:]}"
    if done.returncode in (1, 2):
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("reinloop: error: "), (table, column, value, done.stderr)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The run of :func:`recorded`, recorded once for every edit below."""
    from .openai_server import OpenAIServer

    where = tmp_path_factory.mktemp("pristine")
    (where / "work").mkdir()
    with sqlite3.connect(where / "shop.db") as shop:
        shop.execute("CREATE TABLE orders (item TEXT)")
    with OpenAIServer() as server:
        server.responses += [reply("calculator", {"expression": "2*3"}), reply("write_file", SANDBOX_CALL),
                             reply("db_insert", ORDER_CALL), completion("6, written and ordered")]
        run("compute, write, order", model="openai:gpt-4o-mini", base_url=server.base_url, db=where / "runs.db",
            tools="calculator,write_file,db_insert", approve="none", thread_id="t1",
            tool_settings={"sandbox": str(where / "work"), "db": str(where / "shop.db"), "db_tables": "orders"})
    return where / "runs.db"


@pytest.fixture
def recording(pristine, tmp_path) -> Path:
    """A copy of the recorded run database to edit, made fresh for each edit."""
    copy = tmp_path / "runs.db"
    copy.write_bytes(pristine.read_bytes())
    return copy


@pytest.mark.parametrize("edit", EDITS[::53], ids=lambda e: f"{e[0]}.{e[1]}[{e[2]}]={e[3]}:{' '.join(COMMANDS[e[4]])}")
def test_one_field_edits_end_in_an_answer_or_one_error_line(recording, edit):
    table, column, where, value, command = edit
    check_edit(recording, table, column, where, value, COMMANDS[command])
