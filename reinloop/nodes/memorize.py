"""memorize: record the finished step in the scratchpad and update the counters.

This is where a step's outcome is judged: a parse error, a refused call, a
tool error or an empty result makes it a failed step (the error breakers
count failed steps in a row, and those that failed the same way as the one
before); issuing exactly the same calls as the previous step, and getting
exactly the same results, makes it a repeat. The same call with a new result
(a job polled until it is done, a sensor read again) is progress, not a
repeat; a poll that never ends is bounded by ``max_steps`` and the budgets.

It is also where the model's correction is written, once per failed step, so
that it is recorded with the step (``feedback``) and shown verbatim: from the
second failed step in a row on it escalates (the error quoted, the count, a
minimal valid reply for the protocol), so two consecutive prompts never carry
the same correction. Under ``protocol="auto"``, unreadable replies in a row
move the run to the next protocol (``switched_to``).
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from .context import AgentContext
from ..observe.events import emit
from ..protocols.memory.ledger import plain_observation
from ..protocols.memory.window import current_steps
from ..protocols.output import AnswerSchema
from ..models.pricing import call_flags
from ..protocols.auto import ProtocolSwitch
from ..protocols.base import OutputProtocol, answer_form
from ..protocols.tool_calling import INTERRUPTED
from ..tools.registry import ToolRegistry
from ..state import Action, AgentState, Counters, Step


def finalize(action: Action) -> Action:
    """An action with its observation set: refused calls observe their problem.

    A call with no recorded result (its run was cut off while it ran) observes
    :data:`INTERRUPTED`, so the history sent to a provider has a result for
    every call it holds.
    """
    if action.get("problem"):
        return {**action, "observation": f"ERROR: {action['problem']}", "error": True}
    if action.get("observation") is None:
        return {**action, "observation": INTERRUPTED, "error": True}
    if action.get("repairs"):  # a mend of the model's format is told to it, beside the result
        note = "; ".join(action["repairs"])
        return {**action, "observation": f"{action['observation']}\n[reinloop] note: {note}.",
                "error": bool(action.get("error"))}
    return {**action, "error": bool(action.get("error"))}


def signature(step: Step) -> str:
    """What identifies a step's calls and what they gave (tool, arguments, result), for repeat detection.

    A refused call is identified by its problem (the count a correction appends is left out), a result reused
    from an earlier step by that result (its note left out), so a repeat is judged on the evidence of the run.
    """
    calls = [[a.get("tool"), a.get("args") or {}, a.get("problem") or plain_observation(a)]
             for a in step.get("actions") or []]
    return json.dumps(calls, sort_keys=True, ensure_ascii=False, default=str) if calls else ""


def failure(step: Step | None) -> str:
    """How a step failed, e.g. ``"calculator: call refused"``; ``""`` if it did not.

    Two failed steps failed "the same way" when this is equal: the reply could
    not be read again, or the same tools were refused (unknown, or arguments
    invalid) or failed when run again, whatever the details of the message.
    """
    if step is None or not step.get("error"):
        return ""
    if "invalid_output" in step:
        return "invalid structured answer"
    if step.get("parse_error"):
        return "unreadable reply"
    kinds = {f"{a.get('tool')}: {'call refused' if a.get('problem') else 'tool failed'}"
             for a in step.get("actions") or [] if a.get("error")}
    return ", ".join(sorted(kinds))


def count(counters: Counters, step: Step, previous: Step | None) -> Counters:
    """Counters after ``step``."""
    sig = signature(step)
    if not sig:
        repeats = 0
    elif previous is not None and signature(previous) == sig:
        repeats = counters["repeats"] + 1
    else:
        repeats = 1
    failed = step["error"]
    how = failure(step)
    if how and counters["consecutive_errors"] and failure(previous) == how:
        same = counters.get("same_errors", 0) + 1
    else:
        same = int(failed)
    return {
        **counters,
        "steps": counters["steps"] + 1,
        "errors": counters["errors"] + int(failed),
        "consecutive_errors": counters["consecutive_errors"] + 1 if failed else 0,
        "same_errors": same,
        "repeats": repeats,
    }


def corrected(step: Step, failures: int, protocol: OutputProtocol, tools: ToolRegistry,
              output: AnswerSchema | None = None) -> Step:
    """``step`` with the correction its failure gets (``failures``: failed steps in a row, this one included).

    An unreadable reply gets the protocol's correction; refused calls, from the
    second failed step in a row on, get the count appended to their error.
    """
    if step.get("parse_error"):
        return {**step, "feedback": protocol.correction(step["parse_error"], failures, tools, **answer_form(output))}
    if not step["error"] or failures < 2:
        return step
    note = f" (this was failed step {failures} in a row: change the call, or give your final answer)"
    actions = [{**a, "observation": f"{a['observation']}{note}"} if a.get("problem") else a for a in step["actions"]]
    return {**step, "actions": actions}


def judged(state: AgentState, ctx: AgentContext, step: Step, counters: Counters) -> tuple[Step, Counters, str | None]:
    """The step with its correction, the counters, and the protocol ``auto`` moves to (if it does)."""
    ctx = ctx.on(state)  # the protocol of the model the run is on
    switch = ctx.protocol.after_unreadable(state.get("protocol"), step, counters.get("same_errors", 0))
    if switch is None:
        protocol, _ = ctx.active(state)
        return corrected(step, counters["consecutive_errors"], protocol, ctx.tools, ctx.output), counters, None
    step = corrected(step, max(2, counters["consecutive_errors"]), ctx.protocol.now(switch), ctx.tools)
    step = {**step, "switched_to": switch, "feedback": ctx.protocol.announce(switch, step["feedback"])}
    return step, {**counters, "same_errors": 0}, switch  # a new format is a fresh start for the same-error count


def switch_record(step: Step, switch: str | None, moved_from: str | None) -> ProtocolSwitch | None:
    """The protocol ``auto`` moved the run to after ``step``, as the console and the report show it.

    One move happens here: ``switch``, after unreadable replies in a row (from ``moved_from``, the protocol in
    force).
    """
    if switch is not None:
        return ProtocolSwitch(from_protocol=moved_from or "tool_calling", to_protocol=switch,
                              reason="unreadable_replies", problem=step.get("parse_error") or "")
    return None


def build_step(state: AgentState) -> Step:
    """The step made of the current reply and its parsed, executed actions."""
    pending = state.get("pending") or {}
    reply = state.get("reply") or {}
    counters = state["counters"]
    actions = [finalize(a) for a in pending.get("actions") or []]
    return Step(
        index=counters["steps"] + 1,
        run=state.get("run", 0),
        thought=pending.get("thought") or "",
        raw=reply.get("text") or "",
        actions=actions,
        answer=pending.get("answer"),
        parse_error=pending.get("parse_error"),
        error=bool(pending.get("parse_error")) or any(a["error"] for a in actions),
        prompt_tokens=reply.get("prompt_tokens", 0),
        completion_tokens=reply.get("completion_tokens", 0),
        cost_usd=sum(c["usd"] or 0.0 for c in reply.get("cost") or []),
        cached_tokens=sum(c["cached_tokens"] for c in reply.get("cost") or []),
        unpriced_calls=sum(c["usd"] is None for c in reply.get("cost") or []),
        hints=reply.get("hints") or [],
        prompt_parts=reply.get("prompt_parts") or {},
        memory=reply.get("memory") or [],
        **({"cost_flags": flags} if (flags := call_flags(reply.get("cost") or [])) else {}),
        **({"finish_reason": reply["finish_reason"]} if reply.get("finish_reason") else {}),
        **{k: pending[k] for k in ("output", "invalid_output") if k in pending},  # type: ignore[literal-required]
        **{k: reply[k] for k in ("model", "protocol", "fallbacks") if reply.get(k)},  # type: ignore[typeddict-item]
    )


def memorize(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Append the step, update the counters, clear the per-step scratch values."""
    step = build_step(state)
    counters = state["counters"]
    steps = current_steps(state)
    step, new_counters, switch = judged(state, runtime.context, step, count(counters, step, steps[-1] if steps else None))
    actions = step["actions"]
    failed = [f"{a.get('tool')}: {a['observation']}" for a in actions if a["error"]]
    emit(
        runtime,
        "memorize",
        f"step {step['index']} recorded" + (" (failed)" if step["error"] else "")
        + (f"; unreadable replies in a row: protocol auto moves to {switch}"
           if switch else ""),
        step=step["index"],
        thought=step["thought"] or None,
        actions=[{**{k: a.get(k) for k in ("tool", "args", "observation", "error")},  # type: ignore[misc]
                  **({"repairs": a["repairs"]} if a.get("repairs") else {})} for a in actions],
        answer=step["answer"],
        error="; ".join(filter(None, [step["parse_error"], *failed])) or None,
        feedback=step.get("feedback"),  # the correction the model reads next, for reports
        counters=new_counters,
        switched_to=switch,
        protocol_switch=switch_record(step, switch, state.get("protocol")),
    )
    update: dict[str, Any] = {
        "scratchpad": [step],
        "counters": new_counters,
        "pending": None,
        "reply": None,
    }
    if step["answer"] is not None:
        update["answer"] = step["answer"]
    if "output" in step:  # a valid structured answer replaces any invalid one kept before
        update.update(output=step["output"], invalid_output=None)
    elif "invalid_output" in step:
        update["invalid_output"] = step["invalid_output"]
    if switch is not None:
        update["protocol"] = switch
    return update
