"""The command line's stored-run commands: ``reinloop runs list``, ``show``, ``prune`` and ``delete``.

Each command's options, handler and example stand together, registered with
:func:`reinloop.cli.app.command` like every other command; each wraps one function
of :mod:`reinloop.runs.api` (``list_runs``, ``show_run``, ``prune_runs``, ``delete_run``).
``runs pending`` is with the approval commands (:mod:`reinloop.cli.approve`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..protocols.answers import wrap_up_note
from .common import EXIT_DONE, add_db_flag, command, say, short, write_output
from .options import seconds, whole
from ..runs.spec import RunSpec
from ..observe.terminal import counted, fit, safe_json, safe_text


def runs_list_options(p: argparse.ArgumentParser) -> None:
    from ..runs.rundb import STATUSES

    p.add_argument("--status", choices=STATUSES,
                   help="only runs with this status, as the list shows it (broken includes paused)")
    p.add_argument("--json", action="store_true", help="print a JSON list (whole thread ids)")
    add_db_flag(p)


RUNS_COLUMNS = (("THREAD", 14), ("STATUS", 11), ("STEPS", 5), ("COST", 9), ("UPDATED", 19), ("TASK", 40), ("OUTCOME", 40))
"""``runs list``'s columns and their widths in terminal cells (a CJK character takes two)."""


@command("runs list", help="the stored runs, newest first", options=runs_list_options,
         example="reinloop runs list --status broken --json")
def cmd_runs_list(args: argparse.Namespace) -> int:
    from ..models.pricing import spent
    from ..runs.rundb import RESUMABLE, list_runs, resume_command

    records = list_runs(args.db, status=args.status)
    if args.json:  # a run whose process stopped mid-run has the command that goes on with it
        say(safe_json([{**r.as_dict(), **({"resume_command": resume_command(r.thread_id, args.db)}
                                          if r.status in RESUMABLE else {})} for r in records]))
        return EXIT_DONE
    if not records:
        say("no runs" + (f" with status {args.status}" if args.status else ""))
        return EXIT_DONE
    say(table_row([name for name, _ in RUNS_COLUMNS]))
    for r in records:
        row = [r.thread_id, r.status or "?", str(r.steps or 0), spent(r.counters or {}, "") or "-",
               (r.updated_at or "")[:19].replace("T", " "), r.task]
        if r.status in RESUMABLE:  # a command is of use only whole: in the last column, never cut
            say(table_row([*row, f"go on: {resume_command(r.thread_id, args.db)}"], whole_last=True))
        else:
            outcome = r.answer if r.status == "done" else r.damage if r.status == "damaged" else r.break_reason or ""
            say(table_row([*row, outcome]))
    return EXIT_DONE


def table_row(cells: Sequence[Any], *, whole_last: bool = False) -> str:
    """One row of ``runs list``: each cell cut and padded to its column's width in terminal cells; with
    ``whole_last``, the last cell (a command to copy) as it is, however long."""
    widths = [width for _, width in RUNS_COLUMNS]
    numbers = {2, 3}  # right-aligned
    cut = cells[:-1] if whole_last else cells
    fitted = [fit(cell, w, right=i in numbers) for i, (cell, w) in enumerate(zip(cut, widths))]
    return "  ".join([*fitted, *([safe_text(cells[-1])] if whole_last else [])]).rstrip()


def runs_show_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("--format", choices=("text", "json", "html"), default="text",
                   help="text; json (everything stored, the run spec and the report data included); html (one "
                        "self-contained page: the graph with the run's path and traversal counts, where it broke, "
                        "the step timeline) [text]")
    p.add_argument("-o", "--output", metavar="FILE", help="write json or html to FILE [stdout]")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    add_db_flag(p)


@command("runs show", help="a run's spec, steps, counters and breaks; its path drawn on the graph",
         options=runs_show_options, example="reinloop runs show 3f2a9c1b7d04 --format html -o run.html")
def cmd_runs_show(args: argparse.Namespace) -> int:
    from ..observe.report import run_report, visualize
    from ..runs.api import db_location, open_db, show_run

    fmt = "json" if args.json else args.format
    with open_db(args.db):  # a missing, damaged or foreign file is refused with its own message
        pass
    if fmt == "html":
        write_output(visualize(thread_id=args.thread, db=db_location(args.db), format="html"), args.output)
        return EXIT_DONE
    detail = show_run(args.thread, args.db)
    if fmt == "json":
        data = {**detail.as_dict(args.db), "report": run_report(thread_id=args.thread, db=db_location(args.db))}
        write_output(safe_json(data, default=str), args.output)
        return EXIT_DONE
    print_detail(detail, args.db)
    return EXIT_DONE


