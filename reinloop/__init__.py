"""reinloop: a tool-using LLM agent loop on a short rein.

An explicit LangGraph (decide → parse → validate → execute → memorize →
guard) whose guards stop runaway loops, whose state is typed and
checkpointable, and whose runs can be inspected and resumed.

By role: :func:`run`, :func:`resume`, :func:`list_runs` and :func:`batch` start
and keep runs, :func:`pending_runs` and :func:`approve` answer the calls that wait for approval; :class:`RunSpec` says how a run is made (with :class:`Limits`,
:class:`Memory`, :class:`RetryPolicy`); :class:`Outcome` is how it ended;
:func:`build_graph` is the loop itself, for LangGraph users. Names load on first
use (:func:`exports`, PEP 562), so ``import reinloop`` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"


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


EXPORTS = {
    "Action": ".state",
    "AgentContext": ".context",
    "AgentState": ".state",
    "ConfigurationError": ".errors",
    "Counters": ".state",
    "Database": ".checkpoints",
    "DuplicateToolError": ".errors",
    "Fallback": ".fallback",
    "Limits": ".limits",
    "Memory": ".memory.config",
    "MemoryStore": ".memory.store",
    "ModelCallError": ".errors",
    "ModelSetupError": ".errors",
    "NodeEvent": ".events",
    "NotResumableError": ".errors",
    "Outcome": ".outcome",
    "PostgresCheckpointer": ".checkpoints",
    "Price": ".pricing",
    "ReinloopError": ".errors",
    "ReinloopGraph": ".graph",
    "RetryPolicy": ".retry",
    "RunError": ".errors",
    "RunLog": ".runlog",
    "RunSpec": ".spec",
    "ScriptExhaustedError": ".errors",
    "SettingError": ".errors",
    "SqliteCheckpointer": ".checkpoints",
    "Step": ".state",
    "StepEvent": ".events",
    "StorageError": ".errors",
    "ThreadNotFoundError": ".errors",
    "ToolDatabaseError": ".errors",
    "ToolRegistry": ".tools.registry",
    "UnknownToolError": ".errors",
    "UsageError": ".errors",
    "approve": ".pending",
    "batch": ".batches",
    "build_graph": ".graph",
    "draw_graph": ".drawing",
    "list_runs": ".rundb",
    "open_database": ".checkpoints",
    "open_saver": ".checkpoints",
    "pending_runs": ".pending",
    "resume": ".runs",
    "run": ".runs",
    "run_report": ".report",
    "visualize": ".report",
}
"""Each public name -> the module defining it; loaded on first use."""

__getattr__, __dir__, __all__ = exports(__name__, EXPORTS)
