"""What every ``reinloop`` command shares: the command registry, the common flags, printing and outcomes.

:mod:`reinloop.cli.app` (the parser and the run commands), :mod:`reinloop.cli.runs` and
:mod:`reinloop.cli.approve` all build on this module; none of them imports another for these.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigurationError
from ..observe.terminal import ReaderSafe, counted, safe_json, safe_text
from ..runs.rundb import DB_VARIABLE, DEFAULT_DB
from ..runs.spec import DEFAULT_MODEL, RunSpec
from .options import spec_changes

EXIT_DONE, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
MODEL_VARIABLE = "REINLOOP_MODEL"

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: its words, help, example, options and handler."""

    words: tuple[str, ...]
    help: str
    example: str
    options: Callable[[argparse.ArgumentParser], None]
    handler: Handler
    outcome: bool = False
    """True when ``--json`` ends with an outcome line, which an error then also gets."""


COMMANDS: list[Command] = []
"""Every subcommand, in the order of ``reinloop --help``."""


def command(words: str, *, help: str, example: str, options: Callable[[argparse.ArgumentParser], None],  # noqa: A002
            outcome: bool = False) -> Callable[[Handler], Handler]:
    """Register the decorated handler as ``reinloop WORDS``, with its help, example and options.

    ``outcome``: the command's ``--json`` output ends with an outcome line (an error's included).
    """

    def register(handler: Handler) -> Handler:
        COMMANDS.append(Command(tuple(words.split()), help, f"example: {example}", options, handler, outcome))
        return handler

    return register


# --- shared options and output ------------------------------------------------------------------


def add_db_flag(parser: argparse.ArgumentParser) -> None:
    """``--db PATH|URL``: the run database, a SQLite file or PostgreSQL."""
    parser.add_argument(
        "--db", default=None, metavar="PATH|URL",
        help=f"the run database: a SQLite file, or postgresql://user:password@host/dbname [${DB_VARIABLE}, or ./{DEFAULT_DB}]",
    )


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--quiet`` and ``--no-color``: how a run is shown."""
    parser.add_argument("--json", action="store_true",
                        help='one JSON object per line: each event ("type": "event"), then the outcome '
                             '("type": "outcome"); with --quiet, the outcome only')
    parser.add_argument("-q", "--quiet", action="store_true", help="print the outcome only, not the steps")
    parser.add_argument("--no-color", action="store_true",
                        help="plain text: no colours, no live progress line (also when stdout is not a terminal)")


def base_spec() -> RunSpec:
    """The spec the command line starts from: the defaults, with ``$REINLOOP_MODEL`` as the model."""
    return RunSpec(model=os.environ.get(MODEL_VARIABLE) or DEFAULT_MODEL)


def spec_from(args: argparse.Namespace) -> RunSpec:
    """The run spec the command line gives (bad combinations are one line naming the setting).

    Without ``--approve``, the built-in tools with side effects wait for approval (``--approve none``: nothing waits).
    """
    from ..tools.approval import cli_default

    return base_spec().replace(**{"approve": cli_default(), **spec_changes(args)})


def make_console(args: argparse.Namespace, limits: Any) -> Any:
    """The console the output flags ask for (``None`` with ``--quiet``)."""
    from ..observe.console import JsonConsole, RunConsole

    if args.quiet:
        return None
    if args.json:
        return JsonConsole()
    return RunConsole(limits, color=not args.no_color, live=False if args.no_color else None)


def say(text: str = "", *, file: TextIO | None = None, flush: bool = False) -> None:
    """Print a line with its control characters escaped (see :mod:`reinloop.observe.terminal`)."""
    print(safe_text(text), file=file, flush=flush)


def short(text: Any, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(str(text if text is not None else "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_outcome(outcome: Any, as_json: bool) -> None:
    """The outcome as one JSON object, or as a short human summary."""
    from ..protocols.answers import wrap_up_note
    from ..nodes.guard import HOW_TO_RESUME
    from ..models.pricing import spent

    if as_json:
        say(safe_json({"type": "outcome", **outcome.as_dict()}))
        return
    c = outcome.counters
    if outcome.status == "done":
        say(f"answer: {outcome.answer}{wrap_up_note(outcome.wrapped_up)}")
    elif outcome.status != "waiting":
        say(f"run {outcome.status}: {outcome.break_reason}: {outcome.break_message}")
        if outcome.invalid_output is not None:  # kept, and never shown as the answer
            say(f"last answer, INVALID (it does not match the output schema): {safe_json(outcome.invalid_output)}")
        for result in outcome.observations:  # the answer may be in hand
            say(f"  step {result['step']}: {result['tool']} {safe_json(result['args'])}"
                f" -> {short(result['observation'], 100)}")
    say(
        f"thread {outcome.thread_id}: {counted(c.get('steps', 0), 'step')}, "
        f"{counted(c.get('prompt_tokens', 0) + c.get('completion_tokens', 0), 'token')}, {spent(c)}"
        f"{counted(c.get('errors', 0), 'error')}, {c.get('elapsed_seconds', 0.0):.1f} s"
    )
    if outcome.waiting:
        print_waiting(outcome)
    if outcome.paused:
        how = HOW_TO_RESUME.get(outcome.break_reason or "", "continue or abort").replace("THREAD", outcome.thread_id)
        say(f"paused at the break: {how}; or end it: reinloop resume {outcome.thread_id} --abort")


def print_index_progress(done: int, total: int, path: str) -> None:
    """search_docs indexing progress on stderr: every 100 files and the last one."""
    if done % 100 == 0 or done == total:
        say(f"indexing docs: {done}/{total} files", file=sys.stderr, flush=True)


def write_output(data: str | bytes, output: str | None) -> None:
    """Write a drawing or report to ``output``, or to stdout (binary only when it is not a terminal)."""
    if output is not None:
        path = Path(output)
        path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data, encoding="utf-8")
        say(f"wrote {output}", file=sys.stderr)
    elif isinstance(data, bytes):
        if sys.stdout.isatty():
            raise ConfigurationError("this format is binary: write it to a file with -o FILE (e.g. -o graph.png)")
        (sys.stdout if isinstance(sys.stdout, ReaderSafe) else ReaderSafe(sys.stdout)).write_bytes(data)
    else:
        sys.stdout.write(safe_text(data if data.endswith("\n") else data + "\n"))


def pretty_args(args: dict[str, Any], indent: str = "    ") -> str:
    """A call's arguments as indented JSON lines."""
    return "\n".join(indent + line for line in json.dumps(args, ensure_ascii=False, indent=2).splitlines())


def describe_call(call: dict[str, Any], thread_id: str) -> None:
    """One waiting call: id, tool, why it waits, its arguments pretty-printed."""
    say(f"  {call['id']}: {call['tool']} (step {call['step']}): {call['reason']}")
    say(pretty_args(call["args"]))


def print_waiting(outcome: Any) -> None:
    """What waits for approval, and the commands that answer it."""
    t = outcome.thread_id
    say(f"waiting for approval: {len(outcome.waiting)} call(s) of run {t}")
    for call in outcome.waiting:
        describe_call(call, t)
    first = outcome.waiting[0]["id"]
    say(f"answer with: reinloop approve {t} {first}   (or --reject MSG | --edit JSON | --respond TEXT | --always; "
        f"without CALL_ID: every waiting call)")
