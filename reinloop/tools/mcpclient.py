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
import re
import secrets
import tempfile
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

import httpx
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from ..errors import ConfigurationError, DuplicateToolError
from .mcpconfig import McpConfig, ServerConfig, load_config
from .options import ToolOptions, configure, options_of
from .pool import seconds_left

logger = logging.getLogger(__name__)

CONNECT_SECONDS = 30.0
"""How long starting (or reaching) a server may take, and listing its tools (a run's ``tool_timeout`` and
``max_seconds`` cut it shorter: :func:`connect_seconds`)."""
CALL_SECONDS = 300.0
"""How long a call waits for the server when it runs outside the executor and its tool has no timeout of its
own; under the executor the call's deadline (``tool_timeout``, the run's ``max_seconds``) comes first."""
MAX_MESSAGE_BYTES = 2_000_000
"""The largest message a stdio server may send (a call's result, a listing): a longer line is read no further
and its call fails with :class:`McpResultTooLarge`; over HTTP a response is read no further than the cap either
(:class:`_CappedTransport`), and the call it answered fails the same way."""
STOP_SECONDS = 0.5
"""How long after a call's deadline its worker waits for the server's loop to give up the call."""
TOO_LARGE = -32099
"""The JSON-RPC error code reinloop's stdio reader answers a call with when its result is over the cap."""
CLOSE_SECONDS = 5.0
"""How long closing a session may take before it is abandoned."""
CALL_META = "reinloop/call"
"""The ``_meta`` key naming each call to an HTTP server, so a response over the cap is told to the call it answers."""
PING_SECONDS = 1.0
"""How often a call to an HTTP server checks that the server is still there (see :meth:`McpServer.call`)."""


class McpToolError(Exception):
    """An MCP server answered a call with an error (``server``, ``tool``, ``detail``)."""

    def __init__(self, server: str, tool: str, detail: str) -> None:
        super().__init__(f"MCP server {server!r} answered {tool} with an error: {detail}")
        self.server, self.tool, self.detail = server, tool, detail