def print_detail(detail: Any, db: str | None = None) -> None:
    """``reinloop runs show``'s text: status, task, spec, answer, counters, summary, steps, then the run's record
    (breaks, operators' decisions, calls waiting: :func:`reinloop.observe.record.record_entries`)."""
    from ..models.pricing import cost_breakdown
    from ..observe.record import record_entries

    from ..runs.rundb import resume_command

    state, record = detail.state, detail.run
    status = detail.status or "?"  # named as `runs list` names it
    said = {"paused": " (at a break: `reinloop resume` goes on)",
            "interrupted": f" (stopped by a signal; go on with: {resume_command(detail.thread_id, db)})",
            "abandoned": f" (its process, {record.owner_pid if record else '?'} on {record.owner_host if record else '?'}, "
                         f"is gone; go on with: {resume_command(detail.thread_id, db)})"}
    say(f"thread {detail.thread_id}: {status}{said.get(status, '') if isinstance(status, str) else ''}")
    say(f"task: {state.get('task', record.task if record else '')}")
    if detail.spec is not None:
        spec = RunSpec.from_dict(detail.spec)
        say(f"model: {spec.model}  protocol: {spec.protocol}  tools: {','.join(spec.tools)} ({spec.tool_detail})")
        say(f"spec: {safe_json(detail.spec)}")
    if state.get("answer") is not None:
        say(f"answer: {state['answer']}" + (" (structured, valid)" if state.get("output") is not None else "")
            + wrap_up_note(state.get("wrapped_up")))
    elif state.get("invalid_output") is not None:
        say(f"last answer, INVALID (it does not match the output schema): {safe_json(state['invalid_output'])}")
    if state.get("break_reason"):
        say(f"break: {state['break_reason']}: {state.get('break_message')}")
    say("counters: " + safe_json(state.get("counters") or {}))
    say("cost: " + cost_breakdown(state.get("counters") or {}))
    summary = [line for line in (state.get("summary") or "").splitlines() if line.strip()]
    if summary:
        say("summary:\n" + "\n".join(f"  {line}" for line in summary))
    for step in detail.steps:
        say(f"[run {step.get('run', 1)} step {step.get('index')}] {short(step.get('thought'), 100)}")
        for action in step.get("actions") or []:
            say(f"  {action.get('tool')} {safe_json(action.get('args') or {})}"
                f" -> {short(action.get('observation'), 100)}")
            for repair in action.get("repairs") or []:
                say(f"    repaired: {repair}")
        if step.get("answer") is not None:
            say(f"  answer: {short(step['answer'], 100)}")
        if step.get("parse_error"):
            say(f"  parse error: {short(step['parse_error'], 100)}")
        for flag in step.get("cost_flags") or []:
            say(f"  cost: {flag}")
    for result in (detail.pending_break or {}).get("observations") or []:
        say(f"in hand at the break: step {result['step']}: {result['tool']} "
            f"{safe_json(result['args'])} -> {short(result['observation'], 100)}")
    for entry in record_entries(detail.thread_id, state, detail.breaks):  # what the HTML report lists too
        say(entry.text)


def runs_prune_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-last", type=whole(0), required=True, metavar="N", help="checkpoints kept per run")
    p.add_argument("--older-than", type=seconds, metavar="DAYS", help="only runs not updated for DAYS days")
    p.add_argument("--vacuum", action="store_true", help="then shrink the file (VACUUM)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_db_flag(p)


@command("runs prune", help="drop old checkpoints, keeping every run's steps", options=runs_prune_options,
         example="reinloop runs prune --keep-last 1 --older-than 7")
def cmd_runs_prune(args: argparse.Namespace) -> int:
    from ..runs.api import prune_runs

    report = prune_runs(args.db, keep_last=args.keep_last, older_than_days=args.older_than, vacuum=args.vacuum)
    if args.json:
        say(safe_json(report.as_dict()))
        return EXIT_DONE
    say(f"pruned {counted(report.threads, 'run')}: {report.checkpoints_before} -> {report.checkpoints_after} checkpoints"
        + (f", {report.bytes_before} -> {report.bytes_after} bytes" if report.bytes_before is not None else ""))
    return EXIT_DONE


def runs_delete_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("thread", help="the run's thread id")
    add_db_flag(p)


@command("runs delete", help="delete a run and everything stored for it", options=runs_delete_options,
         example="reinloop runs delete 3f2a9c1b7d04")
def cmd_runs_delete(args: argparse.Namespace) -> int:
    from ..runs.api import delete_run

    delete_run(args.thread, args.db)
    say(f"deleted run {args.thread}")
    return EXIT_DONE
