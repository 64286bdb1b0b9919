"""``python -m benchmarks.eval``: 50 tasks, 6 kinds of tools, three agent loops, one flaky model.

By default the model is :class:`reinloop.simulation.SimulatedModel`, a stand-in
for a flaky LLM that knows each task's plan and makes mistakes at
``--fault-rate`` (seeded). With ``--model`` (and ``--base-url``) the same tasks
run against a real endpoint instead, without injected faults.

Prints a table per contestant: success rate, mean iterations (model calls),
prompt tokens per task, framework time per step (model time excluded) and how
runs ended; ``--json`` prints the same as one JSON object; ``--write`` also
writes the table to BENCHMARKS.md with the command and the date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reinloop.models import resolve_model
from reinloop.simulation import FAULTS, SimulatedModel

from .contestants import CONTESTANTS, RunResult
from .tasks import World, all_tasks, is_correct, solve

ROOT = Path(__file__).resolve().parents[2]


def model_for(args: argparse.Namespace, task_text: str, plan: Any, task_id: str) -> Any:
    """The simulated model for one task (seeded per task, the same for every contestant), or the real one."""
    if args.model:
        return resolve_model(args.model, base_url=args.base_url)
    seed = zlib.crc32(f"{args.seed}:{task_id}".encode())
    return SimulatedModel(plans={task_text: plan}, fault_rate=args.fault_rate, seed=seed)


def run_all(args: argparse.Namespace) -> dict[str, list[tuple[RunResult, bool]]]:
    """Every contestant on every task, each in a fresh world."""
    tasks = all_tasks()[: args.limit] if args.limit else all_tasks()
    results: dict[str, list[tuple[RunResult, bool]]] = {name: [] for name in args.contestants}
    for task in tasks:
        plan = solve(task)
        for name in args.contestants:
            world = World()
            try:
                result = CONTESTANTS[name](task.text, model_for(args, task.text, plan, task.id), world.tools())
            finally:
                world.close()
            results[name].append((result, is_correct(result.answer, plan)))
            if args.verbose:
                print(f"{task.id:<22} {name:<13} {'ok ' if results[name][-1][1] else 'BAD'} "
                      f"{result.ending:<6} {result.iterations:>2} calls  {result.answer!r:.60} {result.detail:.80}",
                      file=sys.stderr)
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
        "framework_ms_per_step": 1000 * framework / max(calls, 1),
        "endings": {k: endings.get(k, 0) for k in ("answer", "limit", "crash")},
    }


def table(report: dict[str, dict[str, Any]]) -> str:
    """The report as a Markdown table, with prompt tokens relative to create_agent."""
    base = report.get("create_agent", {})
    lines = ["| contestant | success | mean iterations | prompt tokens / task | vs create_agent | "
             "prompt tokens / correct answer | framework ms / step | endings (answer / limit / crash) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in report.items():
        e = r["endings"]
        lines.append(f"| {name} | {100 * r['success_rate']:.0f}% | {r['mean_iterations']:.1f} | "
                     f"{r['prompt_tokens_per_task']:,.0f} | {_ratio(r, base, 'prompt_tokens_per_task')} | "
                     f"{_per_answer(r, base)} | {r['framework_ms_per_step']:.1f} | "
                     f"{e['answer']} / {e['limit']} / {e['crash']} |")
    return "\n".join(lines)


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
    parser.add_argument("--limit", type=int, help="run only the first N tasks")
    parser.add_argument("--contestants", default=",".join(CONTESTANTS), type=lambda s: s.split(","))
    parser.add_argument("--model", help="a real model (init_chat_model string) instead of the simulated one")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for --model")
    parser.add_argument("--json", action="store_true", help="print one JSON object keyed by contestant")
    parser.add_argument("--write", action="store_true", help="also write the table to BENCHMARKS.md")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per run on stderr")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    report = {name: summarize(runs) for name, runs in run_all(args).items()}
    if args.json:
        print(json.dumps(report))
        return 0
    model = args.model or f"SimulatedModel (a scripted stand-in for a flaky LLM), fault rate {args.fault_rate}, seed {args.seed}"
    text = table(report)
    print(f"model: {model}; faults: {', '.join(FAULTS) if not args.model else 'none injected'}\n\n{text}")
    if args.write:
        command = "python -m benchmarks.eval " + " ".join(argv if argv is not None else sys.argv[1:])
        write_markdown(command.replace(" --write", ""), model, text)
    return 0


def write_markdown(command: str, model: str, text: str) -> None:
    """Replace the eval section of BENCHMARKS.md with this run's table."""
    path = ROOT / "BENCHMARKS.md"
    section = (f"## Agent loops on 50 tasks (`benchmarks/eval`)\n\n`{command}` — {datetime.date.today()}, "
               f"model: {model}\n\n{text}\n")
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    head, _, rest = old.partition("## Agent loops on 50 tasks")
    tail = rest.partition("\n## ")[2]
    path.write_text(head.rstrip() + "\n\n" + section + (f"\n## {tail}" if tail else ""), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
