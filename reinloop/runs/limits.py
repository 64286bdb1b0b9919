"""Limits are data: one frozen dataclass, ``None`` switches a guard off.

The guard node is the only reader that acts on them; nothing else hard-codes a
number. Each ``check_*`` method returns a human reason when the limit is
reached, or ``None``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from ..errors import SettingError
from .settings import replace_known
from ..state import Counters, Extensions
from ..observe.terminal import counted

COST_WARNING = 0.8
"""Share of ``max_cost`` at which the model is told to finish soon."""


def reached(spent: float, amount: float) -> bool:
    """``spent >= amount`` in dollars, up to float rounding: 0.8 * 0.05 is a hair over 0.04, which is still 80%."""
    return spent >= amount or math.isclose(spent, amount, rel_tol=1e-9)


def refused_call(c: Counters) -> bool:
    """True when the run's last decide did not make its model call, its estimate crossing ``max_cost``
    (a record from before a later call is stale)."""
    refused = c.get("refused_call")
    return bool(refused) and refused["llm_calls"] == c["llm_calls"]  # type: ignore[index]


ZERO_IS_A_VALUE = frozenset({"tool_retries"})
"""Limits where 0 means something (no retries) rather than nothing to count to; the others must be positive."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The circuit breakers of a run. ``None`` means the limit is off."""

    max_steps: int | None = 10
    """Loop iterations (model decisions) per run."""
    max_seconds: float | None = 120.0
    """Wall-clock seconds the run may be active (time paused at a break is not counted)."""
    token_budget: int | None = None
    """Prompt plus completion tokens over all model calls of the run."""
    max_cost: float | None = None
    """US dollars over all model calls of the run, summarizer calls included (:mod:`reinloop.models.pricing`).
    The model is warned at :data:`COST_WARNING` of it; a call whose estimate (its prompt counted, the reply
    cap at the output price) would cross it is not made, and the run breaks; a call that cannot be priced
    stops the run too, since the budget can no longer be kept (resuming lets unpriced calls pass from then on)."""
    max_consecutive_errors: int | None = 5
    """Steps in a row that failed, in any way (parse error, refused call, tool error, empty result)."""
    max_same_errors: int | None = 3
    """Steps in a row that failed the same way: the reply unreadable again, or the same tool refused
    or failing again. A model that makes one mistake after another is corrected each time; one that
    keeps making the same mistake is stuck (seed 003: "连续3次相同错误")."""
    repeat_hint_after: int | None = 2
    """Identical consecutive actions with identical results after which the model is told to change course."""
    max_repeats: int | None = 3
    """Identical consecutive actions with identical results after which the run is stopped. The same call
    with a new result (a poll whose answer moved) is not a repeat; ``max_steps`` bounds a poll that never ends."""
    max_observation_chars: int = 2000
    """Tool output longer than this is cut, with a marker saying how much was cut: a result of several lines
    keeps its opening, then its headings and the lines with the task's words (:func:`reinloop.tools.executor.truncate`)."""
    tool_timeout: float | None = 30.0
    """Seconds a tool call may take, retries included (a tool's own ``timeout`` option overrides it).
    No call runs past the run's own deadline (``max_seconds``) either."""
    tool_retries: int | None = 2
    """Retries of a tool call that failed with a transient error (a tool's ``retries`` option overrides it);
    ``0`` (or ``None``): never retry."""
    max_calls_per_step: int | None = 8
    """Tool calls one reply may carry; a reply with more is refused as a whole (nothing runs)."""
    tool_workers: int = 8
    """Tool calls that may run at once in one graph; a call abandoned at its deadline holds its worker
    until it really returns, and calls are refused while every worker is held that way."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SettingError("Limits", field.name, "must be a number", value=value, none="or")
            if value < 0 or (value == 0 and field.name not in ZERO_IS_A_VALUE):
                wanted = ">= 0" if field.name in ZERO_IS_A_VALUE else "positive"
                raise SettingError("Limits", field.name, f"must be {wanted}", value=value,
                                   none="off" if "None" in str(field.type) else "")
        if self.max_calls_per_step is not None and not isinstance(self.max_calls_per_step, int):
            raise SettingError("Limits", "max_calls_per_step", "must be a whole number", value=self.max_calls_per_step, none="or")
        if not isinstance(self.tool_workers, int) or isinstance(self.tool_workers, bool):
            raise SettingError("Limits", "tool_workers", "must be a whole number >= 1", value=self.tool_workers)

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
            return f"reached the step limit: {c['steps']} of {counted(limit, 'step')}"
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

    def effective_cost(self, ext: Extensions) -> float | None:
        """``max_cost`` raised by operator extensions."""
        return None if self.max_cost is None else self.max_cost + float(ext.get("cost", 0.0))

    def check_cost(self, c: Counters, ext: Extensions) -> str | None:
        """Reason to stop if the money budget is spent, or a call could not be priced under one."""
        limit = self.effective_cost(ext)
        if limit is None:
            return None
        spent = float(c.get("cost_usd", 0.0))
        unpriced = int(c.get("unpriced_calls", 0))
        if unpriced and not ext.get("unpriced"):  # once an operator let them pass, the priced calls count
            models = ", ".join(m for m, t in (c.get("models") or {}).items() if t["unpriced_calls"]) or "?"
            return (f"{unpriced} model call(s) could not be priced (model {models}), so max_cost=${limit:g} cannot "
                    f"be kept (${spent:.4f} priced so far); give the model's price with prices={{...}}")
        if reached(spent, limit):  # call costs summed in floats can fall a hair short of the budget they spend
            return f"spent the cost budget: ${spent:.4f} of ${limit:g}"
        refused = c.get("refused_call")  # decide did not make a call whose estimate crossed the budget
        if refused_call(c) and spent + float(refused["usd"]) > limit * (1 + 1e-9):  # type: ignore[index]
            return refused_call_reason(refused, limit)  # type: ignore[arg-type]
        return None

    def crossed_cost_warning(self, c: Counters, ext: Extensions, step_cost: float) -> bool:
        """True when the step that cost ``step_cost`` took the run past :data:`COST_WARNING` of ``max_cost``."""
        limit = self.effective_cost(ext)
        if limit is None:
            return False
        spent, warn_at = float(c.get("cost_usd", 0.0)), COST_WARNING * limit
        return not reached(spent - step_cost, warn_at) and reached(spent, warn_at) and not reached(spent, limit)

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

    def check_calls(self, calls: int) -> str | None:
        """Reason to refuse a reply that carries more tool calls than one step may run."""
        limit = self.max_calls_per_step
        if limit is not None and calls > limit:
            return (
                f"it made {calls} tool calls, more than the {limit} allowed in one reply; "
                f"none of them was run. Make at most {limit} calls per reply, the most useful first"
            )
        return None

    def check_repeats(self, c: Counters) -> str | None:
        """Reason to stop when the model keeps issuing the same action."""
        if self.max_repeats is not None and c["repeats"] >= self.max_repeats:
            return (f"the same action, with the same result, was issued {c['repeats']} times in a row "
                    f"(limit {self.max_repeats})")
        return None

    def wants_repeat_hint(self, c: Counters) -> bool:
        """True when the model should be told it is repeating itself."""
        return self.repeat_hint_after is not None and c["repeats"] >= self.repeat_hint_after


def refused_call_reason(refused: Mapping[str, Any], limit: float) -> str:
    """Why a model call was not made: its estimate, how it was made, and the budget it would cross."""
    usd, spent = float(refused["usd"]), float(refused["spent"])
    return (f"the next model call was not made: its estimated cost ${usd:.4f} ({refused['prompt_tokens']:,} prompt "
            f"tokens counted + {refused['cap_tokens']:,} at the reply cap, {refused['model']}) would take the run "
            f"from ${spent:.4f} to ${spent + usd:.4f}, past max_cost=${limit:g}")
