"""The runtime context: a run's dependencies, kept out of the checkpointed state.

The model, the tools, the protocol and the limits are passed to every node as
LangGraph's runtime context (``context_schema``). They are objects, not data:
they are never checkpointed, and a resumed run gets them from whoever resumes
it (the Python caller, or ``reinloop resume`` from the run's stored settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import Runnable

from .limits import Limits
from .memory.config import Memory
from .protocols.base import OutputProtocol
from .tools.registry import ToolRegistry


@dataclass(frozen=True, kw_only=True)
class AgentContext:
    """Everything a node needs that is not state."""

    model: Any
    """The chat model as given (a LangChain ``BaseChatModel``)."""
    llm: Runnable[Any, Any]
    """What the decide node calls: the model, with the tools bound for native tool calling."""
    tools: ToolRegistry
    protocol: OutputProtocol
    limits: Limits = field(default_factory=Limits)
    system_prompt: str | None = None
    invoked_at: float = 0.0
    """Wall-clock start of the current invocation; time between invocations is never counted."""
    memory: Memory = field(default_factory=Memory)
    """What each prompt may hold: window, token budget, summaries, recall (dependencies resolved)."""
