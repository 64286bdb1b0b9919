"""LangChain callback handlers for the loop's own model and tool calls, and for nothing else.

A handler in an invocation's config rides along every runnable LangGraph runs:
each node, channel write and router gets a callback manager that copies it and
tells it of every chain start and end. Telemetry's call recorder
(:class:`reinloop.telemetry.CallRecorder`) only needs the model and tool calls,
so it travels in ``AgentContext.call_handlers`` and :func:`call_config` adds it
to those calls alone, beside the callbacks each call inherits from its node (the
node's metadata, LangGraph's ``stream_mode="messages"`` handler). With no
handlers (telemetry off) nothing changes: the config given is returned as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.runnables.config import var_child_runnable_config

TOOL_CALL_KEY = "reinloop_tool_call_id"
"""Run metadata key of a tool call's id (the model's, or reinloop's), so a handler can tell parallel calls apart."""


def call_config(handlers: Sequence[BaseCallbackHandler], config: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``config`` for one model or tool call, with ``handlers`` added to the callbacks inherited from its node."""
    if not handlers:
        return config
    inherited = (var_child_runnable_config.get() or {}).get("callbacks")
    if isinstance(inherited, BaseCallbackManager):
        callbacks: Any = inherited.copy()
        for handler in handlers:
            callbacks.add_handler(handler, inherit=True)
    else:
        callbacks = [*(inherited or []), *handlers]
    return {**(config or {}), "callbacks": callbacks}
