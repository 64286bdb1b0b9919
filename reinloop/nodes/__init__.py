"""The six nodes of the loop, one module each, and their routers."""

from .decide import decide
from .execute import execute
from .guard import guard, route_after_guard
from .memorize import memorize
from .parse import parse, route_after_parse
from .validate import route_after_validate, validate

__all__ = [
    "decide",
    "execute",
    "guard",
    "memorize",
    "parse",
    "route_after_guard",
    "route_after_parse",
    "route_after_validate",
    "validate",
]
