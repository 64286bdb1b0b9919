"""Telemetry overhead per step: telemetry on against off, and off against off (the noise floor), side by side.

    python benchmarks/telemetry.py                          # 20 steps a run, 21 rounds of 16 passes
    python benchmarks/telemetry.py --checkpointer           # the same runs checkpointed (SQLite in memory)
    python benchmarks/telemetry.py --profile                # where telemetry's calls go: calls per step by file
    python benchmarks/telemetry.py --steps 2 --rounds 1 --passes 1     # a smoke run

Every run is the same script (one tool call per step to a trivial tool that
returns 2 KB, then an answer), without a checkpointer (with ``--checkpointer``:
reinloop's on an in-memory SQLite database, ``durability="sync"``, where the
trace also goes into every checkpoint's metadata), on one of three sides:

- ``off``: ``telemetry=False`` (the default);
- ``off again``: the same, the A/A control: the spread between two identical sides;
- ``on``: ``telemetry=True`` with a ``TracerProvider`` whose ``SimpleSpanProcessor``
  hands each span to an ``InMemorySpanExporter`` as it ends (the export cost is
  inside the step, not in a background thread).

The machine is shared and noisy (one run's CPU time strays by ~20% from the
next), so the measure is built to cancel what it can:

- **CPU, not wall time**: ``time.process_time`` (all of the process's threads,
  the tool workers included) around ``invoke``; other processes' load adds
  little to it.
- **Interleaved passes**: a round is ``--passes`` passes, and a pass runs each
  side once, in an order that turns with the pass (``off, off again, on``,
  then ``off again, on, off``, ...): each side is first, second and third
  alike, so a drift during the round weighs on all three. Each round gives one
  ratio per comparison, the CPU of all its B runs over all its A runs: many
  runs per ratio, so the noise of one run is averaged out of it.
- **Many rounds**: the figures are the median of the per-round ratios, a 95%
  confidence interval of that median (distribution-free: two order statistics
  of the rounds, from the binomial distribution; it narrows as the rounds grow,
  where the spread of single rounds does not) and their interquartile range;
  ``off again / off`` shows how far two identical sides stray on this machine
  at this moment.
- **A deterministic measure beside it**: Python function calls per step (a
  ``sys.setprofile`` counter, tool worker threads included) for one run of each
  side; it does not depend on the load at all.

The garbage collector runs a full collection before each run (a collection
owed by the run before is not charged to the next). A first whole run on each
side is not counted: the tokenizer loads once, and caches fill on the first
run (uncounted, the first run's calls were 1% more than the next runs').
The configuration (Python, SDK, cores, load average before and after) is printed
with the tables.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.overhead import fetch_tool  # noqa: E402  (the same trivial 2 KB tool as the overhead benchmark)

SIDES = ("off", "off again", "on")
PAIRS = (("on", "off"), ("off again", "off"))
"""The comparisons: (B, A), each the CPU of a round's B runs over its A runs."""


def one_run(side: str, steps: int, provider: Any, profile: Any = None, checkpointed: bool = False) -> tuple[float, int]:
    """CPU seconds of one run of ``steps`` tool steps and an answer on ``side``, and the spans it made.

    ``profile``: a ``sys.setprofile`` function to run the measured section under (its time is then meaningless);
    ``checkpointed``: with a checkpointer on an in-memory SQLite database.
    """
    from reinloop import Limits, build_graph
    from reinloop.checkpoints import open_database
    from reinloop.testing import ScriptedChatModel, tool_call

    replies = [[tool_call("fetch", {"page": i})] for i in range(steps)] + ["done"]
    model = ScriptedChatModel(replies=replies)
    on = side == "on"
    with open_database(":memory:") as db:
        graph = build_graph(model, [fetch_tool()], limits=Limits(max_steps=None, max_seconds=None, max_repeats=None),
                            telemetry=on, tracer_provider=provider if on else None,
                            checkpointer=db.checkpointer if checkpointed else None)
        exporter = provider.get_span_processor_exporter() if on else None  # type: ignore[attr-defined]
        gc.collect()
        if profile is not None:
            threading.setprofile(profile)
            sys.setprofile(profile)
        before = time.process_time()
        try:
            out = graph.invoke({"task": "read every page"}, {"configurable": {"thread_id": "bench"}})
        finally:
            spent = time.process_time() - before
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    assert out["status"] == "done", out["status"]
    return spent, len(exporter.get_finished_spans()) if exporter is not None else 0


