"""decide: assemble the prompt and ask the model what to do next.

The first call of a run also starts it: counters reset, the clock starts.
Hints left by the guard or an operator are shown once and then cleared.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.runtime import Runtime

from ..context import FALLBACK, AgentContext
from ..errors import ModelCallError
from ..models import invoke_model
from ..events import emit
from ..memory.prompt import build_prompt
from ..memory.tokens import count_message_tokens, estimate_tokens, message_text
from ..state import AgentState, Reply, new_counters, new_extensions


def begin_run(state: AgentState) -> dict[str, Any]:
    """The state of a fresh run on this thread."""
    now = time.time()
    return {
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


def refuses_tools(ctx: AgentContext, protocol: Any, exc: ModelCallError) -> bool:
    """True when ``auto`` sent tools and the endpoint rejected them."""
    return ctx.protocol.name == "auto" and protocol.native_tools and "tool" in str(exc).lower()


def ask(ctx: AgentContext, state: AgentState) -> tuple[BaseMessage, list[BaseMessage], dict[str, Any]]:
    """Call the model; returns the reply, the prompt, and a protocol switch if one happened."""
    protocol, llm = ctx.active(state)
    prompt = build_prompt(state, ctx, protocol)
    try:
        return invoke_model(ctx, llm, prompt, lambda: ctx.seconds_left(state, time.time())), prompt, {}
    except ModelCallError as exc:
        if not refuses_tools(ctx, protocol, exc):
            raise
    switched = {"protocol": FALLBACK.name}
    message, prompt, _ = ask(ctx, {**state, **switched})  # type: ignore[typeddict-item]
    return message, prompt, switched


def decide(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Call the model once with the prompt built from the state."""
    ctx = runtime.context
    update = begin_run(state) if state.get("status") != "running" else {}
    view: AgentState = {**state, **update}  # type: ignore[typeddict-item]
    message, prompt, switched = ask(ctx, view)
    update.update(switched)
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
        task=view["task"] if "run" in update else None,  # a new task starts: say which
    )
    return {**update, "reply": reply, "hints": [], "pending": None, "counters": counters}
