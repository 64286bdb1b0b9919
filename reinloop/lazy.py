"""Package exports loaded on first use: :func:`reinloop.exports`, kept here for the imports that name this module."""

from . import exports

__all__ = ["exports"]
