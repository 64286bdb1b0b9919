"""``protocol="auto"``: native tool calling while the model does it, JSON once it shows it does not.

Many OpenAI-compatible servers accept ``tools`` but the model behind them
answers in text, typically with the JSON call written out. When a reply has
no native tool call but its text is a JSON tool call, the parse switches the
thread to the JSON protocol (``state["protocol"] = "json"``) for good.

A model that cannot follow a format at all moves on too: after
:attr:`AutoProtocol.switch_after` unreadable replies in a row, the run goes
to the next protocol of :data:`CHAIN` (tool calling, then JSON, then ReAct),
the step records it (``switched_to``) and the model is told.
"""

from __future__ import annotations

from ..state import Pending, Reply
from ..tools.registry import ToolRegistry
from .json_protocol import JsonProtocol
from .tool_calling import ToolCallingProtocol

_JSON = JsonProtocol()

CHAIN: tuple[str, ...] = ("tool_calling", "json", "react")
"""The protocols ``auto`` tries, in order."""


class AutoProtocol(ToolCallingProtocol):
    """Tool calling with a fallback to the JSON protocol."""

    name = "auto"  # type: ignore[assignment]
    switch_after = 2
    """Unreadable replies in a row after which the run moves to the next protocol of :data:`CHAIN`."""

    def next_protocol(self, current: str | None, unreadable: int) -> str | None:
        """The protocol to move to after ``unreadable`` unreadable replies in a row under ``current``."""
        at = CHAIN.index(current) if current in CHAIN else 0
        return CHAIN[at + 1] if unreadable >= self.switch_after and at + 1 < len(CHAIN) else None

    def instructions(self, tools: ToolRegistry) -> str:
        return super().instructions(tools)

    def parse(self, reply: Reply) -> Pending:
        pending = super().parse(reply)
        if pending.get("actions") or "{" not in (reply.get("text") or ""):
            return pending
        as_json = _JSON.parse(reply)
        if as_json.get("actions"):
            return {**as_json, "fallback": _JSON.name}
        return pending
