"""Calling the model through failures: what to retry, how long to wait, when to give up.

Transient failures (HTTP 429 and 5xx, timeouts, dropped connections, and
malformed 200 responses, which the ``openai`` client surfaces as raw
``JSONDecodeError``/``TypeError``/``IndexError`` and never retries) are retried
with capped exponential backoff and jitter, honouring ``Retry-After``. No wait
ever runs past the run's remaining ``max_seconds``. Anything else (400, 401,
403, 404 ...) fails at once with one line naming the endpoint and the fix.

When reinloop builds the model from a string it turns the client's own retries
off, so there is one retry layer, not two multiplied together.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError, ModelCallError, ScriptExhaustedError
from .redact import redact_url, scrub
from .terminal import safe_text

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
MALFORMED = (json.JSONDecodeError, TypeError, IndexError, KeyError, AttributeError)
FIXES = {
    400: "the request was rejected: check the model name, the protocol (try --protocol json) and the parameters",
    401: "the API key was refused: check OPENAI_API_KEY (or the provider's key variable)",
    403: "the API key may not use this model: check the key's permissions",
    404: "the model or endpoint does not exist: check --model and --base-url",
    413: "the prompt is too large: lower --max-prompt-tokens or --window-steps",
    422: "the request was rejected: check the model name and parameters",
}


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
            raise ConfigurationError(f"RetryPolicy.attempts must be at least 1 (one call, no retry), got {self.attempts}")
        if self.base_delay < 0 or self.max_delay < 0 or (self.timeout is not None and self.timeout <= 0):
            raise ConfigurationError(
                f"RetryPolicy delays must be >= 0 and timeout > 0 or None, got {self!r}"
            )


def status_of(exc: BaseException) -> int | None:
    """The HTTP status carried by a client exception, if any."""
    status = getattr(exc, "status_code", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not see."""
    if isinstance(exc, ScriptExhaustedError):
        return False
    status = status_of(exc)
    if status is not None and not 200 <= status < 300:  # a 2xx here is a malformed body
        return status in RETRYABLE_STATUS
    name = type(exc).__name__.lower()
    if isinstance(exc, (TimeoutError, ConnectionError)) or "timeout" in name or "connection" in name:
        return True
    return isinstance(exc, MALFORMED)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``Retry-After``), if it said."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def describe(exc: BaseException, endpoint: str) -> str:
    """One line: what failed, where, and the fix (the server's text escaped for a terminal)."""
    status = status_of(exc)
    # the server's own text: shown escaped, since it goes to logs and terminals as it is
    detail = safe_text(" ".join(str(exc).split())[:200]) or type(exc).__name__
    if status is not None and 200 <= status < 300:
        return f"model endpoint {endpoint} sent a malformed response: {type(exc).__name__}: {detail}"
    if status is not None:
        fix = FIXES.get(status, "see the provider's status page")
        return f"model endpoint {endpoint} answered HTTP {status}: {fix} ({detail})"
    return f"model endpoint {endpoint} failed: {type(exc).__name__}: {detail}"


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

    ``url`` is the endpoint as configured: its credentials are taken out of
    every message, should the server quote them back.
    """

    def explain(exc: BaseException) -> str:
        return scrub(describe(exc, endpoint), url)

    for attempt in range(1, policy.attempts + 1):
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                if status_of(exc) is not None or _is_client_error(exc):
                    raise ModelCallError(explain(exc)) from exc
                raise
            wait = retry_after(exc)
            if wait is None:
                wait = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            left = seconds_left()
            if attempt == policy.attempts:
                raise ModelCallError(
                    f"{explain(exc)}; gave up after {attempt} attempts. "
                    f"The run is saved: resume it when the endpoint is back"
                ) from exc
            if left is not None and wait >= left:
                raise ModelCallError(
                    f"{explain(exc)}; not retrying: the next wait ({wait:.1f} s) is longer "
                    f"than the {max(left, 0):.1f} s left of max_seconds. The run is saved: resume it with more time"
                ) from exc
            logger.warning("model call failed (attempt %d/%d), retrying in %.1f s: %s",
                           attempt, policy.attempts, wait, explain(exc))
            sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _is_client_error(exc: BaseException) -> bool:
    module = type(exc).__module__.split(".")[0]
    return module in {"openai", "httpx", "anthropic", "httpx2"}
