"""``python -m benchmarks.eval``: 50 tasks, 6 kinds of tools, three agent loops, one flaky model.

By default the model is :class:`reinloop.models.simulation.SimulatedModel`, a stand-in
for a flaky LLM that knows each task's plan and makes mistakes at
``--fault-rate`` (seeded). With ``--model`` (and ``--base-url``) the same tasks
run against a real endpoint instead, without injected faults. With ``--real
qwen0.5b`` (or ``smol135m``) they run against a small local model that the
eval serves itself (``benchmarks/realserver.py``, see :mod:`.real`). ``--set
heldout`` runs the frozen held-out set (:mod:`.heldout`) instead of the 50
development tasks (``--set dev``, the default).

Prints a table per contestant: success rate, mean iterations (model calls),
prompt tokens per task, framework time per step (model time excluded) and how
runs ended; ``--json`` prints the same as one JSON object; ``--write`` also
writes the table to BENCHMARKS.md with the command and the date.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import signal
import statistics
import sys
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.realserver import MODELS, RealModelUnavailable, serving
from reinloop.protocols.answers import AnswerRules
from reinloop.models.caching import CachingChatModel
from reinloop.errors import ConfigurationError
from reinloop.models.resolve import resolve_model
from reinloop.models.pricing import library_price
from reinloop.models.simulation import FAULTS, Plan, SimulatedModel

from . import bfcl, real
from . import contestants
from . import heldout
from .contestants import CONTESTANTS, REAL_DEFAULT, SIMULATED_DEFAULT, RunResult
from .tasks import FAMILIES, Task, World, all_tasks, is_correct, select, solve

SETS = {"dev": (all_tasks, FAMILIES), "heldout": (heldout.all_tasks, heldout.FAMILIES)}
"""``--set``: each task set's tasks and families. ``dev`` is what rules are tuned on; ``heldout`` is frozen."""

ROOT = Path(__file__).resolve().parents[2]
PRICE_AS = "gpt-5-mini"
"""The simulated model's replies are priced as this model (genai-prices: cached input at 0.1x fresh input)."""


def model_for(args: argparse.Namespace, task_text: str, plan: Any, task_id: str) -> Any:
    """The simulated model for one task (seeded per task, the same for every contestant), or the real one."""
    if args.chat_model is not None:
        return args.chat_model
    if args.model:
        return resolve_model(args.model, base_url=args.base_url)
    seed = zlib.crc32(f"{args.seed}:{task_id}".encode())
    simulated = SimulatedModel(plans={task_text: plan}, fault_rate=args.fault_rate, seed=seed)
    return simulated if args.no_cache else CachingChatModel(inner=simulated, price_as=PRICE_AS)


def chosen_tasks(args: argparse.Namespace) -> list[Any]:
    """``--tasks`` (ids or families; by default the whole set, or one per dev family with ``--real``), then
    ``--limit``. The simulated model runs only the held-out tasks it can follow (:func:`followable`)."""
    everything, families = SETS[args.set]
    spec = args.tasks or (real.DEFAULT_TASKS if args.real and args.set == "dev" else "")
    tasks = select(everything(), spec, families) if spec else everything()
    if args.set == "heldout" and not (args.real or args.model or args.report_from):
        kept = [t for t in tasks if followable(t)]
        if len(kept) < len(tasks):
            print(f"the simulated model follows plans: {len(tasks) - len(kept)} held-out task(s) left out "
                  f"(no steps, a repeated step or a failing step: "
                  f"{', '.join(t.id for t in tasks if t not in kept)})", file=sys.stderr)
        tasks = kept
    return tasks[: args.limit] if args.limit else tasks


def followable(task: heldout.Task) -> bool:
    """Whether :class:`SimulatedModel` can follow the task's plan: it has steps, none repeats another (the
    model finds its progress by matching calls to steps) and none fails (it would retry it for ever)."""
    desk = heldout.Desk(task.tools)
    tools = {t.name: t for t in desk.tools()}
    calls = [json.dumps([s.tool, s.args], sort_keys=True) for s in task.steps]
    if not calls or len(set(calls)) < len(calls):
        return False
    try:
        for step in task.steps:
            tools[step.tool].invoke(step.args)
    except Exception:  # a step meant to fail (a missing file, an invalid date)
        return False
    return True


