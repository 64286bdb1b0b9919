"""MCP server configurations: reading the common client format, and the form a run stores.

The format is the one MCP clients share (Claude Desktop, Cursor, VS Code)::

    {"mcpServers": {
        "notes": {"command": "python", "args": ["server.py"], "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}},
        "web":   {"url": "http://127.0.0.1:8000/mcp", "transport": "streamable_http"}
    },
     "reinloop": {"prefix": false, "tools": {"add_note": {"timeout": 5}}}}

A server has either a ``command`` (stdio: ``args``, ``env``, ``cwd``) or a
``url`` (``transport`` or ``type``: ``streamable_http`` (the default),
``http``, ``sse``; ``headers``). Keys other clients use (``disabled``,
``autoApprove``, ...) are accepted; ``disabled: true`` skips the server. The
optional ``reinloop`` section holds reinloop's own settings: ``prefix`` (name
each tool ``server_tool``) and ``tools``, per-tool :class:`~reinloop.tools.ToolOptions`
overrides (``timeout``, ``retries``, ``side_effects``, ``parallel_safe``, ``backoff``, ``cacheable``).

Secrets stay out of the run database: :meth:`McpConfig.stored` keeps each
``env`` value only as a reference to the environment variable of the same
name (``"${NOTES_TOKEN}"``), so a resumed run reads the value from its own
environment; a header given as a literal value is not stored at all, and a URL
loses its credentials (:func:`~reinloop.observe.redact.redact_url`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, SettingError
from ..observe.redact import REDACTED, is_redacted, is_secret_name, redact_url

DEFAULT_SOURCE = "the MCP config"
REFERENCE = re.compile(r"\$\{([^}]+)\}")
"""``${VAR}``: a value taken from the environment when the server starts."""
TRANSPORTS = {"streamable_http": "streamable_http", "streamable-http": "streamable_http", "http": "streamable_http",
              "sse": "sse", "stdio": "stdio"}
"""Transport names of the common configs -> the client library's name."""
STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
URL_KEYS = frozenset({"url", "transport", "headers"})
FOREIGN_KEYS = frozenset({"type", "disabled", "autoApprove", "alwaysAllow", "description", "timeout", "name"})
"""Keys other MCP clients write into the same file; reinloop reads ``type`` and ``disabled`` only."""
STORED_KEYS = frozenset({"unstored_headers", "unstored_args"})
"""Keys a run's stored config adds: what it left out (see :meth:`ServerConfig.stored`)."""
OVERRIDABLE = ("timeout", "retries", "side_effects", "parallel_safe", "backoff", "cacheable")
"""The :class:`~reinloop.tools.ToolOptions` a config's ``reinloop.tools`` section may set (JSON values)."""


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: how to start or reach it."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: str = "stdio"
    headers: Mapping[str, str] | None = None
    unstored_headers: tuple[str, ...] = ()
    """Headers a run's stored config left out (their values were literal credentials)."""
    unstored_args: bool = False
    """A run's stored config lost a credential among the arguments."""

    def connection(self) -> dict[str, Any]:
        """The connection the client library (``langchain-mcp-adapters``) opens a session with."""
        if self.transport == "stdio":
            conn: dict[str, Any] = {"transport": "stdio", "command": self.command, "args": list(self.args)}
            if self.env is not None:
                conn["env"] = {k: expand(v) for k, v in self.env.items()}
            if self.cwd:
                conn["cwd"] = self.cwd
            return conn
        conn = {"transport": self.transport, "url": self.url}
        if self.headers:
            conn["headers"] = {k: expand(v) for k, v in self.headers.items()}
        return conn

    def missing_variables(self) -> list[str]:
        """Environment variables the config refers to (``${VAR}``) that are not set."""
        values = [*(self.env or {}).values(), *(self.headers or {}).values()]
        return sorted({name for v in values for name in REFERENCE.findall(v) if name not in os.environ})

    def problem(self) -> str | None:
        """Why the server cannot be started or reached as configured here (before trying), or ``None``."""
        lost = [*(["a credential in its arguments"] if self.unstored_args else []),
                *(["the credentials of its url"] if is_redacted(self.url) else []),
                *([f"header(s) {', '.join(self.unstored_headers)}"] if self.unstored_headers else [])]
        if lost:
            return (f"MCP server {self.name!r} was stored without {' and '.join(lost)}: reinloop never stores "
                    "credentials; give the MCP config again (--mcp FILE, or mcp= in Python), or write them as "
                    "\"${VARIABLE}\" in it to have them read from the environment")
        missing = self.missing_variables()
        if missing:
            return (f"MCP server {self.name!r} needs the environment variable(s) {', '.join(missing)}, which are not "
                    "set; set them (reinloop never stores their values)")
        return None

    def stored(self) -> dict[str, Any]:
        """This server in the common format, without secrets: what a run database keeps."""
        if self.transport == "stdio":
            args = stored_args(self.args)
            data: dict[str, Any] = {"command": self.command, "args": args}
            if self.unstored_args or any(REDACTED in a for a in args):
                data["unstored_args"] = True  # resume then asks for the config again
            if self.env is not None:
                data["env"] = {k: v if REFERENCE.fullmatch(v) else f"${{{k}}}" for k, v in self.env.items()}
            # a relative command or script path must mean the same after a resume from elsewhere
            data["cwd"] = self.cwd or os.getcwd()
            return data
        data = {"url": redact_url(self.url or ""), "transport": self.transport}
        # a literal header (a bearer token, say) is left out: resume then asks for the config again
        literal = {k for k, v in (self.headers or {}).items() if not REFERENCE.fullmatch(v)}
        if self.headers:
            data["headers"] = {k: v for k, v in self.headers.items() if k not in literal}
        if literal or self.unstored_headers:
            data["unstored_headers"] = sorted(literal | set(self.unstored_headers))
        return data


