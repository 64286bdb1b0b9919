"""The runtime context: a run's dependencies, kept out of the checkpointed state.

The model, the tools, the protocol and the limits are passed to every node as
LangGraph's runtime context (``context_schema``). They are objects, not data:
they are never checkpointed, and a resumed run gets them from whoever resumes
it (the Python caller, or ``reinloop resume`` from the run's stored settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import Runnable

from .answers import AnswerRules
from .events import EventSink
from .limits import Limits
from .memory.config import Memory
from .pricing import Pricing
from .protocols.base import OutputProtocol
from .retry import RetryPolicy
from .spec import RunSpec
from .tools.journal import ToolJournal
from .tools.pool import WorkerPool
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
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sinks: tuple[EventSink, ...] = ()
    """Receivers of every node's event besides logging and the custom stream (e.g. a ``RunLog``)."""
    invoked_at: float = 0.0
    """Wall-clock start of the current invocation; time between invocations is never counted."""
    workers: WorkerPool = field(default_factory=WorkerPool)
    """The threads tool calls run in: bounded, so hung tools cannot pile up."""
    journal: ToolJournal | None = None
    """Where side-effecting tool calls are journaled (at most once across crashes); ``None``: not journaled."""
    memory: Memory = field(default_factory=Memory)
    """What each prompt may hold: window, token budget, summaries, recall (dependencies resolved)."""
    spec: RunSpec = field(default_factory=RunSpec)
    """The run's description as given; the options without a field of their own are read from it."""
    pricing: Pricing = field(default_factory=Pricing)
    """How model calls are priced: overrides, local models free, else genai-prices (:mod:`reinloop.pricing`)."""
    telemetry: Any = None
    """A :class:`reinloop.telemetry.Telemetry` when ``spec.telemetry`` is on; ``None``: no spans, nothing done."""

    @property
    def max_output_tokens(self) -> int | None:
        """Tokens the model may write per step (``None``: the provider's default); see :mod:`reinloop.models`."""
        return self.spec.max_output_tokens

    @property
    def answers(self) -> AnswerRules:
        """What a final answer must satisfy, and whether a stuck run gets a wrap-up call (:mod:`reinloop.answers`)."""
        return self.spec.answers

    def active(self, state: Mapping[str, Any]) -> tuple[OutputProtocol, Runnable[Any, Any]]:
        """The protocol and model to use now: ``auto`` may have moved on to JSON or ReAct (without bound tools)."""
        protocol = self.protocol.now(state.get("protocol"))
        return protocol, (self.llm if protocol is self.protocol else self.model)

    def elapsed(self, state: Mapping[str, Any], now: float) -> float:
        """Active seconds of the run: time between invocations is not counted."""
        since = max(state.get("tick", now), self.invoked_at)
        return float(state["counters"]["elapsed_seconds"]) + max(0.0, now - since)

    def seconds_left(self, state: Mapping[str, Any], now: float) -> float | None:
        """Seconds before the run's time limit, or ``None`` without one."""
        if self.limits.max_seconds is None:
            return None
        extra = (state.get("extensions") or {}).get("seconds", 0.0)
        return self.limits.max_seconds + extra - self.elapsed(state, now)
