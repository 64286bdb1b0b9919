"""Helpers shared by reinloop's settings dataclasses (:class:`~reinloop.Limits`, :class:`~reinloop.Memory`)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from .errors import ConfigurationError

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
