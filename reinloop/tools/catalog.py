"""Built-in tools by name, for Python (:func:`builtin`, :func:`builtins`) and the CLI (``--tools``).

Each name maps to a factory that returns a *fresh* tool, configured with its
reinloop options, so configuring one copy never changes another. Tools that
work on the user's data need a location: a sandbox directory (``read_file``,
``write_file``), a SQLite file (``sql_query``, ``db_insert``) or a folder of
documents (``search_docs``). :func:`builtins` takes those as shared settings,
the way the CLI's ``--sandbox``, ``--db-tool`` and ``--docs`` give them, and
says which one is missing.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool

from ..errors import ConfigurationError, UnknownToolError
from .arithmetic import calculator
from .demo import db_query, make_wait_tool, make_weather_tool, translate
from .docs import Progress, search_docs_tool
from .files import read_file_tool, write_file_tool
from .settings import DEFAULT_TOOLS, MAX_FILE_BYTES, MAX_INSERT_VALUE_BYTES, WRITE_QUOTA_BYTES, ToolSettings
from .sql import db_insert_tool, sql_query_tool


def _fixed(tool: BaseTool) -> Callable[..., BaseTool]:
    def factory(**options: Any) -> BaseTool:
        if options:
            raise UnknownToolError(
                f"tool {tool.name!r} takes no options, got {', '.join(sorted(options))}"
            )
        return tool.model_copy(update={"metadata": dict(tool.metadata or {})})

    return factory


BUILTINS: dict[str, Callable[..., BaseTool]] = {
    "calculator": _fixed(calculator),
    "db_insert": db_insert_tool,
    "db_query": _fixed(db_query),
    "get_weather": make_weather_tool,
    "read_file": read_file_tool,
    "search_docs": search_docs_tool,
    "sql_query": sql_query_tool,
    "translate": _fixed(translate),
    "wait": make_wait_tool,
    "write_file": write_file_tool,
}
"""Factories of the built-in tools, by tool name."""

__all__ = ["BUILTINS", "DEFAULT_TOOLS", "SETTINGS", "ToolSettings", "builtin", "builtins"]

SETTINGS: dict[str, tuple[str, str]] = {
    "read_file": ("sandbox", "root"),
    "write_file": ("sandbox", "root"),
    "sql_query": ("db", "path"),
    "db_insert": ("db", "path"),
    "search_docs": ("docs", "folder"),
}
"""Tool name -> (shared setting of :func:`builtins`, the factory's keyword for it)."""


def builtin(name: str, **options: Any) -> BaseTool:
    """A built-in tool by name, e.g. ``builtin("sql_query", path="shop.db")``."""
    try:
        factory = BUILTINS[name]
    except KeyError:
        raise UnknownToolError(
            f"no built-in tool named {name!r}; built-in tools: {', '.join(sorted(BUILTINS))}"
        ) from None
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise ConfigurationError(f"bad option for built-in tool {name!r}: {exc}") from None
    tool = factory(**options)
    tool.metadata = {**(tool.metadata or {}), "builtin": True}  # so a name clash can say where each tool came from
    return tool


def builtins(
    names: str | list[str] | tuple[str, ...],
    *,
    sandbox: str | os.PathLike[str] | None = None,
    db: str | os.PathLike[str] | None = None,
    docs: str | os.PathLike[str] | None = None,
    db_tables: str | None = None,
    write_quota: int | None = WRITE_QUOTA_BYTES,
    max_file_bytes: int | None = MAX_FILE_BYTES,
    max_value_bytes: int | None = MAX_INSERT_VALUE_BYTES,
    progress: Progress | None = None,
) -> list[BaseTool]:
    """Several built-in tools; a string is split on commas (``"calculator,sql_query"``).

    ``sandbox`` is the directory of ``read_file``/``write_file``, ``db`` the
    SQLite file of ``sql_query``/``db_insert`` (``db_tables`` names the
    tables ``db_insert`` may write; it has to be given), ``docs`` the folder
    of ``search_docs`` (``progress`` reports its indexing). ``write_quota`` is
    the bytes ``write_file`` may write in one run, ``max_file_bytes`` its cap
    per file, ``max_value_bytes`` ``db_insert``'s cap per value (``None``: off).
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    shared = {"sandbox": sandbox, "db": db, "docs": docs}
    tools = []
    for name in names:
        options: dict[str, Any] = {}
        if name in SETTINGS:
            setting, keyword = SETTINGS[name]
            options[keyword] = shared[setting]
        if name == "db_insert":
            options.update(tables=db_tables, max_value_bytes=max_value_bytes)
        if name == "write_file":
            options.update(quota=write_quota, max_file_bytes=max_file_bytes)
        if name == "search_docs":
            options["sandbox"] = sandbox  # hits then name paths read_file opens, when the docs are in the sandbox
            if progress is not None:
                options["progress"] = progress
        tools.append(builtin(name, **options))
    return tools
