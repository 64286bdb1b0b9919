"""Turning what the user names into a chat model, and preparing it for a protocol.

A model is any LangChain chat model object, or an ``init_chat_model`` string
such as ``"openai:gpt-4o-mini"``. ``base_url`` points an OpenAI-compatible
client at a local server (Ollama, vLLM, LM Studio, llama.cpp).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from .errors import ConfigurationError, ModelCallError, ModelSetupError
from .protocols.base import OutputProtocol
from .protocols.json_protocol import JsonProtocol
from .redact import scrub
from .retry import call_with_retries, endpoint_of, model_url
from .tools.registry import ToolRegistry

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
    retries: reinloop's own retry policy (:mod:`reinloop.retry`) is the only layer.
    """
    if not isinstance(model, str):
        if base_url is not None:
            raise ConfigurationError("base_url applies to model strings only; configure the model object instead")
        return model
    from langchain.chat_models import init_chat_model

    provider = _provider(model)
    kwargs.setdefault("max_retries", 0)
    if timeout is not None:
        kwargs.setdefault("timeout", timeout)
    if base_url is not None:
        kwargs["base_url"] = base_url
        if provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
            kwargs.setdefault("api_key", "not-needed")  # local servers ignore the key
    try:
        return init_chat_model(model, **kwargs)
    except ImportError as exc:
        raise ModelSetupError(f"model {model!r}: {exc}") from None
    except ValueError as exc:
        first = scrub(str(exc), base_url).splitlines()[0]
        raise ModelSetupError(
            f"model {model!r}: {first} Use 'provider:model', e.g. 'openai:gpt-4o-mini'."
        ) from None
    except Exception as exc:  # provider clients raise their own types for missing credentials
        var = KEY_VARIABLES.get(provider, f"{provider.upper()}_API_KEY")
        if "key" in str(exc).lower() or "credential" in str(exc).lower():
            raise ModelSetupError(
                f"model {model!r} needs an API key: set {var} (or use --base-url for a local "
                f"OpenAI-compatible server such as Ollama or vLLM)"
            ) from None
        raise ModelSetupError(f"model {model!r} could not be created: {scrub(str(exc), base_url)}") from None


def prepare_model(
    model: BaseChatModel, protocol: OutputProtocol, tools: ToolRegistry
) -> tuple[OutputProtocol, Runnable[Any, Any]]:
    """The protocol to start with and what the decide node calls (tools bound for native calling).

    ``auto`` starts with native tool calling when the model can bind tools and
    with the JSON protocol when it cannot.
    """
    if not protocol.native_tools or not len(tools):
        return protocol, model
    try:
        return protocol, model.bind_tools(tools.bindable())
    except NotImplementedError:
        if protocol.name == "auto":
            return JsonProtocol(), model
        raise ConfigurationError(
            f"{type(model).__name__} does not support native tool calling; "
            f"use protocol='json', 'react' or 'auto'"
        ) from None


def invoke_model(ctx: Any, llm: Runnable[Any, Any], prompt: list[BaseMessage], seconds_left: Callable[[], float | None]) -> BaseMessage:
    """Call ``llm`` with the run's retry policy; permanent failures raise :class:`ModelCallError`.

    A failure whose message quotes the endpoint's credentials (a client that
    puts the URL in its errors) is raised as a :class:`ModelCallError` without
    them: the error is stored with the run and printed.
    """
    try:
        return call_with_retries(
            lambda: llm.invoke(prompt),
            endpoint=endpoint_of(ctx.model),
            policy=ctx.retry,
            seconds_left=seconds_left,
            url=model_url(ctx.model),
        )
    except Exception as exc:  # not a client error: re-raised as it is, unless it quotes the credentials
        url = model_url(ctx.model)
        if url and scrub(repr(exc), url) != repr(exc):
            raise ModelCallError(scrub(f"{type(exc).__name__}: {exc}", url)) from None
        raise