class McpResultTooLarge(Exception):
    """An MCP server's answer to a call was larger than :data:`MAX_MESSAGE_BYTES` (``server``, ``tool``, ``cap``)."""

    def __init__(self, server: str, tool: str, cap: int) -> None:
        super().__init__(f"MCP server {server!r} answered {tool} with more than {cap:,} bytes, the cap of one MCP "
                         "result (reinloop.tools.mcpclient.MAX_MESSAGE_BYTES); it was not read. Ask for less "
                         "(a narrower query, a page of the results), or use another tool")
        self.server, self.tool, self.cap = server, tool, cap


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
    # a tool that says it is both read-only and destructive is taken at its worse word: it changes the world
    read_only = hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True
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

    def __init__(self, config: ServerConfig, loop: _LoopThread, connect_seconds: float = CONNECT_SECONDS) -> None:
        self.config = config
        self.name = config.name
        self.connect_seconds = connect_seconds
        """How long starting (or reaching) the server may take."""
        self._loop = loop
        self._lock: asyncio.Lock | None = None
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._too_large: dict[str, asyncio.Event] = {}  # HTTP calls (by their CALL_META token) -> set past the cap

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
            self._session = await asyncio.wait_for(asyncio.shield(ready), self.connect_seconds)
        except TimeoutError:
            await self.drop()  # a server hung at start is ended now, not left to outlive the run
            raise McpServerGone(self.name, f"did not answer within {self.connect_seconds:g} s of being started") from None
        except asyncio.CancelledError:  # the call that started it ran out of time
            await asyncio.shield(self.drop())
            raise

    def _connect(self, errlog: Any) -> Any:
        """A session context: stdio through the SDK (so the server's stderr goes to ``errlog``), else the adapter's."""
        connection = self.config.connection()
        if connection["transport"] != "stdio":
            from langchain_mcp_adapters.sessions import create_session

            if connection["transport"] in ("streamable_http", "sse"):
                connection["httpx_client_factory"] = self._http_client
            return create_session(connection)  # type: ignore[arg-type]
        return _stdio_session(connection, errlog)

    def _http_client(self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx.AsyncClient:
        """The SDK's HTTP client (its default timeouts), reading no response past :data:`MAX_MESSAGE_BYTES`."""
        return httpx.AsyncClient(headers=headers, auth=auth, transport=_CappedTransport(self._over_cap),
                                 timeout=timeout or httpx.Timeout(30.0, read=CALL_SECONDS))

    def _over_cap(self, token: str | None) -> None:
        """A response went past the cap: the call it answers (``token``) fails with :class:`McpResultTooLarge`."""
        if token is not None and token in self._too_large:
            self._too_large[token].set()

    async def drop(self) -> None:
        """End the current session (a broken one, or at close), and with it a stdio server's process.

        The session's task is asked to leave first (the SDK closes the server's stdin, waits, then
        terminates it); a task stuck in the server's start (``initialize`` unanswered) is cancelled,
        which kills the process (anyio), so no server outlives its run.
        """
        stop, owner, started = self._stop, self._owner, self._session is not None
        self._session = self._stop = self._owner = None
        if stop is not None and owner is not None:
            stop.set()
            if started:  # a session that never started would not see the stop: it waits for the server
                await asyncio.wait({owner}, timeout=CLOSE_SECONDS)
            if not owner.done():
                owner.cancel()
                await asyncio.wait({owner}, timeout=CLOSE_SECONDS)

    async def list_tools(self) -> list[BaseTool]:
        """The server's tools as the client library converts them (schema, description, hints as metadata).

        Starting the server and listing its tools take at most :attr:`connect_seconds` together; a server
        that does not list them in time is ended (:class:`McpServerGone`).
        """
        from langchain_mcp_adapters.tools import load_mcp_tools

        started = False

        async def listed() -> list[BaseTool]:
            nonlocal started
            session = await self.session()
            started = True
            return await load_mcp_tools(session, server_name=self.name, handle_tool_errors=False)

        try:
            return await asyncio.wait_for(listed(), self.connect_seconds)
        except TimeoutError:
            await self.drop()
            what = "list its tools" if started else "answer"
            raise McpServerGone(self.name, f"did not {what} within {self.connect_seconds:g} s of being started") from None

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
        http = self.config.transport != "stdio"
        token = secrets.token_hex(8) if http else None
        meta = {CALL_META: token} if token else None
        over = self._too_large.setdefault(token, asyncio.Event()) if token else None
        calling = asyncio.ensure_future(session.call_tool(tool, args, read_timeout_seconds=timedelta(seconds=timeout),
                                                          meta=meta))
        # The SDK's HTTP client drops a request whose response stream breaks (the server died) without a word,
        # so the call would wait for its whole timeout; a ping then fails, which ends the session. A call whose
        # session ended (the owner task returned) has lost its server.
        watching = asyncio.ensure_future(self._watch(session)) if http else None
        too_large = asyncio.ensure_future(over.wait()) if over is not None else None
        try:
            await asyncio.wait({t for t in (calling, watching, owner, too_large) if t is not None},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone = not calling.done()
            for task in (calling, watching, too_large):
                if task is not None and not task.done():
                    task.cancel()
            self._too_large.pop(token or "", None)
        if over is not None and over.is_set():  # its response was read no further than the cap
            raise McpResultTooLarge(self.name, tool, MAX_MESSAGE_BYTES)
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
            if exc.error.code == TOO_LARGE:
                raise McpResultTooLarge(self.name, tool, MAX_MESSAGE_BYTES) from None
            raise McpToolError(self.name, tool, exc.error.message) from None
        except Exception as exc:  # noqa: BLE001 - a transport failure (pipe, socket, HTTP): the session is gone
            await self.drop()
            raise McpServerGone(self.name, f"broke during the call of {tool} ({describe(exc)})") from None
        text = result_text(result)
        if len(text) > MAX_MESSAGE_BYTES:  # over HTTP the whole answer arrived: it is refused all the same
            raise McpResultTooLarge(self.name, tool, MAX_MESSAGE_BYTES)
        if result.isError:
            raise McpToolError(self.name, tool, text or "(no message)")
        return text


def _call_token(request: Any) -> str | None:
    """The :data:`CALL_META` token of an HTTP request that calls a tool, or None (a listing, a ping, a stream)."""
    try:
        body = json.loads(request.content) if request.content else None
    except Exception:  # noqa: BLE001 - a streamed body, or not JSON: no call of ours
        return None
    params = body.get("params") if isinstance(body, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get(CALL_META) if isinstance(meta, dict) else None
    return token if isinstance(token, str) else None


class _CappedTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport whose responses stop being read past :data:`MAX_MESSAGE_BYTES`.

    The MCP SDK reads a whole response before it parses it (a JSON body) or event by event (SSE); either way
    it would hold any size in memory. Past the cap the body's stream raises, the SDK drops that response, and
    ``over_cap`` is told the call it answered, which then fails with :class:`McpResultTooLarge`.
    """

    def __init__(self, over_cap: Any) -> None:
        self.inner, self.over_cap = httpx.AsyncHTTPTransport(), over_cap

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        stream = _CappedStream(response.stream, MAX_MESSAGE_BYTES, lambda: self.over_cap(_call_token(request)))
        return httpx.Response(response.status_code, headers=response.headers, stream=stream,
                              extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedStream(httpx.AsyncByteStream):
    """A response body that raises once more than ``cap`` bytes came, after telling ``over``."""

    def __init__(self, inner: Any, cap: int, over: Any) -> None:
        self.inner, self.cap, self.over = inner, cap, over

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.cap:
                self.over()
                raise OverflowError(f"the MCP server's response is over the cap of {self.cap:,} bytes; it was not read")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def _stdio_session(connection: Mapping[str, Any], errlog: Any) -> Any:
    """A session with a server started over stdio, its stderr written to ``errlog``.

    The SDK's default stderr is ``sys.stderr`` as it was when the SDK was imported: under pytest's
    capture or in a notebook it has no file descriptor and the server cannot start; in a terminal the
    server's log lines would cut through the run's console. A file of its own keeps them for the error message.
    The session is the SDK's ``ClientSession``; only the reading of the server's lines is reinloop's
    (:func:`_bounded_stdio`), so that one message cannot be larger than :data:`MAX_MESSAGE_BYTES`.
    """
    from mcp import ClientSession, StdioServerParameters

    params = StdioServerParameters(command=connection["command"], args=connection["args"], env=connection.get("env"),
                                   cwd=connection.get("cwd"))
    async with _bounded_stdio(params, errlog) as (read, write), ClientSession(read, write) as session:
        yield session


_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')
_LAST_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})\s*}\s*$')


def message_id(head: bytes, tail: bytes) -> Any:
    """The JSON-RPC ``id`` of a message seen only by its ``head`` and ``tail`` bytes, or ``None``.

    Only the top-level object's ``"id"`` counts (one inside the result says nothing): in the head, one met
    outside any string at depth 1; in the tail, one that is the message's last key.
    """
    depth, quoted, escaped = 0, False, False
    for i, byte in enumerate(head):
        if quoted:
            escaped, quoted = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            found = _ID.match(head, i) if depth == 1 else None
            if found is not None:
                return json.loads(found.group(1))
            quoted = True
        elif byte in b"{[":
            depth += 1
        elif byte in b"}]":
            depth -= 1
    found = _LAST_ID.search(tail)
    return json.loads(found.group(1)) if found is not None else None


@contextlib.asynccontextmanager
async def _bounded_stdio(params: Any, errlog: Any, cap: int | None = None) -> Any:
    """The SDK's ``stdio_client`` (its process start and shutdown), reading lines of at most ``cap`` bytes.

    The SDK joins the chunks of a line by copying what it has so far at each one, quadratic in the line's
    length (16 MB took 8.5 s, 100 MB never arrived), and has no bound. Here a line is gathered in a
    ``bytearray``; past ``cap`` the rest of it is skipped, and the call it answered (its ``id``, read
    from the line's head or tail) gets a JSON-RPC error (:data:`TOO_LARGE`), so it ends at once.
    """
    import anyio
    import mcp.types as types
    from mcp.client import stdio
    from mcp.shared.message import SessionMessage

    cap = MAX_MESSAGE_BYTES if cap is None else cap
    read_writer, read = anyio.create_memory_object_stream(0)
    write, write_reader = anyio.create_memory_object_stream(0)
    try:
        process = await stdio._create_platform_compatible_process(
            command=stdio._get_executable_command(params.command), args=params.args,
            env={**stdio.get_default_environment(), **(params.env or {})}, errlog=errlog, cwd=params.cwd)
    except OSError:
        for stream in (read, write, read_writer, write_reader):
            await stream.aclose()
        raise

    async def deliver(line: bytes) -> None:
        try:
            message: Any = SessionMessage(types.JSONRPCMessage.model_validate_json(line))
        except Exception as exc:  # noqa: BLE001 - the session reports a line that is not JSON-RPC
            message = exc
        await read_writer.send(message)

    async def refuse(head: bytes, tail: bytes, size: int) -> None:
        request = message_id(head, tail)
        logger.warning("MCP server sent a message of %d bytes, more than the cap of %d; it was not read", size, cap)
        if request is not None:  # else the call it answered waits for its deadline
            error = types.JSONRPCError(jsonrpc="2.0", id=request, error=types.ErrorData(
                code=TOO_LARGE, message=f"the answer was larger than {cap} bytes"))
            await read_writer.send(SessionMessage(types.JSONRPCMessage(error)))

    async def stdout_reader() -> None:
        line, skipped, tail = bytearray(), 0, b""
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    while chunk:
                        end = chunk.find(b"\n")
                        piece, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
                        if skipped:
                            skipped, tail = skipped + len(piece), (tail + piece)[-300:]
                        else:
                            line += piece
                            if len(line) > cap:
                                skipped, tail, line = len(line), bytes(line[-300:]), line[:300]
                        if end < 0:
                            continue
                        if skipped:
                            await refuse(bytes(line), tail, skipped)
                        elif line.strip():
                            await deliver(bytes(line))
                        line, skipped, tail = bytearray(), 0, b""
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async def stdin_writer() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((text + "\n").encode("utf-8"))
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group, process:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read, write
        finally:  # as the SDK ends a stdio server: close its stdin, wait, then terminate its process tree
            with contextlib.suppress(Exception):
                await process.stdin.aclose()
            try:
                with anyio.fail_after(stdio.PROCESS_TERMINATION_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                await stdio._terminate_process_tree(process)
            except ProcessLookupError:
                pass
            for stream in (read, write, read_writer, write_reader):
                await stream.aclose()


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

    def __init__(self, config: McpConfig, connect_seconds: float = CONNECT_SECONDS) -> None:
        self.config = config
        self._loop = _LoopThread()
        self._servers = {s.name: McpServer(s, self._loop, connect_seconds) for s in config.servers}
        self._tools: list[McpTool] = []
        atexit.register(_close_at_exit, weakref.ref(self))
        try:
            for server in self._servers.values():
                try:  # the server's own bound ends it first; this one only if the loop itself is stuck
                    listed = self._loop.run(server.list_tools(), connect_seconds + CLOSE_SECONDS + 1)
                except TimeoutError:
                    raise McpServerGone(server.name, f"did not list its tools within {connect_seconds:g} s") from None
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
            # under the executor the call's deadline (its timeout, the run's max_seconds) bounds the wait: a hung
            # server gives the worker back at the deadline, and the server's loop drops the call
            timeout = seconds_left(options_of(tool).timeout or CALL_SECONDS) or 0.0
            if timeout <= 0:
                raise TimeoutError(f"no time was left for the call of {listed.name} (its deadline had passed)")
            return self._loop.run(server.call(listed.name, kwargs, timeout), timeout + STOP_SECONDS)

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


def connect_seconds(limits: Any) -> float:
    """How long starting a server and listing its tools may take in a run with ``limits``
    (:class:`~reinloop.Limits`): :data:`CONNECT_SECONDS`, or its ``tool_timeout`` or ``max_seconds`` if less."""
    bounds = [CONNECT_SECONDS, getattr(limits, "tool_timeout", None), getattr(limits, "max_seconds", None)]
    return min(b for b in bounds if b is not None)


def mcp(
    config: McpConfig | Mapping[str, Any] | str,
    *,
    prefix: bool | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    timeout: float | None = None,
) -> McpTools:
    """Connect to the MCP servers of ``config`` and return their tools, configured from their hints.

    ``config``: a dict in the common MCP client format
    (``{"mcpServers": {name: {"command", "args", "env"} | {"url", "transport"}}}``)
    or the path of such a JSON file. ``prefix=True`` names each tool
    ``server_tool``; ``options`` overrides tools' options by tool name, e.g.
    ``{"add_note": {"timeout": 5}}``; ``timeout`` is how long starting each server and listing its tools
    may take (:data:`CONNECT_SECONDS`; a run gives its own, :func:`connect_seconds`). A server that cannot be
    started or listed in time (it is ended), a
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
        return McpTools(parsed, CONNECT_SECONDS if timeout is None else timeout)
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
