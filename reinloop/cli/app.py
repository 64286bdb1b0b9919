"""The ``reinloop`` command: each subcommand is a short wrapper over one public function.

Each command is declared in one place: the :func:`command` decorator over its
handler carries its help and its example, and the function it names adds its
options. The run options (model, tools, limits, memory) are not declared here:
:mod:`reinloop.cli.options` derives them from :class:`~reinloop.RunSpec`'s fields.
The library (LangChain, LangGraph, tiktoken) is imported inside the handlers,
so ``reinloop --help`` and ``reinloop runs list`` start fast.

argparse, not click or typer: it is in the standard library (no import cost,
no dependency), and every existing flag and message kept working.

Exit codes: 0 the run finished with an answer, 3 a guard broke it, 4 calls
wait for approval, 1 an error (one line on stderr), 2 a usage error: a bad
flag value, or any value the command line gave that is refused before the
run starts (:class:`~reinloop.errors.UsageError`, said in flag terms). With
``--json``, an error also ends the output with an outcome line
(``"status": "error"``). A closed stdout (``| head``) never stops a run. ``replay`` exits 0 when the replay is
identical, 5 when it diverged.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from .. import __version__
from .options import (
    add_answer_flags, add_spec_flags, break_answer, in_flag_terms, positive_seconds, spec_changes, task_text, whole,
)
from ..errors import ConfigurationError, ModelSetupError, ReinloopError, ToolDatabaseError, UsageError
from ..runs.spec import NOT_REPLAYED
from ..observe.terminal import ReaderSafe, safe_json

from .common import (  # noqa: F401  (the shared command helpers; re-exported)
    EXIT_DONE, EXIT_ERROR, EXIT_USAGE, MODEL_VARIABLE,
    COMMANDS, Command, Handler, add_db_flag, add_output_flags, base_spec, command, make_console, print_index_progress, print_outcome, say, short, spec_from, write_output,
)


# --- run, demo, graph ----------------------------------------------------------------------------


def run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", type=task_text, help="the task, in any language")
    p.add_argument("--thread", help="thread id [a new id, printed]")
    add_output_flags(p)
    add_db_flag(p)
    add_spec_flags(p)


@command("run", help="run one task", options=run_options, outcome=True,
         example='reinloop run "What is (22*1.8)+32?" --model openai:gpt-4o-mini --max-steps 5')
def cmd_run(args: argparse.Namespace) -> int:
    from ..observe.console import RunConsole
    from ..protocols.memory.tokens import active_counter
    from ..models.resolve import resolve_model
    from .approve import answer_inline, interactive
    from ..runs.api import db_location, new_thread_id, run

    with checking_input():
        spec = spec_from(args)
        resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)  # say which API key is missing first
        spec.tool_settings.check_run_database(db_location(args.db))  # said before the run database is touched
    thread_id = args.thread or new_thread_id()
    console = make_console(args, spec.limits)
    started: list[str] = []

    def header(thread_id: str) -> None:  # once every input is checked: a bad one is the only line
        started.append(thread_id)
        if isinstance(console, RunConsole):
            console.print(f"thread {thread_id}")
            console.print(f"memory: {spec.memory.describe()}; tokens counted by {active_counter(spec.memory.encoding)}")

    with interrupts_said(args):
        with console or contextlib.nullcontext():
            live = isinstance(console, RunConsole) and console.live_enabled and spec.stream  # a terminal shows the reply
            try:
                outcome = run(args.task, spec, db=args.db, thread_id=thread_id,
                              on_event=console.handle if console else None,
                              progress=None if args.json or args.quiet else print_index_progress, on_start=header,
                              on_token=console.token if live else None)
            except ConfigurationError as exc:  # before the header: an unknown tool, read_file without --sandbox ...
                raise exc if started else usage_error(exc)
        if interactive(args):  # a person at a terminal: ask about each waiting call, and go on
            outcome = answer_inline(outcome, lambda decisions: resume_shown(args, thread_id, spec.limits, decisions))
    print_outcome(outcome, args.json)
    return int(outcome.exit_code)


@contextlib.contextmanager
def interrupts_said(args: argparse.Namespace) -> Iterator[None]:
    """Ctrl-C or SIGTERM during a run: it is saved as interrupted; its thread id and the command that resumes it
    are said (with ``--json`` as an outcome line's fields), and the process ends at once (exit 1).

    The signal's handler hands the saving to a thread of its own and returns: unwound by a ``KeyboardInterrupt``,
    LangGraph would first wait for the model call in flight. Before a run has started (or after it ended), the
    signal is a ``KeyboardInterrupt`` as usual.
    """
    import signal
    import threading

    from ..runs.api import owned_runs

    def stop(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if not owned_runs():
            raise KeyboardInterrupt(name)
        threading.Thread(target=end_interrupted, args=(args, name), name="reinloop-interrupted").start()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def end_interrupted(args: argparse.Namespace, signal_name: str) -> None:
    """Save the runs of this process as interrupted, say how to resume each, and end the process (exit 1)."""
    from ..runs.api import resume_command, save_interrupted

    code = EXIT_ERROR
    try:
        for thread_id in save_interrupted():
            command = resume_command(thread_id, args.db)
            if getattr(args, "json", False):
                say(safe_json({"type": "outcome", "status": "interrupted", "thread_id": thread_id, "signal": signal_name,
                               "resume_command": command, "exit_code": code}))
            say(f"reinloop: interrupted by {signal_name}: run {thread_id} is saved as interrupted; "
                f"go on with: {command}", file=sys.stderr)
    except ReinloopError as exc:  # the database could not take the mark: the run shows as abandoned instead
        say(f"reinloop: interrupted by {signal_name}; the run could not be marked: {in_flag_terms(exc)}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def resume_shown(args: argparse.Namespace, thread_id: str, limits: Any, decisions: dict[str, Any]) -> Any:
    """Resume a run with the operator's decisions, its steps shown as ``run`` shows them."""
    from ..runs.api import resume

    console = make_console(args, limits)
    with console or contextlib.nullcontext():
        return resume(thread_id, db=args.db, decisions=decisions, on_event=console.handle if console else None)


def demo_options(p: argparse.ArgumentParser) -> None:
    add_output_flags(p)
    p.add_argument("--db", metavar="PATH|URL",
                   help="store the demo's runs (threads demo-0 ... demo-3) in this run database, for `runs list` "
                        "and `runs show` [kept in memory]")


@command("demo", help="run the seeds' examples offline with a scripted model", options=demo_options, outcome=True,
         example="reinloop demo --db demo.db && reinloop runs show demo-3 --db demo.db")
def cmd_demo(args: argparse.Namespace) -> int:
    from ..observe.console import RunConsole
    from .demo import BANNER, as_expected, demo
    from ..runs.limits import Limits
    from ..runs.api import open_db

    # an unusable --db is one line, before the banner; the demo's runs are stored as `reinloop run` stores them
    database = open_db(args.db, write=True, create=True) if args.db else None
    console = make_console(args, Limits())
    text = console if isinstance(console, RunConsole) else None
    if text is not None:
        text.print(BANNER)

    def announce(scenario: Any) -> None:
        if text is not None:
            text.limits = scenario.limits
            text.print(f"\n=== {scenario.name}", "bold")
            text.print(f"task: {scenario.task}")

    def report(scenario: Any, outcome: Any) -> None:
        if args.json:
            line = {"type": "outcome", "scenario": scenario.name, **outcome.as_dict(),
                    "as_expected": as_expected(scenario, outcome)}
            say(safe_json(line), flush=True)

    with database or contextlib.nullcontext(), console or contextlib.nullcontext():
        results = demo(on_event=console.handle if console else None, on_scenario=announce, on_outcome=report,
                       db=database)
    ok = all(as_expected(scenario, outcome) for scenario, outcome in results)
    if not args.json:
        say(f"\n{len(results)} scenarios, {'all' if ok else 'NOT all'} ended as expected.")
    return EXIT_DONE if ok else EXIT_ERROR


def graph_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("mermaid", "ascii", "png", "svg", "html"), default="mermaid",
                   help="mermaid, ascii, svg and html need nothing extra; png needs 'reinloop[graph]' [mermaid]")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE [stdout]")


