"""Tools: the registry, the options, the executor, the journal and the built-in tools.

Any LangChain tool works unchanged; :func:`configure` attaches reinloop's
options (timeout, retries, transient errors, side effects, parallel safety,
a result validator) without wrapping it.
"""

from .calculator import calculator, evaluate
from .catalog import BUILTINS, DEFAULT_TOOLS, builtin, builtins
from .demo import db_query, get_weather, make_weather_tool
from .executor import Place, ToolCall, ToolExecutor, ToolResult, run_tool
from .journal import JournalEntry, ToolJournal, create_journal_table
from .options import ToolOptions, configure, options_of
from .pool import WorkerPool
from .registry import ToolRegistry

__all__ = [
    "BUILTINS",
    "DEFAULT_TOOLS",
    "JournalEntry",
    "Place",
    "ToolCall",
    "ToolExecutor",
    "ToolJournal",
    "ToolOptions",
    "ToolRegistry",
    "ToolResult",
    "WorkerPool",
    "builtin",
    "builtins",
    "calculator",
    "configure",
    "create_journal_table",
    "db_query",
    "evaluate",
    "get_weather",
    "make_weather_tool",
    "options_of",
    "run_tool",
]
