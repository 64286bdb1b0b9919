"""approve: the run waits here until an operator decides on the calls that need approval.

``execute`` ran the calls of the step that need no approval and marked the
others ``awaiting``. This node calls LangGraph's ``interrupt()`` with them
(kind :data:`~reinloop.tools.approval.APPROVAL_KIND`: id, tool, validated
arguments, why), so the run pauses, durably, in the run database. The answer
(:func:`~reinloop.tools.approval.read_decisions`) is applied to the step: an
approved or edited call is marked for ``execute``, which runs it through the
tool journal; a rejected call observes the operator's message, a responded
one the operator's text; ``always`` is remembered for the tool in the
thread's ``approvals``. Then ``execute`` runs again.

The decisions reach ``execute`` only through this node's checkpoint, and
``execute`` journals the call before it starts: a process killed before that
checkpoint asks again, one killed after it runs the call once, and one killed
during or after the call never runs it again.

LangGraph re-runs this node from its first line on resume: nothing before
``interrupt()`` has effects.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from ..tools.approval import (APPROVAL_KIND, EXPECTED, Decision, approval_id, bound_id, read_decisions, rejected_observation,
                        waiting_calls)
from .context import AgentContext
from ..observe.events import emit
from ..observe.location import locate
from ..state import Action, AgentState


def approval_payload(state: AgentState) -> dict[str, Any]:
    """What a run waiting for approval shows through ``interrupt()``."""
    calls = waiting_calls(state)
    return {"kind": APPROVAL_KIND, "calls": calls, "how_to_answer": EXPECTED,
            "message": f"{len(calls)} call(s) wait for approval: " + ", ".join(f"{c['tool']} ({c['id']})" for c in calls)}


def decided(action: Action, decision: Decision, now: float) -> Action:
    """``action`` with the operator's ``decision`` applied."""
    base: Action = {k: v for k, v in action.items() if k != "awaiting"}  # type: ignore[assignment]
    record = {"action": decision["action"], "by": "operator", "at": now, "reason": action.get("awaiting")}
    if decision.get("always"):
        record["always"] = True
    if decision["action"] == "edit":
        return {**base, "args": decision["args"], "approval": {**record, "original_args": action.get("args") or {}}}
    if decision["action"] == "reject":
        return {**base, "observation": rejected_observation(action["tool"], decision["message"]), "error": False,
                "approval": {**record, "message": decision["message"]}}
    if decision["action"] == "respond":
        return {**base, "observation": decision["text"], "error": False, "approval": record}
    return {**base, "approval": record}


def binding_holds(action: Action, index: int, here: Any) -> bool:
    """Is the approval id a waiting call carries the one of this thread, step, position, tool and arguments?
    (A stored state edited to move an id onto another call fails: that call keeps waiting, and is asked again.)"""
    stamped = action.get("approval_id")
    return not stamped or stamped == approval_id(here.thread_id, here.step, index, action["tool"], action.get("args") or {},
                                         here.run)


def approve(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Pause for the operator's decisions on the waiting calls, then apply each to the one call it is bound to."""
    ctx = runtime.context
    pending = state.get("pending") or {}
    answer = interrupt(approval_payload(state))
    actions: list[Action] = list(pending.get("actions") or [])
    decisions = read_decisions(answer, waiting_calls(state), ctx.tools.validate_args)
    here = locate(state)
    now = time.time()
    remembered = dict(state.get("approvals") or {})
    applied = []
    for i, action in enumerate(actions):
        if not action.get("awaiting") or not binding_holds(action, i, here):
            continue
        key = bound_id(action, i, here.step)
        decision = decisions.get(key)
        if decision is not None:
            actions[i] = decided(action, decision, now)
            applied.append({"id": key, "call_id": action.get("id"), **decision})
            if decision.get("always"):
                remembered[action["tool"]] = decision["action"]
    emit(runtime, "approve", ", ".join(f"{d['id']}: {d['action']}" for d in applied) or "no decision",
         decisions=applied, always=remembered)
    return {"pending": {**pending, "actions": actions}, "approvals": remembered}
