"""Across processes: resume a broken run in a new process, survive SIGKILL mid-tool, share one database.

Every resume here happens in a fresh Python process (the CLI or a worker
script), through the real OpenAI client against the local scripted server;
every test runs on both backends (``db_url``: a SQLite file, then PostgreSQL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reinloop.checkpoints import open_saver
from reinloop.cli.app import main

from ..openai_server import Raw, completion

WORKER = Path(__file__).with_name("worker.py")
ROOT = Path(__file__).parents[2]


def reinloop(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    """``reinloop ARGS`` in a new process."""
    env = {**os.environ, "REINLOOP_DB": str(db)}
    return subprocess.run([sys.executable, "-m", "reinloop", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


def worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)


def calc(expression: str) -> dict:
    return completion(tool_calls=[{"name": "calculator", "args": {"expression": expression}}])


def slow(reply: dict, seconds: float) -> Raw:
    return Raw(200, json.dumps(reply), delay=seconds)


# (breaker, run flags, replies until the break, resume flags, replies after)
BREAKERS = [
    ("max_steps", ["--max-steps", "2"], [calc("1+1"), calc("2+2")], ["--extra-steps", "2"], [completion("4")]),
    ("timeout", ["--max-seconds", "0.3"], [slow(calc("1+1"), 0.4)], ["--extra-seconds", "60"], [completion("4")]),
    ("token_budget", ["--token-budget", "30"], [calc("1+1"), calc("2+2")], ["--extra-tokens", "5000"], [completion("4")]),
    ("repeated_action", [], [calc("2+2")] * 3, ["--hint", "use what you have"], [completion("4")]),
    (
        "same_errors",
        [],
        [completion(tool_calls=[{"name": "web", "args": {"q": f"2+2 try {i}"}}]) for i in range(3)],
        ["--hint", "there is no web tool; use the calculator"],
        # at step 5 step 1 has left the window; it waits (in the ledger) for a batch of 3 to fold: no summarizer call
        [calc("2+2"), completion("4")],
    ),
]


@pytest.mark.parametrize("breaker", BREAKERS, ids=[b[0] for b in BREAKERS])
def test_each_breaker_pauses_and_a_new_process_resumes_to_the_answer(breaker, openai_server, db_url, capsys):
    reason, run_flags, before, resume_flags, after = breaker
    openai_server.responses += before
    code = main(["run", "what is 2+2?", "--base-url", openai_server.base_url, "--tools", "calculator",
                 "--thread", "t1", "--json", "--quiet", *run_flags])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["status"] == "broken" and out["break_reason"] == reason and out["paused"]

    openai_server.responses += after
    proc = reinloop("resume", "t1", "--json", "--quiet", *resume_flags, db=db_url)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert done["status"] == "done" and done["answer"] == "4"

    with open_saver(db_url) as saver:
        (row,) = saver.db.runs.breaks("t1")
    assert row.reason == reason
    assert row.resolution["action"] == "continue"
    if "--hint" in resume_flags:
        hint = resume_flags[resume_flags.index("--hint") + 1]
        assert hint in json.dumps(openai_server.requests[len(before)], ensure_ascii=False)


def read_log(workdir: Path) -> list[str]:
    return (workdir / "calls.log").read_text().split("\n")[:-1]


def scripted_replies() -> list[dict]:
    calls = [completion(tool_calls=[{"name": "record", "args": {"item": x}, "id": f"call_{x}"}]) for x in "abc"]
    return [*calls, completion("recorded a, b and c")]


def test_sigkill_in_a_tool_step_resumes_in_a_new_process_without_redoing_finished_steps(openai_server, tmp_path, db_url):
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "hang_on").write_text("b")
    openai_server.responses += scripted_replies()
    proc = worker("run", db_url, "k1", openai_server.base_url, str(killed))
    deadline = time.time() + 60
    while not (killed / "ready").exists():
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert read_log(killed) == ["start a", "end a", "start b"]

    proc = worker("resume", db_url, "k1", openai_server.base_url, str(killed))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    outcome = json.loads(out)
    assert outcome["answer"] == "recorded a, b and c"
    assert outcome["counters"]["steps"] == 4  # as uninterrupted: three tool steps and the answer
    # a ran once; only the cut-off step b ran again; c ran once
    assert read_log(killed) == ["start a", "end a", "start b", "start b", "end b", "start c", "end c"]
    assert len(openai_server.requests) == 4  # no model call was repeated either


def test_two_processes_write_different_threads_into_one_database_at_once(tmp_path, db_url):
    steps = 60
    procs = [worker("many", db_url, name, str(steps), str(tmp_path)) for name in ("left", "right")]
    deadline = time.time() + 60
    while not all((tmp_path / f"ready-{name}").exists() for name in ("left", "right")):
        assert time.time() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.02)
    (tmp_path / "go").write_text("1")  # both have opened the file: start writing together
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
        assert "locked" not in err
        assert json.loads(out)["status"] == "done"
    with open_saver(db_url) as saver:
        rows = sorted((r.thread_id, r.status, r.steps) for r in saver.db.runs.list())
    assert rows == [("left", "done", steps + 1), ("right", "done", steps + 1)]
