"""Showing a batch as it runs: a progress bar, one line per task, a summary table at the end.

:class:`BatchConsole` receives :func:`reinloop.runs.batches.batch`'s callbacks. On
a terminal the bar (``rich.progress``) counts the whole batch's finished
tasks, every worker's, with the per-task lines printed above it; when stdout
is not a terminal, or with ``color=False``, there is no bar and the lines
come out as plain text. With ``as_json=True`` each task is one JSON object
(``"type": "task"``) and the summary another (``"type": "summary"``).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..runs.batches import BatchReport, TaskOutcome
from ..observe.console import short
from ..models.pricing import cost_text, spent
from ..observe.terminal import counted, safe_json, safe_text

MARKS = {"done": ("✓", "green"), "broken": ("✗", "red"), "waiting": ("…", "yellow"), "error": ("!", "red")}


class BatchConsole:
    """Prints a batch's progress, its tasks' outcomes and a summary table."""

    def __init__(self, out: TextIO | None = None, *, color: bool = True, as_json: bool = False,
                 terminal: bool | None = None) -> None:
        self.as_json = as_json
        self.out = out or sys.stdout
        self.console = Console(file=self.out, force_terminal=terminal, color_system="auto" if color else None,
                               highlight=False, soft_wrap=True, emoji=False)
        self.bar: Progress | None = None
        self.bar_task: Any = None
        self.lock = threading.Lock()

    def __enter__(self) -> BatchConsole:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def start(self, name: str, total: int, added: int, worker: str, concurrency: int) -> None:
        """The batch is queued: say what runs, and show the bar on a terminal."""
        if self.as_json:
            return
        self.console.print(safe_text(f"batch {name}: {counted(total, 'task')} ({added} new), {concurrency} at a time, "
                                     f"worker {worker}"), markup=False)
        if self.console.is_terminal and self.console.color_system is not None:
            self.bar = Progress(TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                console=self.console, transient=True)
            self.bar_task = self.bar.add_task("batch", total=total)
            self.bar.start()

    def outcome(self, outcome: TaskOutcome, counts: dict[str, int]) -> None:
        """One task finished (by this worker); ``counts`` is where the whole batch stands."""
        with self.lock:
            if self.as_json:
                print(safe_json({"type": "task", **outcome.as_dict()}), file=self.out, flush=True)
                return
            self.console.print(safe_text(task_line(outcome)), style=MARKS[outcome.status][1], markup=False)
            if self.bar is not None:
                finished = sum(n for status, n in counts.items() if status not in ("queued", "running"))
                self.bar.update(self.bar_task, completed=finished, total=sum(counts.values()))

    def summary(self, report: BatchReport) -> None:
        """The summary table of the whole batch, and this worker's share."""
        if self.as_json:
            print(safe_json({"type": "summary", **report.as_dict()}), file=self.out, flush=True)
            return
        table = Table(title=safe_text(f"batch {report.batch}"), title_justify="left")
        rows = report.summary()
        priced = any(r["cost_usd"] or r["unpriced_calls"] for r in rows)  # a free local model: no cost column
        for name in ("status", "tasks", "tokens", "task time", *(["cost"] if priced else [])):
            table.add_column(name, justify="left" if name == "status" else "right")
        for row in rows:
            table.add_row(row["status"], str(row["tasks"]), f"{row['tokens']:,}", f"{row['seconds']:.1f} s",
                          *([cost_text(row)] if priced else []))
        total = {"cost_usd": sum(r["cost_usd"] for r in rows), "unpriced_calls": sum(r["unpriced_calls"] for r in rows)}
        table.add_row("total", str(sum(r["tasks"] for r in rows)), f"{sum(r['tokens'] for r in rows):,}",
                      f"{sum(r['seconds'] for r in rows):.1f} s", *([cost_text(total)] if priced else []), style="bold")
        self.console.print(table)
        mine = len(report.outcomes)
        rate = mine / report.seconds if report.seconds else 0.0
        self.console.print(f"this worker ran {mine} of {counted(len(report.tasks), 'task')} in {report.seconds:.1f} s "
                           f"({rate:.1f} tasks/s)", markup=False)
        if report.counts.get("broken") or report.counts.get("error"):
            self.console.print("resume a broken or failed task with: reinloop resume THREAD", markup=False)
        for row in report.waiting:
            self.console.print(safe_text(f"waiting for approval: line {row['line']}  {row['thread_id']}  "
                                         f"{short(row['task'], 60)}: reinloop approve {row['thread_id']}"), markup=False)
        if report.waiting:
            self.console.print("see what they would do with: reinloop runs pending", markup=False)


def task_line(outcome: TaskOutcome) -> str:
    """``✓ line 3  thread-id  done  2 steps  30 tokens  0.4 s  answer: 42``."""
    mark = MARKS[outcome.status][0]
    head = f"{mark} line {outcome.line}  {outcome.thread_id}  {outcome.status}"
    if outcome.resumed:
        head += f" (resumed, attempt {outcome.attempt})"
    if outcome.status == "error":
        return f"{head}  {outcome.seconds:.1f} s  {short(outcome.error, 200)}"
    cost = spent({"cost_usd": outcome.cost_usd, "unpriced_calls": outcome.unpriced_calls}, "  ")
    stats = f"{counted(outcome.steps, 'step')}  {outcome.tokens} tokens  {cost}{outcome.seconds:.1f} s"
    what = {"done": f"answer: {short(outcome.answer, 100)}", "waiting": "waiting for approval"}.get(
        outcome.status, f"break: {outcome.break_reason}")
    return f"{head}  {stats}  {what}"
