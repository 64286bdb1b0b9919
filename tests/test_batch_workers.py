"""Acceptance: 200 tasks, 3 worker processes on one PostgreSQL database, one worker SIGKILLed mid-way.

Every task must finish exactly once: none lost, none started twice (a task
taken over from the dead worker is resumed from its checkpoint, so its thread
holds one run of two steps), its side-effecting tool run at most once (the
journal), and no model call repeated except the one a killed step was waiting
for. On a loaded machine a surviving worker may be starved past its lease and
lose tasks as well: it must say so, and those tasks obey the same rules. The
model is the local OpenAI-compatible server, whose replies are computed from
each request (concurrent runs share it), through the real client.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import psycopg

from reinloop.checkpoints import open_saver

from .openai_server import OpenAIServer, Raw, completion

ROOT = Path(__file__).parents[1]
WORKER = Path(__file__).with_name("batch_worker.py")
TASKS = 200
ITEM = re.compile(r"item (task-\d+)")
LOST = re.compile(r"task (\S+) was taken over by another worker")


def interruptible() -> None:
    """Give the child Python's Ctrl-C handler even when the tests run as a background job.

    A shell starts background jobs with SIGINT ignored, and Python installs its
    KeyboardInterrupt handler only over the default disposition.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def record_reply(body: dict) -> Raw:
    """Call ``record`` for the task's item, then answer once its result is in the prompt."""
    messages = body["messages"]
    item = ITEM.search(json.dumps(messages, ensure_ascii=False)).group(1)
    if any(m.get("role") == "tool" for m in messages):
        reply = completion(f"recorded {item}")
    else:
        reply = completion(tool_calls=[{"name": "record", "args": {"item": item}, "id": f"call_{item}"}])
    return Raw(200, json.dumps(reply), delay=0.01)  # a model takes a while: workers always have tasks in flight


def items_of(requests: list[dict]) -> Counter:
    return Counter(ITEM.search(json.dumps(r["messages"], ensure_ascii=False)).group(1) for r in requests)


def test_a_batch_survives_a_killed_worker_and_runs_every_task_exactly_once(pg_url, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": f"Record item task-{i}"}) + "\n" for i in range(TASKS)))
    open_saver(pg_url).close()  # the tables exist before the test watches them
    with OpenAIServer(reply=record_reply) as server:
        argv = [sys.executable, str(WORKER), pg_url, str(tasks), server.base_url, str(tmp_path), "4", "2"]
        workers = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                   for _ in range(3)]
        victim = workers[0]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            deadline = time.time() + 60
            while conn.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0] < TASKS // 3:
                assert time.time() < deadline and victim.poll() is None, victim.stderr.read() if victim.stderr else ""
                time.sleep(0.05)
            held = "SELECT thread_id FROM tasks WHERE status = 'running' AND worker LIKE %s"
            victim.send_signal(signal.SIGSTOP)  # frozen, it claims and finishes nothing more; it may be between tasks
            while not conn.execute(held, (f"%:{victim.pid}:%",)).fetchall():
                victim.send_signal(signal.SIGCONT)
                assert time.time() < deadline, "the victim never held a task"
                time.sleep(0.05)
                victim.send_signal(signal.SIGSTOP)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)
            # read after the kill: a finish the victim sent just before it froze may still have committed
            orphans = [r[0] for r in conn.execute(held, (f"%:{victim.pid}:%",))]
        assert orphans, "the killed worker held no task: nothing was taken over"
        # a live worker too slow to renew (a loaded machine) is taken for dead too: it stops those tasks, and says so
        lost = set(LOST.findall(victim.stderr.read()))
        reports = []
        for proc in workers[1:]:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
            reports.append(json.loads(out))
            lost |= set(LOST.findall(err))
        left = set(orphans) | lost  # the tasks another worker had to take over
        requests = list(server.requests)

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT thread_id, status, attempts, worker, answer, steps, task, error FROM tasks").fetchall()
        states = conn.execute("SELECT thread_id, status, steps FROM runs").fetchall()
    assert len(rows) == TASKS and {r[1] for r in rows} == {"done"}, [(r[0], r[7]) for r in rows if r[1] != "done"]  # none lost
    item = {r[0]: ITEM.search(r[6]).group(1) for r in rows}
    assert all(r[4] == f"recorded {item[r[0]]}" and r[5] == 2 for r in rows)
    assert all(f":{victim.pid}:" not in r[3] for r in rows if r[0] in orphans)  # finished by the others
    taken_over = {r[0] for r in rows if r[2] > 1}
    assert taken_over == left
    # none started twice: one run of two steps per thread (a restart would have made a second run)
    assert len(states) == TASKS and all(s[1] == "done" and s[2] == 2 for s in states)
    outcomes = [o for report in reports for o in report["outcomes"]]
    assert {o["thread_id"] for o in outcomes if o["resumed"]} <= left
    assert len({o["thread_id"] for o in outcomes}) == len(outcomes)  # each recorded by one worker only

    effects = Counter(line.split()[0] for line in (tmp_path / "effects.log").read_text().splitlines())
    assert max(effects.values()) == 1  # the side-effecting tool ran at most once per task
    assert set(item.values()) - set(effects) <= {item[t] for t in left}  # left in the call: outcome unknown
    calls = items_of(requests)
    assert set(calls) == set(item.values())
    repeated = {item for item, n in calls.items() if n > 2}
    assert all(n <= 3 for n in calls.values()) and len(repeated) <= len(left)  # only a left step's call again


def slow_record_reply(body: dict) -> Raw:
    """``record_reply``, taking a second: a worker is always mid-call when the test stops it."""
    reply = record_reply(body)
    return Raw(reply.status, reply.body, delay=1.0)


def test_a_worker_stopped_past_its_lease_stops_the_task_another_worker_took_over(tmp_path):
    # SIGSTOP is what a starved process looks like from outside: alive, but renewing nothing
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task": "Record item task-0"}) + "\n")
    db = str(tmp_path / "runs.db")
    with OpenAIServer(reply=slow_record_reply) as server:
        argv = [sys.executable, str(WORKER), db, str(tasks), server.base_url, str(tmp_path), "1", "1"]
        slow = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        deadline = time.time() + 60
        while not server.requests:  # the slow worker waits for the model
            assert time.time() < deadline and slow.poll() is None, slow.stderr.read() if slow.stderr else ""
            time.sleep(0.02)
        slow.send_signal(signal.SIGSTOP)
        try:
            other = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)  # takes it over
            assert other.returncode == 0, other.stderr
            calls = len(server.requests)
        finally:
            slow.send_signal(signal.SIGCONT)
        out, err = slow.communicate(timeout=60)
        assert len(server.requests) == calls, "the slow worker went on calling the model for a task it had lost"
    assert slow.returncode == 0 and json.loads(out)["outcomes"] == [], err
    assert "task tasks-" in err and "was taken over by another worker" in err
    report = json.loads(other.stdout)
    assert [o["status"] for o in report["outcomes"]] == ["done"]
    with open_saver(db) as saver:
        [task] = saver.db.query("SELECT status, attempts, worker FROM tasks")
        [run] = saver.db.query("SELECT status, steps FROM runs")
    assert (task["status"], task["attempts"], run["status"], run["steps"]) == ("done", 2, "done", 2)
    assert task["worker"] == report["worker"]
    assert len((tmp_path / "effects.log").read_text().splitlines()) == 1  # the tool ran once


def reply_after(seconds: float):
    """The calculator for the task's product, then its result; each reply takes ``seconds``."""

    def reply(body: dict) -> Raw:
        messages = body["messages"]
        tool = [m for m in messages if m.get("role") == "tool"]
        expression = json.dumps(messages).split("What is ")[1].split("?")[0]
        result = completion(tool[-1]["content"]) if tool else completion(
            tool_calls=[{"name": "calculator", "args": {"expression": expression}}])
        return Raw(200, json.dumps(result), delay=seconds)

    return reply


def wait_until_done(db: Path, tasks: int, proc: subprocess.Popen) -> None:
    """Wait until ``tasks`` tasks of the batch in the SQLite file ``db`` are done (the batch may not have made it yet)."""
    deadline = time.time() + 60
    while True:
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                if conn.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0] >= tasks:
                    return
        except sqlite3.OperationalError:  # no database, or no tasks table, yet
            pass
        assert time.time() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)


def first_line(proc: subprocess.Popen) -> str:
    """The child's first line of stdout, read from the pipe itself, one byte at a time.

    ``proc.stdout.readline()`` would keep whatever else the pipe holds in its
    buffer, which ``communicate()`` never reads (it reads the pipe): the lines
    printed together with the first one would be lost.
    """
    assert proc.stdout is not None
    line = bytearray()
    while not line.endswith(b"\n") and (byte := os.read(proc.stdout.fileno(), 1)):
        line += byte
    return line.decode()


def test_ctrl_c_stops_claiming_and_lets_the_running_tasks_finish(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": f"What is {i}*3?"}) + "\n" for i in range(1, 21)))
    db = tmp_path / "runs.db"
    with OpenAIServer(reply=reply_after(0.3)) as server:
        proc = subprocess.Popen([sys.executable, "-m", "reinloop", "batch", str(tasks), "--base-url", server.base_url,
                                 "--tools", "calculator", "--db", str(db), "-n", "2", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                preexec_fn=interruptible)
        wait_until_done(db, 2, proc)  # the pipe holds two lines or more, as when the test reads late
        first = first_line(proc)  # tasks finished: others are running
        assert json.loads(first)["status"] == "done", proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "interrupted: claiming no more tasks; waiting for the" in err
    assert err.strip().endswith("reinloop: interrupted")
    with open_saver(str(db)) as saver:
        rows = saver.db.query("SELECT status, attempts FROM tasks")
    statuses = Counter(r["status"] for r in rows)
    assert "running" not in statuses and statuses["queued"] > 0, err  # the running ones finished, no new one began
    assert all(r["status"] == "done" for r in rows if r["attempts"])
    assert statuses["done"] == 1 + len(out.splitlines())


def test_a_second_ctrl_c_leaves_the_running_tasks_to_other_workers_at_once(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": f"What is {i}*3?"}) + "\n" for i in range(1, 5)))
    db = tmp_path / "runs.db"
    with OpenAIServer(reply=reply_after(30)) as server:  # the model never answers in time
        proc = subprocess.Popen([sys.executable, "-m", "reinloop", "batch", str(tasks), "--base-url", server.base_url,
                                 "--tools", "calculator", "--db", str(db), "-n", "2", "--lease", "30"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                preexec_fn=interruptible)
        deadline = time.time() + 60
        while len(server.requests) < 2:  # both slots wait for the model
            assert time.time() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        stopped = time.time()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert time.time() - stopped < 10 and proc.returncode == 1
    assert err.strip().endswith("reinloop: interrupted: 2 running task(s) left to the other workers (their lease ends "
                                "in 30 s at most)")
    with open_saver(str(db)) as saver:
        rows = saver.db.query("SELECT status, worker, lease_until FROM tasks ORDER BY line")
    assert [r["status"] for r in rows] == ["running", "running", "queued", "queued"]  # theirs once the lease runs out
