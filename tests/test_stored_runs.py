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

from reinloop.runs.api import run

from .stored_edits import Edit, edits

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


@pytest.fixture
def paused(openai_server, run_db) -> Path:
    """Run ``p1``: one calculation, then paused at its step limit (resumable)."""
    openai_server.responses += [reply("calculator", {"expression": "2*3"})]
    outcome = run("compute", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
                  limits={"max_steps": 1}, thread_id="p1")
    assert outcome.paused, outcome
    return run_db


def test_resume_starts_no_mcp_server_a_stored_spec_names_without_start_mcp(paused, openai_server, tmp_path):
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    with sqlite3.connect(paused) as conn:
        spec = json.loads(conn.execute("SELECT spec FROM runs WHERE thread_id = 'p1'").fetchone()[0])
        spec["mcp"] = {"mcpServers": {"evil": {"command": command[0], "args": command[1:]}}}
        conn.execute("UPDATE runs SET spec = ? WHERE thread_id = 'p1'", (json.dumps(spec),))
    for argv in (["resume", "p1", "--extra-steps", "1"], ["resume", "p1", "--extra-steps", "1", "--json"]):
        line = one_error_line(cli(paused, *argv))
        assert "spec.mcp" in line and "evil: " + " ".join(command)[:60] in line, line
        assert "a resume does not use what only the run database names" in line and "--start-mcp" in line, line
    assert not marker.exists()
    openai_server.responses += [completion("6")]
    mine = tmp_path / "mine.json"  # the user's own servers replace the stored ones: none here
    mine.write_text(json.dumps({"mcpServers": {}}))
    done = cli(paused, "resume", "p1", "--extra-steps", "1", "--mcp", str(mine), "--base-url", openai_server.base_url)
    assert done.returncode == 0, done.stderr + done.stdout
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


def test_runs_list_lists_the_other_runs_and_marks_a_damaged_one(recorded, openai_server):
    openai_server.responses.append(completion("fine"))
    assert run("say fine", model="openai:gpt-4o-mini", base_url=openai_server.base_url, thread_id="t2").status == "done"
    tamper = [("UPDATE runs SET task = ? WHERE thread_id = 't1'", (b"\xc1\xff",), "runs.task"),
              ("UPDATE runs SET counters = ? WHERE thread_id = 't1'", ('{"steps": "x"}',), "runs.counters"),
              ("UPDATE runs SET status = 'running' WHERE thread_id = 't1'", (), None),  # read through its state:
              ("UPDATE channel_values SET value = '[1]' WHERE thread_id = 't1' AND channel = 'counters'", (),
               "channel 'counters'")]
    for sql, params, field in tamper:
        with sqlite3.connect(recorded) as conn:
            conn.execute(sql, params)
        if field is None:
            continue
        done = cli(recorded, "runs", "list", "--json")
        assert done.returncode == 0 and done.stderr == "", done.stderr
        listed = {r["thread_id"]: r for r in json.loads(done.stdout)}
        assert listed["t2"]["status"] == "done" and listed["t2"]["damage"] is None
        assert listed["t1"]["status"] == "damaged" and field in listed["t1"]["damage"], listed["t1"]
        text = cli(recorded, "runs", "list")
        assert text.returncode == 0 and "damaged" in text.stdout and "t2" in text.stdout, text.stderr
        with sqlite3.connect(recorded) as conn:  # mended again: the next tampering is the only one
            conn.execute("UPDATE runs SET task = 'compute, write, order', counters = '{}' WHERE thread_id = 't1'")
    damaged = cli(recorded, "runs", "list", "--status", "damaged", "--json")
    assert [r["thread_id"] for r in json.loads(damaged.stdout)] == ["t1"]


# --- a tampered field is a one-line error, never a traceback ----------------------------------------

COMMANDS = [["runs", "list"], ["runs", "show", "t1"], ["runs", "show", "t1", "--json"], ["replay", "t1", "--stub-tools"],
            ["resume", "t1"]]
MORE_COMMANDS = [["runs", "show", "t1", "--format", "html"]]


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


def edited(pristine: Path, edit: Edit, where: Path) -> Path | None:
    """A copy of the recorded run database in ``where`` with ``edit`` made; None when there was nothing to edit."""
    where.mkdir(parents=True, exist_ok=True)
    copy = where / "runs.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    copy.write_bytes(pristine.read_bytes())
    return copy if edit.apply(copy) else None


def in_process(db: Path, argv: list[str]) -> tuple[int, str]:
    """``reinloop ARGV --db DB`` in this process: its exit code and stderr (a traceback if it raised)."""
    import contextlib
    import io
    import traceback

    from reinloop.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, "--db", str(db)])
    except BaseException:  # noqa: BLE001  (what the test looks for)
        return 99, err.getvalue() + traceback.format_exc()
    return code, err.getvalue()


def problem(edit: Edit, argv: list[str], code: int, stderr: str) -> str | None:
    """What is wrong with how a command ended on an edited database, or None: an answer or one clear error line."""
    if "Traceback" in stderr or code not in (0, 1, 2, 3, 4, 5):
        return f"{edit}: {' '.join(argv)} exited {code} with a traceback:\n{stderr[-1500:]}"
    lines = stderr.strip().splitlines()
    if code in (1, 2) and (len(lines) != 1 or not lines[0].startswith("reinloop: error: ")):
        return f"{edit}: {' '.join(argv)} exited {code} without one error line: {stderr[-500:]}"
    return None


def check_in_process(pristine: Path, where: Path, chosen: list[Edit], commands: list[list[str]]) -> list[str]:
    """The problems of ``commands`` run in this process on each edit of ``chosen``."""
    found = []
    for edit in chosen:
        if (db := edited(pristine, edit, where)) is None:
            continue
        for argv in commands:
            argv = [*argv, "--model-retries", "0"] if argv[0] == "resume" else argv  # a dead endpoint, asked once
            found.append(problem(edit, argv, *in_process(db, argv)))
    return [p for p in found if p]


def test_a_sample_of_one_field_edits_ends_in_an_answer_or_one_error_line(pristine, tmp_path):
    chosen = edits(pristine)[::37]
    assert len(chosen) > 100
    assert check_in_process(pristine, tmp_path / "edit", chosen, COMMANDS + MORE_COMMANDS) == []


def test_a_sample_of_one_field_edits_in_subprocesses_ends_in_one_error_line(pristine, tmp_path):
    """The CLI as users run it: a few edits of different kinds, in subprocesses."""
    found = []
    for edit in edits(pristine)[5::431]:
        if (db := edited(pristine, edit, tmp_path / "edit")) is None:
            continue
        for argv in COMMANDS:
            done = cli(db, *argv)
            found.append(problem(edit, argv, done.returncode, done.stderr))
    assert [p for p in found if p] == []


@pytest.mark.slow
def test_every_one_field_edit_ends_in_an_answer_or_one_error_line(pristine, tmp_path):
    found = check_in_process(pristine, tmp_path / "edit", edits(pristine), COMMANDS)
    assert found == [], f"{len(found)} problems:\n" + "\n".join(found[:40])