def plan_of(task: Any) -> Plan:
    """The plan a correct agent follows: a dev task's from its real tools, a held-out task's as written."""
    if isinstance(task, heldout.Task):
        return Plan(steps=task.steps, answer=task.right[0])
    return solve(task)


def world_of(task: Any) -> Any:
    """A fresh world for one run: the dev tasks' sandbox, or a held-out task's own desk."""
    return heldout.Desk(task.tools) if isinstance(task, heldout.Task) else World()


def judged(task: Any, answer: str | None, plan: Plan, world: Any) -> bool:
    """Whether a run's answer (and, for a held-out task, its desk after the run) is correct."""
    if isinstance(task, heldout.Task):
        return heldout.judge(task, answer, world)
    return is_correct(answer, plan, task.text)


def run_all(args: argparse.Namespace, tasks: list[Task],
            results: dict[str, list[tuple[RunResult, bool]]] | None = None) -> dict[str, list[tuple[RunResult, bool]]]:
    """Every contestant on every task, each in a fresh world; each run appended to ``--save`` as it ends.

    ``results`` (filled as runs end) keeps what finished when the loop is interrupted.
    """
    results = results if results is not None else {}
    results.update({name: [] for name in args.contestants})
    library_price(PRICE_AS, 1, 0, 1)  # load genai-prices' table (~1-2 s, once) before any run is timed
    for task in tasks:
        plan = plan_of(task)
        for name in args.contestants:
            world = world_of(task)
            try:
                result = CONTESTANTS[name](task.text, model_for(args, task.text, plan, task.id), world.tools(),
                                           **args.loop_options)
                correct = judged(task, result.answer, plan, world)
            finally:
                world.close()
            results[name].append((result, correct))
            if args.save:
                with open(args.save, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"task": task.id, "contestant": name, "correct": results[name][-1][1],
                                         **dataclasses.asdict(result)}, ensure_ascii=False) + "\n")
            if args.verbose:
                print(f"{task.id:<22} {name:<16} {'ok ' if results[name][-1][1] else 'BAD'} "
                      f"{result.ending:<6} {result.iterations:>2} calls {result.wall_seconds:6.1f} s  "
                      f"{result.answer!r:.60} {result.detail:.80}", file=sys.stderr, flush=True)
    return results


def summarize(runs: list[tuple[RunResult, bool]]) -> dict[str, Any]:
    """The numbers reported for one contestant."""
    calls = sum(r.iterations for r, _ in runs)
    framework = sum(max(0.0, r.wall_seconds - r.model_seconds) for r, _ in runs)
    endings = Counter(r.ending for r, _ in runs)
    solved = sum(ok for _, ok in runs)
    return {
        "success_rate": solved / len(runs),
        "mean_iterations": statistics.mean(r.iterations for r, _ in runs),
        "prompt_tokens_per_task": statistics.mean(r.prompt_tokens for r, _ in runs),
        # what a correct answer costs: a loop that gives up early spends little per task, nothing per answer
        "prompt_tokens_per_correct_answer": sum(r.prompt_tokens for r, _ in runs) / solved if solved else None,
        "completion_tokens_per_task": statistics.mean(r.completion_tokens for r, _ in runs),
        "usd_per_correct_answer": sum(r.usd for r, _ in runs) / solved if solved else None,
        "cache_hit_rate": sum(r.cached_tokens for r, _ in runs) / max(1, sum(r.prompt_tokens for r, _ in runs)),
        "unpriced_calls": sum(r.unpriced_calls for r, _ in runs),
        "seconds_per_task": statistics.mean(r.wall_seconds for r, _ in runs),
        "framework_ms_per_step": 1000 * framework / max(calls, 1),
        "endings": {k: endings.get(k, 0) for k in ("answer", "limit", "crash")},
    }


