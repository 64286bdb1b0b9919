"""Structured events: one per node transition, to logging and LangGraph's custom stream.

Every node reports what it did through :func:`emit`. The event goes to the
module's logger (one INFO line, the payload at DEBUG) and to the ``custom``
stream mode, where the CLI console and any caller of ``graph.stream(...,
stream_mode="custom")`` can read it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger("reinloop.events")


def emit(runtime: Any, node: str, summary: str, **data: Any) -> dict[str, Any]:
    """Publish an event from ``node``; returns it."""
    event = {"node": node, "summary": summary, **data}
    logger.info("%s: %s", node, summary)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s payload: %s", node, json.dumps(data, ensure_ascii=False, default=str))
    writer = getattr(runtime, "stream_writer", None)
    if writer is not None:
        writer(event)
    return event