@dataclass(frozen=True)
class McpConfig:
    """The MCP servers of a run, and reinloop's settings for their tools."""

    servers: tuple[ServerConfig, ...]
    prefix: bool = False
    tool_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = DEFAULT_SOURCE
    """Where the config came from (a file path), for error messages; kept in the ``reinloop`` section."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The servers as given (``mcpServers``, secrets included): what this process starts them with."""

    def to_dict(self, tool_options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The whole config in its JSON form, secrets included (``tool_options``: the options in force, if known)."""
        options = dict(tool_options if tool_options is not None else self.tool_options)
        own = {"prefix": self.prefix, "tools": options, **({"source": self.source} if self.source != DEFAULT_SOURCE else {})}
        return {"mcpServers": json.loads(json.dumps(self.raw)), "reinloop": own}

    def stored(self, tool_options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The config in its JSON form without secrets (``tool_options``: the options in force, if known)."""
        return {**self.to_dict(tool_options), "mcpServers": {s.name: s.stored() for s in self.servers}}


def stored_args(args: tuple[str, ...]) -> list[str]:
    """A server's arguments without credentials: the value of ``--token X``/``--api-key=X`` and a URL's secrets."""
    kept: list[str] = []
    for arg in args:
        flag, equals, value = arg.partition("=")
        if kept and kept[-1].startswith("-") and "=" not in kept[-1] and is_secret_name(kept[-1]) \
                and not arg.startswith("-") and not REFERENCE.fullmatch(arg):
            kept.append(REDACTED)  # the value after a secret flag
        elif equals and flag.startswith("-") and is_secret_name(flag) and not REFERENCE.fullmatch(value):
            kept.append(f"{flag}={REDACTED}")
        else:
            kept.append(redact_url(arg))
    return kept


def expand(value: str) -> str:
    """``value`` with each ``${VAR}`` replaced by the variable's value (unset ones are left as they are)."""
    return REFERENCE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)


def load_config(config: McpConfig | Mapping[str, Any] | str | os.PathLike[str], *, prefix: bool | None = None,
                options: Mapping[str, Mapping[str, Any]] | None = None) -> McpConfig:
    """An :class:`McpConfig` from a dict in the common format or the path of such a JSON file.

    ``prefix`` and ``options`` (per-tool option overrides) take precedence
    over the file's ``reinloop`` section.
    """
    if isinstance(config, McpConfig):
        parsed = config
    else:
        data, source = _read(config)
        parsed = parse_config(data, source)
    merged = {**{k: dict(v) for k, v in parsed.tool_options.items()}}
    for name, values in (options or {}).items():
        merged[name] = {**merged.get(name, {}), **_check_options(name, values, "options=")}
    return dataclasses.replace(parsed, prefix=parsed.prefix if prefix is None else prefix, tool_options=merged)


def config_field(value: Any) -> dict[str, Any]:
    """``RunSpec.mcp`` from what was given: a config in the common format, or the path of its JSON file; checked."""
    if isinstance(value, McpConfig):
        return value.to_dict()
    if not isinstance(value, (Mapping, str, os.PathLike)):
        raise SettingError("RunSpec", "mcp", 'must be an MCP config ({"mcpServers": ...}) or the path of its JSON file, '
                           f"got {type(value).__name__}", shown=False)
    return load_config(value).to_dict()


def secret_free(value: Mapping[str, Any]) -> dict[str, Any]:
    """``RunSpec.mcp`` as a run database keeps it (see :meth:`ServerConfig.stored`)."""
    return parse_config(value).stored()


