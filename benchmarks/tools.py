"""Timings of the tool pack: the search_docs index and the executor's overhead.

    python benchmarks/tools.py [--docs 1000] [--calls 500]

1. Builds a ``search_docs`` index over N generated Markdown documents, checks
   it again with nothing changed, changes one file and updates incrementally
   (only that file is re-read), then answers a query.
2. Runs one calculator call N times directly (``tool.invoke``) and through
   the executor (worker thread, retry wrapper, result checks), with the
   pool's kept workers and with a fresh thread per call (as before).
3. Runs one small ``sql_query`` N/10 times in this process and as the tool
   does, in a process of its own (what bounds a runaway query).

Times are printed, side by side with ratios from the same run; nothing is
asserted (machines differ).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

from reinloop.tools import DocsIndex, ToolExecutor, WorkerPool, calculator, sqlengine
from reinloop.tools.sql import run_query

TOPICS = "agent loop tool model guard budget retry timeout journal refund weather sandbox".split()


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    """Pseudo-words made of syllables, so term frequencies look like text, not like a word list."""
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    return sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(size)})


def generate(folder: Path, n: int, rng: random.Random) -> None:
    """``n`` Markdown documents of ~200 Zipf-distributed words each, a few topic words, in sub-folders."""
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    for i in range(n):
        sub = folder / f"part{i % 10}"
        sub.mkdir(exist_ok=True)
        body = rng.choices(words, weights, k=200) + rng.sample(TOPICS, 2)
        rng.shuffle(body)
        (sub / f"doc{i:04d}.md").write_text(f"# Document {i}\n\n{' '.join(body)}\n", encoding="utf-8")


def timed(fn):
    began = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - began


def bench_search(n: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "docs")
        folder.mkdir()
        _, gen = timed(lambda: generate(folder, n, rng))
        index = DocsIndex(folder, Path(tmp, "index.sqlite"))
        reported = []
        full, t_full = timed(lambda: index.update(progress=lambda done, total, path: reported.append(done)))
        same, t_same = timed(index.update)
        changed = folder / "part3" / "doc0003.md"
        changed.write_text("# Document 3\n\nnow about a zeppelin\n", encoding="utf-8")
        os.utime(changed, ns=(time.time_ns(), time.time_ns() + 10**9))
        one, t_one = timed(index.update)
        hits, t_query = timed(lambda: index.search("refund journal timeout", limit=5))
        zeppelin, _ = timed(lambda: index.search("zeppelin"))
        size = Path(tmp, "index.sqlite").stat().st_size

    print(f"search_docs over {n} generated documents (~200 words each; generating them took {gen:.2f} s)")
    print(f"{'operation':<38} {'files read':>10} {'seconds':>9} {'vs full build':>14}")
    rows = [
        ("full build", full.reindexed, t_full),
        ("update, nothing changed", same.reindexed, t_same),
        ("update after one file changed", one.reindexed, t_one),
        ("query 'refund journal timeout' (top 5)", 0, t_query),
    ]
    for name, files, seconds in rows:
        print(f"{name:<38} {files:>10} {seconds:>9.4f} {seconds / t_full:>13.3f}x")
    print(f"progress callbacks during the build: {len(reported)}; index file: {size / 1e6:.1f} MB")
    print(f"after the change: updated={one.updated}, unchanged={one.unchanged}; 'zeppelin' -> {[h.path for h in zeppelin]}")
    print(f"best hit: {hits[0].path} (score {hits[0].score}): {hits[0].snippet[:80]}…")


class ThreadPerCall(WorkerPool):
    """The pool as it was before: a fresh thread for every call."""

    def _dispatch(self, job) -> None:  # type: ignore[no-untyped-def]
        work, future, name, key = job

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:
                future.set_exception(exc)
            finally:
                with self._cond:
                    self._deadlines.pop(key, None)
                    self._cond.notify_all()

        threading.Thread(target=run, name=name, daemon=True).start()


def cpu_timed(fn):
    began, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - began, time.process_time() - cpu


def bench_executor(calls: int) -> None:
    args = {"expression": "(22*1.8)+32"}
    kept, fresh = ToolExecutor(pool=WorkerPool()), ToolExecutor(pool=ThreadPerCall())
    paths = [
        ("tool.invoke (direct)", lambda: calculator.invoke(args)),
        ("ToolExecutor.run_one (kept workers)", lambda: kept.run_one(calculator, args)),
        ("  ... a fresh thread per call (before)", lambda: fresh.run_one(calculator, args)),
    ]
    rows = [(name, *cpu_timed(lambda: [call() for _ in range(calls)])) for name, call in paths]
    print(f"\nexecutor overhead over {calls} calculator calls (CPU: all threads of the process)")
    print(f"{'path':<38} {'wall ms/call':>12} {'CPU ms/call':>12} {'CPU ratio':>10}")
    for name, wall, cpu in rows:
        print(f"{name:<38} {wall / calls * 1e3:>12.3f} {cpu / calls * 1e3:>12.3f} {cpu / rows[0][2]:>9.2f}x")


def bench_sql(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "shop.db")
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
            conn.executemany("INSERT INTO users VALUES (?, ?)", [(i, f"user {i}") for i in range(100)])
        conn.close()
        query = "SELECT name FROM users WHERE id < 5"
        inside, t_in = timed(lambda: [sqlengine.query(path, query, 50, 5.0) for _ in range(calls)])
        own, t_own = timed(lambda: [run_query(path, query) for _ in range(calls)])
    assert inside == own
    print(f"\nsql_query over {calls} small queries")
    print(f"{'path':<38} {'ms per call':>12} {'ratio':>8}")
    print(f"{'in this process (unbounded)':<38} {t_in / calls * 1e3:>12.3f} {1:>7.2f}x")
    print(f"{'own process, killed at its limit':<38} {t_own / calls * 1e3:>12.3f} {t_own / t_in:>7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000, help="documents to generate [1000]")
    parser.add_argument("--calls", type=int, default=500, help="calculator calls for the executor overhead [500]")
    args = parser.parse_args()
    bench_search(args.docs)
    bench_executor(args.calls)
    bench_sql(max(1, args.calls // 10))


if __name__ == "__main__":
    main()
