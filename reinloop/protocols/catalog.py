"""The output protocols by name: :data:`PROTOCOLS` and :func:`get_protocol`."""

from __future__ import annotations

from ..errors import ConfigurationError
from .auto import AutoProtocol
from .base import OutputProtocol
from .json_protocol import JsonProtocol, StrictJsonProtocol
from .react import ReactProtocol
from .tool_calling import ToolCallingProtocol

PROTOCOLS: dict[str, type[OutputProtocol]] = {
    "tool_calling": ToolCallingProtocol,
    "json": JsonProtocol,
    "react": ReactProtocol,
    "auto": AutoProtocol,
    "json_strict": StrictJsonProtocol,
}


def get_protocol(name: str | OutputProtocol) -> OutputProtocol:
    """The protocol called ``name`` (or ``name`` itself if it already is one)."""
    if isinstance(name, OutputProtocol):
        return name
    try:
        return PROTOCOLS[name]()
    except (KeyError, TypeError):
        raise ConfigurationError(
            f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOLS)}"
        ) from None
