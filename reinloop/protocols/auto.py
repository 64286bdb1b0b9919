"""``protocol="auto"``: native tool calling while the model does it, then JSON, then ReAct.

This module owns the whole fallback: when ``auto`` moves on, where to, and
the one piece of state it keeps (``state["protocol"]``: the protocol the
thread moved to, ``None`` while it calls tools natively). The nodes only ask
it, through the hooks every :class:`~reinloop.protocols.base.OutputProtocol`
has (which do nothing for the other protocols):

- **The model cannot bind tools** (:meth:`AutoProtocol.without_native_tools`):
  the run starts with the JSON protocol.
- **The endpoint rejects the tools** (:meth:`AutoProtocol.after_rejection`):
  a request with tools answered HTTP 400/422, naming no request field or a
  tool field (``tools``, ``tool_choice`` ...), moves the thread to JSON and the
  call is made again without tools. The decision reads the error's fields
  (:class:`~reinloop.errors.ModelCallError`), never its text; the step's
  decide event records the move (:class:`ProtocolSwitch`).
- **A reply that is text** is an answer, as under native tool calling: text
  that looks like a call is never run as one (``AnswerRules.text_calls`` is
  the opt-in for models that write their calls as text).
- **The model cannot follow a format** (:meth:`AutoProtocol.after_unreadable`):
  after :attr:`AutoProtocol.switch_after` unreadable replies in a row, the
  run goes to the next protocol of :data:`CHAIN`; the step records it
  (``switched_to``) and the model is told (:meth:`AutoProtocol.announce`).
"""

from __future__ import annotations

from typing import TypedDict

from ..errors import ModelCallError
from ..state import Step
from .base import OutputProtocol
from .json_protocol import JsonProtocol
from .react import ReactProtocol
from .tool_calling import ToolCallingProtocol

CHAIN: tuple[str, ...] = ("tool_calling", "json", "react")
"""The protocols ``auto`` tries, in order."""

TOOL_PARAMS = frozenset({"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"})
"""Request fields that carry tools: an endpoint that names one of them as the cause of a 400 refuses tools."""


class ProtocolSwitch(TypedDict):
    """``auto`` moving a step to another protocol on the same model, as recorded on its decide event."""

    from_protocol: str  # the protocol the refused request used
    to_protocol: str  # the protocol the call was made again in
    reason: str  # tools_unsupported: the endpoint refused the tools
    problem: str  # what the endpoint said


class AutoProtocol(ToolCallingProtocol):
    """Tool calling with a fallback to the JSON protocol, then to ReAct."""

    name = "auto"  # type: ignore[assignment]
    switch_after = 2
    """Unreadable replies in a row after which the run moves to the next protocol of :data:`CHAIN`."""

    def __init__(self) -> None:
        self.text_protocols: dict[str, OutputProtocol] = {"json": JsonProtocol(), "react": ReactProtocol()}
        """The protocols ``auto`` moves to, by name (one instance of each)."""

    def now(self, moved_to: str | None) -> OutputProtocol:
        """The protocol in force on a thread that moved to ``moved_to`` (``state["protocol"]``)."""
        return self.text_protocols.get(moved_to or "", self)

    def without_native_tools(self) -> OutputProtocol:
        """The JSON protocol: where ``auto`` starts with a model that cannot bind tools."""
        return self.text_protocols["json"]

    def after_rejection(self, active: OutputProtocol, error: ModelCallError) -> str | None:
        """``"json"`` when the endpoint refused a request because of its tools; else ``None`` (the error stands)."""
        if active is not self or not error.rejected:
            return None
        return "json" if error.param is None or error.param in TOOL_PARAMS else None

    def after_unreadable(self, moved_to: str | None, step: Step, unreadable: int) -> str | None:
        """The protocol to move to after ``step``, the ``unreadable``-th unreadable reply in a row, if it is time."""
        if not step.get("parse_error") or step.get("switched_to") or unreadable < self.switch_after:
            return None
        at = CHAIN.index(moved_to) if moved_to in CHAIN else 0
        return CHAIN[at + 1] if at + 1 < len(CHAIN) else None

    def announce(self, moved_to: str, feedback: str) -> str:
        """What the model is told with the correction of the step after which the format changes."""
        return f"The reply format changes now, to the {moved_to} format in the system prompt. {feedback}"