def table(report: dict[str, dict[str, Any]], *, timed: bool = False) -> str:
    """The report as a Markdown table, with prompt tokens relative to create_agent.

    ``timed`` (real models) shows completion tokens and seconds per task instead
    of framework time, which a real model's minutes on a busy machine drown.
    """
    base = report.get("create_agent", {})
    middle = "completion tokens / task | seconds / task" if timed else "framework ms / step"
    lines = ["| contestant | success | mean iterations | prompt tokens / task | vs create_agent | "
             f"prompt tokens / correct answer | $ / correct answer | cache hit rate | {middle} | "
             "endings (answer / limit / crash) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | " + ("--- | --- | " if timed else "--- | ") + "--- |"]
    for name, r in report.items():
        e = r["endings"]
        more = (f"{r['completion_tokens_per_task']:,.0f} | {r['seconds_per_task']:,.1f}" if timed
                else f"{r['framework_ms_per_step']:.1f}")
        lines.append(f"| {name} | {100 * r['success_rate']:.0f}% | {r['mean_iterations']:.1f} | "
                     f"{r['prompt_tokens_per_task']:,.0f} | {_ratio(r, base, 'prompt_tokens_per_task')} | "
                     f"{_per_answer(r, base)} | {_dollars(r, base)} | {r.get('cache_hit_rate', 0):.0%} | "
                     f"{more} | {e['answer']} / {e['limit']} / {e['crash']} |")
    return "\n".join(lines)


def _dollars(numbers: dict[str, Any], base: dict[str, Any]) -> str:
    """``$0.00123 (0.95x)``; a dash when nothing was answered, ``+N unpriced`` when calls had no price."""
    value = numbers.get("usd_per_correct_answer")
    if value is None:
        return "—"
    unpriced = f" +{numbers['unpriced_calls']} unpriced" if numbers.get("unpriced_calls") else ""
    return f"${value:.5f} ({_ratio(numbers, base, 'usd_per_correct_answer')}){unpriced}"


def _per_answer(numbers: dict[str, Any], base: dict[str, Any]) -> str:
    """``7,824 (1.01x)``, or a dash for a loop that answered nothing correctly."""
    value = numbers["prompt_tokens_per_correct_answer"]
    return "—" if value is None else f"{value:,.0f} ({_ratio(numbers, base, 'prompt_tokens_per_correct_answer')})"


