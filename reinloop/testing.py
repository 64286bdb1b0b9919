"""A scripted chat model for tests and demos: deterministic, offline, with ``bind_tools``.

:class:`ScriptedChatModel` answers from a queue of replies, one per call:

- a ``str``: a plain text reply (ReAct text, chatter, a final answer);
- a ``dict``: a JSON reply (the dict serialised), for the ``json`` protocol;
- a ``list`` of :func:`tool_call` dicts: a native tool-calling reply;
- an ``AIMessage``: sent as it is (thought plus tool calls, invalid tool calls ...);
- an ``Exception`` instance: raised, to simulate a failing endpoint;
- a callable ``(messages) -> any of the above``: a reply computed from the prompt.

It records every prompt it was sent (:attr:`ScriptedChatModel.prompts`),
reports fixed ``usage_metadata``, and raises
:class:`~reinloop.errors.ScriptExhaustedError` when the script runs out.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from .errors import ScriptExhaustedError

Scripted = Any
"""One scripted reply: str, dict, list of tool calls, AIMessage, Exception, or a callable."""


def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """A native tool call for a scripted reply: ``[tool_call("calculator", {"expression": "1+1"})]``."""
    return {
        "name": name,
        "args": dict(args or {}),
        "id": id or f"call_{uuid.uuid4().hex[:12]}",
        "type": "tool_call",
    }


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script, for deterministic tests and offline demos."""

    replies: list[Any] = Field(default_factory=list)
    """The script, consumed one reply per call."""
    usage: tuple[int, int] | None = (10, 5)
    """``(input_tokens, output_tokens)`` reported on every reply; ``None`` reports none."""
    supports_tools: bool = True
    """``False`` makes ``bind_tools`` raise ``NotImplementedError``, like a text-only model."""

    _cursor: int = PrivateAttr(default=0)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "reinloop-scripted"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt the model was sent, in order."""
        return self._prompts

    @property
    def bound_tools(self) -> list[dict[str, Any]]:
        """The tool schemas most recently bound with ``bind_tools``."""
        return self._tools

    @property
    def calls(self) -> int:
        """How many replies have been consumed."""
        return self._cursor

    def remaining(self) -> int:
        """Replies left in the script."""
        return len(self.replies) - self._cursor

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tools' schemas and return the model bound to them."""
        if not self.supports_tools:
            raise NotImplementedError(f"{type(self).__name__} was scripted without tool support")
        self._tools = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=self._tools, **kwargs)

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        if self._cursor >= len(self.replies):
            last = messages[-1].content if messages else ""
            raise ScriptExhaustedError(
                f"ScriptedChatModel ran out of replies: the script has {len(self.replies)} and "
                f"call {self._cursor + 1} was made; the prompt ended with: {str(last)[:200]!r}"
            )
        item = self.replies[self._cursor]
        self._cursor += 1
        return self._to_message(item, messages)

    def _to_message(self, item: Any, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, (AIMessage, dict, list, str)):
            return self._to_message(item(messages), messages)
        if isinstance(item, AIMessage):
            message = item.model_copy()
        elif isinstance(item, str):
            message = AIMessage(content=item)
        elif isinstance(item, dict):
            message = AIMessage(content=json.dumps(item, ensure_ascii=False))
        elif isinstance(item, list):
            message = AIMessage(content="", tool_calls=[dict(c) for c in item])
        else:
            raise TypeError(f"cannot script a reply of type {type(item).__name__}: {item!r}")
        if self.usage is not None and message.usage_metadata is None:
            i, o = self.usage
            message.usage_metadata = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._prompts.append(list(messages))
        message = self._next(messages)
        return ChatResult(generations=[ChatGeneration(message=message)])
