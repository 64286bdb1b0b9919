"""The nodes of the loop, one module each, and their routers."""

from .approve import approve
from .decide import decide, route_after_decide
from .execute import execute, route_after_execute
from .guard import guard, route_after_guard
from .memorize import memorize
from .parse import parse, route_after_parse
from .validate import route_after_validate, validate

__all__ = [
    "approve",
    "decide",
    "execute",
    "guard",
    "memorize",
    "parse",
    "route_after_decide",
    "route_after_execute",
    "route_after_guard",
    "route_after_parse",
    "route_after_validate",
    "validate",
]
