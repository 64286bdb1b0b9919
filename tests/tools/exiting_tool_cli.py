"""``reinloop run`` with a user tool that raises ``SystemExit(3)`` (run as a script, arguments as for the CLI).

The CLI loads tools by built-in name, so the user's tool is plugged in as a
built-in before the CLI's ``main`` runs, in this process.
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.tools import BaseTool, tool

from reinloop.cli.app import main
from reinloop.tools.catalog import BUILTINS


@tool
def shutdown(reason: str) -> str:
    """Shut the service down."""
    raise SystemExit(3)  # 3 is also the exit code of a run broken by a guard


def factory(**options: Any) -> BaseTool:
    return shutdown


BUILTINS["shutdown"] = factory

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
