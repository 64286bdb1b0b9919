"""The command line as a new user meets it, in subprocesses: honest exits, closed pipes, the demo's runs read back.

Every test here starts ``reinloop`` processes (slow: listed in ``SLOW_PLACES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reinloop.runs.api import show_run

from .local_net import free_port
from .openai_server import completion

REINLOOP = [sys.executable, "-m", "reinloop"]
SCRIPT = Path(sys.executable).parent / "reinloop"  # the console script ./install.sh installs


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REINLOOP, *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "OPENAI_API_KEY": "sk-test", **(env or {})}, timeout=300)


def closed_early(*argv: str, lines: int = 0) -> tuple[int, list[str], str]:
    """Run ``reinloop ARGV`` with a reader that reads ``lines`` lines of stdout, then closes the pipe."""
    proc = subprocess.Popen([*REINLOOP, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env={**os.environ, "OPENAI_API_KEY": "sk-test"})
    assert proc.stdout is not None and proc.stderr is not None
    read = [proc.stdout.readline() for _ in range(lines)]
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=300), read, err


def test_a_json_run_whose_endpoint_is_down_ends_with_an_error_outcome_line(tmp_path):
    db = tmp_path / "runs.db"
    proc = cli("run", "hi", "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--model-retries", "0",
               "--json", "--thread", "down", "--db", str(db))
    assert proc.returncode == 1
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert outcome["type"] == "outcome" and outcome["status"] == "error" and outcome["thread_id"] == "down"
    assert "Connection error" in outcome["message"] and outcome["exit_code"] == 1
    assert ".;" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert show_run("down", db).run is not None  # the run was stored, as the thread id says


def test_a_json_run_refused_before_it_starts_still_ends_with_an_outcome_line():
    proc = cli("run", "hi", "--json", env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 1
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert outcome["status"] == "error" and outcome["thread_id"] is None and "OPENAI_API_KEY" in outcome["message"]


def test_a_reader_that_closes_after_the_first_line_does_not_stop_the_run(openai_server, tmp_path):
    db = tmp_path / "runs.db"
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}]),
                                completion("6*7 = 42")]
    code, first, err = closed_early("run", "What is 6*7?", "--base-url", openai_server.base_url, "--tools",
                                    "calculator", "--json", "--thread", "piped", "--db", str(db), lines=1)
    assert json.loads(first[0])["type"] == "event"
    assert code == 0 and "Traceback" not in err and err == ""
    detail = show_run("piped", db)
    assert detail.state["status"] == "done" and detail.state["answer"] == "6*7 = 42"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    proc = subprocess.run([str(SCRIPT), "demo", "--db", str(db)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return db


@pytest.mark.parametrize("argv", [["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "demo-3"],
                                  ["runs", "show", "demo-3", "--format", "html"], ["demo"]])
def test_a_reader_that_closes_at_once_gets_no_traceback(demo_db, argv):
    code, _, err = closed_early(*argv, "--db", str(demo_db))
    assert code == 0 and err == ""


def test_bad_input_is_refused_before_anything_is_printed(tmp_path):
    base = ["--base-url", f"http://127.0.0.1:{free_port()}/v1", "--db", str(tmp_path / "runs.db")]
    for argv, code in ((["hi", "--tools", "nosuch"], 2), (["hi", "--tools", "read_file"], 2),
                       (["hi", "--tools", "read_file", "--sandbox", str(tmp_path / "missing")], 2),
                       (["hi", "--tools", ""], 2), ([""], 2), (["  "], 2)):
        proc = cli("run", *argv, *base)
        assert (proc.returncode, proc.stdout) == (code, ""), (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 or proc.stderr.startswith("usage:"), proc.stderr
    proc = cli("run", "hi", "--db", str(tmp_path / "missing" / "runs.db"), *base[:2])
    assert proc.returncode == 1 and proc.stdout == "" and "does not exist" in proc.stderr


def test_a_newcomer_runs_the_demo_then_reads_its_runs_back(demo_db):
    """The README's first commands with the installed console script: exit 0, no traceback, no warning."""
    listed = subprocess.run([str(SCRIPT), "runs", "list", "--db", str(demo_db)], capture_output=True, text=True)
    assert listed.returncode == 0 and listed.stderr == ""
    rows = listed.stdout.splitlines()
    assert rows[0].split()[:2] == ["THREAD", "STATUS"]
    assert sorted(row.split()[0] for row in rows[1:]) == ["demo-0", "demo-1", "demo-2", "demo-3"]
    for fmt in ("text", "json", "html"):
        shown = subprocess.run([str(SCRIPT), "runs", "show", "demo-3", "--db", str(demo_db), "--format", fmt],
                               capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert shown.stderr == "", shown.stderr  # no traceback, no warning line
        assert "demo-3" in shown.stdout
    assert json.loads(subprocess.run([str(SCRIPT), "runs", "show", "demo-3", "--db", str(demo_db), "--json"],
                                     capture_output=True, text=True).stdout)["thread_id"] == "demo-3"


def test_a_100_kb_task_is_refused_before_the_run_with_its_size_and_the_budget_then_runs_whole_under_a_raised_one(
        openai_server, tmp_path):
    import re

    task = "Count the words of this text: " + "lorem ipsum dolor sit amet " * 3800 + "THE END"  # 100 KB
    assert len(task.encode()) > 100_000
    db = str(tmp_path / "runs.db")
    proc = cli("run", task, "--base-url", openai_server.base_url, "--db", db)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    found = re.fullmatch(r"reinloop: error: the task is ([\d,]+) tokens \(tiktoken:o200k_base\): with the system prompt "
                         r"and tools \([\d,]+\) and 200 for the steps it needs ([\d,]+), more than the prompt budget "
                         r"--max-prompt-tokens=8,000; it is refused rather than cut, since a cut task crowds out the tool "
                         r"results; raise it to at least (\d+), or give the long text as a file the run reads "
                         r"\(read_file, search_docs\)", line)
    assert found, line
    assert int(found[1].replace(",", "")) > 8000 and found[2].replace(",", "") == found[3]
    assert openai_server.requests == []  # the model was never called
    listed = cli("runs", "list", "--json", "--db", db)
    assert listed.returncode != 0 or json.loads(listed.stdout) == []  # and no run was stored
    openai_server.responses += [completion("about 19,000 words")]
    done = cli("run", task, "--base-url", openai_server.base_url, "--db", db, "--max-prompt-tokens", found[3], "-q")
    assert done.returncode == 0, done.stderr
    [sent] = [m["content"] for m in openai_server.requests[0]["messages"] if m["role"] == "user"]
    assert sent == f"Task: {task}"  # whole, never cut
