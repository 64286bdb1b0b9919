"""Helpers shared by reinloop's settings dataclasses (:class:`~reinloop.Limits`, :class:`~reinloop.Memory`)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from ..errors import ConfigurationError

T = TypeVar("T")


def replace_known(settings: T, changes: dict[str, Any], *, unknown: str, valid: str) -> T:
    """A copy of the dataclass ``settings`` with ``changes``; an unknown name is a :class:`ConfigurationError`.

    ``unknown`` and ``valid`` name the settings in the message, e.g. ``"limit(s)"`` and ``"limits"``.
    """
    names = {f.name for f in dataclasses.fields(settings)}  # type: ignore[arg-type]
    wrong = sorted(set(changes) - names)
    if wrong:
        raise ConfigurationError(f"unknown {unknown} {', '.join(wrong)}; valid {valid}: {', '.join(sorted(names))}")
    return dataclasses.replace(settings, **changes)  # type: ignore[type-var]


def is_object_label(value: Any) -> bool:
    """True for a name :func:`object_label` made: the object has to be given again."""
    return isinstance(value, str) and value.startswith("<") and value.endswith(" object>")


DEFAULT_MAX_OUTPUT_TOKENS = 1024
"""Tokens a model may write per agent step. A step is one tool call (30-150 tokens with a thought) or a
final answer; 1024 leaves room for a long answer (about 750 English words) while a model that rambles
or loops is cut after 1024 tokens (about 20 s at 50 tokens/s) instead of running to its context end."""
TOOL_DETAILS: tuple[str, ...] = ("full", "compact")
"""How much of each tool the model is shown (:mod:`reinloop.tools.detail`)."""
