"""Limits are data: one frozen dataclass, ``None`` switches a guard off.

The guard node is the only reader that acts on them; nothing else hard-codes a
number. Each ``check_*`` method returns a human reason when the limit is
reached, or ``None``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError
from .settings import replace_known
from .state import Counters, Extensions


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The circuit breakers of a run. ``None`` means the limit is off."""

    max_steps: int | None = 10
    """Loop iterations (model decisions) per run."""
    max_seconds: float | None = 120.0
    """Wall-clock seconds the run may be active (time paused at a break is not counted)."""
    token_budget: int | None = None
    """Prompt plus completion tokens over all model calls of the run."""
    max_consecutive_errors: int | None = 5
    """Steps in a row that failed, in any way (parse error, refused call, tool error, empty result)."""
    max_same_errors: int | None = 3
    """Steps in a row that failed the same way: the reply unreadable again, or the same tool refused
    or failing again. A model that makes one mistake after another is corrected each time; one that
    keeps making the same mistake is stuck (seed 003: "连续3次相同错误")."""
    repeat_hint_after: int | None = 2
    """Identical consecutive actions after which the model is told to change course."""
    max_repeats: int | None = 3
    """Identical consecutive actions after which the run is stopped."""
    max_observation_chars: int = 2000
    """Tool output longer than this is truncated, with a marker saying how much was cut."""
    tool_timeout: float | None = 30.0
    """Seconds a tool call may take, retries included (a tool's own ``timeout`` option overrides it)."""
    tool_retries: int | None = 2
    """Retries of a tool call that failed with a transient error (a tool's ``retries`` option overrides it)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigurationError(
                    f"Limits.{field.name} must be a number or None, got {value!r}"
                )
            if value <= 0:
                raise ConfigurationError(
                    f"Limits.{field.name} must be positive, got {value!r}; use None to switch it off"
                )

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed (unknown names are refused)."""
        return replace_known(self, changes, unknown="limit(s)", valid="limits")

    def as_dict(self) -> dict[str, Any]:
        """The limits as a JSON-able dict."""
        return dataclasses.asdict(self)

    def effective_steps(self, ext: Extensions) -> int | None:
        """``max_steps`` raised by operator extensions."""
        return None if self.max_steps is None else self.max_steps + ext["steps"]

    def check_steps(self, c: Counters, ext: Extensions) -> str | None:
        """Reason to stop if the step limit is reached."""
        limit = self.effective_steps(ext)
        if limit is not None and c["steps"] >= limit:
            return f"reached the step limit: {c['steps']} of {limit} steps"
        return None

    def check_time(self, c: Counters, ext: Extensions) -> str | None:
        """Reason to stop if the wall-clock limit is reached."""
        if self.max_seconds is None:
            return None
        limit = self.max_seconds + ext["seconds"]
        if c["elapsed_seconds"] >= limit:
            return f"ran out of time: {c['elapsed_seconds']:.1f} s of {limit:g} s"
        return None

    def check_tokens(self, c: Counters, ext: Extensions) -> str | None:
        """Reason to stop if the token budget is spent."""
        if self.token_budget is None:
            return None
        limit = self.token_budget + ext["tokens"]
        used = c["prompt_tokens"] + c["completion_tokens"]
        if used >= limit:
            return (
                f"spent the token budget: {used} of {limit} tokens "
                f"(prompt={c['prompt_tokens']}, completion={c['completion_tokens']})"
            )
        return None

    def check_errors(self, c: Counters) -> str | None:
        """Reason to stop after too many failed steps in a row."""
        limit = self.max_consecutive_errors
        if limit is not None and c["consecutive_errors"] >= limit:
            return f"{c['consecutive_errors']} consecutive failed steps (limit {limit})"
        return None

    def check_same_errors(self, c: Counters, how: str) -> str | None:
        """Reason to stop after too many failed steps in a row that failed the same way (``how``)."""
        limit = self.max_same_errors
        same = c.get("same_errors", 0)
        if limit is not None and same >= limit:
            return f"{same} failed steps in a row, the same way each time ({how}) (limit {limit})"
        return None

    def check_repeats(self, c: Counters) -> str | None:
        """Reason to stop when the model keeps issuing the same action."""
        if self.max_repeats is not None and c["repeats"] >= self.max_repeats:
            return f"the same action was issued {c['repeats']} times in a row (limit {self.max_repeats})"
        return None

    def wants_repeat_hint(self, c: Counters) -> bool:
        """True when the model should be told it is repeating itself."""
        return self.repeat_hint_after is not None and c["repeats"] >= self.repeat_hint_after
