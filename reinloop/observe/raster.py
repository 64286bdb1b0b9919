"""The graph as PNG, through Graphviz, in the look of reinloop's own SVG.

Graphviz comes from the ``graph`` extra (``pip install 'reinloop[graph]'``):
the ``pygraphviz`` wheel bundles it, so nothing is fetched and no system
package is needed. The attributes below give the drawing the look of
:func:`reinloop.observe.drawing.path_svg`: rounded boxes, route names on the dashed
conditional edges, ``start``/``end`` instead of ``__start__``/``__end__``;
LangGraph's own ``draw_png`` draws yellow ellipses with raw node names.

Fonts: the wheel bundles fontconfig 2.13, which parses the system's font
configuration templates at start-up and warns about every element added
since (Debian 12's ``conf.avail/05-reset-dirs-sample.conf`` has
``<reset-dirs/>``): one ``Fontconfig warning`` line on stderr per process.
:func:`use_system_fontconfig` loads the system's own fontconfig first, with
its symbols global, so Graphviz reads that configuration with the library
that matches it. Without a system fontconfig the bundled one is used as is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

from langchain_core.runnables.graph import Graph

from .look import LOOK, node_label
from ..errors import ConfigurationError

MISSING_GRAPHVIZ = (
    "drawing {fmt} needs Graphviz through pygraphviz, which is not installed: "
    "pip install 'reinloop[graph]' (its wheel bundles Graphviz, no system package needed); "
    "--format mermaid, ascii, svg and html need nothing extra"
)
FONT = "DejaVu Sans,Noto Sans CJK SC,WenQuanYi Micro Hei,sans-serif"
"""Graphviz's font list (fontconfig picks the first one installed that has each character)."""


@functools.cache
def use_system_fontconfig() -> bool:
    """Load the system's fontconfig ahead of the one in the pygraphviz wheel (see the module docstring).

    Must run before pygraphviz is imported; True when a system library was loaded.
    """
    name = ctypes.util.find_library("fontconfig")
    if name is None:
        return False
    try:
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _pygraphviz(fmt: str) -> Any:
    use_system_fontconfig()
    try:
        import pygraphviz  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ConfigurationError(MISSING_GRAPHVIZ.format(fmt=fmt)) from None
    return pygraphviz


def _node_attrs(name: str) -> dict[str, Any]:
    terminal = name.startswith("__")
    return {
        "label": node_label(name), "shape": "box", "style": "rounded,filled",
        "fillcolor": LOOK["terminal_fill" if terminal else "node_fill"],
        "color": LOOK["terminal_line" if terminal else "node_line"],
        "fontcolor": LOOK["text"], "penwidth": 1.5, "fontsize": 14, "margin": "0.25,0.08", "height": 0.5,
    }


def _edge_attrs(edge: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"color": LOOK["edge"], "penwidth": 1.5, "arrowsize": 0.8}
    if edge.conditional:
        attrs["style"] = "dashed"
    if edge.data:
        attrs.update(label=f" {edge.data} ", fontsize=12, fontcolor=LOOK["label"])
    return attrs


def graphviz_graph(graph: Graph, fmt: str = "png") -> Any:
    """A ``pygraphviz.AGraph`` of ``graph`` with reinloop's look (the caller closes it)."""
    viz = _pygraphviz(fmt).AGraph(directed=True, nodesep=0.6, ranksep=0.55, bgcolor="white", pad=0.3)
    viz.node_attr.update(fontname=FONT)
    viz.edge_attr.update(fontname=FONT)
    for name in graph.nodes:
        viz.add_node(name, **_node_attrs(name))
    for edge in graph.edges:
        viz.add_edge(edge.source, edge.target, **_edge_attrs(edge))
    return viz


def draw_png(graph: Graph) -> bytes:
    """PNG bytes of the graph, laid out by Graphviz (``dot``), offline."""
    viz = graphviz_graph(graph, "png")
    try:
        return bytes(viz.draw(None, format="png", prog="dot"))
    finally:
        viz.close()
