"""The batch console: a bar on a terminal, one line per task, the summary table; JSON lines for scripts."""

from __future__ import annotations

import io
import json

from reinloop.runs.batches import BatchReport, TaskOutcome
from reinloop.cli.batch_console import BatchConsole, task_line

DONE = TaskOutcome("t1", 1, "What is 2*3?", "done", answer="6", steps=2, tokens=30, seconds=0.25)
BROKEN = TaskOutcome("t2", 2, "loop", "broken", break_reason="max_steps", steps=1, tokens=15, seconds=0.5,
                     attempt=2, resumed=True)
FAILED = TaskOutcome("t3", 3, "down", "error", error="run t3 stopped: model endpoint failed", seconds=1.0)
ROWS = [{"thread_id": o.thread_id, "status": o.status, "tokens": o.tokens, "seconds": o.seconds} for o in (DONE, BROKEN, FAILED)]
REPORT = BatchReport("tasks-1a2b3c4d", "host:1:abc", [DONE, BROKEN, FAILED], ROWS, 2.0, 3)


def test_task_lines_say_how_each_task_ended():
    assert task_line(DONE) == "✓ line 1  t1  done  2 steps  30 tokens  0.2 s  answer: 6"
    assert task_line(BROKEN) == "✗ line 2  t2  broken (resumed, attempt 2)  1 step  15 tokens  0.5 s  break: max_steps"
    assert task_line(FAILED) == "! line 3  t3  error  1.0 s  run t3 stopped: model endpoint failed"


def test_a_terminal_gets_a_progress_bar_over_the_whole_batch_and_a_summary_table():
    out = io.StringIO()
    with BatchConsole(out, terminal=True) as view:
        view.start("tasks-1a2b3c4d", 3, 3, "host:1:abc", 2)
        assert view.bar is not None and view.bar.tasks[0].total == 3
        view.outcome(DONE, {"done": 1, "running": 1, "queued": 1})
        assert view.bar.tasks[0].completed == 1
        view.outcome(BROKEN, {"done": 1, "broken": 1, "running": 1})
        assert view.bar.tasks[0].completed == 2
    assert view.bar is None  # stopped with the console
    view.summary(REPORT)
    text = out.getvalue()
    assert "batch tasks-1a2b3c4d: 3 tasks (3 new), 2 at a time, worker host:1:abc" in text
    assert "answer: 6" in text and "break: max_steps" in text
    assert "total" in text and "this worker ran 3 of 3 tasks in 2.0 s (1.5 tasks/s)" in text


def test_json_mode_prints_one_object_per_task_then_the_summary():
    out = io.StringIO()
    with BatchConsole(out, as_json=True) as view:
        view.start("tasks-1a2b3c4d", 3, 3, "host:1:abc", 2)
        view.outcome(DONE, {"done": 1})
        view.summary(REPORT)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["task", "summary"]
    assert lines[1]["counts"] == {"done": 1, "broken": 1, "error": 1} and REPORT.exit_code == 1
