"""The corpus's tools served over stdio MCP, for the CLI tests (``reinloop run --mcp``).

``python tests/corpus/mcp_server.py`` serves every tool of :mod:`tests.corpus.tools` under its own name,
with the same function, so its schema (enums, defaults, descriptions) is the one the Python tests use.
A tool configured ``side_effects=True`` declares ``destructiveHint``; every other one ``readOnlyHint``.
Each call is appended to the JSON-lines file ``$CORPUS_CALLS`` with the arguments it ran with.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: the repository's tests package

from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

from reinloop.tools import options_of  # noqa: E402
from tests.corpus.tools import TOOLS  # noqa: E402

server = FastMCP("corpus", log_level="WARNING")
for name, tool in TOOLS.items():
    hints = (ToolAnnotations(readOnlyHint=False, destructiveHint=True) if options_of(tool).side_effects
             else ToolAnnotations(readOnlyHint=True))
    server.add_tool(tool.func, name=name, description=tool.description, annotations=hints)

if __name__ == "__main__":
    server.run()
