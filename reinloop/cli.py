"""The ``reinloop`` command: each subcommand is a short wrapper over one public function.

Exit codes: 0 the run finished with an answer, 3 a guard broke it, 1 an
error (one line on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .api import new_thread_id
from .console import PlainConsole
from .demo import BANNER, as_expected, demo
from .errors import ReinloopError
from .limits import Limits
from .models import resolve_model
from .outcome import EXIT_BROKEN, EXIT_DONE, EXIT_ERROR, Outcome
from .protocols import PROTOCOLS
from .nodes.guard import HOW_TO_RESUME
from .runs import DB_VARIABLE, DEFAULT_DB, delete_run, list_runs, prune_runs, resume, run, run_limits, show_run
from .tools.catalog import BUILTINS, DEFAULT_TOOLS

DEFAULT_MODEL = "openai:gpt-4o-mini"


def _limit(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """A limit value: a number, or 'none' to switch the limit off."""

    def convert(text: str) -> Any:
        return None if text.lower() in ("none", "off") else kind(text)

    convert.__name__ = kind.__name__
    return convert


LIMIT_FLAGS: tuple[tuple[str, Callable[[str], Any], str], ...] = (
    ("max_steps", _limit(int), "loop iterations per run"),
    ("max_seconds", _limit(float), "wall-clock seconds per run"),
    ("token_budget", _limit(int), "prompt+completion tokens per run"),
    ("max_consecutive_errors", _limit(int), "failed steps in a row"),
    ("repeat_hint_after", _limit(int), "identical actions before a hint"),
    ("max_repeats", _limit(int), "identical actions before the run breaks"),
    ("max_observation_chars", int, "tool output characters kept"),
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


def limits_from(args: argparse.Namespace, base: Limits | None = None) -> Limits:
    """The limits given on the command line, over ``base``."""
    changes = {name: getattr(args, name) for name, _, _ in LIMIT_FLAGS if hasattr(args, name)}
    return (base or Limits()).replace(**changes)


def print_outcome(outcome: Outcome, as_json: bool) -> None:
    """The outcome as one JSON object, or as a short human summary."""
    if as_json:
        print(json.dumps(outcome.as_dict(), ensure_ascii=False))
        return
    c = outcome.counters
    if outcome.status == "done":
        print(f"answer: {outcome.answer}")
    else:
        print(f"run {outcome.status}: {outcome.break_reason}: {outcome.break_message}")
    print(
        f"thread {outcome.thread_id}: {c.get('steps', 0)} steps, "
        f"{c.get('prompt_tokens', 0) + c.get('completion_tokens', 0)} tokens, "
        f"{c.get('errors', 0)} errors, {c.get('elapsed_seconds', 0.0):.1f} s"
    )
    if outcome.paused:
        how = HOW_TO_RESUME.get(outcome.break_reason or "", "continue or abort").replace("THREAD", outcome.thread_id)
        print(f"paused at the break: {how}; or end it: reinloop resume {outcome.thread_id} --abort")


def cmd_run(args: argparse.Namespace) -> int:
    limits = limits_from(args)
    resolve_model(args.model, base_url=args.base_url)  # say which API key is missing before anything else
    thread_id = args.thread or new_thread_id()
    console = None if args.json else PlainConsole(limits)
    if console is not None:
        print(f"thread {thread_id}")
    outcome = run(
        args.task,
        db=args.db,
        model=args.model,
        tools=args.tools,
        protocol=args.protocol,
        limits=limits,
        thread_id=thread_id,
        base_url=args.base_url,
        system_prompt=args.system_prompt,
        on_event=console.handle if console else None,
    )
    print_outcome(outcome, args.json)
    return outcome.exit_code


def cmd_demo(args: argparse.Namespace) -> int:
    if not args.json:
        print(BANNER)
    console = PlainConsole(Limits())

    def announce(scenario: Any) -> None:
        console.limits = scenario.limits
        if not args.json:
            print(f"\n=== {scenario.name}\ntask: {scenario.task}")

    results = demo(on_event=None if args.json else console.handle, on_scenario=announce)
    ok = True
    for scenario, outcome in results:
        expected = as_expected(scenario, outcome)
        ok = ok and expected
        if args.json:
            print(json.dumps({"scenario": scenario.name, **outcome.as_dict(), "as_expected": expected}, ensure_ascii=False))
    if not args.json:
        print(f"\n{len(results)} scenarios, {'all' if ok else 'NOT all'} ended as expected.")
    return EXIT_DONE if ok else EXIT_ERROR


def cmd_resume(args: argparse.Namespace) -> int:
    changes = {name: getattr(args, name) for name, _, _ in LIMIT_FLAGS if hasattr(args, name)}
    console = None
    if not args.json:
        shown = run_limits(args.thread, args.db).replace(**changes)
        if shown.max_steps is not None:
            shown = shown.replace(max_steps=shown.max_steps + args.extra_steps)
        console = PlainConsole(shown)
    outcome = resume(
        args.thread,
        db=args.db,
        extra_steps=args.extra_steps,
        extra_seconds=args.extra_seconds,
        extra_tokens=args.extra_tokens,
        hint=args.hint,
        abort=args.abort,
        model=args.model,
        base_url=args.base_url,
        protocol=args.protocol,
        limits=changes,
        on_event=console.handle if console else None,
    )
    print_outcome(outcome, args.json)
    return outcome.exit_code


def _short(text: Any, width: int) -> str:
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def cmd_runs_list(args: argparse.Namespace) -> int:
    records = list_runs(args.db, status=args.status)
    if args.json:
        print(json.dumps([r.as_dict() for r in records], ensure_ascii=False))
        return EXIT_DONE
    if not records:
        print("no runs" + (f" with status {args.status}" if args.status else ""))
    for r in records:
        status = "paused" if r.paused else (r.status or "?")
        outcome = r.answer if r.status == "done" else r.break_reason or ""
        print(f"{r.thread_id:<14} {status:<8} {r.steps or 0:>4} steps  {(r.updated_at or '')[:19]}  "
              f"{_short(r.task, 40):<40}  {_short(outcome, 40)}")
    return EXIT_DONE


def cmd_runs_show(args: argparse.Namespace) -> int:
    detail = show_run(args.thread, args.db)
    if args.json:
        print(json.dumps(detail.as_dict(), ensure_ascii=False, default=str))
        return EXIT_DONE
    state, record = detail.state, detail.run
    print(f"thread {detail.thread_id}: {state.get('status', record.status if record else '?')}"
          + (" (paused at a break)" if state.get("decision") == "pause" else ""))
    print(f"task: {state.get('task', record.task if record else '')}")
    if record is not None:
        print(f"model: {record.model}  protocol: {record.protocol}  tools: {','.join(record.tools or [])}")
    if state.get("answer") is not None:
        print(f"answer: {state['answer']}")
    if state.get("break_reason"):
        print(f"break: {state['break_reason']}: {state.get('break_message')}")
    print("counters: " + json.dumps(state.get("counters") or {}, ensure_ascii=False))
    for step in detail.steps:
        print(f"[run {step.get('run', 1)} step {step.get('index')}] {_short(step.get('thought'), 100)}")
        for action in step.get("actions") or []:
            print(f"  {action.get('tool')} {json.dumps(action.get('args') or {}, ensure_ascii=False)}"
                  f" -> {_short(action.get('observation'), 100)}")
        if step.get("answer") is not None:
            print(f"  answer: {_short(step['answer'], 100)}")
        if step.get("parse_error"):
            print(f"  parse error: {_short(step['parse_error'], 100)}")
    for b in detail.breaks:
        resolved = json.dumps(b.resolution, ensure_ascii=False) if b.resolution else "pending"
        print(f"break #{b.id} at {(b.created_at or '')[:19]}: {b.reason}: {b.message} -> {resolved}")
    return EXIT_DONE


def cmd_runs_prune(args: argparse.Namespace) -> int:
    report = prune_runs(args.db, keep_last=args.keep_last, older_than_days=args.older_than, vacuum=args.vacuum)
    if args.json:
        print(json.dumps(report.as_dict()))
        return EXIT_DONE
    print(f"pruned {report.threads} runs: {report.checkpoints_before} -> {report.checkpoints_after} checkpoints"
          + (f", {report.bytes_before} -> {report.bytes_after} bytes" if report.bytes_before is not None else ""))
    return EXIT_DONE


def cmd_runs_delete(args: argparse.Namespace) -> int:
    delete_run(args.thread, args.db)
    print(f"deleted run {args.thread}")
    return EXIT_DONE


EXAMPLES = {
    "run": 'example: reinloop run "What is (22*1.8)+32?" --model openai:gpt-4o-mini --max-steps 5',
    "demo": "example: reinloop demo",
    "resume": "example: reinloop resume 3f2a9c1b7d04 --extra-steps 5 --hint 'answer with what you have'",
    "runs": "example: reinloop runs list --status broken",
    "runs list": "example: reinloop runs list --status broken --json",
    "runs show": "example: reinloop runs show 3f2a9c1b7d04",
    "runs prune": "example: reinloop runs prune --keep-last 1 --older-than 7",
    "runs delete": "example: reinloop runs delete 3f2a9c1b7d04",
}


def add_db_flag(parser: argparse.ArgumentParser) -> None:
    """``--db PATH``: the run database."""
    parser.add_argument(
        "--db",
        default=None,
        metavar="PATH",
        help=f"the run database [${DB_VARIABLE}, or ./{DEFAULT_DB}]",
    )


def add_runs_parsers(sub: Any) -> None:
    """``reinloop resume`` and ``reinloop runs list|show|prune|delete``."""
    p = sub.add_parser("resume", help="continue a run paused at a break, or cut off by a crash", epilog=EXAMPLES["resume"])
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("--extra-steps", type=int, default=0, metavar="N", help="raise the step limit by N")
    p.add_argument("--extra-seconds", type=float, default=0.0, metavar="S", help="raise the time limit by S seconds")
    p.add_argument("--extra-tokens", type=int, default=0, metavar="N", help="raise the token budget by N")
    p.add_argument("--hint", help="a hint shown to the model on its next call")
    p.add_argument("--abort", action="store_true", help="end the paused run as broken")
    p.add_argument("--model", help="override the stored model string")
    p.add_argument("--base-url", help="override the stored OpenAI-compatible endpoint")
    p.add_argument("--protocol", choices=list(PROTOCOLS), help="override the stored protocol")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    add_db_flag(p)
    add_limit_flags(p)
    p.set_defaults(func=cmd_resume)

    runs = sub.add_parser("runs", help="list, show, prune or delete stored runs", epilog=EXAMPLES["runs"])
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    p = runs_sub.add_parser("list", help="the stored runs, newest first", epilog=EXAMPLES["runs list"])
    p.add_argument("--status", choices=["running", "done", "broken"], help="only runs with this status")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    add_db_flag(p)
    p.set_defaults(func=cmd_runs_list)
    p = runs_sub.add_parser("show", help="a run's steps, counters and breaks", epilog=EXAMPLES["runs show"])
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("--json", action="store_true", help="print one JSON object")
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
    p.add_argument(
        "--model",
        default=os.environ.get("REINLOOP_MODEL", DEFAULT_MODEL),
        help=f"an init_chat_model string [{DEFAULT_MODEL}, or $REINLOOP_MODEL]",
    )
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint (Ollama, vLLM, LM Studio)")
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="tool_calling")
    p.add_argument(
        "--tools",
        default=",".join(DEFAULT_TOOLS),
        help=f"comma-separated built-in tools [{','.join(DEFAULT_TOOLS)}]; available: {', '.join(sorted(BUILTINS))}",
    )
    p.add_argument("--thread", help="thread id [a new id, printed]")
    p.add_argument("--system-prompt", help="replace the default system prompt")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    add_db_flag(p)
    add_limit_flags(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="run the seeds' examples offline with a scripted model", epilog=EXAMPLES["demo"])
    p.add_argument("--json", action="store_true", help="one JSON outcome per scenario")
    p.set_defaults(func=cmd_demo)
    add_runs_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reinloop`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ReinloopError as exc:
        print(f"reinloop: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("reinloop: interrupted", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