def _ratio(numbers: dict[str, Any], base: dict[str, Any], key: str) -> str:
    """``numbers[key]`` as a multiple of ``base[key]``, or a dash when either is missing."""
    return f"{numbers[key] / base[key]:.2f}x" if numbers.get(key) is not None and base.get(key) else "—"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eval", description=__doc__.splitlines()[0])
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of model calls with a mistake [0.2]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-cache", action="store_true", help="the simulated model without its prompt cache "
                        f"(by default it caches prefixes as OpenAI does and is priced as {PRICE_AS})")
    parser.add_argument("--set", choices=sorted(SETS), default="dev", help="dev: the 50 tasks rules are tuned on; "
                        "heldout: the frozen held-out set (benchmarks/eval/heldout.py, its sha256 in BENCHMARKS.md), "
                        "never tuned on [dev]")
    parser.add_argument("--limit", type=int, help="run only the first N of the chosen tasks")
    parser.add_argument("--tasks", help="comma-separated task ids or family letters (dev: A,B,C,D,E,F,H; heldout: "
                        f"{','.join(heldout.FAMILIES)}); 'first-of-each' is one task per family "
                        "[the whole set; first-of-each with --real on dev]")
    parser.add_argument("--contestants", type=lambda s: s.split(","),
                        help=f"comma-separated, of {', '.join(CONTESTANTS)} [{','.join(SIMULATED_DEFAULT)}; "
                        f"with --real: {','.join(REAL_DEFAULT)}]")
    parser.add_argument("--model", help="a real model (init_chat_model string) instead of the simulated one")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for --model")
    parser.add_argument("--real", choices=sorted(MODELS), help="serve this small local model (llama-cpp-python) "
                        "for the run and stop it after")
    parser.add_argument("--threads", type=int, default=1, help="--real: llama.cpp threads [1: on a busy 2-core "
                        "machine, 2 threads generated 10x slower than 1]")
    parser.add_argument("--max-tokens", type=int, default=256, help="--real: cap on every reply [256]")
    parser.add_argument("--n-ctx", type=int, default=4096, help="--real: the model's context window in tokens; BFCL's "
                        "multi-turn prompts need about 16384 [4096]")
    parser.add_argument("--server-log", metavar="FILE", help="--real: the server appends every request's messages "
                        "and the model's raw reply to this JSON-lines file")
    parser.add_argument("--rules", type=answer_rules, help="the *_ruled contestants' AnswerRules as JSON, e.g. "
                        "'{\"min_tool_calls\": 1, \"vary_repeats\": true}' [README's small-model rules]")
    parser.add_argument("--no-system-prompt", action="store_true", help="give no contestant the eval's system "
                        "prompt: reinloop sends its protocol's rules alone, create_agent no system message "
                        "(--bfcl never gives one)")
    parser.add_argument("--bfcl", metavar="CATEGORIES", help="run the Berkeley Function Calling Leaderboard's "
                        "items instead (comma-separated: simple,multiple,parallel,multi_turn_base ...; needs "
                        f"bfcl-eval: {bfcl.INSTALL}), checked by its own checkers; with --real or --model")
    parser.add_argument("--n", type=int, default=10, help="--bfcl: items per category, drawn with --seed [10]")
    parser.add_argument("--save", help="append every run, as it ends, to this JSON-lines file")
    parser.add_argument("--report-from", metavar="FILE", help="run nothing: report the runs a --save file holds "
                        "(only tasks every contestant finished; a --bfcl file's calls judged by BFCL again)")
    parser.add_argument("--label", help="--write: added to the section's heading, so it sits beside, not over, others")
    parser.add_argument("--json", action="store_true", help="print one JSON object keyed by contestant")
    parser.add_argument("--write", action="store_true", help="also write the table to BENCHMARKS.md")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per run on stderr")
    args = parser.parse_args(argv)
    unknown = [name for name in args.contestants or () if name not in CONTESTANTS]
    if unknown:
        parser.error(f"--contestants: unknown {', '.join(unknown)}; choose from {', '.join(CONTESTANTS)}")
    if args.real and args.model:
        parser.error("--real serves its own model: leave out --model")
    if args.bfcl:
        unknown = [name for name in args.contestants or () if name not in bfcl.CONTESTANTS]
        if unknown:
            parser.error(f"--contestants: {', '.join(unknown)} cannot run --bfcl; "
                         f"choose from {', '.join(bfcl.CONTESTANTS)}")
        if not (args.real or args.model):
            parser.error("--bfcl needs a real model: --real NAME, or --model (with --base-url)")
        args.contestants = args.contestants or list(bfcl.CONTESTANTS)
    args.contestants = args.contestants or list(REAL_DEFAULT if args.real else SIMULATED_DEFAULT)
    if args.rules is not None:
        contestants.SMALL_MODEL_RULES = args.rules
    if args.no_system_prompt:
        contestants.SYSTEM = None
    args.chat_model, args.loop_options = None, {}
    return args


