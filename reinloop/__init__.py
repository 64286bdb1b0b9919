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
from collections.abc import Callable, Mapping, Sequence
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


def moved_names(package: str, target: str, names: Sequence[str],
                public: Sequence[str] = ()) -> Callable[[str], Any]:
    """``__getattr__`` of ``package``, a module that became a package: its old ``names`` resolve from ``target``
    (the module that now holds them) with a DeprecationWarning, warned once; ``public`` ones without a warning."""
    import warnings

    def __getattr__(name: str) -> Any:
        if name not in names and name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if name not in public:
            warnings.warn(f"{package}.{name} moved to {target}.{name}; import it from there (the old path goes in the "
                          "next release)", DeprecationWarning, stacklevel=2)
        value = getattr(importlib.import_module(target), name)
        setattr(importlib.import_module(package), name, value)  # found directly next time
        return value

    return __getattr__


EXPORTS = {
    "Action": ".state",
    "AgentContext": ".nodes.context",
    "AgentState": ".state",
    "AlreadyAnsweredError": ".errors",
    "ConfigurationError": ".errors",
    "Counters": ".state",
    "Database": ".checkpoints",
    "DuplicateToolError": ".errors",
    "Fallback": ".models.fallback",
    "Limits": ".runs.limits",
    "Memory": ".protocols.memory.config",
    "MemoryStore": ".checkpoints.memories",
    "ModelCallError": ".errors",
    "ModelSetupError": ".errors",
    "NodeEvent": ".observe.events",
    "NotReplayableError": ".errors",
    "NotResumableError": ".errors",
    "Outcome": ".runs.outcome",
    "PostgresCheckpointer": ".checkpoints",
    "Price": ".models.pricing",
    "ReinloopError": ".errors",
    "ReinloopGraph": ".graph",
    "RetryPolicy": ".models.retry",
    "RunError": ".errors",
    "RunLog": ".checkpoints.runlog",
    "RunSpec": ".runs.spec",
    "RunStoppedError": ".errors",
    "ScriptExhaustedError": ".errors",
    "SettingError": ".errors",
    "SqliteCheckpointer": ".checkpoints",
    "Step": ".state",
    "StepEvent": ".observe.events",
    "StorageError": ".errors",
    "StoredDataError": ".errors",
    "StoredNameError": ".errors",
    "TaskTooLargeError": ".errors",
    "TelemetrySetupError": ".errors",
    "ThreadNotFoundError": ".errors",
    "ToolDatabaseError": ".errors",
    "ToolRegistry": ".tools.registry",
    "UnknownToolError": ".errors",
    "UsageError": ".errors",
    "approve": ".runs.pending",
    "batch": ".runs.batches",
    "build_graph": ".graph",
    "draw_graph": ".observe.pictures",
    "list_runs": ".runs.rundb",
    "open_database": ".checkpoints",
    "open_saver": ".checkpoints",
    "pending_runs": ".runs.pending",
    "resume": ".runs.api",
    "run": ".runs.api",
    "run_report": ".observe.report",
    "visualize": ".observe.report",
}
"""Each public name -> the module defining it; loaded on first use."""

__getattr__, __dir__, __all__ = exports(__name__, EXPORTS)


