"""A text-call middleware for ``create_agent``: the fair baseline for a small model.

Small models often write a tool call as JSON text in the reply instead of a
native tool call (8 of ``create_agent``'s 16 failures on the real tier's
development set). :class:`TextCallMiddleware` reads such a reply as the calls it
writes, so that ``create_agent`` is compared with reinloop on what the model
meant, not on how it formatted it. It is deliberately small: a reply without
native calls whose text holds JSON objects ``{"name": <a given tool>,
"arguments": {...}}`` (also ``"parameters"``/``"args"``, in fences, in
``<tool_call>`` tags, in a list, or several one after another) becomes those
calls; anything else stays text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

ARGS_KEYS = ("arguments", "parameters", "args")
_OPENING = re.compile(r"[{\[]")


def text_calls(text: str, names: Collection[str]) -> list[dict[str, Any]]:
    """The tool calls (LangChain's ``{"name", "args", "id"}``) written as JSON in ``text``, naming one of ``names``."""
    decoder, calls, at = json.JSONDecoder(), [], 0
    while match := _OPENING.search(text, at):
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            at = match.start() + 1
            continue
        found = [call for item in (value if isinstance(value, list) else [value]) if (call := _call(item, names))]
        calls.extend(found)
        at = end if found else match.start() + 1  # not a call: a call may sit inside it ({"tool_call": {...}})
    return calls


def _call(item: Any, names: Collection[str]) -> dict[str, Any] | None:
    if not isinstance(item, dict) or item.get("name") not in names:
        return None
    args = next((item[k] for k in ARGS_KEYS if k in item), {})
    if isinstance(args, str):  # OpenAI's wire form: the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return {"name": item["name"], "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}


class TextCallMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Turns a reply that writes its tool calls as JSON text into those tool calls."""

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        response = handler(request)
        names = {_tool_name(tool) for tool in request.tools}
        messages = [_with_calls(m, names) for m in response.result]
        return ModelResponse(result=messages, structured_response=response.structured_response)


def _tool_name(tool: Any) -> str:
    """A bound tool's name: a LangChain tool, or an OpenAI tool dict."""
    if not isinstance(tool, dict):
        return str(tool.name)
    return str(tool.get("name") or tool.get("function", {}).get("name"))


def _with_calls(message: Any, names: Collection[str]) -> Any:
    if not isinstance(message, AIMessage) or message.tool_calls or not isinstance(message.content, str):
        return message
    calls = text_calls(message.content, names)
    if not calls:
        return message
    return message.model_copy(update={"content": "", "tool_calls": calls})
