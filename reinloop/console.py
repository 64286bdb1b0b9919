"""Printing a run as it happens, from the events the nodes emit.

The console is only a consumer of the ``custom`` stream: everything it shows
is also in the events a caller gets from ``graph.stream(...,
stream_mode="custom")``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from .limits import Limits


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PlainConsole:
    """Prints each finished step and each guard decision as plain text."""

    def __init__(self, limits: Limits, out: TextIO | None = None) -> None:
        self.limits = limits
        self.out = out or sys.stdout

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def handle(self, event: dict[str, Any]) -> None:
        """Print one event (others than steps and guard decisions are ignored)."""
        if event.get("node") == "memorize":
            self._step(event["step"])
        elif event.get("node") == "guard":
            self._guard(event)

    def _step(self, step: dict[str, Any]) -> None:
        total = self.limits.max_steps if self.limits.max_steps is not None else "∞"
        self._print(f"[step {step['index']}/{total}]")
        if step.get("thought"):
            self._print(f"  thought:     {_short(step['thought'])}")
        for action in step.get("actions") or []:
            self._print(f"  action:      {action.get('tool')} {_short(action.get('args') or {})}")
            self._print(f"  observation: {_short(action.get('observation') or '')}")
        if step.get("parse_error"):
            self._print(f"  parse error: {_short(step['parse_error'])}")
        if step.get("answer") is not None:
            self._print(f"  answer:      {_short(step['answer'])}")

    def _guard(self, event: dict[str, Any]) -> None:
        c = event["counters"]
        lim = self.limits
        detail = (
            f"errors {c['consecutive_errors']}/{lim.max_consecutive_errors}, "
            f"repeats {c['repeats']}/{lim.max_repeats}, "
            f"tokens {c['prompt_tokens'] + c['completion_tokens']}"
        )
        line = f"  guard:       {event['decision']} ({detail})"
        if event["decision"] == "break":
            line = f"  guard:       BREAK {event['reason']}: {event['message']}"
        elif event["decision"] == "pause":
            line = f"  guard:       PAUSED at {event['reason']}: {event['message']}"
        self._print(line)
        for hint in event.get("hints") or []:
            self._print(f"  hint:        {_short(hint)}")