def provider_with_memory() -> Any:
    """A tracer provider keeping its spans in memory; ``get_span_processor_exporter()`` returns the exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def exporter_of() -> InMemorySpanExporter:
        exporter.clear()
        return exporter

    provider.get_span_processor_exporter = exporter_of  # type: ignore[attr-defined]
    return provider


def calls_per_step(side: str, steps: int, provider: Any, checkpointed: bool = False) -> float:
    """Python function calls (and C calls) per step of one run on ``side``, counted by a profile function."""
    counted = [0]
    lock = threading.Lock()

    def count(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            with lock:
                counted[0] += 1

    one_run(side, steps, provider, profile=count, checkpointed=checkpointed)
    return counted[0] / (steps + 1)


def side_orders(passes: int, first: int = 0) -> list[tuple[str, ...]]:
    """The order of the sides in each of ``passes`` passes: :data:`SIDES` turned by ``first``, one more each pass."""
    turns = [(first + i) % len(SIDES) for i in range(passes)]
    return [SIDES[turn:] + SIDES[:turn] for turn in turns]


def interleaved_rounds(rounds: int, passes: int, steps: int, provider: Any,
                       checkpointed: bool = False) -> tuple[dict[tuple[str, str], list[float]], dict[str, list[float]]]:
    """Per-round ratios for each of :data:`PAIRS` and CPU ms per step of every run, by side."""
    ratios: dict[tuple[str, str], list[float]] = {pair: [] for pair in PAIRS}
    per_step: dict[str, list[float]] = {side: [] for side in SIDES}
    for number in range(rounds):
        spent = dict.fromkeys(SIDES, 0.0)
        for order in side_orders(passes, first=number):  # each round starts at another turn
            for side in order:
                seconds, _ = one_run(side, steps, provider, checkpointed=checkpointed)
                spent[side] += seconds
                per_step[side].append(seconds * 1000 / (steps + 1))
        for b, a in PAIRS:
            ratios[(b, a)].append(spent[b] / spent[a])
    return ratios, per_step


def calls_by_file(side: str, steps: int, provider: Any, checkpointed: bool = False) -> dict[str, float]:
    """Python and C calls per step of one run on ``side``, by the file (or package) whose code runs: a Python
    function's own, a C function's caller's."""
    counted: dict[str, int] = {}
    lock = threading.Lock()

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" or event == "c_call":
            name = frame.f_code.co_filename
            place = name.split("site-packages/")[1].split("/")[0] if "site-packages/" in name else Path(name).name
            with lock:
                counted[place] = counted.get(place, 0) + 1

    one_run(side, steps, provider, profile=count, checkpointed=checkpointed)
    return {place: n / (steps + 1) for place, n in counted.items()}


