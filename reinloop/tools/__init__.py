"""Tools: the registry, the executor and the built-in tool pack."""

from .calculator import calculator, evaluate
from .catalog import BUILTINS, DEFAULT_TOOLS, builtin, builtins
from .demo import db_query, get_weather, make_weather_tool
from .registry import ToolRegistry

__all__ = [
    "BUILTINS",
    "DEFAULT_TOOLS",
    "ToolRegistry",
    "builtin",
    "builtins",
    "calculator",
    "db_query",
    "evaluate",
    "get_weather",
    "make_weather_tool",
]
