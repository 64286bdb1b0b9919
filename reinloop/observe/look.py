"""The look every drawing of the graph shares (SVG, HTML and PNG): colours and node names."""

from __future__ import annotations

LOOK = {
    "node_fill": "#f2f0ff", "node_line": "#7c6fe0", "terminal_fill": "#ffffff", "terminal_line": "#9ca3af",
    "text": "#1f2937", "edge": "#6b7280", "label": "#374151", "label_line": "#e5e7eb",
}
"""The colours of every drawing (SVG, HTML and PNG): one look whatever the format."""


def node_label(node: str) -> str:
    """How a node is named in drawings: ``__start__`` becomes ``start``."""
    return node.strip("_") if node.startswith("__") else node
