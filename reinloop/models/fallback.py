"""Model fallback chains: when the model in use fails for good, the run moves on to the next one.

A run's models are ``RunSpec.models``: ``(model, *fallback_models)``. Each
fallback is an ``init_chat_model`` string, optionally with its own endpoint
after an ``@`` (``"openai:gpt-4o-mini@http://127.0.0.1:8080/v1"``), or a chat
model object given beside the spec (named ``"<ClassName object>"`` in it).

When to move on is decided from the error's fields
(:class:`~reinloop.errors.ModelCallError`) and the reply's, never their text
(:func:`fallback_reason`, :func:`refusal_reason`):

- ``retries_exhausted``: a transient failure (429, 5xx, a timeout, a malformed
  body) outlasted its retries (``stopped_by == "attempts"``). Retries the run's
  time limit stopped (``stopped_by == "deadline"``) do not move on: the clock is
  the run's, not the model's, and the next model would have no more of it;
- ``context_length``: the endpoint refused the prompt as too long for the
  model (``code == "context_length_exceeded"``, or HTTP 413);
- ``tools_unsupported``: a request with tools was refused naming a tool field
  (``param``: ``tools``, ``tool_choice`` ...) or no field. With
  ``protocol="auto"`` the same model first tries the JSON protocol
  (:mod:`reinloop.protocols.auto`); only a refusal it cannot get round moves on;
- ``refusal``: the model declined (OpenAI's ``refusal`` field, or the finish
  reason ``content_filter``). The refused reply is priced and counted.

The move is sticky: the model in use is ``state["model_index"]`` (checkpointed),
so later steps and a resume go on with the model that answered, and a failover's
retries and waits are paid once, not at every step. A new task on the thread
starts on the primary again. Each model starts with the run's protocol afresh
(``auto`` may bind tools on a model that takes them). When the last model fails
too, the error stands and the run stops as without fallbacks: saved, resumable
when the failure may pass, on the model it was on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ModelCallError, ModelSetupError
from ..state import Fallback, FallbackReason  # noqa: F401  (re-exported: the state records them)

if TYPE_CHECKING:  # RunSpec reads this module, and imports no LangChain
    from ..protocols.base import OutputProtocol


REFUSAL_FINISHES = frozenset({"content_filter"})
"""Finish reasons (lower-cased) that mean the provider withheld the reply."""

ENDPOINT = re.compile(r"@(?=https?://)")
"""Where a fallback's endpoint starts: the first ``@`` before ``http://`` or ``https://`` (model names may hold ``@``)."""


@dataclass(frozen=True)
class ChainModel:
    """A fallback ready to call: the chat model, what decide calls, and the protocol it starts with."""

    model: Any
    llm: Any
    protocol: OutputProtocol

    @classmethod
    def prepared(cls, model: Any, protocol: OutputProtocol, tools: Any,
                 answer_tool: dict[str, Any] | None = None) -> ChainModel:
        """``model`` prepared for ``protocol`` as the primary is (:func:`reinloop.models.resolve.prepare_model`), with the
        structured answer's tool when the run has one."""
        from .resolve import prepare_model

        started, llm = prepare_model(model, protocol, tools, answer_tool)
        return cls(model=model, llm=llm, protocol=started)


def split_endpoint(ref: str) -> tuple[str, str | None]:
    """``("openai:gpt-4o-mini", "http://127.0.0.1:8080/v1")`` from ``"openai:gpt-4o-mini@http://127.0.0.1:8080/v1"``."""
    found = ENDPOINT.search(ref)
    return (ref, None) if found is None else (ref[:found.start()], ref[found.end():])


def fallback_refs(value: Any) -> tuple[str, ...]:
    """Fallback model names from one string or a list of them, each checked."""
    refs = [value] if isinstance(value, str) else value
    if not isinstance(refs, (list, tuple)) or not all(isinstance(r, str) for r in refs):
        raise ConfigurationError(f"fallback_models must be a list of model strings (MODEL or MODEL@BASE_URL) or "
                                 f"chat models, got {value!r}")
    for ref in refs:
        model, _ = split_endpoint(ref.strip())
        if not model:
            raise ConfigurationError(f"fallback model {ref!r} names no model; write MODEL or MODEL@BASE_URL, "
                                     "e.g. 'openai:gpt-4o-mini@http://127.0.0.1:8080/v1'")
    return tuple(r.strip() for r in refs)


def fallback_ref(text: str) -> str:
    """One fallback as the command line gives it (``--fallback-model MODEL@URL``), checked."""
    return fallback_refs(text)[0]


def fallback_reason(error: ModelCallError, tools_sent: bool) -> FallbackReason | None:
    """Why ``error`` (the model's call failed for good; ``tools_sent``: the request carried tools) moves the run on."""
    from ..protocols.auto import TOOL_PARAMS

    if error.retryable and error.stopped_by == "attempts":
        return "retries_exhausted"
    if error.context_exceeded:
        return "context_length"
    if error.rejected and tools_sent and (error.param is None or error.param in TOOL_PARAMS):
        return "tools_unsupported"
    return None


def refusal_reason(message: Any) -> FallbackReason | None:
    """``"refusal"`` when the reply is the model declining (its ``refusal`` field or finish reason), else ``None``."""
    from .resolve import finish_reason

    extra = getattr(message, "additional_kwargs", None) or {}
    reason = (finish_reason(message) or "").lower()
    return "refusal" if extra.get("refusal") or reason in REFUSAL_FINISHES else None


def refusal_problem(message: Any) -> str:
    """What a refusing model said, for the record."""
    said = (getattr(message, "additional_kwargs", None) or {}).get("refusal")
    return f"the model refused: {said}" if isinstance(said, str) and said else "the provider withheld the reply (content_filter)"


def chain_models(refs: Sequence[str], objects: Sequence[Any], timeout: float | None) -> list[Any]:
    """The fallback chat models: each string built (no client retries, as the primary), each label given as an object."""
    from .resolve import resolve_model
    from ..observe.redact import is_redacted
    from ..runs.settings import is_object_label

    given, models = list(objects), []
    for ref in refs:
        if is_object_label(ref):
            if not given:
                raise ConfigurationError(f"fallback model {ref} was a chat model object, which cannot be stored; "
                                         "pass it again (fallback_models=[...] in Python)")
            models.append(given.pop(0))
            continue
        model, url = split_endpoint(ref)
        if url is not None and is_redacted(url):
            raise ConfigurationError(f"fallback model {model} used the endpoint {url}, whose credentials reinloop never "
                                     "stores; pass the fallback again with --fallback-model MODEL@URL")
        try:
            models.append(resolve_model(model, base_url=url, timeout=timeout))
        except ModelSetupError as exc:
            if exc.key_variable is None or url is not None:
                raise
            raise ModelSetupError(  # --base-url is the primary model's: a fallback names its own endpoint
                f"fallback model {model!r} needs an API key: set {exc.key_variable} (or give it a local "
                f"OpenAI-compatible server as MODEL@URL: --fallback-model {model}@http://127.0.0.1:8080/v1)",
                model=model, key_variable=exc.key_variable) from None
    return models
