"""reinloop's options for a tool, attached to any LangChain tool without wrapping it.

A tool stays the object its author wrote (``@tool``, ``BaseTool``,
``StructuredTool``): :func:`configure` stores a frozen :class:`ToolOptions`
under ``tool.metadata["reinloop"]``, a field every LangChain tool already has,
and the executor reads it back with :func:`options_of`. Nothing is
subclassed, so a tool configured for reinloop still works anywhere else::

    @configure(side_effects=True, timeout=10)
    @tool
    def send_mail(to: str, body: str) -> str:
        ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from ..errors import ConfigurationError

METADATA_KEY = "reinloop"
"""The key of ``tool.metadata`` under which the options are stored."""

Validator = Callable[[str], "str | None"]
"""Checks a tool's result text; returns a problem (the call then counts as failed) or ``None``."""

ApprovalRule = Callable[[dict[str, Any]], bool]
"""Says from a call's validated arguments whether an operator must approve it (``lambda args: args["amount"] > 100``)."""


@dataclass(frozen=True, kw_only=True)
class ToolOptions:
    """How the executor runs one tool. ``None`` means "use the run's :class:`~reinloop.Limits`"."""

    timeout: float | None = None
    """Seconds a call may take, retries and backoff included; ``None``: ``Limits.tool_timeout``."""
    retries: int | None = None
    """Retries after a transient error; ``None``: ``Limits.tool_retries``; ``0``: never retry."""
    transient: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)
    """Exception types worth retrying; any other exception is permanent and reported at once."""
    backoff: float = 0.2
    """First retry delay in seconds; it doubles at each retry, plus up to as much again of jitter."""
    side_effects: bool = False
    """The call changes the world: it is journaled and never re-run after a crash."""
    cacheable: bool = False
    """The result depends only on the arguments (no clock, no outside state, nothing changed by the call): a
    repeat of a call that succeeded is answered from its earlier result, marked as such, unless a side-effecting
    call ran since. Off by default: any other tool runs again at each call (a sensor, a job status, a clock)."""
    parallel_safe: bool = False
    """The call may run at the same time as other parallel-safe calls of the same reply."""
    validator: Validator | None = None
    """Spots a pseudo-success: called with the result text, returns a problem or ``None``."""
    approval: bool | ApprovalRule = False
    """An operator approves each call before it runs (``True``), or the calls this rule picks from their
    arguments; see :mod:`reinloop.tools.approval`. A run's ``RunSpec.approve`` overrides it per tool."""
    refuse_examples: bool = False
    """Refuse an argument that copies a format placeholder (``"<expression>"``) or one of this tool's own
    examples (quoted after "e.g." or "for example" in its description) when neither the task nor a result of
    the run has it; the model is told and calls again. For tools whose examples a weak model copies."""

    def __post_init__(self) -> None:
        for name in ("timeout", "backoff"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ConfigurationError(f"tool option {name} must be a positive number of seconds, got {value!r}")
        if self.retries is not None and (type(self.retries) is not int or self.retries < 0):
            raise ConfigurationError(f"tool option retries must be an integer >= 0, got {self.retries!r}")
        transient = self.transient if isinstance(self.transient, tuple) else (self.transient,)
        if not all(isinstance(t, type) and issubclass(t, BaseException) for t in transient):
            raise ConfigurationError(
                f"tool option transient must be exception classes, e.g. (TimeoutError, ConnectionError), "
                f"got {self.transient!r}"
            )
        object.__setattr__(self, "transient", transient)
        if self.cacheable and self.side_effects:
            raise ConfigurationError("tool options cacheable=True and side_effects=True contradict each other: a call "
                                     "that changes the world must run each time; give side_effects=False with "
                                     "cacheable=True (a pure tool), or leave cacheable off")
        if self.validator is not None and not callable(self.validator):
            raise ConfigurationError(f"tool option validator must be a callable (text) -> problem or None, got {self.validator!r}")
        if not isinstance(self.approval, bool) and not callable(self.approval):
            raise ConfigurationError(f"tool option approval must be True, False or a callable (args) -> bool, "
                                     f"e.g. lambda args: args['amount'] > 100; got {self.approval!r}")

    def effective_timeout(self, default: float | None) -> float | None:
        """The timeout to apply: this tool's own, else the run's default."""
        return self.timeout if self.timeout is not None else default

    def effective_retries(self, default: int | None) -> int:
        """How many retries to allow: this tool's own, else the run's default (``None`` = 0)."""
        value = self.retries if self.retries is not None else default
        return value or 0


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ToolOptions))
"""The options :func:`configure` accepts."""


DEFAULT_OPTIONS = ToolOptions()
"""The options of a tool never configured: one frozen value, not one made and checked at every call of every step."""


def options_of(tool: BaseTool) -> ToolOptions:
    """The reinloop options of ``tool`` (defaults when it was never configured)."""
    stored = (tool.metadata or {}).get(METADATA_KEY)
    if isinstance(stored, ToolOptions):
        return stored
    if isinstance(stored, dict):
        return ToolOptions(**stored)
    return DEFAULT_OPTIONS


def configure(tool: BaseTool | None = None, /, **options: Any) -> Any:
    """Attach reinloop options to a LangChain tool and return the same tool.

    ``configure(my_tool, timeout=5, side_effects=True)``, or as a decorator
    above ``@tool``: ``@configure(parallel_safe=True)``. Options given in an
    earlier call are kept unless overridden. Valid options: see
    :class:`ToolOptions`.
    """
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ConfigurationError(
            f"unknown tool option(s) {', '.join(unknown)}; valid options: {', '.join(OPTION_NAMES)}"
        )
    if tool is None:
        return lambda t: configure(t, **options)
    if not isinstance(tool, BaseTool):
        raise ConfigurationError(
            f"configure() takes a LangChain tool (decorate the function with @tool first), "
            f"got {type(tool).__name__}: {tool!r}"
        )
    merged = dataclasses.replace(options_of(tool), **options)
    # A new dict, not an update in place: copies of a tool must not share their options.
    tool.metadata = {**(tool.metadata or {}), METADATA_KEY: merged}
    return tool


def function_tool(func: Callable[..., Any], *, name: str, description: str, args_schema: Any, **options: Any) -> BaseTool:
    """A LangChain tool calling ``func``, its arguments checked by ``args_schema``, with reinloop ``options``
    attached (:func:`configure`): how every built-in tool is made."""
    tool = StructuredTool.from_function(func, name=name, description=description, args_schema=args_schema)
    return configure(tool, **options)
