"""parse: turn the model's raw reply into actions, a final answer, or a parse error.

The protocol does the reading and never raises; this node only routes.
:func:`~reinloop.protocols.base.parse_reply` is the last line: whatever the
reply, the result is actions, an answer or a parse error, so a stored reply
can never make a resume crash again.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..protocols.base import parse_reply
from ..state import AgentState


def parse(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Parse the current reply with the run's protocol."""
    protocol, _ = runtime.context.active(state)
    pending = parse_reply(protocol, state.get("reply") or {})
    if pending.get("parse_error"):
        summary = f"parse error: {pending['parse_error']}"
    elif pending.get("answer") is not None:
        summary = "final answer"
    else:
        summary = "actions: " + ", ".join(a["tool"] for a in pending["actions"])
    update: dict[str, Any] = {"pending": pending}
    if pending.get("fallback"):
        summary += f"; the model answers in {pending['fallback']}: switching protocols"
        update["protocol"] = pending["fallback"]
    emit(
        runtime,
        "parse",
        summary,
        thought=pending.get("thought") or None,
        actions=[{"tool": a.get("tool"), "args": a.get("args") or {}} for a in pending.get("actions") or []],
        answer=pending.get("answer"),
        error=pending.get("parse_error"),
        fallback=pending.get("fallback"),
    )
    return update


def route_after_parse(state: AgentState) -> Literal["actions", "answer", "error"]:
    """Actions go to validation; answers and parse errors are recorded as they are."""
    pending = state.get("pending") or {}
    if pending.get("parse_error"):
        return "error"
    if pending.get("actions"):
        return "actions"
    return "answer"
