"""A scripted chat model for tests and demos: deterministic, offline, with ``bind_tools``.

:class:`ScriptedChatModel` answers from a queue of replies, one per call:

- a ``str``: a plain text reply (ReAct text, chatter, a final answer);
- a ``dict``: a JSON reply (the dict serialised), for the ``json`` protocol;
- a ``list`` of :func:`tool_call` dicts: a native tool-calling reply;
- an ``AIMessage``: sent as it is (thought plus tool calls, invalid tool calls ...);
- an ``Exception`` instance: raised, to simulate a failing endpoint;
- a callable ``(messages) -> any of the above``: a reply computed from the prompt.

It records every prompt it was sent (:attr:`ScriptedChatModel.prompts`) and
the call options with it (:attr:`ScriptedChatModel.call_options`, e.g. the
``max_tokens`` reinloop caps each reply with), reports fixed
``usage_metadata``, and raises
:class:`~reinloop.errors.ScriptExhaustedError` when the script runs out.

Calls from reinloop's summarizer carry a tag
(:data:`reinloop.protocols.memory.SUMMARIZER_TAG`); they are answered by
``summary_reply`` (by default :func:`facts_summary`, an extractive summary
of the prompt) instead of consuming the script, and recorded apart in
:attr:`ScriptedChatModel.summary_prompts`. So a scripted run reads the same
with or without summaries.

A reply cut off at the token cap finishes with ``finish_reason="length"``:
script one with :func:`cut_off`, or give the model a ``max_tokens`` of its
own (like an endpoint's hard cap) and longer replies are cut to it.

Prompt-only helpers: :func:`prompt_text` (all the text a prompt holds),
:func:`answer_from_prompt` (a reply that can only use what the prompt says)
and :func:`facts_summary` (a summarizer that can only use its prompt).

Users import all of it from :mod:`reinloop.testing`; it lives here, with the models, so that the
layers below the run layer (the replay, the pictures of the graph) can use it.

:class:`SimulatedModel` (from :mod:`reinloop.models.simulation`, re-exported here) is
the benchmark's flaky stand-in: it follows a task's plan and makes seeded mistakes.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from ..errors import ScriptExhaustedError
from .local import LocalChatModel
from ..protocols.memory.summary import RESULT_ABOVE, SUMMARIZER_TAG, with_results
from ..protocols.memory.tokens import message_text
from .simulation import FAULTS, Plan, PlanStep, SimulatedModel  # noqa: F401  (the flaky stand-in, for benchmarks)

def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """A native tool call for a scripted reply: ``[tool_call("calculator", {"expression": "1+1"})]``."""
    return {
        "name": name,
        "args": dict(args or {}),
        "id": id or f"call_{uuid.uuid4().hex[:12]}",
        "type": "tool_call",
    }


def cut_off(text: str, reason: str = "length") -> AIMessage:
    """A scripted reply that the token cap cut off: ``text`` with ``finish_reason`` ``reason``."""
    return AIMessage(content=text, response_metadata={"finish_reason": reason})


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """Everything a prompt says, tool calls included, as one string."""
    return "\n".join(message_text(m) for m in messages)


_SENTENCE = re.compile(r"[^.。!?！？;；\n]+[.。!?！？;；]?")
_STEP = re.compile(r"^Step \d+:$", re.M)


def facts_summary(messages: Sequence[BaseMessage], max_chars: int = 160) -> str:
    """A summarizer that only uses its prompt: the sentences with a number, from each step.

    It reads reinloop's summarizer prompt (``Step N:`` blocks; asked at the end of the agent's prompt, it
    reads each call's result there, :func:`~reinloop.protocols.memory.summary.with_results`) and keeps, per
    step, the sentences of its observations and answer that contain a digit
    (else the first sentence), cut to ``max_chars`` per step. Asked to merge
    summary lines, it keeps their sentences with a digit, up to ``2 * max_chars``.
    """
    body = with_results(messages) if messages and RESULT_ABOVE in message_text(messages[-1]) else (
        message_text(messages[-1]) if messages else "")  # asked at the end of the agent's prompt: its results
    blocks = _STEP.split(body)[1:]
    if not blocks:  # summary lines to merge (reinloop.protocols.memory.summary.refold_lines): keep their numbers
        lines = [line.split(": ", 1)[-1] for line in body.split("\n\n", 1)[-1].splitlines()]
        sentences = [s.strip() for line in lines for s in _SENTENCE.findall(line) if s.strip()]
        return " ".join(s for s in sentences if any(ch.isdigit() for ch in s))[: 2 * max_chars] or "nothing of note"
    facts = []
    for block in blocks:
        results = [line.split(" -> ", 1)[-1] for line in block.splitlines() if " -> " in line or "answer:" in line]
        sentences = [s.strip() for r in results for s in _SENTENCE.findall(r) if s.strip()]
        numeric = [s for s in sentences if any(ch.isdigit() for ch in s)]
        pick = " ".join(numeric or sentences[:1])
        if pick:
            facts.append(pick[:max_chars])
    return "; ".join(facts) or "nothing of note"


def answer_from_prompt(pattern: str, template: str = "{0}", default: str = "I don't know") -> Callable[[Sequence[BaseMessage]], str]:
    """A scripted reply that can only answer from its prompt: ``template`` filled from ``pattern``'s match."""
    regex = re.compile(pattern)

    def reply(messages: Sequence[BaseMessage]) -> str:
        match = regex.search(prompt_text(messages))
        return template.format(match.group(1) if match.groups() else match.group(0)) if match else default

    return reply


