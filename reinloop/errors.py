"""Exceptions raised by reinloop.

Errors are split by who has to act::

    ReinloopError                 base of everything reinloop raises
    ├── ConfigurationError        the developer: bad arguments to build_graph, the CLI, a tool
    │   ├── DuplicateToolError    two tools share a name
    │   ├── UnknownToolError      a built-in tool name that does not exist
    │   ├── ModelSetupError       a model string or endpoint that cannot be used (no API key, ...)
    │   └── ToolDatabaseError     a tool database that is the run database (--db-tool = --db)
    ├── RunError                  the run: something went wrong while the loop was running
    │   └── ModelCallError        the model endpoint failed and retries did not help
    ├── StorageError              the run database: missing, corrupted, locked, read-only
    │   ├── ThreadNotFoundError   no run with that thread id
    │   └── NotResumableError     the run is finished or has nothing to resume
    └── ScriptExhaustedError      reinloop.testing: a scripted model ran out of replies

Mistakes the *model* makes inside a run (bad JSON, unknown tool, wrong arguments,
a tool that raises) are never raised: they become observations fed back to the
model and are counted by the guards.
"""

from __future__ import annotations


class ReinloopError(Exception):
    """Base class of every exception reinloop raises."""


class ConfigurationError(ReinloopError, ValueError):
    """The developer must fix an argument, option or tool definition."""


class DuplicateToolError(ConfigurationError):
    """Two tools were registered under the same name (``name``; ``sources``: where each came from, when known)."""

    def __init__(self, message: str, *, name: str = "", sources: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.sources = sources


class UnknownToolError(ConfigurationError):
    """A tool name that reinloop does not know."""


class ModelSetupError(ConfigurationError):
    """A model that cannot be created or reached as configured."""


class ToolDatabaseError(ConfigurationError):
    """The database of ``sql_query``/``db_insert`` is reinloop's own run database (``path`` names it)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class RunError(ReinloopError):
    """A run failed in a way the loop could not turn into an observation."""


class ModelCallError(RunError):
    """The model endpoint failed permanently, or transiently beyond its retries."""


class StorageError(ReinloopError):
    """The run database cannot be used as asked."""


class ThreadNotFoundError(StorageError, KeyError):
    """No run is stored under the given thread id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NotResumableError(StorageError):
    """The run exists but there is nothing to resume."""


class ScriptExhaustedError(ReinloopError, AssertionError):
    """A scripted test model was called more times than it has replies."""