# ---- old module paths, kept for one release (issue 40): ``import reinloop.spec`` warns and gives
# ``reinloop.runs.spec``. Written by tools/restructure.py; delete this block in the release after.
MOVED = {
    'reinloop.answers': 'reinloop.protocols.answers',
    'reinloop.approval': 'reinloop.tools.approval',
    'reinloop.batch_console': 'reinloop.cli.batch_console',
    'reinloop.batches': 'reinloop.runs.batches',
    'reinloop.bounds': 'reinloop.tools.bounds',
    'reinloop.breaks': 'reinloop.runs.breaks',
    'reinloop.caching': 'reinloop.models.caching',
    'reinloop.callbacks': 'reinloop.observe.callbacks',
    'reinloop.cli_approve': 'reinloop.cli.approve',
    'reinloop.cli_options': 'reinloop.cli.options',
    'reinloop.cli_runs': 'reinloop.cli.runs',
    'reinloop.console': 'reinloop.observe.console',
    'reinloop.context': 'reinloop.nodes.context',
    'reinloop.demo.scenarios': 'reinloop.cli.demo',
    'reinloop.demo.tools': 'reinloop.tools.demo',
    'reinloop.drawing': 'reinloop.observe.drawing',
    'reinloop.events': 'reinloop.observe.events',
    'reinloop.fallback': 'reinloop.models.fallback',
    'reinloop.limits': 'reinloop.runs.limits',
    'reinloop.local_models': 'reinloop.models.local',
    'reinloop.location': 'reinloop.observe.location',
    'reinloop.memory': 'reinloop.protocols.memory',
    'reinloop.memory.config': 'reinloop.protocols.memory.config',
    'reinloop.memory.embeddings': 'reinloop.protocols.memory.embeddings',
    'reinloop.memory.explain': 'reinloop.protocols.memory.explain',
    'reinloop.memory.feedback': 'reinloop.protocols.memory.feedback',
    'reinloop.memory.gist': 'reinloop.tools.gist',
    'reinloop.memory.ledger': 'reinloop.protocols.memory.ledger',
    'reinloop.memory.longterm': 'reinloop.protocols.memory.longterm',
    'reinloop.memory.manager': 'reinloop.protocols.memory.manager',
    'reinloop.memory.memo': 'reinloop.protocols.memory.memo',
    'reinloop.memory.prompt': 'reinloop.protocols.memory.prompt',
    'reinloop.memory.store': 'reinloop.checkpoints.memories',
    'reinloop.memory.summary': 'reinloop.protocols.memory.summary',
    'reinloop.memory.tokens': 'reinloop.protocols.memory.tokens',
    'reinloop.memory.window': 'reinloop.protocols.memory.window',
    'reinloop.memory.wrapup': 'reinloop.protocols.memory.wrapup',
    'reinloop.outcome': 'reinloop.runs.outcome',
    'reinloop.output': 'reinloop.protocols.output',
    'reinloop.pending': 'reinloop.runs.pending',
    'reinloop.pricing': 'reinloop.models.pricing',
    'reinloop.profiles': 'reinloop.protocols.profiles',
    'reinloop.profiles.small_model': 'reinloop.protocols.profiles.small_model',
    'reinloop.raster': 'reinloop.observe.raster',
    'reinloop.redact': 'reinloop.observe.redact',
    'reinloop.repeats': 'reinloop.protocols.repeats',
    'reinloop.replay': 'reinloop.runs.replay',
    'reinloop.report': 'reinloop.observe.report',
    'reinloop.retry': 'reinloop.models.retry',
    'reinloop.run_record': 'reinloop.observe.record',
    'reinloop.rundb': 'reinloop.runs.rundb',
    'reinloop.runlog': 'reinloop.checkpoints.runlog',
    'reinloop.scripted': 'reinloop.models.scripted',
    'reinloop.server': 'reinloop.cli.server',
    'reinloop.settings': 'reinloop.runs.settings',
    'reinloop.simulation': 'reinloop.models.simulation',
    'reinloop.spec': 'reinloop.runs.spec',
    'reinloop.telemetry': 'reinloop.observe.telemetry',
    'reinloop.terminal': 'reinloop.observe.terminal',
    'reinloop.tools.journal': 'reinloop.checkpoints.journal',
}
"""Each module path before the restructure -> where that module is now."""


class _MovedModules:
    """Finds an old module path: imports the module at its new path under the old name too, and warns."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> object:
        import importlib.machinery
        import warnings

        if name not in MOVED:
            return None
        warnings.warn(f"{name} moved to {MOVED[name]}; import it from there (the old path goes in the next "
                      "release)", DeprecationWarning, stacklevel=3)
        module = importlib.import_module(MOVED[name])
        return importlib.machinery.ModuleSpec(name, _Alias(module), is_package=hasattr(module, "__path__"))


class _Alias:
    """The loader of an old module path: the module at its new path, not a copy."""

    def __init__(self, module: object) -> None:
        self.module, self.spec = module, getattr(module, "__spec__", None)

    def create_module(self, spec: object) -> object:
        return self.module

    def exec_module(self, module: object) -> None:
        """Nothing to run: the module ran at its new path; it keeps its own spec (import set the old one)."""
        module.__spec__ = self.spec  # type: ignore[attr-defined]


import sys as _sys  # noqa: E402

if _MovedModules not in _sys.meta_path:
    _sys.meta_path.insert(0, _MovedModules)  # before the path finder, or reinloop.memory.tokens would load twice
