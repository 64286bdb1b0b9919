"""One batch worker process for the multi-worker tests: ``python tests/batch_worker.py DB TASKS BASE_URL WORKDIR N LEASE``.

It runs ``reinloop.runs.batches.batch`` with a side-effecting ``record`` tool that
appends ``ITEM PID`` to ``WORKDIR/effects.log`` each time it really runs, so
the test can count executions per task; ``WORKDIR/started-PID`` appears once
the batch is queued. The report is printed as one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from langchain_core.tools import tool

from reinloop.runs.batches import batch
from reinloop.tools import configure


def record_tool(workdir: Path):  # noqa: ANN201
    @configure(side_effects=True)
    @tool
    def record(item: str) -> str:
        """Record an item; returns its receipt."""
        with (workdir / "effects.log").open("a") as log:  # one short append: atomic between processes
            log.write(f"{item} {os.getpid()}\n")
        return f"receipt for {item}"

    return record


def main(db: str, tasks: str, base_url: str, workdir: str, concurrency: str, lease: str) -> None:
    work = Path(workdir)
    report = batch(
        tasks, concurrency=int(concurrency), db=db, model="openai:gpt-4o-mini", base_url=base_url,
        tools=[record_tool(work)], lease=float(lease), poll=0.1,
        on_start=lambda *_: (work / f"started-{os.getpid()}").write_text("1"),
    )
    print(json.dumps(report.as_dict()))


if __name__ == "__main__":
    main(*sys.argv[1:])
