"""Turning what the user names into a chat model, and preparing it for a protocol.

A model is any LangChain chat model object, or an ``init_chat_model`` string
such as ``"openai:gpt-4o-mini"``. ``base_url`` points an OpenAI-compatible
client at a local server (Ollama, vLLM, LM Studio, llama.cpp).

Every agent step's reply is capped (``max_output_tokens``, default
:data:`DEFAULT_MAX_OUTPUT_TOKENS`): the cap is passed with each call under the
name the model class takes (``max_tokens`` for OpenAI, which langchain-openai
sends as ``max_completion_tokens``; ``max_output_tokens`` for Gemini;
``num_predict`` for Ollama). A reply the cap cut off is recognised by its
finish reason (:func:`finish_reason`, :func:`is_truncated`) and is never used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ..observe.callbacks import watched
from .pricing import check_call_cost
from ..errors import ConfigurationError, ModelCallError, ModelSetupError
from ..protocols.base import OutputProtocol
from ..observe.redact import origin, redact_url, scrub
from ..runs.settings import DEFAULT_MAX_OUTPUT_TOKENS  # RunSpec's default, kept below both; re-exported here
from .retry import call_with_retries, endpoint_of, model_call_error, model_url
from ..tools.registry import ToolRegistry


OUTPUT_CAP_FIELDS = ("max_tokens", "max_output_tokens", "num_predict", "max_new_tokens")
"""Names chat model classes give their reply cap, in the order they are looked for."""

TRUNCATED_FINISHES = frozenset({"length", "max_tokens", "max_output_tokens", "max_new_tokens"})
"""Finish reasons (lower-cased) that mean the reply was cut off at the token cap: OpenAI and compatible
servers say ``length``, Anthropic and Bedrock ``max_tokens``, Gemini ``MAX_TOKENS``."""

FINISH_KEYS = ("finish_reason", "stop_reason", "stopReason", "done_reason")
"""Where providers put the finish reason in ``AIMessage.response_metadata``."""

KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


def _provider(name: str) -> str:
    return name.split(":", 1)[0] if ":" in name else "openai"


def resolve_model(
    model: str | BaseChatModel,
    *,
    base_url: str | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> BaseChatModel:
    """A chat model object from an object or an ``init_chat_model`` string.

    A model built from a string gets ``timeout`` per request and no client-side
    retries: reinloop's own retry policy (:mod:`reinloop.models.retry`) is the only layer.
    """
    if not isinstance(model, str):
        if base_url is not None:
            raise ConfigurationError("base_url applies to model strings only; configure the model object instead")
        return model
    check_model_name(model)
    if base_url is not None:
        check_endpoint(base_url, model)
    from langchain.chat_models import init_chat_model

    provider = _provider(model)
    kwargs.setdefault("max_retries", 0)
    if provider == "openai":  # a streamed reply reports its usage only when asked: the counts must not change
        kwargs.setdefault("stream_usage", True)
    if timeout is not None:
        kwargs.setdefault("timeout", timeout)
    if base_url is not None:
        kwargs["base_url"] = base_url
        if provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
            kwargs.setdefault("api_key", "not-needed")  # local servers ignore the key
    try:
        return init_chat_model(model, **kwargs)
    except ImportError as exc:
        raise ModelSetupError(f"model {model!r}: {exc}", model=model) from None
    except ValueError as exc:
        if ":" not in model:  # LangChain infers a provider from a few prefixes only (gpt-, claude-, ...)
            raise ModelSetupError(
                f"model {model!r} names no provider, and none can be inferred from the name: write "
                f"'provider:model', e.g. 'openai:{model}' (also for an OpenAI-compatible server with --base-url), "
                f"'ollama:{model}' or 'anthropic:{model}'", model=model) from None
        first = scrub(str(exc), base_url).splitlines()[0]
        raise ModelSetupError(
            f"model {model!r}: {first} Use 'provider:model', e.g. 'openai:gpt-4o-mini'.", model=model
        ) from None
    except Exception as exc:  # provider clients raise their own types, e.g. for missing credentials
        var = KEY_VARIABLES.get(provider, f"{provider.upper()}_API_KEY")
        if not kwargs.get("api_key") and not os.environ.get(var):  # the fact, not the client's wording
            raise ModelSetupError(
                f"model {model!r} needs an API key: set {var} (or use --base-url for a local "
                f"OpenAI-compatible server such as Ollama or vLLM)", model=model, key_variable=var,
            ) from None
        raise ModelSetupError(f"model {model!r} could not be created: {scrub(str(exc), base_url)}",
                              model=model) from None


def check_model_name(model: str) -> None:
    """Refuse a model string with nothing on one side of its ``provider:`` colon, before any client is made."""
    provider, colon, name = model.strip().partition(":")
    if not model.strip() or (colon and not name.strip()) or (colon and not provider.strip()):
        example = f"'{provider.strip() or 'openai'}:gpt-4o-mini'"
        raise ModelSetupError(f"model {model!r} names no model{' after its provider' if provider.strip() else ''}: "
                              f"write 'provider:model', e.g. {example}", model=model)


def check_endpoint(base_url: str, model: str) -> None:
    """Refuse a base URL that is not an ``http(s)://HOST...`` URL, before any call is made (and retried)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        why = ("it has no http:// or https:// scheme" if parts is None or parts.scheme not in ("http", "https")
               else "it names no host")
        raise ModelSetupError(f"base URL {redact_url(base_url)!r} is not a URL the client can call ({why}): write "
                              "http(s)://HOST[:PORT]/v1, e.g. http://127.0.0.1:11434/v1 (Ollama) or "
                              "http://127.0.0.1:8000/v1 (vLLM)", model=model)


