"""``protocol="auto"``: native tool calling while the model does it, JSON once it shows it does not.

Many OpenAI-compatible servers accept ``tools`` but the model behind them
answers in text, typically with the JSON call written out. When a reply has
no native tool call but its text is a JSON tool call, the parse switches the
thread to the JSON protocol (``state["protocol"] = "json"``) for good.
"""

from __future__ import annotations

from ..state import Pending, Reply
from ..tools.registry import ToolRegistry
from .json_protocol import JsonProtocol
from .tool_calling import ToolCallingProtocol

_JSON = JsonProtocol()


class AutoProtocol(ToolCallingProtocol):
    """Tool calling with a fallback to the JSON protocol."""

    name = "auto"  # type: ignore[assignment]

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