def _read(config: Mapping[str, Any] | str | os.PathLike[str]) -> tuple[Any, str]:
    if isinstance(config, Mapping):
        return config, DEFAULT_SOURCE
    path = Path(config)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the MCP config {path}: {exc.strerror or exc}; give the path of a "
                                 'JSON file like {"mcpServers": {"name": {"command": "..."}}}') from None
    try:
        return json.loads(text), str(path)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"the MCP config {path} is not valid JSON: {exc}") from None


def parse_config(data: Any, source: str = DEFAULT_SOURCE) -> McpConfig:
    """Check ``data`` (the common format) and return it typed; every mistake names the server and key."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise ConfigurationError(f'{source} must be a JSON object with "mcpServers": {{name: {{"command": ...}} '
                                 f'or {{"url": ...}}}}, got {str(data)[:120]}')
    unknown = sorted(set(data) - {"mcpServers", "reinloop"})
    if unknown:
        raise ConfigurationError(f"{source} has unknown top-level key(s) {', '.join(unknown)}; valid: mcpServers, reinloop")
    enabled = {str(name): spec for name, spec in data["mcpServers"].items()
               if not (isinstance(spec, Mapping) and spec.get("disabled") is True)}
    servers = tuple(_server(name, spec, source) for name, spec in enabled.items())
    own = data.get("reinloop") or {}
    if not isinstance(own, Mapping) or set(own) - {"prefix", "tools", "source"}:
        raise ConfigurationError(f'{source}: "reinloop" must be an object with "prefix" (true/false) and "tools" '
                                 f'({{tool: {{option: value}}}}), got {json.dumps(own)[:120]}')
    if not isinstance(own.get("prefix", False), bool):
        raise ConfigurationError(f'{source}: "reinloop.prefix" must be true or false, got {own.get("prefix")!r}')
    tools = own.get("tools") or {}
    if not isinstance(tools, Mapping):
        raise ConfigurationError(f'{source}: "reinloop.tools" must map tool names to options, got {tools!r}')
    return McpConfig(servers, bool(own.get("prefix", False)),
                     {str(k): _check_options(str(k), v, source) for k, v in tools.items()}, str(own.get("source") or source),
                     json.loads(json.dumps(enabled)))


def _check_options(tool: str, values: Any, source: str) -> dict[str, Any]:
    if not isinstance(values, Mapping) or set(values) - set(OVERRIDABLE):
        bad = sorted(set(values) - set(OVERRIDABLE)) if isinstance(values, Mapping) else values
        raise ConfigurationError(f"{source}: options of MCP tool {tool!r} must be an object of {', '.join(OVERRIDABLE)}; "
                                 f"got {bad!r}")
    return dict(values)


def _server(name: str, spec: Any, source: str) -> ServerConfig:
    where = f"{source}: MCP server {name!r}"
    if not isinstance(spec, Mapping):
        raise ConfigurationError(f'{where} must be an object with "command" or "url", got {spec!r}')
    unknown = sorted(set(spec) - STDIO_KEYS - URL_KEYS - FOREIGN_KEYS - STORED_KEYS)
    if unknown:
        valid = ", ".join(sorted(STDIO_KEYS | URL_KEYS))
        raise ConfigurationError(f"{where} has unknown key(s) {', '.join(unknown)}; valid: {valid}")
    if ("command" in spec) == ("url" in spec):
        raise ConfigurationError(f'{where} needs exactly one of "command" (a server it starts) or "url" (a server it reaches)')
    if "command" in spec:
        return _stdio(name, spec, where)
    kind = str(spec.get("transport") or spec.get("type") or "streamable_http")
    if TRANSPORTS.get(kind, "stdio") == "stdio" or not isinstance(spec["url"], str):
        raise ConfigurationError(f"{where}: transport {kind!r} does not go with a url; use streamable_http, http or sse")
    headers = _strings(spec.get("headers"), f"{where}: headers")
    return ServerConfig(name, url=spec["url"], transport=TRANSPORTS[kind], headers=headers,
                        unstored_headers=tuple(str(h) for h in spec.get("unstored_headers") or ()))


def _stdio(name: str, spec: Mapping[str, Any], where: str) -> ServerConfig:
    args = spec.get("args") or []
    if not isinstance(spec["command"], str) or not spec["command"].strip():
        raise ConfigurationError(f'{where}: "command" must be the program to start, got {spec["command"]!r}')
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigurationError(f'{where}: "args" must be a list of strings, got {args!r}')
    env = _strings(spec.get("env"), f"{where}: env")
    cwd = spec.get("cwd")
    return ServerConfig(name, command=spec["command"], args=tuple(args), env=env, cwd=str(cwd) if cwd else None,
                        unstored_args=spec.get("unstored_args") is True)


def _strings(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigurationError(f"{where} must map names to strings, got {value!r}")
    return {str(k): v for k, v in value.items()}
