"""decide: assemble the prompt and ask the model what to do next.

The first call of a run also starts it: counters reset, the clock starts. A
new task on a thread whose last run was cut off (its process died) first
closes that run as ``interrupted``.
Hints left by the guard or an operator are shown once and then cleared.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..memory.prompt import build_prompt
from ..memory.tokens import count_message_tokens, estimate_tokens, message_text
from ..state import AgentState, Reply, Turn, new_counters, new_extensions
from .memorize import build_step


def begin_run(state: AgentState) -> dict[str, Any]:
    """The state of a fresh run on this thread."""
    now = time.time()
    return {
        "run_task": state["task"],
        "run": state.get("run", 0) + 1,
        "counters": new_counters(),
        "extensions": new_extensions(),
        "started_at": now,
        "tick": now,
        "status": "running",
        "answer": None,
        "break_reason": None,
        "break_message": None,
        "decision": None,
        "hints": [],
        "summary": "",
    }


def close_cut_off_run(state: AgentState) -> dict[str, Any]:
    """Close a run whose process died, when a new task arrives on its thread.

    The step it was in (if the model had replied) is recorded with an
    interrupted result for each call that has none, and the run goes to the
    thread's history as ``interrupted``.
    """
    update: dict[str, Any] = {}
    if state.get("reply") or state.get("pending"):
        update["scratchpad"] = [build_step(state)]
    turn = Turn(task=state.get("run_task") or state["task"], answer=None, status="interrupted")
    update["history"] = [*(state.get("history") or []), turn]
    return update


def start(state: AgentState) -> dict[str, Any]:
    """The update that starts a run, or nothing when the current run goes on."""
    status = state.get("status")
    if status == "running" and state.get("run_task", state.get("task")) == state.get("task"):
        return {}
    closed: dict[str, Any] = {}
    if status == "running":  # the last run's process died
        closed = close_cut_off_run(state)
    elif state.get("decision") == "pause":  # a new task instead of an answer to the break
        turn = Turn(task=state.get("run_task") or state["task"], answer=None, status="broken")
        closed = {"history": [*(state.get("history") or []), turn]}
    return {**closed, **begin_run(state)}


def to_reply(message: BaseMessage, prompt: list[BaseMessage], hints: list[str]) -> Reply:
    """The parts of a model message the next nodes need, as plain data."""
    text = message.content if isinstance(message.content, str) else message_text(message)
    usage = getattr(message, "usage_metadata", None) or {}
    ai = message if isinstance(message, AIMessage) else AIMessage(content=text)
    return Reply(
        text=text,
        tool_calls=[dict(c) for c in ai.tool_calls],
        invalid_tool_calls=[dict(c) for c in ai.invalid_tool_calls],
        prompt_tokens=int(usage.get("input_tokens") or count_message_tokens(prompt)),
        completion_tokens=int(usage.get("output_tokens") or estimate_tokens(message_text(ai))),
        hints=list(hints),
    )


def decide(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Call the model once with the prompt built from the state."""
    ctx = runtime.context
    update = start(state)
    view: AgentState = {**state, **{k: v for k, v in update.items() if k != "scratchpad"}}  # type: ignore[typeddict-item]
    prompt = build_prompt(view, ctx)
    message = ctx.llm.invoke(prompt)
    reply = to_reply(message, prompt, view.get("hints") or [])
    c = view["counters"]
    counters = {
        **c,
        "llm_calls": c["llm_calls"] + 1,
        "prompt_tokens": c["prompt_tokens"] + reply["prompt_tokens"],
        "completion_tokens": c["completion_tokens"] + reply["completion_tokens"],
    }
    emit(
        runtime,
        "decide",
        f"step {c['steps'] + 1}: model replied ({reply['prompt_tokens']} prompt tokens, "
        f"{len(reply['tool_calls'])} tool calls)",
        step=c["steps"] + 1,
        tokens_in=reply["prompt_tokens"],
        tokens_out=reply["completion_tokens"],
    )
    return {**update, "reply": reply, "hints": [], "pending": None, "counters": counters}
