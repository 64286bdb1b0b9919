"""The command line's approval commands: ``reinloop runs pending``, ``reinloop approve``, and the inline prompt.

``reinloop run`` in a terminal asks about each waiting call inline (y / n / e / a)
and goes on; with ``--json``, ``--quiet`` or without a terminal it stops and
prints the command that answers (:func:`print_waiting`). Each command wraps
one function of :mod:`reinloop.runs.pending`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .common import (  # noqa: F401  (describe_call, pretty_args, print_waiting: re-exported)
    EXIT_DONE, add_db_flag, add_output_flags, command, describe_call, make_console, pretty_args, print_outcome,
    print_waiting, say,
)
from ..errors import ConfigurationError
from ..observe.terminal import safe_json, safe_text

CHOICES = "[y]es / [n]o (reject) / [e]dit / [a]lways approve this tool in this thread"


def ask(prompt: str, read: Callable[[str], str] = input) -> str:
    """One answer from the terminal (end of input: an empty answer); the prompt escaped as every printed line is
    (:func:`~reinloop.observe.terminal.safe_text`): it quotes the model's call."""
    try:
        return read(safe_text(prompt)).strip()
    except EOFError:
        return ""


def ask_decision(call: dict[str, Any]) -> dict[str, Any] | None:
    """The operator's decision on one call, asked in the terminal; ``None`` leaves it waiting."""
    while True:
        word = ask(f"approve {call['tool']} {call['id']}? {CHOICES}: ").lower()[:1]
        if word == "y":
            return {"action": "approve"}
        if word == "a":
            return {"action": "approve", "always": True}
        if word == "n":
            return {"action": "reject", "message": ask("message for the model (why not): ") or "the operator said no"}
        if word == "e":
            text = ask("new arguments (JSON object): ")
            try:
                args = json.loads(text)
            except json.JSONDecodeError as exc:
                say(f"not JSON ({exc.msg}); try again")
                continue
            return {"action": "edit", "args": args}
        if word == "":
            return None
        say(f"answer y, n, e or a")


def answer_inline(outcome: Any, resume_run: Callable[[dict[str, Any]], Any]) -> Any:
    """Ask about each waiting call in the terminal and resume, until the run stops waiting or no answer comes."""
    while outcome.status == "waiting":
        print_waiting(outcome)
        decisions = {}
        for call in outcome.waiting:
            decision = ask_decision(call)
            if decision is not None:
                decisions[call["id"]] = decision
        if not decisions:
            return outcome
        try:
            outcome = resume_run(decisions)
        except ConfigurationError as exc:  # an edit the tool's schema refuses: say why, and ask again
            say(f"refused: {exc}")
    return outcome


def interactive(args: argparse.Namespace) -> bool:
    """Ask inline: a terminal on both ends, and neither --json nor --quiet."""
    return not args.json and not args.quiet and sys.stdin.isatty() and sys.stdout.isatty()


# --- reinloop runs pending ------------------------------------------------------------------------


def pending_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list")
    add_db_flag(p)


@command("runs pending", help="the runs waiting for your approval, with each call's arguments",
         options=pending_options, example="reinloop runs pending --json")
def cmd_runs_pending(args: argparse.Namespace) -> int:
    from ..runs.pending import pending_runs

    runs = pending_runs(args.db)
    if args.json:
        say(safe_json([r.as_dict() for r in runs]))
        return EXIT_DONE
    if not runs:
        say("no run waits for approval")
    for r in runs:
        say(f"{r.thread_id}  {(r.updated_at or '')[:19]}  {r.task}")
        for call in r.calls:
            describe_call(call, r.thread_id)
        say(f"  answer with: reinloop approve {r.thread_id} [CALL_ID] [--edit JSON | --reject MSG | --respond TEXT | --always]")
    return EXIT_DONE


# --- reinloop approve -----------------------------------------------------------------------------


def approve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("thread", help="the run's thread id")
    p.add_argument("call_id", nargs="?", help="the waiting call to decide on [every waiting call]")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--edit", metavar="JSON", help="run the call with these arguments instead (checked by its schema)")
    what.add_argument("--reject", metavar="MSG", help="do not run it; the model reads MSG as its result")
    what.add_argument("--respond", metavar="TEXT", help="do not run it; the model reads TEXT as the tool's result")
    p.add_argument("--always", action="store_true",
                   help="approve (or with --reject, reject) this tool's calls for the rest of the thread")
    p.add_argument("--start-mcp", action="store_true",
                   help="start the MCP servers the stored run names (its spec shows them: `reinloop runs show`)")
    add_output_flags(p)
    add_db_flag(p)


@command("approve", help="answer a run waiting for approval, then let it go on", options=approve_options, outcome=True,
         example="reinloop approve 3f2a9c1b7d04 call_1 --edit '{\"path\": \"notes.txt\", \"content\": \"hi\"}'")
def cmd_approve(args: argparse.Namespace) -> int:
    from ..runs.pending import approve
    from ..runs.api import run_limits

    console = make_console(args, run_limits(args.thread, args.db))
    with console or _nothing():
        outcome = approve(args.thread, args.call_id, edit=args.edit, reject=args.reject, respond=args.respond,
                          always=args.always, db=args.db, on_event=console.handle if console else None,
                          start_mcp=args.start_mcp)
    print_outcome(outcome, args.json)
    return int(outcome.exit_code)


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()
