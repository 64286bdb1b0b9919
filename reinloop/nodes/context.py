"""The runtime context: a run's dependencies, kept out of the checkpointed state.

The model, the tools, the protocol and the limits are passed to every node as
LangGraph's runtime context (``context_schema``). They are objects, not data:
they are never checkpointed, and a resumed run gets them from whoever resumes
it (the Python caller, or ``reinloop resume`` from the run's stored settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.runnables import Runnable

from ..protocols.answers import AnswerRules
from ..observe.events import EventSink
from ..models.fallback import ChainModel
from ..runs.limits import Limits
from ..protocols.memory.config import Memory
from ..protocols.output import AnswerSchema
from ..models.pricing import Pricing
from ..protocols.base import OutputProtocol
from ..models.retry import RetryPolicy
from ..runs.spec import RunSpec
from ..checkpoints.journal import ToolJournal
from ..tools.pool import WorkerPool
from ..tools.registry import ToolRegistry

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
    """How model calls are priced: overrides, local models free, else genai-prices (:mod:`reinloop.models.pricing`)."""
    output: AnswerSchema | None = None
    """What a structured final answer must match (``RunSpec.output``); ``None``: the answer is plain text."""
    fallbacks: tuple[ChainModel, ...] = ()
    """The models to move to, in order, when the one in use fails for good (:mod:`reinloop.models.fallback`)."""
    telemetry: Any = None
    """A :class:`reinloop.observe.telemetry.Telemetry` when ``spec.telemetry`` is on; ``None``: no spans, nothing done."""
    call_hooks: tuple[Any, ...] = ()
    """Told of each model, summarizer and tool call by the code making it (:class:`reinloop.observe.callbacks.CallHook`)."""

    @property
    def max_output_tokens(self) -> int | None:
        """Tokens the model may write per step (``None``: the provider's default); see :mod:`reinloop.models.resolve`."""
        return self.spec.max_output_tokens

    def check_summary_call(self, llm: Any, prompt: list[Any]) -> None:
        """Raise :class:`~reinloop.models.pricing.CallOverBudget` when a summarizer call of ``llm`` (the run's model,
        its tools bound, or the summarizer) on ``prompt`` would take the run past its cost budget: estimated as the
        agent's own calls are, with the run's reply cap. Outside a budget it does nothing."""
        from ..models.pricing import check_call_cost

        check_call_cost(self, llm, prompt, self.max_output_tokens, model=self.model if llm is self.llm else llm)

    @property
    def answers(self) -> AnswerRules:
        """What a final answer must satisfy, and whether a stuck run gets a wrap-up call (:mod:`reinloop.protocols.answers`)."""
        return self.spec.answers

    def on_model(self, index: int) -> AgentContext:
        """This context on the run's ``index``-th model (0: the primary, as built)."""
        if not 0 < index <= len(self.fallbacks):
            return self
        chained = self.fallbacks[index - 1]
        return replace(self, model=chained.model, llm=chained.llm, protocol=chained.protocol)

    def on(self, state: Mapping[str, Any]) -> AgentContext:
        """This context on the model the run is on (``state["model_index"]``)."""
        return self.on_model(state.get("model_index") or 0)

    def active(self, state: Mapping[str, Any]) -> tuple[OutputProtocol, Runnable[Any, Any]]:
        """The protocol and model to use now: the run's model, in the protocol ``auto`` may have moved on to
        (JSON or ReAct, without bound tools)."""
        ctx = self.on(state)
        protocol = ctx.protocol.now(state.get("protocol"))
        return protocol, (ctx.llm if protocol is ctx.protocol else ctx.model)

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
