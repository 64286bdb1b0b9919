"""Calling the model through failures: what to retry, how long to wait, when to give up.

Transient failures (HTTP 429 and 5xx, timeouts, dropped connections, and
malformed 200 responses, which the ``openai`` client surfaces as raw
``JSONDecodeError``/``TypeError``/``IndexError`` and never retries) are retried
with capped exponential backoff and jitter, honouring ``Retry-After``. No wait
ever runs past the run's remaining ``max_seconds``. Anything else (400, 401,
403, 404 ...) fails at once with one line naming the endpoint and the fix.

The loop is ``tenacity``'s, as for tool calls (:mod:`reinloop.tools.executor`);
this module only says what is transient (from the exception's type and status
code, never its text), how long to wait, and what the error says when the
retries end (:class:`~reinloop.errors.ModelCallError`, its facts as fields).

When reinloop builds the model from a string it turns the client's own retries
off, so there is one retry layer, not two multiplied together.
"""

from __future__ import annotations

import json
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from ..errors import CONTEXT_CODES, ConfigurationError, ModelCallError, ScriptExhaustedError, SettingError, StoppedBy
from ..observe.redact import redact_url, scrub
from ..observe.terminal import safe_text
from ..tools.attempts import first_then_retried  # noqa: F401  (re-exported: tool calls share it)

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
MALFORMED = (json.JSONDecodeError, TypeError, IndexError, KeyError, AttributeError)
"""What the ``openai`` client raises for a 200 reply whose body it cannot read."""

CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("OpenAIError", ("APIConnectionError",)),  # APITimeoutError is an APIConnectionError
    "anthropic": ("AnthropicError", ("APIConnectionError",)),
    "httpx": ("HTTPError", ("TimeoutException", "NetworkError", "RemoteProtocolError")),
    "httpx2": ("HTTPError", ("TimeoutException", "NetworkError", "RemoteProtocolError")),
    "requests": ("RequestException", ("Timeout", "ConnectionError")),
}
"""Model clients by module: the base class of their errors, and the classes of their transient ones."""


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently a model call is retried."""

    attempts: int = 4
    """Calls in all, the first included."""
    base_delay: float = 0.5
    max_delay: float = 20.0
    """Cap of one wait, unless the server's ``Retry-After`` asks for longer."""
    timeout: float | None = 60.0
    """Seconds one request may take (applied to models reinloop builds from a string)."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise SettingError("RetryPolicy", "attempts", "must be at least 1 (one call, no retry)", value=self.attempts)
        if self.base_delay < 0 or self.max_delay < 0 or (self.timeout is not None and self.timeout <= 0):
            raise ConfigurationError(
                f"RetryPolicy delays must be >= 0 and timeout > 0 or None, got {self!r}"
            )


def client_classes() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The error classes of the model clients loaded in this process: all of them, and the transient ones.

    A client that is not imported cannot have raised: it is not imported here either.
    """
    every: list[type[BaseException]] = []
    transient: list[type[BaseException]] = [TimeoutError, ConnectionError]
    for name, (base, passing) in CLIENTS.items():
        module = sys.modules.get(name)
        if module is None:
            continue
        every += [c for c in [getattr(module, base, None)] if isinstance(c, type)]
        transient += [c for c in (getattr(module, p, None) for p in passing) if isinstance(c, type)]
    return tuple(every), tuple(transient)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status carried by a client exception (``status_code``, or its response's), if any."""
    status = getattr(exc, "status_code", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def param_of(exc: BaseException) -> str | None:
    """The request field the endpoint named as the cause (``openai``'s ``param``), if it did."""
    param = getattr(exc, "param", None)
    return param if isinstance(param, str) and param else None


def code_of(exc: BaseException) -> str | None:
    """The error code the endpoint gave (``openai``'s ``code``: ``context_length_exceeded`` ...), if it did; else its
    error type, first, when that names a prompt too long for the context (llama.cpp's server:
    ``exceed_context_size_error``, with the HTTP status as its ``code``)."""
    kind = getattr(exc, "type", None)
    if isinstance(kind, str) and kind in CONTEXT_CODES:
        return kind
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else None


def is_client_error(exc: BaseException) -> bool:
    """True for an error a model client raised about a call (as opposed to a bug, or a test's script running out)."""
    every, transient = client_classes()
    return status_of(exc) is not None or isinstance(exc, every + transient)


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not see."""
    if isinstance(exc, ScriptExhaustedError):
        return False
    status = status_of(exc)
    if status is not None and not 200 <= status < 300:  # a 2xx here is a malformed body
        return status in RETRYABLE_STATUS
    return isinstance(exc, client_classes()[1]) or isinstance(exc, MALFORMED)


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``Retry-After``), if it said."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def model_call_error(exc: BaseException, endpoint: str, url: str | None = None, *, attempts: int = 1,
                     stopped_by: StoppedBy = "permanent", next_wait: float | None = None,
                     seconds_left: float | None = None) -> ModelCallError:
    """The :class:`ModelCallError` for a failed call: the facts of ``exc`` as fields, its text escaped and scrubbed.

    ``url`` is the endpoint as configured: its credentials are taken out of the
    client's text, should the server have quoted them back.
    """
    # the server's own text: kept escaped, since it goes to logs and terminals as it is
    detail = scrub(safe_text(" ".join(str(exc).split())[:200]), url)
    return ModelCallError(
        endpoint=endpoint, error_type=type(exc).__name__, detail=detail, status_code=status_of(exc),
        param=param_of(exc), code=code_of(exc), retryable=is_transient(exc), stopped_by=stopped_by, attempts=attempts,
        next_wait=next_wait, seconds_left=seconds_left,
    )


def model_url(model: Any) -> str | None:
    """Where a model sends its requests, as configured (credentials included), if it says."""
    for attr in ("openai_api_base", "base_url", "api_base", "endpoint"):
        value = getattr(model, attr, None)
        if value:
            return str(value)
    return None


def endpoint_of(model: Any) -> str:
    """Where a model sends its requests, for error messages (credentials removed)."""
    url = model_url(model)
    return redact_url(url) if url else type(model).__name__


class wait_backoff_or_server(wait_base):  # noqa: N801 - tenacity's naming
    """The server's ``Retry-After`` when it says, else capped exponential backoff with jitter (half to full)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.backoff = wait_exponential(multiplier=policy.base_delay, max=policy.max_delay)

    def __call__(self, retry_state: RetryCallState) -> float:
        asked = retry_after(retry_state.outcome.exception() if retry_state.outcome else None)
        return asked if asked is not None else self.backoff(retry_state) * random.uniform(0.5, 1.0)


class stop_at_deadline(stop_base):  # noqa: N801 - tenacity's naming
    """Stop when the next wait would run past the run's time limit (``seconds_left()``; ``None``: no limit)."""

    def __init__(self, seconds_left: Callable[[], float | None]) -> None:
        self.seconds_left = seconds_left

    def __call__(self, retry_state: RetryCallState) -> bool:
        left = self.seconds_left()
        return left is not None and (retry_state.upcoming_sleep or 0.0) >= left


def call_with_retries(
    call: Callable[[], Any],
    *,
    endpoint: str,
    policy: RetryPolicy,
    seconds_left: Callable[[], float | None],
    sleep: Callable[[float], None] = time.sleep,
    url: str | None = None,
) -> Any:
    """Run ``call`` until it succeeds, a permanent error occurs, or retries or time run out.

    Client errors end as a :class:`ModelCallError`; anything else (a bug, a
    test script that ran out) is raised as it is, at once. ``url`` is the
    endpoint as configured: its credentials are taken out of every message.
    """

    def gave_up(state: RetryCallState) -> Any:
        exc = state.outcome.exception() if state.outcome else None
        assert exc is not None  # tenacity stops only after a failed attempt here
        stopped_by: StoppedBy = "attempts" if state.attempt_number >= policy.attempts else "deadline"
        raise model_call_error(exc, endpoint, url, attempts=state.attempt_number, stopped_by=stopped_by,
                               next_wait=state.upcoming_sleep, seconds_left=seconds_left()) from exc

    def warn(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        logger.warning("model call failed (attempt %d/%d), retrying in %.1f s: %s", state.attempt_number,
                       policy.attempts, state.upcoming_sleep, model_call_error(exc, endpoint, url).problem)

    def retrying() -> Retrying:
        return Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(policy.attempts) | stop_at_deadline(seconds_left),
            wait=wait_backoff_or_server(policy),
            sleep=sleep,
            before_sleep=warn,
            retry_error_callback=gave_up,
        )

    try:
        return first_then_retried(call, retrying)
    except ModelCallError:
        raise
    except Exception as exc:  # not retryable: a client error fails at once, in one line; anything else as it is
        if is_client_error(exc):
            raise model_call_error(exc, endpoint, url) from exc
        raise
