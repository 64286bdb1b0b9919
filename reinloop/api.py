"""High-level functions behind the CLI commands, usable from Python as they are."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Checkpointer

from .events import EventSink
from .graph import ReinloopGraph, build_graph
from .limits import Limits
from .memory.config import Memory
from .models import DEFAULT_MAX_OUTPUT_TOKENS
from .outcome import Outcome
from .retry import RetryPolicy
from .tools.catalog import DEFAULT_TOOLS, builtins

EventHandler = Callable[[dict[str, Any]], None]


def new_thread_id() -> str:
    """A fresh thread id for a new run."""
    return uuid.uuid4().hex[:12]


def stream_run(
    graph: ReinloopGraph, payload: Any, thread_id: str, on_event: EventHandler | None = None
) -> Outcome:
    """Run ``graph`` on ``payload`` (a task input or a resume command) to its next stop."""
    config = {"configurable": {"thread_id": thread_id}}
    last: dict[str, Any] = {}
    for mode, chunk in graph.stream(payload, config, stream_mode=["custom", "values"]):
        if mode == "custom" and on_event is not None:
            on_event(chunk)
        elif mode == "values":
            last = chunk
    if graph.checkpointer not in (None, False):
        last = graph.get_state(config).values
    return Outcome.from_state(thread_id, last)


def run(
    task: str,
    *,
    model: str | BaseChatModel = "openai:gpt-4o-mini",
    tools: Sequence[BaseTool] | str | None = None,
    protocol: str = "tool_calling",
    limits: Limits | None = None,
    thread_id: str | None = None,
    base_url: str | None = None,
    system_prompt: str | None = None,
    checkpointer: Checkpointer = None,
    retry: RetryPolicy | None = None,
    on_event: EventHandler | None = None,
    memory: Memory | None = None,
    sinks: Sequence[EventSink] = (),
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
) -> Outcome:
    """Run one task to its end and return its :class:`Outcome`.

    ``tools`` is a list of LangChain tools or a comma-separated string of
    built-in tool names (default: the seeds' demo tools); ``on_event`` sees each
    node's event as it streams, ``sinks`` get them from inside the graph (e.g. a
    :class:`~reinloop.runlog.RunLog`); ``max_output_tokens`` caps each reply
    (``None``: the provider's default).
    """
    if tools is None or isinstance(tools, str):
        tools = builtins(tools or list(DEFAULT_TOOLS))
    graph = build_graph(
        model,
        tools,
        limits=limits,
        protocol=protocol,
        system_prompt=system_prompt,
        checkpointer=checkpointer,
        base_url=base_url,
        retry=retry,
        memory=memory,
        sinks=sinks,
        max_output_tokens=max_output_tokens,
    )
    return stream_run(graph, {"task": task}, thread_id or new_thread_id(), on_event)
