"""guard: after every step, decide whether the run finishes, continues, gets a hint, or breaks.

All circuit breakers live here and read one :class:`~reinloop.runs.limits.Limits`.
A breaker that trips sets ``status="broken"`` with a machine-readable
``break_reason`` and a human ``break_message``; nothing else in reinloop
stops a run.

With a checkpointer, a break pauses the run instead of ending it. The guard
records the break in the state (durably saved: reinloop runs use
``durability="sync"``) and routes ``pause`` back to itself; on that second
pass it calls LangGraph's ``interrupt()`` with the break (reason, message,
counters, limits), so ``graph.get_state(config)`` shows it pending. The
operator answers with ``Command(resume={"action": "continue",
"extra_steps": ..., "extra_seconds": ..., "extra_tokens": ..., "hint":
...})``: the limits are raised through ``state["extensions"]``, the counter
that tripped (consecutive errors, repeats) restarts, the hint is shown to the
model on its next call, and the guard judges again, so a resume that raises
nothing pauses again at once. ``{"action": "abort"}`` ends the run as broken
with ``break_reason="aborted"`` (the ``breaks`` table keeps the original
reason). Without a checkpointer a break ends the run, as before.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from .context import AgentContext
from ..errors import ConfigurationError
from ..observe.events import emit
from ..observe.location import locate
from ..runs.limits import Limits, refused_call
from ..state import (
    BREAK_KIND,
    AgentState,
    BreakPayload,
    BreakReason,
    Counters,
    Decision,
    DecisionView,
    Extensions,
    ResumeValue,
    Step,
    Turn,
    WrapUp,
    new_extensions,
)
from ..protocols.answers import WRAP_UP_REASONS, AnswerRules
from ..protocols.memory.ledger import bounded, in_hand, plain_observation, results_text, short
from .memorize import failure

ONE_STEP_LEFT = "Only one step is left. Give your best final answer now, with what you know."


def repeat_hint(state: AgentState) -> str:
    """The hint for a model that keeps issuing the same call with the same result: what it already got from it.

    The repeat counter counts only calls that gave the same result again (:mod:`.memorize`). That the result
    "will not change" is said only when it was reused, i.e. of a tool declared ``cacheable``; of any other tool
    the hint says what happened, since its next result may differ (a job's status).
    """
    last = (state.get("scratchpad") or [{}])[-1]
    actions = last.get("actions") or []
    calls = ", ".join(a.get("tool", "?") for a in actions) or "the same call"
    n = state["counters"]["repeats"]
    task = str(state.get("task") or "")
    known = [f"{a.get('tool')} gave: {bounded(plain_observation(a), task + ' ' + str(a.get('args') or ''))}"
             for a in actions if not a.get("error") and a.get("observation") is not None]
    if not known:
        return (f"You already did this: {calls} with the same arguments, {n} times in a row, and it failed the "
                "same way each time. Try something else, or give your final answer.")
    if actions and all(a.get("reused") for a in actions):  # only a cacheable tool's result is reused
        return (f"You already did this: {calls} with the same arguments, {n} times in a row. Its result is "
                f"already known: {'; '.join(known)}. It will not change (the tool is declared cacheable): do not "
                "call it again. Use it for the next step, or give your final answer with it.")
    return (f"You already did this: {calls} with the same arguments, {n} times in a row, and it gave the same "
            f"result each time: {'; '.join(known)}. Use it for the next step, or give your final answer with it; "
            "call it again only if you expect its result to change.")


def last_step_hint(state: AgentState) -> str:
    """The hint when one step is left: answer now, from the results in hand."""
    latest = in_hand(state)
    if not latest:
        return ONE_STEP_LEFT
    return f"{ONE_STEP_LEFT} The latest tool results: {results_text(latest)}. Answer from them."


def cost_hint(c: Counters, limit: float) -> str:
    """The warning when most of the money budget is spent."""
    spent = float(c.get("cost_usd", 0.0))
    return (f"{spent / limit:.0%} of this task's cost budget is spent (${spent:.4f} of ${limit:g}). "
            "Finish soon: give your final answer as soon as you can.")


ERROR_BREAKS = ("same_errors", "consecutive_errors")
"""The error breakers: when the step that trips one gave an invalid structured answer, the break is ``invalid_output``."""


def tripped(limits: Limits, c: Counters, ext: Extensions, last: Step | None = None) -> tuple[BreakReason, str] | None:
    """The first breaker that trips, most specific first (``last``: the step just recorded)."""
    checks: list[tuple[BreakReason, str | None]] = [
        ("same_errors", limits.check_same_errors(c, failure(last))),
        ("consecutive_errors", limits.check_errors(c)),
        ("repeated_action", limits.check_repeats(c)),
        ("token_budget", limits.check_tokens(c, ext)),
        ("cost_budget", limits.check_cost(c, ext)),
        ("timeout", limits.check_time(c, ext)),
        ("max_steps", limits.check_steps(c, ext)),
    ]
    trip = next(((reason, msg) for reason, msg in checks if msg), None)
    if trip and trip[0] in ERROR_BREAKS and last is not None and "invalid_output" in last:
        return "invalid_output", f"{trip[1]}; the last answer did not match the output schema: {short(last.get('parse_error') or '', 240)}"
    return trip


def hints_for(state: AgentState, limits: Limits, c: Counters, ext: Extensions) -> list[str]:
    """Hints for the model's next step, if any."""
    hints = []
    last = (state.get("scratchpad") or [{}])[-1]
    if limits.crossed_cost_warning(c, ext, float(last.get("cost_usd", 0.0))):
        hints.append(cost_hint(c, limits.effective_cost(ext) or 0.0))
    if limits.wants_repeat_hint(c):
        hints.append(repeat_hint(state))
    limit = limits.effective_steps(ext)
    if limit is not None and limit - c["steps"] == 1:
        hints.append(last_step_hint(state))
    return hints


def close_turn(state: AgentState, status: str, answer: str | None) -> list[Turn]:
    """The thread's history with the current run appended."""
    return [*(state.get("history") or []), Turn(task=state["task"], answer=answer, status=status)]


def can_pause() -> bool:
    """True inside a graph run that has a checkpointer (so a break can wait for an operator)."""
    return locate().checkpointed


def wants_wrap_up(state: AgentState, rules: AnswerRules | None, reason: str) -> bool:
    """True when a stuck run gets its one tool-free call for the answer (see :mod:`reinloop.protocols.answers`)."""
    return (rules is not None and rules.wrap_up and reason in WRAP_UP_REASONS and not state.get("wrap_up")
            and bool(in_hand(state)))


def judge(state: AgentState, limits: Limits, counters: Counters, ext: Extensions, *, pause: bool,
          rules: AnswerRules | None = None) -> dict[str, Any]:
    """The guard's decision after a step, as a state update."""
    wrapping = state.get("wrap_up")
    if state.get("answer") is not None:
        return {"decision": "finish", "status": "done", "history": close_turn(state, "done", state["answer"]),
                "wrap_up": None, "wrapped_up": wrapping["reason"] if wrapping else None}
    trip = tripped(limits, counters, ext, (state.get("scratchpad") or [None])[-1])
    if wrapping and not refused_call(counters):  # the wrap-up gave no answer: the break it stood in for is taken
        trip = (wrapping["reason"], f"{wrapping['message']}; the wrap-up call without tools gave no usable answer")
    elif trip and wants_wrap_up(state, rules, trip[0]):
        return {"decision": "continue", "hints": [], "wrap_up": WrapUp(reason=trip[0], message=trip[1])}
    if trip:
        reason, message = trip
        update = {"status": "broken", "break_reason": reason, "break_message": message}
        update["wrap_up"] = None
        if pause:  # the operator decides; the turn stays open
            return {**update, "decision": "pause"}
        return {**update, "decision": "break", "history": close_turn(state, "broken", None)}
    hints = hints_for(state, limits, counters, ext)
    return {"decision": "hint" if hints else "continue", "hints": hints}


def guard(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge the run after a step; a run paused at a break waits here for the operator."""
    if state.get("decision") == "pause":
        return wait_for_operator(state, runtime)
    ctx = runtime.context
    now = time.time()
    counters: Counters = {**state["counters"], "elapsed_seconds": ctx.elapsed(state, now)}
    ext = state.get("extensions") or new_extensions()
    update = {"counters": counters, "tick": now, **judge(state, ctx.limits, counters, ext, pause=can_pause(),
                                                                 rules=ctx.answers)}
    report(runtime, update, counters)
    return update


def report(runtime: Runtime[AgentContext], update: dict[str, Any], counters: Counters, resumed: str = "") -> None:
    """Emit the guard's event."""
    decision = update["decision"]
    summary = resumed + decision
    if decision in ("break", "pause"):
        summary += f" ({update['break_reason']}: {update['break_message']})"
    if decision == "pause":
        summary += "; waiting for an operator"
    emit(
        runtime,
        "guard",
        summary,
        step=counters["steps"],
        decision=decision,
        reason=update.get("break_reason"),
        message=update.get("break_message"),
        wrapped_up=update.get("wrapped_up"),  # the answer came from a wrap-up call: every view marks it
        hints=update.get("hints", []),
        counters=counters,
    )


HOW_TO_RESUME: dict[str, str] = {
    "max_steps": "raise the step limit: resume with extra_steps (reinloop resume THREAD --extra-steps N)",
    "timeout": "raise the time limit: resume with extra_seconds (reinloop resume THREAD --extra-seconds S)",
    "token_budget": "raise the token budget: resume with extra_tokens (reinloop resume THREAD --extra-tokens N)",
    "cost_budget": "raise the cost budget: resume with extra_cost in USD (reinloop resume THREAD --extra-cost 0.50); "
                   "after a resume, calls that cannot be priced pass and the budget counts the priced ones; "
                   "better, give their price with prices={...}",
    "repeated_action": "continue (the repeat count restarts), ideally with a hint (reinloop resume THREAD --hint TEXT)",
    "consecutive_errors": "continue (the error count restarts), ideally with a hint (reinloop resume THREAD --hint TEXT)",
    "same_errors": "continue (the error count restarts), with a hint that says how to fix the mistake "
                   "(reinloop resume THREAD --hint TEXT)",
    "invalid_output": "continue (the error count restarts), with a hint that says how to fix the answer "
                      "(reinloop resume THREAD --hint TEXT); an abort keeps the last answer as invalid_output, "
                      "never as the output",
}
"""What an operator can do about each break, shown with the pending break."""


def break_payload(state: AgentState, limits: Limits) -> BreakPayload:
    """What a paused run shows through ``interrupt()``: the break, its counters and the limits."""
    reason = state["break_reason"] or "max_steps"
    ext = state.get("extensions") or new_extensions()
    return BreakPayload(
        kind=BREAK_KIND,
        reason=reason,
        message=state["break_message"] or "",
        counters=state["counters"],
        limits={**limits.as_dict(), "extensions": dict(ext)},
        how_to_resume=HOW_TO_RESUME.get(reason, "continue or abort"),
        observations=[dict(r) for r in in_hand(state)],
    )


def read_resume(answer: Any) -> ResumeValue:
    """The operator's answer, checked: ``{"action": "continue" | "abort", "extra_steps": N, ...}``."""
    numbers = {"extra_steps": int, "extra_seconds": float, "extra_tokens": int, "extra_cost": float}
    expected = (
        'Command(resume={"action": "continue", "extra_steps": 5, "extra_seconds": 60, '
        '"extra_tokens": 0, "extra_cost": 0.5, "hint": "..."}) or Command(resume={"action": "abort"})'
    )
    if not isinstance(answer, dict) or answer.get("action") not in ("continue", "abort"):
        raise ConfigurationError(f"cannot resume a broken run with {answer!r}; expected {expected}")
    unknown = sorted(set(answer) - {"action", "hint", *numbers})
    if unknown:
        raise ConfigurationError(f"unknown resume key(s) {', '.join(unknown)}; expected {expected}")
    for key, kind in numbers.items():
        value = answer.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigurationError(f"resume {key} must be a number >= 0, got {value!r}")
    return ResumeValue(
        action=answer["action"], hint=str(answer.get("hint") or ""),
        **{key: kind(answer.get(key, 0)) for key, kind in numbers.items()},  # type: ignore[typeddict-item]
    )


RESET_ON_RESUME = ("consecutive_errors", "same_errors", "repeats")
"""Counters that restart when an operator continues a run: they measure being stuck, and the
operator has looked (a model repeating a failing call trips both). Budgets only grow by extra_*."""


def wait_for_operator(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Pause at a break until the operator answers; then continue with raised limits, or abort.

    LangGraph re-runs this node from its first line on resume: nothing before
    ``interrupt()`` has side effects.
    """
    ctx = runtime.context
    answer = read_resume(interrupt(break_payload(state, ctx.limits)))
    now = time.time()
    if answer["action"] == "abort":
        update: dict[str, Any] = {
            "decision": "break", "tick": now, "status": "broken", "break_reason": "aborted",
            "break_message": f"aborted by the operator at the {state['break_reason']} break: {state['break_message']}",
            "history": close_turn(state, "broken", None),
        }
        report(runtime, update, state["counters"], resumed="operator: abort -> ")
        return update
    ext = state.get("extensions") or new_extensions()
    ext = Extensions(
        steps=ext["steps"] + answer["extra_steps"],
        seconds=ext["seconds"] + answer["extra_seconds"],
        tokens=ext["tokens"] + answer["extra_tokens"],
        cost=float(ext.get("cost", 0.0)) + answer["extra_cost"],
        unpriced=int(state["counters"].get("unpriced_calls", 0)),  # the operator has seen them
    )
    counters: Counters = {**state["counters"], **dict.fromkeys(RESET_ON_RESUME, 0)}  # type: ignore[typeddict-item]
    view: AgentState = {**state, "counters": counters, "extensions": ext}  # type: ignore[typeddict-item]
    update = {
        "extensions": ext, "counters": counters, "tick": now, "status": "running",
        "break_reason": None, "break_message": None, **judge(view, ctx.limits, counters, ext, pause=True),  # no wrap-up: one was made before this break
    }
    if answer["hint"] and update["decision"] in ("continue", "hint"):
        update.update(decision="hint", hints=[answer["hint"], *update.get("hints", [])])
    report(runtime, update, counters, resumed="operator: continue -> ")
    return update


def route_after_guard(state: DecisionView) -> Decision:
    """Follow the guard's decision."""
    return state.get("decision") or "continue"
