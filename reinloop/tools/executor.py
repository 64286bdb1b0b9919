"""Running one tool call and turning whatever happens into an observation.

The executor never raises: a tool that raises, returns nothing, or returns a
novel-length string still yields a short observation for the model and an
error flag for the guards.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

EMPTY_RESULT = "ERROR: the tool returned an empty result; check the arguments or try another tool"


def observation_text(result: Any) -> str:
    """A tool's return value as the text the model will read."""
    if isinstance(result, ToolMessage):
        result = result.content
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[... truncated {cut} of {len(text)} characters]"


def error_observation(exc: BaseException) -> str:
    """``ERROR: <Type>: <message>`` for an exception raised by a tool."""
    message = str(exc).strip() or "(no message)"
    return f"ERROR: {type(exc).__name__}: {message[:500]}"


def run_tool(tool: BaseTool, args: dict[str, Any], max_chars: int) -> tuple[str, bool]:
    """Invoke ``tool``; return ``(observation, is_error)``."""
    try:
        result = tool.invoke(args)
    except Exception as exc:  # a tool's failure is the model's information, not ours
        return error_observation(exc), True
    text = observation_text(result)
    if not text.strip():
        return EMPTY_RESULT, True
    return truncate(text, max_chars), False
