"""Built-in tools by name, for Python (:func:`builtin`) and the CLI (``--tools``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool

from ..errors import UnknownToolError
from .calculator import calculator
from .demo import db_query, make_weather_tool


def _fixed(tool: BaseTool) -> Callable[..., BaseTool]:
    def factory(**options: Any) -> BaseTool:
        if options:
            raise UnknownToolError(
                f"tool {tool.name!r} takes no options, got {', '.join(sorted(options))}"
            )
        return tool

    return factory


BUILTINS: dict[str, Callable[..., BaseTool]] = {
    "calculator": _fixed(calculator),
    "db_query": _fixed(db_query),
    "get_weather": make_weather_tool,
}
"""Factories of the built-in tools, by tool name."""

DEFAULT_TOOLS: tuple[str, ...] = ("calculator", "db_query", "get_weather")
"""The tools ``reinloop run`` offers when ``--tools`` is not given (the seeds' demo tools)."""


def builtin(name: str, **options: Any) -> BaseTool:
    """A built-in tool by name, e.g. ``builtin("get_weather", failure_rate=0.1)``."""
    try:
        factory = BUILTINS[name]
    except KeyError:
        raise UnknownToolError(
            f"no built-in tool named {name!r}; built-in tools: {', '.join(sorted(BUILTINS))}"
        ) from None
    return factory(**options)


def builtins(names: str | list[str] | tuple[str, ...]) -> list[BaseTool]:
    """Several built-in tools; a string is split on commas (``"calculator,db_query"``)."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    return [builtin(n) for n in names]
