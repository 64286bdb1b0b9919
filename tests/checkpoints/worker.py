"""A separate process for the crash and concurrency tests: ``python tests/checkpoints/worker.py MODE ...``.

Modes:

DB is a SQLite path or a PostgreSQL URL.

- ``run DB THREAD BASE_URL WORKDIR`` / ``resume DB THREAD BASE_URL WORKDIR``:
  a run whose ``record`` tool logs each execution to ``WORKDIR/calls.log``
  and, on the call named in ``WORKDIR/hang_on``, writes ``WORKDIR/ready`` and
  sleeps (so the test can kill the process in the middle of that tool step);
- ``many DB THREAD STEPS WORKDIR``: a scripted run of STEPS tool steps, started
  when ``WORKDIR/go`` appears, for two processes writing one database at once.

Each prints the outcome as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from langchain_core.tools import tool

from reinloop import Limits, build_graph
from reinloop.runs.api import stream_run
from reinloop.checkpoints import open_saver
from reinloop.runs.api import resume, run
from reinloop.testing import ScriptedChatModel, tool_call


def record_tool(workdir: Path):  # noqa: ANN201
    """A tool that logs every execution and hangs once on the step named in ``hang_on``."""

    @tool
    def record(item: str) -> str:
        """Record an item and return its receipt."""
        with (workdir / "calls.log").open("a") as log:
            log.write(f"start {item}\n")
        hang = workdir / "hang_on"
        if hang.exists() and hang.read_text().strip() == item and not (workdir / "ready").exists():
            (workdir / "ready").write_text("1")
            time.sleep(120)  # killed here
        with (workdir / "calls.log").open("a") as log:
            log.write(f"end {item}\n")
        return f"receipt for {item}"

    return record


def many(db: str, thread: str, steps: int, workdir: Path) -> None:
    """A long scripted run, started together with another process."""
    replies = [[tool_call("calculator", {"expression": f"{i}+{i}"}, id=f"{thread}-{i}")] for i in range(steps)]
    model = ScriptedChatModel(replies=[*replies, f"{thread} done"])
    limits = Limits(max_steps=None, max_repeats=None, max_seconds=None)
    from reinloop.tools import builtins

    saver = open_saver(db)
    graph = build_graph(model, builtins("calculator"), limits=limits, checkpointer=saver)
    (workdir / f"ready-{thread}").write_text("1")
    while not (workdir / "go").exists():
        time.sleep(0.01)
    outcome = stream_run(graph, {"task": f"count for {thread}"}, thread)
    print(json.dumps(outcome.as_dict()))


def main(argv: list[str]) -> None:
    mode, db, thread = argv[:3]
    if mode == "many":
        many(db, thread, int(argv[3]), Path(argv[4]))
        return
    base_url, workdir = argv[3], Path(argv[4])
    tools = [record_tool(workdir)]
    limits = Limits(max_steps=20, max_repeats=None)
    if mode == "run":
        outcome = run("record a, b, c", db=db, model="openai:gpt-4o-mini", base_url=base_url, tools=tools,
                      limits=limits, thread_id=thread)
    else:
        outcome = resume(thread, db=db, tools=tools)
    print(json.dumps(outcome.as_dict()))


if __name__ == "__main__":
    main(sys.argv[1:])
