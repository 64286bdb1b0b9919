"""Storage benchmark: reinloop's SqliteCheckpointer vs LangGraph's SqliteSaver on the same graph.

    python benchmarks/checkpoints.py                 # 200 and 2,000 steps
    python benchmarks/checkpoints.py --steps 50 200  # quicker

Each run is the reinloop graph with a scripted model that calls a tool once
per step with distinct arguments; the tool returns 2 KB of text. Both savers
run with ``durability="sync"`` (reinloop's default with a checkpointer). The
table gives the database size (file plus WAL), the wall-clock time per step,
and the time to read the latest checkpoint from a fresh connection (median of 3).

SqliteSaver writes the whole state into every checkpoint, so its size grows
with the square of the steps: at 2,000 steps it would need tens of GB. It is
run up to ``--sqlitesaver-max`` steps (200 by default); larger counts are
extrapolated from a fit ``size = a*n^2 + b*n`` (time per step: ``c*n + d``) over
its measured runs and labelled "extrapolated".

The prompt holds the last three steps (``Memory(window_steps=3,
summarize=False)``, the same for both savers): a full-history prompt rebuilt
at every step costs O(n^2) message objects and would only blur what is measured.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from reinloop import Limits, Memory, build_graph
from reinloop.checkpoints import SqliteCheckpointer
from reinloop.testing import ScriptedChatModel, tool_call

NO_LIMITS = Limits(max_steps=None, max_seconds=None, max_repeats=None, repeat_hint_after=None)
OUTPUT_CHARS = 2000
WINDOW = Memory(window_steps=3, summarize=False, max_prompt_tokens=None)


@tool
def fetch(page: int) -> str:
    """Fetch one page of a long document."""
    line = f"page {page}: " + "lorem ipsum dolor sit amet " * 3
    return (line * (OUTPUT_CHARS // len(line) + 1))[:OUTPUT_CHARS]


def files_size(path: Path) -> int:
    """The database file plus its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def open_saver(kind: str, path: Path) -> Any:
    if kind == "reinloop":
        return SqliteCheckpointer.open(path)
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def close_saver(saver: Any) -> None:
    if isinstance(saver, SqliteCheckpointer):
        saver.close()
    else:
        saver.conn.close()


def run_once(kind: str, steps: int, workdir: Path) -> dict[str, float]:
    """Run ``steps`` tool steps with one saver; size, time per step, time to read the latest state."""
    path = workdir / f"{kind}-{steps}.db"
    replies = [[tool_call("fetch", {"page": i}, id=f"call_{i}")] for i in range(steps)]
    model = ScriptedChatModel(replies=[*replies, "read them all"])
    saver = open_saver(kind, path)
    graph = build_graph(model, [fetch], limits=NO_LIMITS, checkpointer=saver, memory=WINDOW)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 10 * steps + 100}
    start = time.perf_counter()
    out = graph.invoke({"task": "read every page"}, config)
    seconds = time.perf_counter() - start
    assert out["status"] == "done" and len(out["scratchpad"]) == steps + 1, out.get("status")
    close_saver(saver)
    size = files_size(path)
    reads = []
    for _ in range(3):  # a fresh connection each time, as a resuming process has; the median is reported
        saver = open_saver(kind, path)
        start = time.perf_counter()
        latest = saver.get_tuple({"configurable": {"thread_id": "bench", "checkpoint_ns": ""}})
        reads.append(time.perf_counter() - start)
        assert len(latest.checkpoint["channel_values"]["scratchpad"]) == steps + 1
        close_saver(saver)
    read = sorted(reads)[1]
    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    return {"size": size, "per_step": seconds / steps, "read": read}


def least_squares(f: list[float], g: list[float], y: list[float]) -> tuple[float, float]:
    """``(a, b)`` minimising the squared error of ``a*f + b*g`` against ``y``."""
    ff, fg, gg = sum(x * x for x in f), sum(x * z for x, z in zip(f, g)), sum(z * z for z in g)
    fy, gy = sum(x * v for x, v in zip(f, y)), sum(z * v for z, v in zip(g, y))
    det = ff * gg - fg * fg
    return (fy * gg - gy * fg) / det, (gy * ff - fy * fg) / det


def fit(measured: dict[int, dict[str, float]], n: int) -> dict[str, float]:
    """SqliteSaver at ``n`` steps from its measured runs: size a*n^2+b*n, time per step and read c*n+d."""
    xs = [float(x) for x in sorted(measured)]
    rows = [measured[int(x)] for x in xs]
    a, b = least_squares([x * x for x in xs], xs, [r["size"] for r in rows])
    c, d = least_squares(xs, [1.0] * len(xs), [r["per_step"] for r in rows])
    e, f = least_squares(xs, [1.0] * len(xs), [r["read"] for r in rows])
    return {"size": a * n * n + b * n, "per_step": c * n + d, "read": e * n + f, "fit": 1.0}


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.0f} kB"


def ms(s: float) -> str:
    return f"{s * 1e3:,.1f} ms"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--sqlitesaver-max", type=int, default=200, help="largest run given to SqliteSaver")
    args = parser.parse_args(argv)
    ours: dict[int, dict[str, float]] = {}
    theirs: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for n in args.steps:
            print(f"reinloop, {n} steps ...", file=sys.stderr, flush=True)
            ours[n] = run_once("reinloop", n, workdir)
        fit_points = sorted({max(10, args.sqlitesaver_max // 4), max(20, args.sqlitesaver_max // 2), args.sqlitesaver_max}
                            | {n for n in args.steps if n <= args.sqlitesaver_max})
        for n in fit_points:
            print(f"SqliteSaver, {n} steps ...", file=sys.stderr, flush=True)
            theirs[n] = run_once("sqlitesaver", n, workdir)
    print_table(args.steps, ours, theirs)


def print_table(steps: list[int], ours: dict[int, dict[str, float]], theirs: dict[int, dict[str, float]]) -> None:
    print("| steps | reinloop size | SqliteSaver size | size ratio | reinloop time/step | SqliteSaver time/step "
          "| time ratio | reinloop read latest | SqliteSaver read latest |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in steps:
        mine = ours[n]
        other = theirs.get(n) or fit(theirs, n)
        label = " (extrapolated)" if "fit" in other else ""
        print(
            f"| {n:,} | {mb(mine['size'])} | {mb(other['size'])}{label} | 1/{other['size'] / mine['size']:,.0f} "
            f"| {ms(mine['per_step'])} | {ms(other['per_step'])}{label} | {mine['per_step'] / other['per_step']:.2f} "
            f"| {ms(mine['read'])} | {ms(other['read'])}{label} |"
        )
    if len(steps) >= 2:
        small, large = min(steps), max(steps)
        print(f"\nreinloop size({large:,}) / size({small:,}) = {ours[large]['size'] / ours[small]['size']:.1f} "
              f"(steps x{large / small:g})")
    print(f"SqliteSaver measured at {', '.join(f'{n:,}' for n in sorted(theirs))} steps")


if __name__ == "__main__":
    main()
