"""Tools: the registry, the options, the executor, the journal and the built-in tool pack.

Any LangChain tool works unchanged; :func:`configure` attaches reinloop's
options (timeout, retries, transient errors, side effects, parallel safety,
a result validator) without wrapping it. Built-in tools are available by
name through :func:`builtin` and :func:`builtins`; an MCP server's tools
through :func:`mcp`.
"""

from .. import exports

EXPORTS = {
    "BUILTINS": ".catalog",
    "DEFAULT_TOOLS": ".catalog",
    "DocsIndex": ".docs",
    "IndexStats": ".docs",
    "JournalEntry": "..checkpoints.journal",
    "McpServerGone": ".mcpclient",
    "McpTool": ".mcpclient",
    "McpToolError": ".mcpclient",
    "McpTools": ".mcpclient",
    "Place": ".executor",
    "Sandbox": ".files",
    "ToolCall": ".executor",
    "ToolExecutor": ".executor",
    "ToolJournal": "..checkpoints.journal",
    "ToolOptions": ".options",
    "ToolRegistry": ".registry",
    "ToolResult": ".executor",
    "ToolSettings": ".settings",
    "WorkerPool": ".pool",
    "builtin": ".catalog",
    "builtins": ".catalog",
    "calculator": ".arithmetic",
    "configure": ".options",
    "db_insert_tool": ".sql",
    "evaluate": ".arithmetic",
    "mcp": ".mcpclient",
    "options_of": ".options",
    "read_file_tool": ".files",
    "run_tool": ".executor",
    "search_docs_tool": ".docs",
    "sql_query_tool": ".sql",
    "write_file_tool": ".files",
}
"""Each public name -> the module defining it; loaded on first use (:mod:`reinloop`)."""

__getattr__, __dir__, __all__ = exports(__name__, EXPORTS)
