"""A run whose process stops mid-run, through the command line: Ctrl-C and SIGTERM save it as interrupted and
say how to go on; a killed process's run is shown as abandoned, never as running (issue 39, item 2).

Each test starts ``reinloop`` processes against the local OpenAI-compatible server, whose reply is held back
while the signal comes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest

from .openai_server import Raw, completion

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")]

REINLOOP = [sys.executable, "-m", "reinloop"]
ENV = {**os.environ, "OPENAI_API_KEY": "sk-test"}
HELD = 60.0
"""Seconds the server holds back the reply the signal interrupts (the run must not wait for it)."""


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REINLOOP, *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, env=ENV,
                          timeout=120)


def start_held_run(server, db, *flags: str) -> subprocess.Popen[str]:
    """``reinloop run`` whose first step calls the calculator and whose second model call hangs."""
    server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}]),
                         Raw(200, json.dumps(completion("41")), delay=HELD), completion("42")]
    proc = subprocess.Popen([*REINLOOP, "run", "What is 6*7?", "--base-url", server.base_url, "--tools", "calculator",
                             "--db", str(db), "--no-color", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, env=ENV)
    deadline = time.monotonic() + 60
    while len(server.requests) < 2:  # the second model call is in flight
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc


def listed(db) -> dict[str, dict]:
    runs = json.loads(cli("runs", "list", "--db", str(db), "--json").stdout)
    return {r["thread_id"]: r for r in runs}


@pytest.mark.parametrize(("sent", "flags"), [(signal.SIGINT, ()), (signal.SIGTERM, ("--json",))],
                         ids=["ctrl-c", "sigterm-json"])
def test_a_signal_saves_the_run_as_interrupted_and_says_how_to_go_on(openai_server, tmp_path, sent, flags):
    db = tmp_path / "runs.db"
    proc = start_held_run(openai_server, db, *flags)
    signalled = time.monotonic()
    proc.send_signal(sent)
    out, err = proc.communicate(timeout=HELD / 2)
    assert time.monotonic() - signalled < 10, "the process waited for the held-back reply"
    assert proc.returncode == 1
    thread_id = out.splitlines()[0].removeprefix("thread ") if not flags else json.loads(out.splitlines()[-1])["thread_id"]
    command = f"reinloop resume {thread_id} --db {db}"
    assert err.strip() == (f"reinloop: interrupted by {sent.name}: run {thread_id} is saved as interrupted; "
                           f"go on with: {command}")
    if flags:
        assert json.loads(out.splitlines()[-1]) == {"type": "outcome", "status": "interrupted", "thread_id": thread_id,
                                                    "signal": sent.name, "resume_command": command, "exit_code": 1}
    run = listed(db)[thread_id]
    assert (run["status"], run["steps"], run["resume_command"]) == ("interrupted", 1, command)
    table = cli("runs", "list", "--db", str(db)).stdout
    assert f"{thread_id}    interrupted" in table
    assert table.splitlines()[1].endswith(f"go on: {command}")  # the whole command, however long its --db path
    shown = cli("runs", "show", thread_id, "--db", str(db)).stdout
    assert shown.splitlines()[0] == f"thread {thread_id}: interrupted (stopped by a signal; go on with: {command})"
    detail = json.loads(cli("runs", "show", thread_id, "--db", str(db), "--json").stdout)
    assert (detail["status"], detail["resume_command"]) == ("interrupted", command)

    resumed = cli(*command.split()[1:], "--no-color")  # the command said, as it was said
    assert resumed.returncode == 0, resumed.stderr
    assert "answer: 42" in resumed.stdout
    assert listed(db)[thread_id]["status"] == "done"


def test_a_killed_run_is_shown_as_abandoned_never_as_running_and_goes_on(openai_server, tmp_path):
    db = tmp_path / "runs.db"
    proc = start_held_run(openai_server, db)
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    thread_id = out.splitlines()[0].removeprefix("thread ")
    command = f"reinloop resume {thread_id} --db {db}"

    run = listed(db)[thread_id]
    assert (run["status"], run["owner_pid"], run["resume_command"]) == ("abandoned", proc.pid, command)
    assert cli("runs", "list", "--db", str(db), "--status", "running").stdout.strip() == "no runs with status running"
    assert thread_id in cli("runs", "list", "--db", str(db), "--status", "abandoned").stdout
    shown = cli("runs", "show", thread_id, "--db", str(db)).stdout.splitlines()[0]
    assert shown.startswith(f"thread {thread_id}: abandoned (its process, {proc.pid} on ")
    assert shown.endswith(f"is gone; go on with: {command})")
    detail = json.loads(cli("runs", "show", thread_id, "--db", str(db), "--json").stdout)
    assert (detail["status"], detail["resume_command"]) == ("abandoned", command)  # as `runs list --json` says

    def beat_at(age: timedelta) -> str:
        with sqlite3.connect(db) as conn:  # the row as a process on another machine would have left it
            conn.execute("UPDATE runs SET owner_host = 'elsewhere', heartbeat_at = ? WHERE thread_id = ?",
                         ((datetime.now(timezone.utc) - age).isoformat(timespec="milliseconds"), thread_id))
        conn.close()
        return listed(db)[thread_id]["status"]

    # on another host its pid means nothing here: its heartbeat tells
    assert beat_at(timedelta(seconds=5)) == "running"
    assert beat_at(timedelta(minutes=5)) == "abandoned"

    resumed = cli(*command.split()[1:], "--no-color")
    assert resumed.returncode == 0 and "answer: 42" in resumed.stdout, resumed.stderr

