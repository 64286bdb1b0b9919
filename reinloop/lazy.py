"""Package exports loaded on first use (PEP 562), so ``reinloop --help`` does not load LangChain.

A package's ``__init__`` maps each public name to the module that defines it;
``from reinloop import run`` then imports :mod:`reinloop.runs` and nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and the sorted ``__all__`` of ``package``: name -> relative module (``".runs"``) defining it."""

    def __getattr__(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        setattr(importlib.import_module(package), name, value)  # found directly next time
        return value

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
