"""Hooks on the loop's own model and tool calls, told of each call by the code that makes it.

Telemetry's call recorder (:class:`reinloop.observe.telemetry.CallRecorder`) needs the
boundaries of the model, summarizer and tool calls alone. Reinloop makes each of
them itself (:func:`reinloop.models.resolve.invoke_model`, the summarizer's ``ask``, the
tool executor's attempts), so that code calls :func:`watched`, which tells the
hooks in ``AgentContext.call_hooks`` when the call starts and how it ends. No
LangChain callback handler is involved: one would need a copy of the node's
callback manager per call and LangChain's event dispatch (its checks, a run id,
a handler lookup per event), which cost more than the recording itself
(BENCHMARKS.md, "Telemetry overhead"). The call gets the config it had, so the
callbacks a caller gives (LangSmith, ``stream_mode="messages"``) see it as before.
With no hooks (telemetry off) the call is made as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.runnables.config import var_child_runnable_config

T = TypeVar("T")


class CallHook(Protocol):
    """Told of one model or tool call's start (its answer is the token given back at the end) and of its end."""

    def started(self, kind: str, node: str, name: str, *, model: Any, inputs: Any, request: Mapping[str, Any],
                call_id: str) -> Any:
        """A call began: ``kind`` is ``"chat"`` or ``"tool"``, ``node`` the LangGraph node it runs in."""

    def ended(self, token: Any, output: Any = None, error: BaseException | None = None) -> None:
        """The call ``token`` stands for returned ``output`` or raised ``error``."""


def current_node() -> str:
    """The LangGraph node the calling code runs in (``""``: none), from the config LangGraph set for it."""
    config = var_child_runnable_config.get()
    return str(((config or {}).get("metadata") or {}).get("langgraph_node") or "")


def watched(hooks: Sequence[CallHook], kind: str, name: str, call: Callable[[], T], *, model: Any = None,
            inputs: Any = None, request: Mapping[str, Any] | None = None, call_id: str = "") -> T:
    """``call()``'s result, each of ``hooks`` told of its start and of its end (its result or what it raised).

    ``model``: the chat model called (its request attributes are read once per run, not per call);
    ``inputs``: the prompt or the tool's arguments; ``request``: the call's own keywords (reply cap,
    temperature); ``call_id``: a tool call's id, which tells parallel calls to one tool apart.
    """
    if not hooks:
        return call()
    node = current_node()
    tokens = [hook.started(kind, node, name, model=model, inputs=inputs, request=request or {}, call_id=call_id)
              for hook in hooks]
    try:
        output = call()
    except BaseException as exc:
        for hook, token in zip(hooks, tokens, strict=True):
            hook.ended(token, error=exc)
        raise
    for hook, token in zip(hooks, tokens, strict=True):
        hook.ended(token, output)
    return output
