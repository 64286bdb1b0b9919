"""Storage bounds: run database bytes per byte exchanged, and growth with the steps of a default run.

    python benchmarks/storage.py                       # 20 MB argument; 200 and 1,000 steps
    python benchmarks/storage.py --mb 2 --steps 50 250  # quicker

Two measurements, both through ``reinloop.runs.api.run`` (the SQLite run database
with its step records and tool journal, as ``reinloop run`` writes it) and a
scripted model:

- **one large argument**: the model calls ``write_file`` once with ``--mb`` MB
  of text (over the tool's 100,000-character limit, so the call is refused and
  the refusal is the observation), then answers. "Exchanged" is what the model
  and the tool sent each other: the call's JSON arguments, the observation and
  the answer. The target is a run database of at most 2x that.
- **a long run with default settings**: ``Memory()`` as it ships (a window of
  three steps, a running summary), a tool that returns 2 KB per step, ``--steps``
  steps. Storage should grow linearly: the exponent of ``size ~ steps^k``
  between the smallest and the largest run should be at most 1.05.

Each run prints the bytes per table (sums of the stored values' lengths), so
the figures say where the bytes go. The script also runs on reinloop versions
that have no ``blobs`` table, to measure the "before" side.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from reinloop import Limits; from reinloop.runs import api as runs
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import write_file_tool

NO_LIMITS = Limits(max_steps=None, max_seconds=None, max_repeats=None, repeat_hint_after=None)
TEXT = "lorem ipsum dolor sit amet, consectetur adipiscing elit 12345. "
TABLES = {
    "checkpoints": "length(checkpoint) + length(metadata)",
    "channel_values": "length(value)",
    "checkpoint_writes": "length(value)",
    "steps": "length(actions) + coalesce(length(data), 0) + coalesce(length(memory), 0) + coalesce(length(answer), 0)",
    "tool_journal": "length(args) + coalesce(length(observation), 0)",
    "blobs": "length(value)",
}


@tool
def fetch(page: int) -> str:
    """Fetch one page of a long document."""
    line = f"page {page}: " + TEXT
    return (line * (2000 // len(line) + 1))[:2000]


def files_size(path: Path) -> int:
    """The database file plus its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def table_bytes(path: Path) -> dict[str, int]:
    """Bytes of stored values per table (tables this reinloop version lacks are left out)."""
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = {name: int(conn.execute(f"SELECT coalesce(sum({expr}), 0) FROM {name}").fetchone()[0])
             for name, expr in TABLES.items() if name in names}
    conn.close()
    return found


def latest_state(path: Path, thread_id: str) -> dict[str, Any]:
    with runs.open_db(path) as saver:
        return dict(saver.get_tuple(runs.thread_config(thread_id)).checkpoint["channel_values"])


def one_large_argument(workdir: Path, megabytes: float) -> dict[str, Any]:
    """One ``write_file`` call with ``megabytes`` MB of content: stored bytes against exchanged bytes."""
    content = (TEXT * int(megabytes * 1e6 // len(TEXT) + 1))[: int(megabytes * 1e6)]
    call = tool_call("write_file", {"path": "big.txt", "content": content}, id="call_1")
    model = ScriptedChatModel(replies=[[call], "I could not write it."])
    sandbox = workdir / "sandbox"
    sandbox.mkdir(exist_ok=True)
    path = workdir / "large.db"
    start = time.perf_counter()
    out = runs.run("write the file", db=path, model=model, tools=[write_file_tool(sandbox)], thread_id="large")
    seconds = time.perf_counter() - start
    observation = latest_state(path, "large")["scratchpad"][0]["actions"][0]["observation"]
    exchanged = len(json.dumps(call["args"])) + len(observation) + len(out.answer or "")
    return {"size": files_size(path), "exchanged": exchanged, "seconds": seconds, "tables": table_bytes(path)}


def long_run(workdir: Path, steps: int) -> dict[str, Any]:
    """``steps`` tool steps with default memory settings: size, time, summary length."""
    path = workdir / f"steps-{steps}.db"
    replies = [[tool_call("fetch", {"page": i}, id=f"call_{i}")] for i in range(steps)]
    model = ScriptedChatModel(replies=[*replies, "read them all"])
    start = time.perf_counter()
    out = runs.run("read every page", db=path, model=model, tools=[fetch], limits=NO_LIMITS, thread_id="long")
    seconds = time.perf_counter() - start
    assert out.status == "done", out
    summary = latest_state(path, "long").get("summary") or ""
    return {"size": files_size(path), "seconds": seconds, "summary": len(summary), "tables": table_bytes(path)}


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.0f} kB"


def tables_line(tables: dict[str, int]) -> str:
    return ", ".join(f"{k} {mb(v)}" for k, v in tables.items() if v)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of the write_file argument, in MB")
    parser.add_argument("--steps", type=int, nargs="+", default=[200, 1000], help="lengths of the default-memory runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        print(f"one {args.mb:g} MB write_file argument ...", file=sys.stderr, flush=True)
        large = one_large_argument(workdir, args.mb)
        long = {}
        for n in args.steps:
            print(f"default memory, {n} steps ...", file=sys.stderr, flush=True)
            long[n] = long_run(workdir, n)
    print("| case | run database | exchanged | ratio | time | where the bytes are |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    print(f"| one {args.mb:g} MB write_file argument | {mb(large['size'])} | {mb(large['exchanged'])} "
          f"| {large['size'] / large['exchanged']:.2f} | {large['seconds']:.1f} s | {tables_line(large['tables'])} |")
    print()
    print("| steps (default Memory) | run database | per step | summary | time | where the bytes are |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    for n, r in long.items():
        print(f"| {n:,} | {mb(r['size'])} | {r['size'] / n / 1e3:,.1f} kB | {r['summary']:,} chars | {r['seconds']:.1f} s "
              f"| {tables_line(r['tables'])} |")
    if len(long) >= 2:
        small, large_n = min(long), max(long)
        k = math.log(long[large_n]["size"] / long[small]["size"]) / math.log(large_n / small)
        print(f"\nsize ~ steps^{k:.2f} from {small:,} to {large_n:,} steps")


if __name__ == "__main__":
    main()