class ScriptedChatModel(LocalChatModel):
    """A chat model that replays a script, for deterministic tests and offline demos."""

    replies: list[Any] = Field(default_factory=list)
    """The script, consumed one reply per call."""
    usage: tuple[int, int] | None = (10, 5)
    """``(input_tokens, output_tokens)`` reported on every reply; ``None`` reports none."""
    supports_tools: bool = True
    """``False`` makes ``bind_tools`` raise ``NotImplementedError``, like a text-only model."""
    summary_reply: Any = facts_summary
    """The reply to every summarizer call (any scripted reply); ``None`` lets those calls consume the script."""
    max_tokens: int | None = None
    """The endpoint's own reply cap: a longer text reply (about 4 characters a token) is cut to it and
    finishes with ``finish_reason="length"``. ``None``: replies are never cut."""

    _cursor: int = PrivateAttr(default=0)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _summary_prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _call_options: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _tools: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _tools_sent: list[list[str]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "reinloop-scripted"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt the model was sent, in order."""
        return self._prompts

    @property
    def summary_prompts(self) -> list[list[BaseMessage]]:
        """Every summarizer prompt the model was sent, in order."""
        return self._summary_prompts

    @property
    def call_options(self) -> list[dict[str, Any]]:
        """The keyword options of every scripted call, in order (``{"max_tokens": 1024}`` ...)."""
        return self._call_options

    @property
    def bound_tools(self) -> list[dict[str, Any]]:
        """The tool schemas most recently bound with ``bind_tools``."""
        return self._tools

    @property
    def tools_sent(self) -> list[list[str]]:
        """The names of the tools sent with every scripted call, in order (``[]``: a call without tools)."""
        return self._tools_sent

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

    def _capped(self, message: AIMessage, asked: int | None) -> AIMessage:
        """``message`` cut to the endpoint's cap (the smaller of its own and the one asked for), if it has one."""
        if self.max_tokens is None:
            return message
        limit = min(self.max_tokens, asked or self.max_tokens)
        text = message.content if isinstance(message.content, str) else ""
        if len(text) <= limit * 4:
            return message
        return message.model_copy(update={"content": text[: limit * 4], "tool_calls": [],
                                          "response_metadata": {**message.response_metadata, "finish_reason": "length"}})

    def reply(self, messages: list[BaseMessage], tags: frozenset[str], options: dict[str, Any]) -> AIMessage:
        """The summary reply to a summarizer call; else the script's next reply, recorded with its prompt."""
        if self.summary_reply is not None and SUMMARIZER_TAG in tags:
            self._summary_prompts.append(list(messages))
            return self._to_message(self.summary_reply, messages)
        self._prompts.append(list(messages))
        self._call_options.append({k: v for k, v in options.items() if k != "tools"})
        self._tools_sent.append([t["function"]["name"] for t in options.get("tools") or []])
        return self._capped(self._next(messages), options.get("max_tokens"))
