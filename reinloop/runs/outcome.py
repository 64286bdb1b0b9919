"""The outcome of a run, as the CLI prints it and scripts consume it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..tools.approval import waiting_calls
from ..protocols.memory.ledger import in_hand

EXIT_DONE = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BROKEN = 3
EXIT_WAITING = 4


@dataclass(frozen=True)
class Outcome:
    """How a run ended: status (``done``, ``broken``, ``waiting`` for approval, ``running``), answer or break, counters."""

    thread_id: str
    status: str
    answer: str | None
    break_reason: str | None
    break_message: str | None
    counters: dict[str, Any]
    paused: bool = False
    """True when a break paused the run and it waits for ``reinloop resume``."""
    observations: list[dict[str, Any]] = field(default_factory=list)
    """The run's latest successful tool results (step, tool, args, observation), newest last:
    a run that broke without an answer often holds it here."""
    cost_usd: float = 0.0
    """Dollars the run's priced model calls cost (:mod:`reinloop.models.pricing`); per model in ``counters["models"]``."""
    unpriced_calls: int = 0
    """Model calls whose cost is unknown: when not 0, ``cost_usd`` is a lower bound."""
    waiting: list[dict[str, Any]] = field(default_factory=list)
    """The calls waiting for an operator's approval (id, tool, args, reason, step); status is then ``waiting``."""
    wrapped_up: str | None = None
    """The break (``repeated_action``, ``max_steps`` ...) a wrap-up answer saved the run from: the answer
    came from the one tool-free call a stuck run gets (:mod:`reinloop.protocols.answers`); ``None`` otherwise."""
    output: Any = None
    """The structured answer (``RunSpec.output``), validated: the model instance, or a dict for a JSON Schema."""
    invalid_output: Any = None
    """The last structured answer that did not validate, as the model gave it (a run that ended without a
    valid one keeps it here, never in ``output``)."""

    @classmethod
    def from_state(cls, thread_id: str, state: dict[str, Any], schema: Any = None) -> Outcome:
        """Read the outcome fields from a graph state (``schema``: the run's
        :class:`~reinloop.protocols.output.AnswerSchema`, which makes ``output`` its model instance)."""
        waiting = waiting_calls(state)
        output = state.get("output")
        return cls(
            thread_id=thread_id,
            status="waiting" if waiting else state.get("status") or "running",
            answer=state.get("answer"),
            break_reason=state.get("break_reason"),
            break_message=state.get("break_message"),
            counters=dict(state.get("counters") or {}),
            paused=state.get("decision") == "pause",
            observations=[dict(r) for r in in_hand(state)],
            cost_usd=float((state.get("counters") or {}).get("cost_usd") or 0.0),
            unpriced_calls=int((state.get("counters") or {}).get("unpriced_calls") or 0),
            waiting=waiting,
            wrapped_up=state.get("wrapped_up"),
            output=schema.instance(output) if schema is not None and isinstance(output, dict) else output,
            invalid_output=state.get("invalid_output"),
        )

    @property
    def exit_code(self) -> int:
        """0 when done, 3 when a guard broke the run, 4 when calls wait for approval, 1 otherwise."""
        return {"done": EXIT_DONE, "broken": EXIT_BROKEN, "waiting": EXIT_WAITING}.get(self.status, EXIT_ERROR)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as a JSON-able dict (a model instance in ``output`` as its JSON)."""
        data = asdict(self)
        dump = getattr(self.output, "model_dump", None)
        data["output"] = dump(mode="json") if callable(dump) else self.output
        return data