def answer_rules(text: str) -> AnswerRules:
    """``--rules``: an AnswerRules from a JSON object of its fields."""
    try:
        return AnswerRules(**json.loads(text))
    except (ValueError, TypeError, ConfigurationError) as exc:
        raise argparse.ArgumentTypeError(f"not AnswerRules as JSON ({exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    git_commit()  # the code this run loads, named in its report however long it takes
    command = "python -m benchmarks.eval " + " ".join(argv if argv is not None else sys.argv[1:])
    command = command.replace(" --write", "").replace(" -v", "")
    if args.bfcl:
        return run_bfcl(args, command)
    try:
        tasks = chosen_tasks(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.report_from and bfcl.is_saved(Path(args.report_from)):
        print(bfcl.table(bfcl.report(bfcl.load(Path(args.report_from)))))
        return 0
    if args.report_from:
        results, tasks = load_saved(Path(args.report_from))
        print(report_text(results, tasks))
        return 0
    if args.real:
        try:
            return run_real(args, tasks, command)
        except RealModelUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    report = {name: summarize(runs) for name, runs in run_all(args, tasks).items()}
    if args.json:
        print(json.dumps(report))
        return 0
    cache = "" if args.no_cache else f", behind OpenAI's prompt-cache rules, priced as {PRICE_AS}"
    model = args.model or (f"SimulatedModel (a scripted stand-in for a flaky LLM), fault rate {args.fault_rate}, "
                           f"seed {args.seed}{cache}")
    text = table(report)
    print(f"model: {model}; faults: {', '.join(FAULTS) if not args.model else 'none injected'}\n\n{text}")
    if args.write:
        heading = ("Agent loops on 50 tasks (`benchmarks/eval`)" if args.set == "dev"
                   else "Agent loops on the held-out set (`benchmarks/eval --set heldout`)")
        write_markdown(heading, f"`{command}` — {datetime.date.today()}, model: {model}\n\n{text}\n")
    return 0


def run_real(args: argparse.Namespace, tasks: list[Task], command: str) -> int:
    """The suite against a small local model this process serves (and stops, also on error or Ctrl-C)."""
    signal.signal(signal.SIGTERM, _terminated)  # so that ``serving`` stops the server on ``kill`` too
    with serving(args.real, max_tokens=args.max_tokens, n_ctx=args.n_ctx, threads=args.threads, log=args.server_log) as server:
        args.chat_model, args.loop_options = real.chat_model(server), real.loop_options()
        results: dict[str, list[tuple[RunResult, bool]]] = {}
        try:
            run_all(args, tasks, results)
        except KeyboardInterrupt:  # Ctrl-C: report the tasks every contestant finished
            finished = min(len(runs) for runs in results.values())
            print(f"interrupted: reporting the {finished} of {len(tasks)} tasks every contestant finished",
                  file=sys.stderr)
            if not finished:
                raise
            results, tasks = {name: runs[:finished] for name, runs in results.items()}, tasks[:finished]
        stats = server.stats()
        model = real.describe(args.real, server, args.threads, args.max_tokens, args.n_ctx)
    report = {name: summarize(runs) for name, runs in results.items()}
    if args.json:
        print(json.dumps({"contestants": report, "server": stats, "tasks": [t.id for t in tasks]}))
        return 0
    subset = ", ".join(t.id for t in tasks)
    body = (f"`{command}` — {datetime.date.today()}, commit {git_commit()}\n\nmodel: {model}\n\n"
            f"tasks ({len(tasks)}): {subset}\n\nserver: {real.throughput(stats)}\n\n{report_text(results, tasks)}\n")
    print(body)
    if args.write:
        label = (", held-out set" if args.set == "heldout" else "") + (f", {args.label}" if args.label else "")
        write_markdown(f"Real small model: {args.real}{label} (`benchmarks/eval --real`)", body)
    return 0


def run_bfcl(args: argparse.Namespace, command: str) -> int:
    """``--bfcl``: BFCL's items on the contestants, against ``--model`` or a small local model served here."""
    try:
        items = bfcl.sample(bfcl.categories(args.bfcl), args.n, args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except bfcl.BfclUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    outcomes: list[bfcl.Outcome] = []
    run = functools.partial(bfcl.run_all, items, args.contestants, save=args.save, verbose=args.verbose,
                            outcomes=outcomes)
    stats: dict[str, Any] = {}
    try:
        if args.real:
            signal.signal(signal.SIGTERM, _terminated)
            with serving(args.real, max_tokens=args.max_tokens, n_ctx=args.n_ctx, threads=args.threads, log=args.server_log) as server:
                try:
                    run(real.chat_model(server), **real.loop_options())
                finally:
                    stats, model = server.stats(), real.describe(args.real, server, args.threads, args.max_tokens, args.n_ctx)
        else:
            model = args.model
            run(args.chat_model or resolve_model(args.model, base_url=args.base_url))
    except RealModelUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: report the items every contestant finished
        done = len(outcomes) // len(args.contestants) * len(args.contestants)
        print(f"interrupted: reporting the {done // len(args.contestants)} of {len(items)} items every contestant "
              "finished", file=sys.stderr)
        if not done:
            raise
        outcomes[:] = outcomes[:done]
    numbers = bfcl.report(outcomes)
    if args.json:
        print(json.dumps({"categories": numbers, "items": list(dict.fromkeys(o.item for o in outcomes)),
                          "seed": args.seed, "n": args.n, "bfcl_eval": bfcl.version(), "server": stats}))
        return 0
    body = (f"`{command}` — {datetime.date.today()}, commit {git_commit()}, bfcl-eval {bfcl.version()}\n\n"
            f"model: {model}\n\n" + (f"server: {real.throughput(stats)}\n\n" if stats else "")
            + bfcl.table(numbers) + "\n")
    print(body)
    if args.write:
        label = f", {args.label}" if args.label else ""
        write_markdown(f"BFCL: {args.bfcl}, {args.n} per category, seed {args.seed}{label} (`benchmarks/eval --bfcl`)",
                       body)
    return 0


def report_text(results: dict[str, list[tuple[RunResult, bool]]], tasks: list[Task]) -> str:
    """The real tier's tables: per contestant (with protocol, tokens and time), then per task family."""
    report = {name: summarize(runs) for name, runs in results.items()}
    lines = real.protocol_column(table(report, timed=True).splitlines(), list(report))
    families = heldout.FAMILIES if any(isinstance(t, heldout.Task) for t in tasks) else FAMILIES
    return "\n".join(lines) + "\n\n" + real.family_table(results, tasks, families)


def load_saved(path: Path) -> tuple[dict[str, list[tuple[RunResult, bool]]], list[Task]]:
    """The runs of a ``--save`` file, restricted to the tasks every contestant in it finished.

    Answers are scored again against the answer key, so a saved run is judged as a new one would be; a
    held-out task keeps its saved verdict, as its checker also read the run's desk, which is gone.
    """
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = list(dict.fromkeys(r["contestant"] for r in records))
    by_run = {(r["task"], r["contestant"]): r for r in records}
    done = [t for t in dict.fromkeys(r["task"] for r in records) if all((t, n) in by_run for n in names)]
    fields = {f.name for f in dataclasses.fields(RunResult)}
    held = {t.id: t for t in heldout.all_tasks()}
    by_id = {**{t.id: t for t in all_tasks()}, **held}
    plans = {t: solve(by_id[t]) for t in done if t not in held}

    def verdict(task: str, record: dict[str, Any]) -> bool:
        if task in held:
            return bool(record["correct"])
        return is_correct(record.get("answer"), plans[task], by_id[task].text)

    results = {n: [(RunResult(**{k: v for k, v in by_run[t, n].items() if k in fields}), verdict(t, by_run[t, n]))
                   for t in done] for n in names}
    return results, [by_id[t] for t in done]


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@functools.cache
def git_commit(root: Path = ROOT) -> str:
    """The checkout's short commit as the run started, ``+ uncommitted changes`` when its tracked files differed
    from it, or ``unknown`` outside git. Remembered from the first call (``main`` makes it before any run): a
    run of hours reports the code it loaded, not a commit made while it ran."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" + uncommitted changes" if changed else "")


def write_markdown(heading: str, body: str) -> None:
    """Replace the ``## {heading}`` section of BENCHMARKS.md (or add it at the end) with ``body``."""
    path = ROOT / "BENCHMARKS.md"
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    marker = f"## {heading}"
    section = f"{marker}\n\n{body}"
    if marker not in old:
        path.write_text(old.rstrip() + "\n\n" + section, encoding="utf-8")
        return
    head, _, rest = old.partition(marker)
    tail = rest.partition("\n## ")[2]
    path.write_text(head.rstrip() + "\n\n" + section + (f"\n## {tail}" if tail else ""), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
