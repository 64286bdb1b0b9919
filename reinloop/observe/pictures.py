"""Pictures of the loop: :func:`draw_graph` in every format, of a given graph or of the default one.

Above :mod:`reinloop.graph` (it builds the default graph); the drawing itself (:mod:`.drawing`) sits below it,
so the graph can hand out a :class:`~reinloop.observe.drawing.LoopDrawing`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from .drawing import FORMATS, draw_ascii, html_page, path_svg


def default_graph() -> Any:
    """A graph to draw when none is given: the shape does not depend on the model or tools."""
    from ..graph import build_graph
    from ..models.scripted import ScriptedChatModel
    from ..tools.catalog import builtins

    return build_graph(ScriptedChatModel(), builtins("calculator"))


def draw_graph(graph: Any = None, format: str = "mermaid") -> str | bytes:  # noqa: A002
    """The compiled graph, all conditional edges labelled, as ``mermaid``, ``ascii``, ``png``, ``svg`` or ``html``.

    PNG and SVG are bytes; only PNG needs the ``graph`` extra (Graphviz). The
    others are text; SVG and ``html`` are the drawing reports use, ``html`` as
    one self-contained page.
    """
    if format not in FORMATS:
        raise ConfigurationError(f"unknown drawing format {format!r}; choose one of: {', '.join(FORMATS)}")
    drawable = (graph if graph is not None else default_graph()).get_graph()
    if format == "mermaid":
        return str(drawable.draw_mermaid())
    if format == "ascii":
        return draw_ascii(drawable)
    if format == "html":
        figure = f'<div class="figure">{path_svg(drawable, standalone=False)}</div>'
        return html_page("reinloop graph", f"<h1>The reinloop graph</h1>\n{figure}")
    if format == "svg":
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + path_svg(drawable) + "\n").encode()
    from .raster import draw_png

    return draw_png(drawable)