def prepare_model(
    model: BaseChatModel, protocol: OutputProtocol, tools: ToolRegistry, answer_tool: dict[str, Any] | None = None,
) -> tuple[OutputProtocol, Runnable[Any, Any]]:
    """The protocol to start with and what the decide node calls (tools bound for native calling).

    ``auto`` starts with native tool calling when the model can bind tools and
    with the JSON protocol when it cannot. A protocol with a ``response_format`` (``json_strict``) has it bound.
    ``answer_tool`` (a structured answer's tool,
    :mod:`reinloop.protocols.output`) is bound after the run's tools.
    """
    extra = [answer_tool] if answer_tool is not None else []
    shape = protocol.response_format(tools, answer_tool["function"]["parameters"] if answer_tool else None)
    if shape is not None:
        return protocol, model.bind(**response_format_kwargs(model, shape))
    if not protocol.native_tools or not (len(tools) or extra):
        return protocol, model
    try:
        return protocol, model.bind_tools([*tools.bindable(), *extra])
    except NotImplementedError:
        fallback = protocol.without_native_tools()
        if fallback is not None:
            return fallback, model
        raise ConfigurationError(
            f"{type(model).__name__} does not support native tool calling; "
            f"use protocol='json', 'react' or 'auto'"
        ) from None


def response_format_kwargs(model: Any, shape: dict[str, Any]) -> dict[str, Any]:
    """The call keywords that send ``shape`` as the request's ``response_format``.

    To an OpenAI-compatible model it goes in the request body (``extra_body``, beside the model's own):
    langchain-openai reads a ``response_format`` keyword with the SDK's ``parse()``, which raises on a reply the
    length cap cut, where every other reply that was cut is a failed step the model is told of.
    """
    if "extra_body" in (getattr(type(model), "model_fields", None) or {}):
        return {"extra_body": {**(getattr(model, "extra_body", None) or {}), "response_format": shape}}
    return {"response_format": shape}


