"""Native tool calling: the tools go through the API (``bind_tools``), calls come back structured.

Even structured calls go wrong: a provider may return arguments that are not
valid JSON (they land in ``invalid_tool_calls``), several calls in one reply,
or an empty message. Each case becomes data: invalid calls become actions that
carry their problem, so the model gets a tool result for every call id it
issued and the history stays valid for the provider.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ..tools.bounds import check_value, clean_text
from ..state import Action, Pending, Reply, Step
from ..tools.registry import ToolRegistry
from .base import OutputProtocol, action_id, error_pending, example_call, quote, replayed_reply, replayed_thought

if TYPE_CHECKING:
    from .output import AnswerSchema

INTERRUPTED = "ERROR: this call was interrupted before it returned; its outcome is unknown"


class ToolCallingProtocol(OutputProtocol):
    """Tools are bound to the model; a plain text reply is the final answer."""

    name = "tool_calling"
    native_tools = True

    def instructions(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        answer = (output.instructions(self.native_tools) if output is not None
                  else "When you know the answer, reply with it as plain text and call no tool.")
        return f"Call the tools you need, one step at a time, and read their results. {answer}"

    def example(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        from .output import ANSWER_TOOL

        call = example_call(tools)
        how = f"call a tool through the tool-calling API (e.g. {call[0]} with {json.dumps(call[1])}), or " if call else ""
        if output is not None:
            return f"{how}give the final answer by calling {ANSWER_TOOL}, alone, with {output.example_text()}"
        return f"{how}reply with the final answer as plain text, a sentence or two"

    def parse(self, reply: Reply) -> Pending:
        text = clean_text(reply.get("text") or "").strip()
        actions: list[Action] = []
        for i, call in enumerate(reply.get("tool_calls") or [], 1):
            actions.append(_valid_call(i, call))
        for i, call in enumerate(reply.get("invalid_tool_calls") or [], len(actions) + 1):
            actions.append(_invalid_call(i, call))
        if actions:
            return Pending(thought=text, actions=actions, answer=None, parse_error=None)
        if text:
            return Pending(thought="", actions=[], answer=text, parse_error=None)
        return error_pending("the reply is empty: neither a tool call nor an answer")

    def render_step(self, step: Step) -> list[BaseMessage]:
        actions = step.get("actions") or []
        if not actions:
            messages: list[BaseMessage] = [AIMessage(content=replayed_reply(self, step) if step.get("raw") else "")]
            if step.get("parse_error"):
                messages.append(HumanMessage(content=self.feedback(step)))
            return messages
        calls = [{"name": a["tool"], "args": a.get("args") or {}, "id": a["id"]} for a in actions]
        messages = [AIMessage(content=replayed_thought(step), tool_calls=calls)]
        for a in actions:
            content = a.get("observation") or a.get("problem") or INTERRUPTED
            messages.append(ToolMessage(content=content, tool_call_id=a["id"], name=a["tool"]))
        return messages


def _text(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


def _valid_call(index: int, call: dict[str, Any]) -> Action:
    """A native call as an action; arguments that cannot be stored make it a call with a problem."""
    name = _text(call.get("name"))
    args, problem = check_value(call.get("args"))
    if problem is not None:
        return Action(id=_text(call.get("id")) or action_id(index, name, None), tool=name, args={},
                      problem=f"the arguments cannot be used: {problem}")
    return Action(id=_text(call.get("id")) or action_id(index, name, args), tool=name,
                  args=args if isinstance(args, dict) else {})


def _invalid_call(index: int, call: dict[str, Any]) -> Action:
    """A call the client could not decode, or whose arguments were refused, as an action with its problem."""
    name, raw, error = _text(call.get("name")), _text(call.get("args")), _text(call.get("error"))
    if raw or not error:
        problem = f"the arguments are not valid JSON: {quote(raw)!r}" + (f" ({error})" if error else "")
    else:  # refused before parsing (see reinloop.tools.bounds.bounded_message): the error says why
        problem = error
    return Action(id=_text(call.get("id")) or action_id(index, name, raw), tool=name, args={}, problem=problem)
