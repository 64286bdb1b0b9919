"""Turning what the user names into a chat model, and preparing it for a protocol.

A model is any LangChain chat model object, or an ``init_chat_model`` string
such as ``"openai:gpt-4o-mini"``. ``base_url`` points an OpenAI-compatible
client at a local server (Ollama, vLLM, LM Studio, llama.cpp).
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from .errors import ConfigurationError, ModelSetupError
from .protocols.base import OutputProtocol
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


def resolve_model(model: str | BaseChatModel, *, base_url: str | None = None, **kwargs: Any) -> BaseChatModel:
    """A chat model object from an object or an ``init_chat_model`` string."""
    if not isinstance(model, str):
        if base_url is not None:
            raise ConfigurationError("base_url applies to model strings only; configure the model object instead")
        return model
    from langchain.chat_models import init_chat_model

    provider = _provider(model)
    if base_url is not None:
        kwargs["base_url"] = base_url
        if provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
            kwargs.setdefault("api_key", "not-needed")  # local servers ignore the key
    try:
        return init_chat_model(model, **kwargs)
    except ImportError as exc:
        raise ModelSetupError(f"model {model!r}: {exc}") from None
    except ValueError as exc:
        first = str(exc).splitlines()[0]
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
        raise ModelSetupError(f"model {model!r} could not be created: {exc}") from None


def prepare_model(model: BaseChatModel, protocol: OutputProtocol, tools: ToolRegistry) -> Runnable[Any, Any]:
    """What the decide node calls: tools bound through the API for native tool calling."""
    if not protocol.native_tools or not len(tools):
        return model
    try:
        return model.bind_tools(list(tools))
    except NotImplementedError:
        raise ConfigurationError(
            f"{type(model).__name__} does not support native tool calling; "
            f"use protocol='json' or protocol='react'"
        ) from None
