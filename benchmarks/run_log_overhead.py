"""What recording every node transition costs: per-step time of a run without and with a RunLog.

One loop step = six node transitions = six events. The scripted model answers
instantly, so the numbers are the loop's own cost. Run:

    python benchmarks/run_log_overhead.py [STEPS]

and read the ratios against the first row, measured in the same run.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from reinloop import Limits, RunLog, build_graph
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import builtins


def replies(steps: int) -> list:
    return [[tool_call("calculator", {"expression": f"{i}+1"})] for i in range(steps - 1)] + ["done"]


def per_step_ms(steps: int, *, log: bool, saver: bool, folder: Path, name: str) -> float:
    db = folder / f"{name}.db"
    sinks = [RunLog(folder / f"{name}-events.db")] if log else []  # a run database of its own: not SqliteSaver's file
    limits = Limits(max_steps=steps + 1, max_seconds=None, max_repeats=None)
    model = ScriptedChatModel(replies=replies(steps))

    def go(checkpointer):
        graph = build_graph(model, builtins("calculator"), limits=limits, checkpointer=checkpointer, sinks=sinks)
        start = time.perf_counter()
        out = graph.invoke({"task": "count"}, {"configurable": {"thread_id": name}, "recursion_limit": 10 * steps})
        assert out["status"] == "done", out.get("break_message")
        return (time.perf_counter() - start) * 1000 / steps

    if not saver:
        return go(None)
    with SqliteSaver.from_conn_string(str(db)) as checkpointer:
        return go(checkpointer)


CONFIGS = [
    ("no checkpointer, no run log", False, False),
    ("no checkpointer, RunLog", True, False),
    ("SqliteSaver (sync), no run log", False, True),
    ("SqliteSaver (sync) + RunLog", True, True),
]


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    repeats = 3  # the best of three, interleaved: the machine is shared and noisy
    best = {label: float("inf") for label, _, _ in CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        per_step_ms(10, log=True, saver=True, folder=folder, name="warmup")
        for r in range(repeats):
            for i, (label, log, saver) in enumerate(CONFIGS):
                ms = per_step_ms(steps, log=log, saver=saver, folder=folder, name=f"c{i}r{r}")
                best[label] = min(best[label], ms)
    rows = list(best.items())
    base = rows[0][1]
    print(f"{steps} steps, 6 events per step, best of {repeats}\n")
    print(f"{'configuration':<42} {'ms/step':>8} {'vs first':>9}")
    for label, ms in rows:
        print(f"{label:<42} {ms:>8.2f} {ms / base:>8.2f}x")


if __name__ == "__main__":
    main()
