"""Telemetry overhead per step: the same run with telemetry off, off again, and on, side by side in one process.

    python benchmarks/telemetry.py                  # 100 steps a run, 7 rounds
    python benchmarks/telemetry.py --steps 5 --rounds 1   # a smoke run

Each round runs the three sides one after the other on the same script (one
tool call per step to a trivial tool that returns 2 KB, then an answer),
without a checkpointer:

- ``off``: ``telemetry=False`` (the default);
- ``off again``: the same, to show the noise between two identical sides;
- ``on``: ``telemetry=True`` with a ``TracerProvider`` whose
  ``SimpleSpanProcessor`` hands each span to an ``InMemorySpanExporter`` as it
  ends (the export cost is inside the step, not in a background thread).

The figure is process CPU time (``time.process_time``) of ``invoke`` per
step, the median over the rounds (the machine is shared: CPU, not wall time),
and its ratio to ``off``. A first one-step run on each side is not counted
(the tokenizer loads once). The load average is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.overhead import fetch_tool  # noqa: E402  (the same trivial 2 KB tool as the overhead benchmark)

SIDES = ("off", "off again", "on")


def one_run(side: str, steps: int, provider: Any) -> tuple[float, int]:
    """CPU seconds of one run of ``steps`` tool steps and an answer on ``side``, and the spans it made."""
    from reinloop import Limits, build_graph
    from reinloop.testing import ScriptedChatModel, tool_call

    replies = [[tool_call("fetch", {"page": i})] for i in range(steps)] + ["done"]
    model = ScriptedChatModel(replies=replies)
    on = side == "on"
    graph = build_graph(model, [fetch_tool()], limits=Limits(max_steps=None, max_seconds=None, max_repeats=None),
                        telemetry=on, tracer_provider=provider if on else None)
    exporter = provider.get_span_processor_exporter() if on else None  # type: ignore[attr-defined]
    before = time.process_time()
    out = graph.invoke({"task": "read every page"})
    spent = time.process_time() - before
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    provider = provider_with_memory()
    for side in SIDES:
        one_run(side, 1, provider)  # one-time costs (the tokenizer) are not counted
    per_step: dict[str, list[float]] = {side: [] for side in SIDES}
    spans = 0
    for _ in range(args.rounds):
        for side in SIDES:
            spent, made = one_run(side, args.steps, provider)
            per_step[side].append(spent * 1000 / (args.steps + 1))
            spans = made or spans
    base = statistics.median(per_step["off"])
    print(f"load average {os.getloadavg()[0]:.1f}; {args.steps} tool steps + an answer per run, "
          f"{args.rounds} rounds; spans per run with telemetry on: {spans}")
    print("| side | CPU ms per step (median) | min | max | vs off |")
    print("| --- | --- | --- | --- | --- |")
    for side in SIDES:
        values = per_step[side]
        median = statistics.median(values)
        print(f"| {side} | {median:.2f} | {min(values):.2f} | {max(values):.2f} | {median / base:.3f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
