"""Output protocols: how the model says what it wants to do.

Names load on first use (:func:`reinloop.exports`), so a module of this package
(``reinloop.answers`` once it moves here) can be imported without LangChain.
"""

from __future__ import annotations

from .. import exports

EXPORTS = {
    "PROTOCOLS": ".catalog",
    "AutoProtocol": ".auto",
    "JsonProtocol": ".json_protocol",
    "OutputProtocol": ".base",
    "ReactProtocol": ".react",
    "StrictJsonProtocol": ".json_protocol",
    "ToolCallingProtocol": ".tool_calling",
    "get_protocol": ".catalog",
}
"""Each public name -> the module defining it; loaded on first use."""

__getattr__, __dir__, __all__ = exports(__name__, EXPORTS)
