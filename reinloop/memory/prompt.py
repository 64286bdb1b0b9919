"""Prompt assembly: what the model sees at each step.

The prompt is rebuilt from the state at every step, never kept as a growing
message list: system rules and format instructions, earlier tasks on the
thread, the task, the steps of this run rendered by the protocol, and any
hints the guard or an operator left for this step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ..state import Step

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant that completes the user's task step by step with the "
    "tools provided. Do not guess facts a tool can give you, and use the calculator for "
    "every calculation."
)

HINT_PREFIX = "[reinloop] "


def current_steps(state: Mapping[str, Any]) -> list[Step]:
    """The steps of the run in progress (a thread may hold several runs)."""
    run = state.get("run", 0)
    return [s for s in state.get("scratchpad") or [] if s.get("run", 0) == run]


def history_message(state: Mapping[str, Any]) -> HumanMessage | None:
    """Earlier tasks on this thread and their answers, if any."""
    turns = state.get("history") or []
    if not turns:
        return None
    lines = [f"- Task: {t['task']}\n  Answer: {t.get('answer') or '(none: ' + t['status'] + ')'}" for t in turns]
    return HumanMessage(content="Earlier tasks in this conversation:\n" + "\n".join(lines))


def build_prompt(state: Mapping[str, Any], ctx: Any, protocol: Any = None) -> list[BaseMessage]:
    """The messages for the next model call (``protocol`` defaults to the run's)."""
    protocol = protocol or ctx.protocol
    system = (ctx.system_prompt or DEFAULT_SYSTEM_PROMPT).strip()
    messages: list[BaseMessage] = [
        SystemMessage(content=f"{system}\n\n{protocol.instructions(ctx.tools)}")
    ]
    if (earlier := history_message(state)) is not None:
        messages.append(earlier)
    messages.append(HumanMessage(content=f"Task: {state['task']}"))
    for step in current_steps(state):
        messages.extend(protocol.render_step(step))
    if hints := state.get("hints"):
        messages.append(HumanMessage(content="\n".join(HINT_PREFIX + h for h in hints)))
    return messages