def print_profile(steps: int, provider: Any, checkpointed: bool = False, rows: int = 20) -> None:
    """Where telemetry's calls go: calls per step by file, off and on, the files whose count differs most first."""
    off, on = (calls_by_file(side, steps, provider, checkpointed) for side in ("off", "on"))
    places = sorted(set(off) | set(on), key=lambda place: -abs(on.get(place, 0) - off.get(place, 0)))
    print("| file or package | calls per step, off | on | on − off |")
    print("| --- | ---: | ---: | ---: |")
    for place in places[:rows]:
        print(f"| {place} | {off.get(place, 0):,.1f} | {on.get(place, 0):,.1f} | {on.get(place, 0) - off.get(place, 0):+,.1f} |")
    print(f"| all | {sum(off.values()):,.1f} | {sum(on.values()):,.1f} | {sum(on.values()) - sum(off.values()):+,.1f} |")


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median and interquartile range (q1, q3) of ``values`` (one value: itself thrice)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return median, q1, q3


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval of the median of ``values``: order statistics ``k`` and ``n + 1 - k``
    (1-based), ``k`` the largest with P(Binomial(n, 1/2) < k) ≤ (1 - confidence) / 2. It assumes only that the
    values are independent draws of one distribution (each round's ratio is). Too few values for any such ``k``
    give (min, max)."""
    ordered, n = sorted(values), len(values)
    tail, k, below = (1 - confidence) / 2, 0, 0.0
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n  # P(X = k): then ``below`` is P(X < k + 1)
        if below > tail:
            break
        k += 1
    if k == 0:
        return ordered[0], ordered[-1]
    return ordered[k - 1], ordered[n - k]


def configuration(args: argparse.Namespace) -> str:
    """The run's configuration in one line: what is run, on which Python and SDK, how many cores."""
    from importlib.metadata import version

    return (f"{args.steps} tool steps + an answer a run, {'checkpointed (SQLite in memory)' if args.checkpointer else 'no checkpointer'}, "
            f"{args.rounds} rounds of {args.passes} passes (each side {args.rounds * args.passes} runs); Python "
            f"{sys.version.split()[0]}, opentelemetry-sdk {version('opentelemetry-sdk')}, {os.cpu_count()} cores")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="tool steps per run (an answer follows)")
    parser.add_argument("--rounds", type=int, default=21, help="rounds: one ratio per comparison each")
    parser.add_argument("--passes", type=int, default=16, help="passes per round, each running every side once")
    parser.add_argument("--checkpointer", action="store_true", help="checkpoint the runs (SQLite in memory)")
    parser.add_argument("--profile", action="store_true", help="print where the calls of a run on and off go, and stop")
    args = parser.parse_args(argv)
    provider, saved = provider_with_memory(), args.checkpointer
    for side in SIDES:
        one_run(side, args.steps, provider, checkpointed=saved)  # one-time costs and first-run caches are not counted
    if args.profile:
        print_profile(args.steps, provider, saved)
        return 0
    load_before = os.getloadavg()[0]
    ratios, per_step = interleaved_rounds(args.rounds, args.passes, args.steps, provider, saved)
    load_after = os.getloadavg()[0]
    _, spans = one_run("on", args.steps, provider, checkpointed=saved)
    calls = {side: calls_per_step(side, args.steps, provider, saved) for side in ("off", "on")}
    print(f"{configuration(args)}; load average {load_before:.1f} before, {load_after:.1f} after; "
          f"spans a run with telemetry on: {spans}")
    print()
    print("| comparison | median of per-round ratios | 95% confidence interval of the median | interquartile range | min – max |")
    print("| --- | --- | --- | --- | --- |")
    for (b, a), values in ratios.items():
        median, q1, q3 = spread(values)
        low, high = median_interval(values)
        print(f"| {b} / {a} | {median:.3f}× | {low:.3f}× – {high:.3f}× | {q1:.3f}× – {q3:.3f}× | "
              f"{min(values):.3f}× – {max(values):.3f}× |")
    print()
    print("| side | CPU ms per step (median of runs) | runs |")
    print("| --- | --- | --- |")
    for side in SIDES:
        print(f"| {side} | {statistics.median(per_step[side]):.2f} | {len(per_step[side])} |")
    print()
    print("| side | Python calls per step (deterministic) | vs off |")
    print("| --- | --- | --- |")
    for side in ("off", "on"):
        print(f"| {side} | {calls[side]:,.0f} | {calls[side] / calls['off'] - 1:+.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
