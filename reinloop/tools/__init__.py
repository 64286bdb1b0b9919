"""Tools: the registry, the options, the executor, the journal and the built-in tool pack.

Any LangChain tool works unchanged; :func:`configure` attaches reinloop's
options (timeout, retries, transient errors, side effects, parallel safety,
a result validator) without wrapping it. Built-in tools are available by
name through :func:`builtin` and :func:`builtins`; an MCP server's tools
through :func:`mcp`.
"""

from .calculator import calculator, evaluate
from .catalog import BUILTINS, DEFAULT_TOOLS, ToolSettings, builtin, builtins
from .demo import (
    GLOSSARY,
    db_query,
    get_weather,
    make_wait_tool,
    make_weather_tool,
    translate,
)
from .docs import DocsIndex, IndexStats, search_docs_tool
from .executor import Place, ToolCall, ToolExecutor, ToolResult, run_tool
from .files import Sandbox, read_file_tool, write_file_tool
from .journal import JournalEntry, ToolJournal, create_journal_table
from .mcpclient import McpServerGone, McpTool, McpToolError, McpTools, mcp
from .options import ToolOptions, configure, options_of
from .pool import WorkerPool
from .registry import ToolRegistry
from .sql import db_insert_tool, sql_query_tool

__all__ = [
    "BUILTINS",
    "DEFAULT_TOOLS",
    "GLOSSARY",
    "DocsIndex",
    "IndexStats",
    "JournalEntry",
    "McpServerGone",
    "McpTool",
    "McpToolError",
    "McpTools",
    "Place",
    "Sandbox",
    "ToolCall",
    "ToolExecutor",
    "ToolJournal",
    "ToolOptions",
    "ToolRegistry",
    "ToolResult",
    "WorkerPool",
    "builtin",
    "ToolSettings",
    "builtins",
    "calculator",
    "configure",
    "create_journal_table",
    "db_insert_tool",
    "db_query",
    "evaluate",
    "get_weather",
    "make_wait_tool",
    "make_weather_tool",
    "mcp",
    "options_of",
    "read_file_tool",
    "run_tool",
    "search_docs_tool",
    "sql_query_tool",
    "translate",
    "write_file_tool",
]
