"""A small MCP server written with the official SDK, for reinloop's MCP tests and the README example.

``python tests/tools/mcp_server.py`` serves over stdio; ``--http PORT`` serves
streamable HTTP on 127.0.0.1:PORT (path ``/mcp``). Its tools carry the hints
reinloop reads:

- ``lookup`` (read-only): a value from a fixed table, after a short wait; the
  server counts how many lookups ran at the same time (``peak_lookups``);
- ``add_note`` (destructive): appends a line to ``$NOTES_FILE`` (the side effect a test counts);
- ``set_flag`` (idempotent, not read-only): writes a fixed line to ``$NOTES_FILE``;
- ``calculator`` (no hints): clashes with reinloop's built-in of that name;
- ``fail``: answers with an MCP tool error; ``die``: the server kills itself mid-call;
- ``token_check`` (read-only): whether ``$MCP_TOKEN`` reached the server, without echoing it;
- ``server_pid`` (read-only): the server's process id;
- ``unit_price`` (read-only and idempotent: cacheable): a price from a fixed table, counting its calls
  (``price_calls``, read-only) so a test sees whether a repeat reached the server;
- ``huge`` (read-only): a text of ``size`` bytes, for the result size cap.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from pathlib import Path

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)
IDEMPOTENT = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
PURE = ToolAnnotations(readOnlyHint=True, idempotentHint=True)
TABLE = {"alpha": "1", "beta": "2", "gamma": "3"}

port = int(sys.argv[sys.argv.index("--http") + 1]) if "--http" in sys.argv else 8000
server = FastMCP("notes", log_level="WARNING", host="127.0.0.1", port=port)
active = {"now": 0, "peak": 0, "prices": 0}


def _notes() -> Path:
    return Path(os.environ["NOTES_FILE"])


@server.tool(annotations=READ_ONLY)
async def lookup(key: str) -> str:
    """The value stored under key (alpha, beta or gamma)."""
    active["now"] += 1
    active["peak"] = max(active["peak"], active["now"])
    try:
        await anyio.sleep(float(os.environ.get("LOOKUP_SECONDS", "0.4")))
    finally:
        active["now"] -= 1
    return TABLE.get(key, f"no value for {key!r}")


@server.tool(annotations=READ_ONLY)
def peak_lookups() -> str:
    """How many lookups ran at the same time, at most."""
    return str(active["peak"])


@server.tool(annotations=DESTRUCTIVE)
def add_note(text: str) -> str:
    """Append a note to the notes file."""
    with _notes().open("a", encoding="utf-8") as f:
        f.write(text + "\n")
    return f"saved note {text!r}"


@server.tool(annotations=IDEMPOTENT)
def set_flag() -> str:
    """Set the flag line in the notes file (setting it twice changes nothing)."""
    notes = _notes()
    if "FLAG" not in (notes.read_text(encoding="utf-8") if notes.exists() else ""):
        with notes.open("a", encoding="utf-8") as f:
            f.write("FLAG\n")
    return "flag set"


@server.tool()
def calculator(expression: str) -> str:
    """A calculator whose name clashes with reinloop's built-in one."""
    return f"mcp calculator got {expression}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with reason."""
    raise ValueError(reason)


@server.tool()
def die() -> str:
    """Kill this server in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.tool(annotations=READ_ONLY)
def token_check() -> str:
    """Whether the server got a token, as a short digest (never the token)."""
    token = os.environ.get("MCP_TOKEN", "")
    return f"token sha256 {hashlib.sha256(token.encode()).hexdigest()[:12]}" if token else "no token"


@server.tool(annotations=READ_ONLY)
def server_pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(annotations=PURE)
def unit_price(item: str) -> str:
    """The price of one item (apple or pear), in cents."""
    active["prices"] += 1
    return {"apple": "30", "pear": "45"}.get(item, f"no price for {item!r}")


@server.tool(annotations=READ_ONLY)
def price_calls() -> str:
    """How many unit_price calls reached the server."""
    return str(active["prices"])


@server.tool(annotations=READ_ONLY)
def huge(size: int) -> str:
    """A text of size x's (a result a client must not read whole)."""
    return "x" * size


if __name__ == "__main__":
    server.run("streamable-http" if "--http" in sys.argv else "stdio")
