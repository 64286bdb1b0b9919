"""The first attempt of a call, made before tenacity is set up: shared by tool calls and model calls.

It sits with the tools, the lower of the two layers that retry, so the executor does not import the
model layer for it (:mod:`reinloop.models.retry` re-exports it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenacity import Retrying


def first_then_retried(call: Callable[[], Any], retrying: Callable[[], Retrying]) -> Any:
    """``retrying()(call)``, with the first attempt made before tenacity is set up.

    Most calls succeed at once, and tenacity's set-up and bookkeeping cost more
    Python calls than a scripted model's whole reply. A first failure (any
    exception, as tenacity catches) is handed to tenacity as the outcome of its
    first attempt, so what follows is tenacity's as before: which errors are
    retried, the waits, the stops and the attempt numbers.
    """
    try:
        return call()
    except BaseException as exc:  # noqa: BLE001 - tenacity decides what it means, as when it made the attempt
        failed = [exc]

    def attempt() -> Any:
        if failed:
            raise failed.pop()
        return call()

    return retrying()(attempt)
