"""MCP servers' tools as reinloop tools: :func:`mcp` connects, lists, and hands back LangChain tools.

The protocol is the official ``mcp`` SDK's, opened through
``langchain-mcp-adapters`` (its ``create_session`` knows every transport;
its ``load_mcp_tools`` turns each server tool into a LangChain tool with the
server's schema and hints). What reinloop adds:

- **One session per server, kept open** on a private event-loop thread, so a
  call does not start a server process; the tools are ordinary sync tools,
  run by the same executor as every other tool (timeouts, truncation, empty
  results, the journal).
- **Failures are observations.** An MCP error answer or an ``isError``
  result raises :class:`McpToolError`; a server that dies mid-call (or cannot
  be reached) raises :class:`McpServerGone`, a ``ConnectionError``. The
  executor turns either into an ``ERROR: ...`` observation. The dead session
  is dropped, and the next call starts the server again (stdio) or reconnects
  (HTTP), so one crash does not end the server for the run.
- **Safety from the server's own hints** (:func:`hint_options`):
  ``readOnlyHint`` makes a tool parallel-safe and journal-free;
  ``destructiveHint`` or no hints make it side-effecting (journaled, run at
  most once); ``idempotentHint`` (or read-only) lets a transient failure be
  retried. Per-tool overrides come from the config's ``reinloop.tools``
  section or ``options=``, and :func:`~reinloop.tools.configure` works on the
  tools as on any other.
- **Names:** two servers offering the same tool name are refused when the
  tools are built, naming both; ``prefix=True`` names each tool
  ``server_tool``. A clash with a non-MCP tool is refused by the registry,
  which names both sources too.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import logging
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from ..errors import ConfigurationError, DuplicateToolError
from .mcpconfig import McpConfig, ServerConfig, load_config
from .options import ToolOptions, configure, options_of

logger = logging.getLogger(__name__)

CONNECT_SECONDS = 30.0
"""How long starting (or reaching) a server and listing its tools may take."""
CALL_SECONDS = 300.0
"""How long a call waits for the server when its tool has no timeout of its own (the executor's comes first)."""
CLOSE_SECONDS = 5.0
"""How long closing a session may take before it is abandoned."""
PING_SECONDS = 1.0
"""How often a call to an HTTP server checks that the server is still there (see :meth:`McpServer.call`)."""


class McpToolError(Exception):
    """An MCP server answered a call with an error (``server``, ``tool``, ``detail``)."""

    def __init__(self, server: str, tool: str, detail: str) -> None:
        super().__init__(f"MCP server {server!r} answered {tool} with an error: {detail}")
        self.server, self.tool, self.detail = server, tool, detail


class McpServerGone(ConnectionError):
    """An MCP server could not be reached, or its connection broke during a call (``server``, ``reason``)."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server {server!r} {reason}; it is started again (or reconnected) for the next call")
        self.server, self.reason = server, reason


def hint_options(annotations: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :class:`~reinloop.tools.ToolOptions` a tool's MCP hints call for (missing hints: the spec's defaults).

    Only a tool that declares both ``readOnlyHint`` and ``idempotentHint`` is ``cacheable`` (a repeat answered
    from its earlier result): read-only alone may still read a value that changes (a job's status, a clock).
    """
    hints = annotations or {}
    read_only = hints.get("readOnlyHint") is True
    idempotent = read_only or hints.get("idempotentHint") is True
    return {"side_effects": not read_only, "parallel_safe": read_only, "retries": None if idempotent else 0,
            "cacheable": read_only and hints.get("idempotentHint") is True}


def result_text(result: Any) -> str:
    """The text of an MCP ``CallToolResult``: its text blocks, a note per binary block, else its structured content."""
    parts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        resource = getattr(block, "resource", None)
        if kind == "text":
            parts.append(block.text)
        elif resource is not None and getattr(resource, "text", None) is not None:
            parts.append(resource.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mimeType}, {len(block.data) * 3 // 4} bytes]")
        else:
            uri = getattr(block, "uri", None) or getattr(resource, "uri", "")
            parts.append(f"[{kind} {uri}]")
    if not parts and result.structuredContent is not None:
        return json.dumps(result.structuredContent, ensure_ascii=False)
    return "\n".join(parts)


class _LoopThread:
    """An asyncio loop on a daemon thread: the MCP sessions live here, sync callers wait on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="reinloop-mcp", daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float | None) -> Any:
        """Run ``coro`` on the loop and wait for it (``TimeoutError`` after ``timeout`` seconds)."""
        if not self.loop.is_running():
            coro.close()
            raise RuntimeError("these MCP tools were closed (McpTools.close() or the end of its with block); "
                               "connect again with reinloop.tools.mcp(config)")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    def stop(self) -> None:
        """Stop the loop and its thread."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(CLOSE_SECONDS)


class McpServer:
    """One server's session, opened on first use and again after it broke."""

    def __init__(self, config: ServerConfig, loop: _LoopThread) -> None:
        self.config = config
        self.name = config.name
        self._loop = loop
        self._lock: asyncio.Lock | None = None
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None

    async def session(self) -> Any:
        """The live session, (re)started if there is none."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._session is None or self._owner is None or self._owner.done():
                await self._open()
            return self._session

    async def _open(self) -> None:
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")

        async def own() -> None:
            # the session is entered and left in this one task, as anyio's cancel scopes require
            try:
                async with self._connect(errlog) as session:
                    await session.initialize()
                    ready.set_result(session)
                    await stop.wait()
            except BaseException as exc:  # noqa: BLE001 - a dead server ends its session, not the loop
                if not ready.done():
                    said = tail(errlog)
                    reason = f"could not be started or reached ({describe(exc)}){f'; it said: {said}' if said else ''}"
                    ready.set_exception(McpServerGone(self.name, reason))
                else:
                    logger.debug("MCP server %s: session ended with %s", self.name, describe(exc))
            finally:
                errlog.close()

        self._stop, self._owner = stop, asyncio.create_task(own())
        try:
            self._session = await asyncio.wait_for(asyncio.shield(ready), CONNECT_SECONDS)
        except TimeoutError:
            stop.set()
            raise McpServerGone(self.name, f"did not answer within {CONNECT_SECONDS:g} s of being started") from None

    def _connect(self, errlog: Any) -> Any:
        """A session context: stdio through the SDK (so the server's stderr goes to ``errlog``), else the adapter's."""
        connection = self.config.connection()
        if connection["transport"] != "stdio":
            from langchain_mcp_adapters.sessions import create_session

            return create_session(connection)  # type: ignore[arg-type]
        return _stdio_session(connection, errlog)

    async def drop(self) -> None:
        """End the current session (a broken one, or at close)."""
        stop, owner = self._stop, self._owner
        self._session = self._stop = self._owner = None
        if stop is not None and owner is not None:
            stop.set()
            await asyncio.wait({owner}, timeout=CLOSE_SECONDS)

    async def list_tools(self) -> list[BaseTool]:
        """The server's tools as the client library converts them (schema, description, hints as metadata)."""
        from langchain_mcp_adapters.tools import load_mcp_tools

        return await load_mcp_tools(await self.session(), server_name=self.name, handle_tool_errors=False)

    async def _watch(self, session: Any) -> None:
        """Return when the server stops answering pings."""
        while True:
            await asyncio.sleep(PING_SECONDS)
            try:
                await asyncio.wait_for(session.send_ping(), PING_SECONDS * 10)
            except Exception as exc:  # noqa: BLE001 - any failure to answer a ping means the server is gone
                logger.debug("MCP server %s did not answer a ping: %s", self.name, describe(exc))
                return

    async def call(self, tool: str, args: dict[str, Any], timeout: float) -> str:
        """Call ``tool``; an error answer raises :class:`McpToolError`, a broken connection :class:`McpServerGone`."""
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        session, owner = await self.session(), self._owner
        calling = asyncio.ensure_future(session.call_tool(tool, args, read_timeout_seconds=timedelta(seconds=timeout)))
        # The SDK's HTTP client drops a request whose response stream breaks (the server died) without a word,
        # so the call would wait for its whole timeout; a ping then fails, which ends the session. A call whose
        # session ended (the owner task returned) has lost its server.
        watching = asyncio.ensure_future(self._watch(session)) if self.config.transport != "stdio" else None
        try:
            await asyncio.wait({t for t in (calling, watching, owner) if t is not None}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone = not calling.done()
            for task in (calling, watching):
                if task is not None and not task.done():
                    task.cancel()
        if gone:
            await self.drop()
            raise McpServerGone(self.name, f"stopped answering during the call of {tool} (it died or was killed)")
        try:
            result = calling.result()
        except McpError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                await self.drop()
                raise McpServerGone(self.name, f"closed the connection during the call of {tool} (it died or was killed)") from None
            if exc.error.code == 408:
                raise TimeoutError(f"MCP server {self.name!r} did not answer {tool} within {timeout:g} s") from None
            raise McpToolError(self.name, tool, exc.error.message) from None
        except Exception as exc:  # noqa: BLE001 - a transport failure (pipe, socket, HTTP): the session is gone
            await self.drop()
            raise McpServerGone(self.name, f"broke during the call of {tool} ({describe(exc)})") from None
        if result.isError:
            raise McpToolError(self.name, tool, result_text(result) or "(no message)")
        return result_text(result)


@contextlib.asynccontextmanager
async def _stdio_session(connection: Mapping[str, Any], errlog: Any) -> Any:
    """A session with a server started over stdio, its stderr written to ``errlog``.

    The SDK's default stderr is ``sys.stderr`` as it was when the SDK was imported: under pytest's
    capture or in a notebook it has no file descriptor and the server cannot start; in a terminal the
    server's log lines would cut through the run's console. A file of its own keeps them for the error message.
    """
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=connection["command"], args=connection["args"], env=connection.get("env"),
                                   cwd=connection.get("cwd"))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        yield session


def tail(log: Any, chars: int = 400) -> str:
    """The last ``chars`` characters a server wrote to its stderr file, on one line."""
    try:
        log.flush()
        log.seek(0)
        text = log.read()
    except (OSError, ValueError):
        return ""
    return " ".join(text[-chars:].split())


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class McpTool(StructuredTool):
    """A tool of an MCP server: a plain sync LangChain tool that calls through its server's session."""

    mcp_server: str = ""
    """The server's name in the config."""
    mcp_name: str = ""
    """The tool's name on its server (``name`` may carry the server prefix)."""
    hints: dict[str, Any] = Field(default_factory=dict)
    """The server's annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)."""
    config_source: str = ""
    """Where the server was configured (a file path), for error messages."""
    toolset: Any = Field(default=None, exclude=True, repr=False)
    """The :class:`McpTools` this tool belongs to (its sessions, its config)."""

    @property
    def source(self) -> str:
        """Where this tool comes from, for messages about name clashes."""
        return f"MCP server {self.mcp_server!r} ({self.config_source}) as tool {self.mcp_name!r}"


class McpTools(Sequence[BaseTool]):
    """The tools of a set of MCP servers, with the connections they need; close it (or use ``with``) when done.

    It is a sequence of tools, so it goes wherever tools go (``run(tools=...)``,
    ``build_graph(model, [*builtins("calculator"), *tools])``). Sessions still
    open at exit are closed then.
    """

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self._loop = _LoopThread()
        self._servers = {s.name: McpServer(s, self._loop) for s in config.servers}
        self._tools: list[McpTool] = []
        atexit.register(_close_at_exit, weakref.ref(self))
        try:
            for server in self._servers.values():
                listed = self._loop.run(server.list_tools(), CONNECT_SECONDS + 5)
                self._tools.extend(self._tool(server, t) for t in listed)
            self._check_names()
            self._apply_overrides()
        except BaseException:
            self.close()
            raise

    def _tool(self, server: McpServer, listed: BaseTool) -> McpTool:
        name = f"{server.name}_{listed.name}" if self.config.prefix else listed.name
        hints = {k: v for k, v in (listed.metadata or {}).items() if k.endswith("Hint")}

        def call(**kwargs: Any) -> str:
            timeout = options_of(tool).timeout or CALL_SECONDS
            return self._loop.run(server.call(listed.name, kwargs, timeout), timeout + 5)

        tool = McpTool(
            name=name, description=listed.description or f"{listed.name} (MCP server {server.name})",
            args_schema=listed.args_schema, func=call, mcp_server=server.name, mcp_name=listed.name, hints=hints,
            config_source=self.config.source, toolset=self, metadata={"mcp_server": server.name},
        )
        return configure(tool, **hint_options(hints))

    def _check_names(self) -> None:
        seen: dict[str, McpTool] = {}
        for tool in self._tools:
            if tool.name in seen:
                raise DuplicateToolError(
                    f"two MCP tools are named {tool.name!r}: {seen[tool.name].source} and {tool.source}; "
                    'set "prefix": true in the config\'s "reinloop" section (prefix=True in Python) to name '
                    "each tool server_tool", name=tool.name, sources=(seen[tool.name].source, tool.source))
            seen[tool.name] = tool

    def _apply_overrides(self) -> None:
        by_name = {t.name: t for t in self._tools}
        unknown = sorted(set(self.config.tool_options) - set(by_name))
        if unknown:
            raise ConfigurationError(
                f"{self.config.source} sets options of MCP tool(s) {', '.join(unknown)}, which no server offers; "
                f"the servers' tools: {', '.join(by_name) or '(none)'}"
            )
        for name, values in self.config.tool_options.items():
            configure(by_name[name], **values)

    def close(self) -> None:
        """End every session (stdio servers exit) and the loop thread; the tools fail after this."""
        if not self._loop.loop.is_running():
            return
        for server in self._servers.values():
            try:
                self._loop.run(server.drop(), CLOSE_SECONDS + 1)
            except Exception as exc:  # noqa: BLE001 - closing one server must not keep the others open
                logger.debug("MCP server %s did not close cleanly: %s", server.name, describe(exc))
        self._loop.stop()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getitem__(self, index: Any) -> Any:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools)

    def __repr__(self) -> str:
        return f"McpTools(servers={list(self._servers)}, tools={[t.name for t in self._tools]})"


def tool_overrides(tool: McpTool) -> dict[str, Any]:
    """The options of ``tool`` that differ from what its hints give (what a resumed run must set again)."""
    now, base = options_of(tool), ToolOptions(**hint_options(tool.hints))
    return {k: getattr(now, k) for k in ("timeout", "retries", "side_effects", "parallel_safe", "backoff", "cacheable")
            if getattr(now, k) != getattr(base, k)}


def _close_at_exit(ref: weakref.ref[McpTools]) -> None:
    tools = ref()
    if tools is not None:
        tools.close()


def mcp(
    config: McpConfig | Mapping[str, Any] | str,
    *,
    prefix: bool | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> McpTools:
    """Connect to the MCP servers of ``config`` and return their tools, configured from their hints.

    ``config``: a dict in the common MCP client format
    (``{"mcpServers": {name: {"command", "args", "env"} | {"url", "transport"}}}``)
    or the path of such a JSON file. ``prefix=True`` names each tool
    ``server_tool``; ``options`` overrides tools' options by tool name, e.g.
    ``{"add_note": {"timeout": 5}}``. A server that cannot be started, a
    variable the config refers to (``${VAR}``) that is not set, a credential a
    stored config left out, or two tools of the same name are refused here,
    before any run.
    """
    try:
        import langchain_mcp_adapters  # noqa: F401
    except ImportError:
        raise ConfigurationError("MCP tools need the mcp extra: pip install 'reinloop[mcp]'") from None
    parsed = load_config(config, prefix=prefix, options=options)
    for server in parsed.servers:
        problem = server.problem()
        if problem:
            raise ConfigurationError(f"{parsed.source}: {problem}")
    try:
        return McpTools(parsed)
    except McpServerGone as exc:
        raise ConfigurationError(f"{parsed.source}: MCP server {exc.server!r} {exc.reason}; check its "
                                 "command or url (run the command by hand to see its errors)") from None


def mcp_tools_in(tools: Sequence[BaseTool]) -> list[McpTool]:
    """The MCP tools among ``tools``."""
    return [t for t in tools if isinstance(t, McpTool)]


def config_of(tools: Sequence[BaseTool]) -> dict[str, Any] | None:
    """The MCP config (``RunSpec.mcp``) the MCP tools among ``tools`` were made from, their options as they are now."""
    toolsets: list[McpTools] = []
    for tool in mcp_tools_in(tools):
        if tool.toolset is not None and all(tool.toolset is not s for s in toolsets):
            toolsets.append(tool.toolset)
    if not toolsets:
        return None
    if len({s.config.prefix for s in toolsets}) > 1:
        raise ConfigurationError("MCP tools of mcp() calls with and without prefix=True cannot go in one run; "
                                 "put all the servers in one config")
    configs = [s.config.to_dict({t.name: tool_overrides(t) for t in s if tool_overrides(t)}) for s in toolsets]
    return {"mcpServers": {k: v for c in configs for k, v in c["mcpServers"].items()},
            "reinloop": {"prefix": toolsets[0].config.prefix,
                         "tools": {k: v for c in configs for k, v in c["reinloop"]["tools"].items()}}}


def close_mcp(tools: Any) -> None:
    """Close the sessions of the MCP tools among ``tools`` (a list or a registry)."""
    for toolset in {id(t.toolset): t.toolset for t in mcp_tools_in(list(tools)) if t.toolset is not None}.values():
        toolset.close()