def output_cap(model: Any, max_output_tokens: int | None) -> dict[str, int]:
    """The call keyword that caps ``model``'s reply at ``max_output_tokens`` (``{}``: no cap to send).

    A cap the model object was configured with that is lower stays in force. A model class with
    none of :data:`OUTPUT_CAP_FIELDS` is called as it is (its own settings apply).
    """
    fields = getattr(type(model), "model_fields", {})
    name = next((f for f in OUTPUT_CAP_FIELDS if f in fields), None)
    if max_output_tokens is None or name is None:
        return {}
    own = getattr(model, name, None)
    if isinstance(own, int) and not isinstance(own, bool) and 0 < own <= max_output_tokens:
        return {}
    return {name: max_output_tokens}


def reply_cap(model: Any, cap: dict[str, int]) -> int | None:
    """The most tokens a reply may have: the cap sent with the call (:func:`output_cap`), else the model's own."""
    if cap:
        return next(iter(cap.values()))
    own = next((getattr(model, f, None) for f in OUTPUT_CAP_FIELDS if f in getattr(type(model), "model_fields", {})), None)
    return own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else None


def finish_reason(message: BaseMessage) -> str | None:
    """Why the model stopped writing, as its provider said it (``stop``, ``length``, ``max_tokens`` ...)."""
    meta = getattr(message, "response_metadata", None) or {}
    value = next((meta[k] for k in FINISH_KEYS if meta.get(k)), None)
    return None if value is None else str(getattr(value, "name", value))


def is_truncated(reason: str | None) -> bool:
    """True when a finish reason says the reply was cut off at the token cap."""
    return reason is not None and reason.lower() in TRUNCATED_FINISHES


def invoke_model(ctx: Any, llm: Runnable[Any, Any], prompt: list[BaseMessage], seconds_left: Callable[[], float | None],
                 options: dict[str, Any] | None = None, *, step: int | None = None) -> BaseMessage:
    """Call ``llm`` with the run's retry policy and reply cap; permanent failures raise :class:`ModelCallError`.

    ``options`` are more call keywords (``temperature``, ``seed``: :mod:`reinloop.protocols.repeats`).
    ``step`` tags the call's run metadata (``reinloop_step``), so the tokens LangGraph streams
    (``stream_mode="messages"``) say which step they belong to; ``RunSpec.stream=False`` asks for
    one plain call even when a caller streams.

    A failure whose message quotes the endpoint's credentials (a client that
    puts the URL in its errors) is raised as a :class:`ModelCallError` without
    them: the error is stored with the run and printed.
    """
    cap = output_cap(ctx.model, getattr(ctx, "max_output_tokens", None))
    url = model_url(ctx.model)
    spec = getattr(ctx, "spec", None)
    plain = {"stream": False} if spec is not None and not spec.stream else {}
    config = {"metadata": {"reinloop_step": step}} if step is not None else None
    request = {**cap, **plain, **(options or {})}
    hooks = ctx.call_hooks  # telemetry's call recorder, told of each attempt: reinloop.callbacks
    check_call_cost(ctx, llm, prompt, reply_cap(ctx.model, cap))  # under a cost budget: not made if it would cross it

    def attempt() -> BaseMessage:
        if not hooks:  # telemetry off: the call as it always was, nothing around it
            return llm.invoke(prompt, config, **request)
        return watched(hooks, "chat", "", lambda: llm.invoke(prompt, config, **request), model=llm, inputs=prompt,
                       request=request)

    try:
        return call_with_retries(
            attempt,
            endpoint=endpoint_of(ctx.model),
            policy=ctx.retry,
            seconds_left=seconds_left,
            url=url,
        )
    except ModelCallError:
        raise
    except Exception as exc:  # not a client error: re-raised as it is, unless it quotes the credentials
        if url and scrub(repr(exc), url) != repr(exc):
            raise model_call_error(exc, endpoint_of(ctx.model), url) from None
        raise


def model_label(model: Any) -> str:
    """A model's name as its provider knows it (``gpt-4o-mini``), else its class name."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def endpoint_host(model: Any) -> str | None:
    """Where a model sends its requests, as ``scheme://host:port`` only (no credentials); None: the provider's default."""
    return origin(model_url(model))