@command("graph", help="draw the loop's graph, every conditional edge labelled", options=graph_options,
         example="reinloop graph --format png -o graph.png")
def cmd_graph(args: argparse.Namespace) -> int:
    from ..observe.pictures import draw_graph

    write_output(draw_graph(format=args.format), args.output)
    return EXIT_DONE


# --- resume and replay (the `runs` commands: reinloop.cli_runs) ------------------------------


def resume_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("thread", help="the run's thread id")
    add_answer_flags(p)
    p.add_argument("--start-mcp", action="store_true",
                   help="start the MCP servers the stored run names (its spec shows them: `reinloop runs show`)")
    add_output_flags(p)
    add_db_flag(p)
    add_spec_flags(p, defaults="stored")  # each given flag overrides the run's stored spec


@command("resume", help="continue a run paused at a break, or cut off by a crash", options=resume_options, outcome=True,
         example="reinloop resume 3f2a9c1b7d04 --extra-steps 5 --hint 'answer with what you have'")
def cmd_resume(args: argparse.Namespace) -> int:
    from ..observe.console import RunConsole
    from ..runs.api import resume, run_limits

    changes, answer = spec_changes(args), break_answer(args)
    shown = run_limits(args.thread, args.db).replace(**changes.get("limits", {}))
    if shown.max_steps is not None:
        shown = shown.replace(max_steps=shown.max_steps + answer.extra_steps)
    if shown.max_cost is not None:
        shown = shown.replace(max_cost=shown.max_cost + answer.extra_cost)
    console = make_console(args, shown)
    live = isinstance(console, RunConsole) and console.live_enabled and changes.get("stream", True) is not False
    with interrupts_said(args), console or contextlib.nullcontext():
        outcome = resume(args.thread, db=args.db, on_event=console.handle if console else None,
                         on_token=console.token if live else None, start_mcp=args.start_mcp,
                         **dataclasses.asdict(answer), **changes)
    print_outcome(outcome, args.json)
    return int(outcome.exit_code)


def replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("thread", help="the stored run's thread id")
    p.add_argument("--stub-tools", action="store_true",
                   help="serve each tool call from the run's stored observation instead of running the tool")
    p.add_argument("--run-side-effects", action="store_true",
                   help="run the side-effecting tools (write_file, db_insert ...) again instead of serving their stored "
                        "observations; needs --sandbox / --db-tool where the run had them")
    p.add_argument("--start-mcp", action="store_true",
                   help="start the MCP servers the stored run names (its spec shows them: `reinloop runs show`)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_db_flag(p)
    # each given flag changes the stored spec (where would the run go then?); spans only with --otel
    add_spec_flags(p, defaults="stored", not_kept=NOT_REPLAYED)


@command("replay", help="re-run a stored run on its stored model replies; report the first step that differs",
         options=replay_options, example="reinloop replay 3f2a9c1b7d04 --stub-tools --max-steps 3")
def cmd_replay(args: argparse.Namespace) -> int:
    from ..runs.replay import replay

    report = replay(args.thread, args.db, stub_tools=args.stub_tools, side_effects=args.run_side_effects,
                    start_mcp=args.start_mcp, **spec_changes(args))
    if args.json:
        say(safe_json(report.as_dict()))
    elif report.divergence is None:
        say(f"replay of {report.thread_id}: identical ({report.steps} steps, {report.model_calls} model calls"
            f"{', tools stubbed' if report.stub_tools else ''})")
    else:
        d = report.divergence
        say(f"replay of {report.thread_id}: diverged at run {d.run}, step {d.step} ({d.kind}): {d.message}")
    return report.exit_code


from . import runs as cli_runs  # noqa: E402, F401  (registers `runs list`, `show`, `prune` and `delete`, here in --help's order)


# --- batch ------------------------------------------------------------------------------------------

DEFAULT_LEASE = 60.0  # reinloop.runs.batches.DEFAULT_LEASE, which is not loaded for --help (a test keeps them equal)


def batch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("tasks", help='a file with one JSON object per line: {"task": "...", "thread_id": "..."} and any '
                                 'run spec key, e.g. "tools": "calculator", "limits": {"max_steps": 5}, "memory": '
                                 '{"window_steps": 2}, "protocol": "json"')
    p.add_argument("--concurrency", "-n", type=whole(1), default=4, metavar="N", help="tasks run at once by this worker [4]")
    p.add_argument("--lease", type=positive_seconds, default=DEFAULT_LEASE, metavar="S",
                   help=f"seconds before another worker takes over a task whose worker stopped [{DEFAULT_LEASE:g}]")
    p.add_argument("--json", action="store_true",
                   help='one JSON object per finished task ("type": "task"), then the summary ("type": "summary")')
    p.add_argument("--no-color", action="store_true", help="plain text, no progress bar (also when stdout is not a terminal)")
    add_db_flag(p)
    add_spec_flags(p)  # the defaults of the tasks; a task's line changes them for that task


@command("batch", help="run the tasks of a JSONL file, N at a time; start it on several machines to share them",
         options=batch_options,
         example="reinloop batch tasks.jsonl --concurrency 8 --db postgresql://reinloop@db.internal/runs")
def cmd_batch(args: argparse.Namespace) -> int:
    from .batch_console import BatchConsole
    from ..runs.batches import BatchInterrupted, batch
    from ..models.resolve import resolve_model
    from ..runs.api import db_location
    from ..tools.catalog import BUILTINS, builtin

    tasks_file(args.tasks)  # a missing file first (exit 1, as batch() says it): no API key makes it readable
    with checking_input():  # said before anything is shown
        spec = spec_from(args)
        resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)  # say which API key is missing first
        spec.tool_settings.check_run_database(db_location(args.db))
        unknown = [name for name in spec.tools if name not in BUILTINS]
        if unknown:  # a task line may name other tools; the flags' own are checked before the bar is shown
            builtin(unknown[0])  # raises UnknownToolError, naming the built-in tools
    try:
        with BatchConsole(color=not args.no_color, as_json=args.json) as view:
            report = batch(args.tasks, spec, concurrency=args.concurrency, db=args.db, lease=args.lease,
                           on_outcome=view.outcome, on_start=view.start)
    except BatchInterrupted as exc:
        # the abandoned runs sit in LangGraph's worker threads, which Python would wait for at exit
        say(f"reinloop: interrupted: {exc.running} running task(s) left to the other workers (their lease "
            f"ends in {args.lease:g} s at most)", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(EXIT_ERROR)
    view.summary(report)
    return int(report.exit_code)


def tasks_file(path: str) -> None:
    """Refuse a tasks file that cannot be read, naming it, as :func:`reinloop.runs.batches.read_tasks` would."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ConfigurationError(f"cannot read the tasks file {path!r}: {exc.strerror or exc}") from None


from . import approve as cli_approve  # noqa: E402, F401  (registers `runs pending` and `approve`)

# --- the parser ----------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage error is two lines: the command's one-line usage and the error.

    argparse prints the whole usage before its error, some 30 lines for ``run``; ``--help`` still has it all.
    """

    def error(self, message: str) -> NoReturn:
        """Exit 2 with ``usage: reinloop run [OPTIONS] task`` and the error (``--help``: every option)."""
        say(f"{self.short_usage()}   ({self.prog} --help: every option)", file=sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def short_usage(self) -> str:
        """``usage: PROG [OPTIONS] POSITIONALS``, the positionals as ``--help`` names them."""
        options = any(a.option_strings and a.help != argparse.SUPPRESS for a in self._actions
                      if not isinstance(a, argparse._HelpAction))
        positionals = [a.metavar or a.dest for a in self._actions if not a.option_strings]
        return " ".join(["usage:", self.prog, *(["[OPTIONS]"] if options else []), *map(str, positionals)])


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``reinloop`` command, from :data:`COMMANDS`."""
    parser = Parser(
        prog="reinloop",
        description="A tool-using LLM agent loop on a short rein.",
        epilog="exit codes: 0 done, 3 broken by a guard, 4 waiting for approval, 1 error, 2 usage; replay: 0 identical, 5 diverged",
    )
    parser.add_argument("--version", action="version", version=f"reinloop {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    nested: dict[str, Any] = {}
    for cmd in COMMANDS:
        sub = top
        if len(cmd.words) == 2:  # `runs list`: the `runs` group is made with its first member
            if cmd.words[0] not in nested:
                group = top.add_parser(cmd.words[0], help="list, show, prune or delete stored runs; list those waiting for approval",
                                       epilog="example: reinloop runs list --status broken")
                nested[cmd.words[0]] = group.add_subparsers(dest=f"{cmd.words[0]}_command", required=True, metavar="COMMAND")
            sub = nested[cmd.words[0]]
        p = sub.add_parser(cmd.words[-1], help=cmd.help, epilog=cmd.example)
        cmd.options(p)
        p.set_defaults(func=cmd.handler, outcome_lines=cmd.outcome)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reinloop`` command; returns the exit code.

    stdout outlives its reader (:class:`~reinloop.observe.terminal.ReaderSafe`): ``reinloop run ... | head -1`` lets the
    run go on to its end, stored. An error after the arguments are parsed is one line on stderr and, with
    ``--json``, the outcome line too (``"status": "error"``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    given = sys.stdout
    sys.stdout = given if isinstance(given, ReaderSafe) else ReaderSafe(given)
    try:
        return int(args.func(args))
    except ReinloopError as exc:
        code = exit_code_of(exc)
        print_error(args, exc, code)
        return code
    except KeyboardInterrupt:
        say("reinloop: interrupted", file=sys.stderr)
        return EXIT_ERROR
    finally:
        sys.stdout.flush()
        sys.stdout = given  # its file descriptor points at /dev/null if the reader left: the last flush cannot fail


def exit_code_of(exc: ReinloopError) -> int:
    """2 for a value the command line gave (a bad flag, an unknown tool, a missing --sandbox), 1 for the rest."""
    return EXIT_USAGE if isinstance(exc, (UsageError, ToolDatabaseError)) else EXIT_ERROR


@contextlib.contextmanager
def checking_input() -> Iterator[None]:
    """Until the run starts, a configuration error is the command line's: a :class:`UsageError` (exit 2)."""
    try:
        yield
    except ConfigurationError as exc:
        raise usage_error(exc) from exc


def usage_error(exc: ConfigurationError) -> ConfigurationError:
    """``exc`` as a :class:`UsageError` in flag terms; a missing API key stays itself (exit 1: no flag is wrong)."""
    if isinstance(exc, (UsageError, ToolDatabaseError)) or (isinstance(exc, ModelSetupError) and exc.key_variable):
        return exc
    return UsageError(in_flag_terms(exc), cause=exc)


def print_error(args: argparse.Namespace, exc: ReinloopError, code: int) -> None:
    """The error as one line on stderr; with ``--json`` on a command that prints outcomes, its outcome line too."""
    message = in_flag_terms(exc)
    say(f"reinloop: error: {message}", file=sys.stderr, flush=True)
    if getattr(args, "json", False) and getattr(args, "outcome_lines", False):
        say(safe_json({"type": "outcome", "status": "error", "error": type(exc).__name__, "message": message,
                       "thread_id": getattr(exc, "thread_id", None), "exit_code": code}), flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
