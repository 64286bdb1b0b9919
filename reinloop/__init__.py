"""reinloop: a tool-using LLM agent loop on a short rein.

An explicit LangGraph (decide → parse → validate → execute → memorize →
guard) whose guards stop runaway loops, whose state is typed and
checkpointable, and whose runs can be inspected and resumed.
"""

from .checkpoints import PostgresCheckpointer, SqliteCheckpointer, open_saver
from .context import AgentContext
from .errors import (
    ConfigurationError,
    DuplicateToolError,
    ModelCallError,
    ModelSetupError,
    NotResumableError,
    ReinloopError,
    RunError,
    ScriptExhaustedError,
    StorageError,
    ThreadNotFoundError,
    ToolDatabaseError,
    UnknownToolError,
)
from .graph import ReinloopGraph, build_graph
from .events import StepEvent
from .limits import Limits
from .drawing import draw_graph
from .report import run_report, visualize
from .runlog import RunLog
from .memory import Memory, MemoryStore
from .pricing import Price
from .state import Action, AgentState, Counters, Step
from .tools import ToolRegistry

__version__ = "0.1.0"

__all__ = [
    "Action",
    "AgentContext",
    "AgentState",
    "ConfigurationError",
    "Counters",
    "DuplicateToolError",
    "Limits",
    "Memory",
    "MemoryStore",
    "ModelCallError",
    "ModelSetupError",
    "NotResumableError",
    "PostgresCheckpointer",
    "Price",
    "ReinloopError",
    "ReinloopGraph",
    "RunError",
    "RunLog",
    "ScriptExhaustedError",
    "SqliteCheckpointer",
    "Step",
    "StepEvent",
    "StorageError",
    "ThreadNotFoundError",
    "ToolDatabaseError",
    "ToolRegistry",
    "UnknownToolError",
    "build_graph",
    "draw_graph",
    "open_saver",
    "run_report",
    "visualize",
]
