"""Batch throughput: tasks per second at concurrency 1, 4 and 16, on SQLite and on PostgreSQL.

    python benchmarks/batch.py                       # 48 tasks per cell; PostgreSQL from $REINLOOP_TEST_PG,
                                                     # else a throwaway server (initdb + pg_ctl, fsync on)
    python benchmarks/batch.py --tasks 96 --pg postgresql://user:pw@host/db

One worker process runs ``reinloop.runs.batches.batch`` on a fresh database per
cell. Every task takes two model calls (the calculator, then the answer) and
is checkpointed, logged (``node_events``) and queued as in production. The model is
scripted (:func:`reinloop.cli.server.plan`): replies computed from each prompt,
so concurrent runs never take each other's replies. Two models:

- **instant**: replies at once, so the table shows reinloop's own cost per
  task, which Python threads share (one process, the GIL): concurrency cannot
  raise it much, more workers (processes, machines) can;
- **50 ms**: each reply takes 50 ms, as a (fast) real model does; waiting
  overlaps, so concurrency raises throughput until the framework's own time
  is the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests/pg_server.py, which starts a throwaway server

from reinloop.runs.batches import batch  # noqa: E402
from reinloop.cli.server import plan  # noqa: E402
from reinloop.testing import ScriptedChatModel  # noqa: E402

CONCURRENCY = (1, 4, 16)


def model(latency: float) -> ScriptedChatModel:
    """A scripted model that plans each reply from its prompt, after ``latency`` seconds."""

    def reply(messages: Any) -> Any:
        if latency:
            time.sleep(latency)
        return plan(messages)

    return ScriptedChatModel(replies=[reply] * 100_000)


def fresh_database(backend: str, workdir: Path, pg_url: str) -> str:
    """A new SQLite file, or a new schema on the PostgreSQL server (as a URL)."""
    if backend == "sqlite":
        return str(workdir / f"{uuid.uuid4().hex[:8]}.db")
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3D{schema}"


def tasks_per_second(db: str, tasks: Path, concurrency: int, latency: float) -> float:
    start = time.perf_counter()
    report = batch(tasks, concurrency=concurrency, db=db, model=model(latency), tools="calculator", poll=0.05)
    seconds = time.perf_counter() - start
    assert report.counts["done"] == len(report.tasks), report.counts
    return len(report.tasks) / seconds


def server_url(given: str | None) -> tuple[str, Callable[[], None]]:
    """The PostgreSQL URL to use, and how to stop a server started here."""
    url = given or os.environ.get("REINLOOP_TEST_PG")
    if url:
        return url, lambda: None
    from tests import pg_server

    server = pg_server.start(durable=True)  # fsync on, as in production
    return server.url, server.stop


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=48, help="tasks per cell [48]")
    parser.add_argument("--pg", help="a PostgreSQL URL [$REINLOOP_TEST_PG, else a throwaway server]")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per reply of the slow model [0.05]")
    args = parser.parse_args(argv)
    url, stop = server_url(args.pg)
    results: dict[tuple[str, str], dict[int, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            tasks = workdir / "tasks.jsonl"
            tasks.write_text("".join(json.dumps({"task": f"What is {i}*3?"}) + "\n" for i in range(1, args.tasks + 1)))
            for label, latency in (("instant", 0.0), (f"{args.latency * 1000:g} ms", args.latency)):
                for backend in ("sqlite", "postgresql"):
                    for n in CONCURRENCY:
                        print(f"{backend}, {label} model, concurrency {n} ...", file=sys.stderr, flush=True)
                        db = fresh_database(backend, workdir, url)
                        results.setdefault((label, backend), {})[n] = tasks_per_second(db, tasks, n, latency)
    finally:
        stop()
    print_table(results, args.tasks)


def print_table(results: dict[tuple[str, str], dict[int, float]], tasks: int) -> None:
    head = " | ".join(f"concurrency {n}" for n in CONCURRENCY)
    print(f"| model | backend | {head} | {CONCURRENCY[-1]} vs 1 |")
    print("| --- | --- | " + " | ".join("---:" for _ in CONCURRENCY) + " | ---: |")
    for (label, backend), row in results.items():
        cells = " | ".join(f"{row[n]:.1f} tasks/s" for n in CONCURRENCY)
        print(f"| {label} | {backend} | {cells} | {row[CONCURRENCY[-1]] / row[CONCURRENCY[0]]:.1f}x |")
    print(f"\n{tasks} tasks per cell, 2 model calls each; one worker process; a fresh database per cell")


if __name__ == "__main__":
    main()
