"""Timings of the tool pack: the search_docs index and the executor's overhead.

    python benchmarks/tools.py [--docs 1000] [--calls 500]

1. Builds a ``search_docs`` index over N generated Markdown documents, checks
   it again with nothing changed, changes one file and updates incrementally
   (only that file is re-read), then answers a query.
2. Runs one calculator call N times directly (``tool.invoke``) and through
   the executor (worker thread, retry wrapper, result checks).

Times are printed, side by side with ratios from the same run; nothing is
asserted (machines differ).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

from reinloop.tools import DocsIndex, ToolExecutor, calculator

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


def bench_executor(calls: int) -> None:
    args = {"expression": "(22*1.8)+32"}
    executor = ToolExecutor()
    _, direct = timed(lambda: [calculator.invoke(args) for _ in range(calls)])
    _, through = timed(lambda: [executor.run_one(calculator, args) for _ in range(calls)])
    print(f"\nexecutor overhead over {calls} calculator calls")
    print(f"{'path':<38} {'ms per call':>12} {'ratio':>8}")
    print(f"{'tool.invoke (direct)':<38} {direct / calls * 1e3:>12.3f} {1:>7.2f}x")
    print(f"{'ToolExecutor.run_one (thread, checks)':<38} {through / calls * 1e3:>12.3f} {through / direct:>7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000, help="documents to generate [1000]")
    parser.add_argument("--calls", type=int, default=500, help="calculator calls for the executor overhead [500]")
    args = parser.parse_args()
    bench_search(args.docs)
    bench_executor(args.calls)


if __name__ == "__main__":
    main()
