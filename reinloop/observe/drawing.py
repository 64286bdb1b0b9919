"""Pictures of the graph: Mermaid, ASCII, PNG and SVG, and an SVG of a run's path.

Every picture starts from ``ReinloopGraph.get_graph()``: a :class:`LoopDrawing`,
LangGraph's drawable graph whose conditional edges carry their route names
("continue / hint"). Mermaid text needs nothing; ASCII uses ``grandalf`` (a
dependency) for the layout and lists the edge labels under the drawing,
since LangGraph's ASCII art has no room for them (nor for the ``pause``
self-loop, on which LangGraph's own ``draw_ascii`` fails: it is listed there).

:func:`path_svg` draws the graph itself, with no extra: a ``grandalf`` layout
rendered as plain SVG (rounded boxes, route names on the edges, ``start`` and
``end``), where each edge can carry how often a run took it and untaken edges
fade. ``--format svg`` and ``html`` are that drawing; reports embed it inline
(see :mod:`reinloop.observe.report`). PNG needs a rasteriser: Graphviz, through the
``graph`` extra, with attributes that give it the same look (see
:mod:`reinloop.observe.raster`); it works offline, unlike LangGraph's
``draw_mermaid_png``, which calls a web service.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from langchain_core.runnables.graph import Graph

from ..errors import ConfigurationError
from .look import LOOK, node_label  # noqa: F401  (re-exported: the look of every drawing)

FORMATS = ("mermaid", "ascii", "png", "svg", "html")
"""What ``draw_graph`` and ``reinloop graph --format`` can produce."""

def edge_legend(graph: Graph) -> str:
    """One line per conditional edge: ``parse -> validate: actions``."""
    lines = [f"  {node_label(e.source)} -> {node_label(e.target)}: {e.data}"
             for e in graph.edges if e.conditional and e.data]
    return "conditional edges (route names):\n" + "\n".join(lines)


def for_ascii(graph: Graph) -> Graph:
    """A plain copy without edges from a node to itself (grandalf cannot lay them out), nodes named as drawn."""
    nodes = {key: node._replace(name=node_label(key)) for key, node in graph.nodes.items()}
    return Graph(nodes=nodes, edges=[e for e in graph.edges if e.source != e.target])


def draw_ascii(graph: Graph) -> str:
    """ASCII art of the graph, with the routes of its conditional edges (self-loops too) listed below."""
    try:
        art = for_ascii(graph).draw_ascii()
    except ImportError:
        raise ConfigurationError("drawing ascii needs grandalf: pip install grandalf") from None
    return art.rstrip() + "\n\n" + edge_legend(graph) + "\n"


class LoopDrawing(Graph):
    """LangGraph's drawable graph of the loop; ``draw_ascii`` and ``draw_png`` handle its ``pause`` self-loop.

    ``graph.get_graph()`` returns one. LangGraph's own ASCII layout raises
    ``ValueError: no intersection found`` on a self-loop; here the loop is
    left out of the layout and listed under the art with the other routes.
    ``draw_png`` draws reinloop's look (needs the ``graph`` extra).
    """

    def draw_ascii(self) -> str:
        """ASCII art of the graph, with every route (the ``pause`` loop too) listed below it."""
        return draw_ascii(self)

    def draw_png(self, output_file_path: str | None = None, fontname: str | None = None,
                 labels: Any = None) -> bytes | None:
        """PNG bytes of the graph (written to ``output_file_path`` instead, if given), offline via Graphviz.

        ``fontname`` and ``labels`` (LangGraph's parameters) are accepted and
        ignored: the look, fonts and route labels are reinloop's.
        """
        from .raster import draw_png  # Graphviz, loaded when a PNG is drawn

        png = draw_png(self)
        if output_file_path is None:
            return png
        with open(output_file_path, "wb") as out:
            out.write(png)
        return None


# --- the built-in SVG: grandalf layout, no Graphviz -------------------------------------------

NODE_H = 40
SVG_NS = 'xmlns="http://www.w3.org/2000/svg" '  # a namespace name, never fetched; HTML needs none
CHAR_W = 7.5


@dataclass
class Overlay:
    """What a run adds to the drawing: visits per node, traversals per edge, where it broke."""

    visits: Mapping[str, int] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)
    edge_counts: Mapping[tuple[str, str], int] = field(default_factory=dict)
    edge_labels: Mapping[tuple[str, str], str] = field(default_factory=dict)
    last_path: set[tuple[str, str]] = field(default_factory=set)
    broke_at: str | None = None
    broke_why: str | None = None


class _Box:
    def __init__(self, w: float, h: float) -> None:
        self.w, self.h, self.xy = w, h, (0.0, 0.0)


class _Route:
    def __init__(self) -> None:
        self.pts: list[tuple[float, float]] = []

    def setpath(self, pts: list[tuple[float, float]]) -> None:
        self.pts = [(float(x), float(y)) for x, y in pts]


def layout(graph: Graph) -> tuple[dict[str, _Box], dict[tuple[str, str], list[tuple[float, float]]]]:
    """Sugiyama layout by grandalf: node boxes (centre, size) and edge polylines."""
    from grandalf.graphs import Edge as GEdge
    from grandalf.graphs import Vertex, graph_core
    from grandalf.layouts import SugiyamaLayout
    from grandalf.routing import route_with_lines

    vertices = {name: Vertex(name) for name in graph.nodes}
    edges = [GEdge(vertices[e.source], vertices[e.target], data=(e.source, e.target))
             for e in graph.edges if e.source != e.target]
    for v in vertices.values():
        v.view = _Box(max(90.0, len(node_label(v.data)) * CHAR_W + 36), NODE_H)
    for e in edges:
        e.view = _Route()
    sug = SugiyamaLayout(graph_core(list(vertices.values()), edges))  # edges in order: grandalf's Graph keeps them in a set
    roots = [v for v in vertices.values() if not v.e_in()]
    sug.init_all(roots=roots, optimize=True)
    sug.xspace, sug.yspace = 150, 46  # room for edge labels beside the vertical flow
    sug.route_edge = route_with_lines
    sug.draw()
    routes = {}
    for e in edges:
        pts = e.view.pts
        src = vertices[e.data[0]].view.xy
        if pts and math.dist(pts[0], src) > math.dist(pts[-1], src):
            pts = pts[::-1]  # grandalf routes reversed (cycle-breaking) edges backwards
        routes[e.data] = pts
    for e in graph.edges:
        if e.source == e.target:  # a loop out of the node's right side and back
            box = vertices[e.source].view
            x, y = box.xy[0] + box.w / 2, box.xy[1]
            routes[(e.source, e.target)] = [(x, y - 8), (x + 44, y - 14), (x + 44, y + 14), (x, y + 8)]
    return {name: v.view for name, v in vertices.items()}, routes


def _midpoint(pts: list[tuple[float, float]]) -> tuple[float, float]:
    """The point halfway along a polyline."""
    segments = list(pairwise(pts))
    lengths = [math.dist(a, b) for a, b in segments]
    half = sum(lengths) / 2
    for (a, b), length in zip(segments, lengths, strict=True):
        if half <= length and length:
            t = half / length
            return a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t
        half -= length
    return pts[len(pts) // 2]


def _edge_svg(pts: list[tuple[float, float]], label: str, cls: str) -> str:
    d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    out = [f'<path class="edge {cls}" d="{d}" marker-end="url(#arrow-{cls.split()[0]})"/>']
    if label:
        x, y = _midpoint(pts)
        w = len(label) * 6.6 + 10
        out.append(f'<g class="elabel {cls}"><rect x="{x - w / 2:.1f}" y="{y - 9:.1f}" width="{w:.1f}" '
                   f'height="18" rx="4"/><text x="{x:.1f}" y="{y + 4:.1f}">{html.escape(label)}</text></g>')
    return "\n".join(out)


def _node_svg(name: str, box: _Box, overlay: Overlay | None) -> str:
    x, y = box.xy
    cls = ["node", "terminal" if name.startswith("__") else "step"]
    sub = ""
    if overlay is not None:
        visits, errors = overlay.visits.get(name, 0), overlay.errors.get(name, 0)
        cls.append("visited" if visits or name == "__start__" else "unvisited")
        if errors:
            cls.append("failed")
        if name == overlay.broke_at:
            cls.append("broke")
        if visits and not name.startswith("__"):
            sub = f"×{visits}" + (f" · {errors} error{'s' * (errors > 1)}" if errors else "")
    rx = NODE_H / 2 if name.startswith("__") else 8
    ty = y + 5 if not sub else y - 1
    parts = [f'<g class="{" ".join(cls)}" data-node="{html.escape(name)}">',
             f'<rect x="{x - box.w / 2:.1f}" y="{y - box.h / 2:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="{rx}"/>',
             f'<text x="{x:.1f}" y="{ty:.1f}">{html.escape(node_label(name))}</text>']
    if sub:
        parts.append(f'<text class="count" x="{x:.1f}" y="{y + 13:.1f}">{html.escape(sub)}</text>')
    parts.append("</g>")
    return "".join(parts)


SVG_STYLE = (
    f".node rect{{fill:{LOOK['node_fill']};stroke:{LOOK['node_line']};stroke-width:1.5}}\n"
    f".node.terminal rect{{fill:{LOOK['terminal_fill']};stroke:{LOOK['terminal_line']}}}\n"
    f".node text{{font:600 14px system-ui,sans-serif;text-anchor:middle;fill:{LOOK['text']}}}\n"
    f".edge{{fill:none;stroke:{LOOK['edge']};stroke-width:1.5}}\n"
    f".elabel rect{{fill:#fff;stroke:{LOOK['label_line']}}}"
    f".elabel text{{font:12px system-ui,sans-serif;text-anchor:middle;fill:{LOOK['label']}}}\n"
) + """
.node text.count{font:12px system-ui,sans-serif;fill:#4b5563}
.node.unvisited rect{fill:#f9fafb;stroke:#d1d5db;stroke-dasharray:4 3}.node.unvisited text{fill:#9ca3af}
.node.failed rect{stroke:#dc2626;stroke-width:2.5}.node.failed text.count{fill:#b91c1c}
.node.broke rect{fill:#fee2e2;stroke:#dc2626;stroke-width:3}
.edge.conditional{stroke-dasharray:5 4}
.edge.taken{stroke:#2563eb;stroke-width:2.5;stroke-dasharray:none}
.edge.last{stroke:#1d4ed8;stroke-width:4}
.edge.untaken{stroke:#d1d5db}
.edge.breaking{stroke:#dc2626}
.elabel.taken text{fill:#1d4ed8;font-weight:600}.elabel.breaking text{fill:#b91c1c}.elabel.untaken text{fill:#9ca3af}
"""


def _markers() -> str:
    colours = {"plain": LOOK["edge"], "conditional": LOOK["edge"], "taken": "#2563eb", "last": "#1d4ed8",
               "untaken": "#d1d5db", "breaking": "#dc2626"}
    return "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" '
        f'markerWidth="11" markerHeight="11" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for name, colour in colours.items()
    )


def _edge_class(edge: Any, overlay: Overlay | None) -> tuple[str, str]:
    """The CSS classes of an edge (first one picks the arrowhead) and its label."""
    key = (edge.source, edge.target)
    label = edge.data or ""
    if overlay is None:
        return ("conditional" if edge.conditional else "plain"), label
    count = overlay.edge_counts.get(key, 0)
    label = overlay.edge_labels.get(key, label)
    if not count:
        return "untaken" + (" conditional" if edge.conditional else ""), label
    if overlay.broke_at == edge.source and edge.target in ("__end__", edge.source):  # a break, or a pause
        return "breaking taken", label
    return ("last taken" if key in overlay.last_path else "taken"), label


def path_svg(graph: Graph, overlay: Overlay | None = None, *, standalone: bool = True) -> str:
    """The graph as SVG; with ``overlay``, a run's traversals drawn on it (``standalone=False``: for inlining in HTML)."""
    boxes, routes = layout(graph)
    xs = [b.xy[0] + s * b.w / 2 for b in boxes.values() for s in (-1, 1)] + [p[0] for r in routes.values() for p in r]
    ys = [b.xy[1] + s * b.h / 2 for b in boxes.values() for s in (-1, 1)] + [p[1] for r in routes.values() for p in r]
    pad = 90
    x0, y0, w, h = min(xs) - pad, min(ys) - 20, max(xs) - min(xs) + 2 * pad, max(ys) - min(ys) + 40
    body = []
    for edge in graph.edges:
        cls, label = _edge_class(edge, overlay)
        body.append(_edge_svg(routes[(edge.source, edge.target)], label, cls))
    body += [_node_svg(name, boxes[name], overlay) for name in graph.nodes]
    return (
        f'<svg {SVG_NS if standalone else ""}class="graph" viewBox="{x0:.0f} {y0:.0f} {w:.0f} {h:.0f}" '
        f'width="{w:.0f}" height="{h:.0f}" role="img" aria-label="the reinloop graph">'
        f"<style>{SVG_STYLE}</style><defs>{_markers()}</defs>\n" + "\n".join(body) + "\n</svg>"
    )


# --- pages and the one entry point -----------------------------------------------------------

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The pages' Content-Security-Policy: nothing may load, no script may run; inline styles only."""

PAGE_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.figure{overflow-x:auto}svg.graph{max-width:100%;height:auto}
"""


def html_page(title: str, body: str, style: str = "") -> str:
    """A self-contained HTML page: inline style, inline SVG, no script, nothing fetched (see :data:`CSP`)."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}{style}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )
