"""guard: after every step, decide whether the run finishes, continues, gets a hint, or breaks.

All circuit breakers live here and read one :class:`~reinloop.limits.Limits`.
A breaker that trips sets ``status="broken"`` with a machine-readable
``break_reason`` and a human ``break_message``; nothing else in reinloop
stops a run.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..limits import Limits
from ..state import AgentState, BreakReason, Counters, Decision, Extensions, Turn

ONE_STEP_LEFT = "Only one step is left. Give your best final answer now, with what you know."


def repeat_hint(state: AgentState) -> str:
    """The hint for a model that keeps issuing the same call."""
    last = (state.get("scratchpad") or [{}])[-1]
    calls = ", ".join(a.get("tool", "?") for a in last.get("actions") or []) or "the same call"
    n = state["counters"]["repeats"]
    return (
        f"You already did this: {calls} with the same arguments, {n} times in a row. "
        "Its result will not change. Try something else, or give your final answer."
    )


def tripped(limits: Limits, c: Counters, ext: Extensions) -> tuple[BreakReason, str] | None:
    """The first breaker that trips, most specific first."""
    checks: list[tuple[BreakReason, str | None]] = [
        ("consecutive_errors", limits.check_errors(c)),
        ("repeated_action", limits.check_repeats(c)),
        ("token_budget", limits.check_tokens(c, ext)),
        ("timeout", limits.check_time(c, ext)),
        ("max_steps", limits.check_steps(c, ext)),
    ]
    return next(((reason, msg) for reason, msg in checks if msg), None)


def hints_for(state: AgentState, limits: Limits, c: Counters, ext: Extensions) -> list[str]:
    """Hints for the model's next step, if any."""
    hints = []
    if limits.wants_repeat_hint(c):
        hints.append(repeat_hint(state))
    limit = limits.effective_steps(ext)
    if limit is not None and limit - c["steps"] == 1:
        hints.append(ONE_STEP_LEFT)
    return hints


def close_turn(state: AgentState, status: str, answer: str | None) -> list[Turn]:
    """The thread's history with the current run appended."""
    return [*(state.get("history") or []), Turn(task=state["task"], answer=answer, status=status)]


def guard(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge the run after a step."""
    ctx = runtime.context
    now = time.time()
    counters: Counters = {**state["counters"], "elapsed_seconds": ctx.elapsed(state, now)}
    ext = state.get("extensions") or {"steps": 0, "seconds": 0.0, "tokens": 0}
    update: dict[str, Any] = {"counters": counters, "tick": now}
    decision: Decision
    if state.get("answer") is not None:
        decision = "finish"
        update.update(status="done", history=close_turn(state, "done", state["answer"]))
    elif trip := tripped(ctx.limits, counters, ext):
        decision = "break"
        reason, message = trip
        update.update(status="broken", break_reason=reason, break_message=message)
        update["history"] = close_turn(state, "broken", None)
    else:
        hints = hints_for(state, ctx.limits, counters, ext)
        decision = "hint" if hints else "continue"
        update["hints"] = hints
    update["decision"] = decision
    emit(
        runtime,
        "guard",
        decision + (f" ({update['break_reason']}: {update['break_message']})" if decision == "break" else ""),
        step=counters["steps"],
        decision=decision,
        reason=update.get("break_reason"),
        message=update.get("break_message"),
        hints=update.get("hints", []),
        counters=counters,
    )
    return update


def route_after_guard(state: AgentState) -> Decision:
    """Follow the guard's decision."""
    return state.get("decision") or "continue"
