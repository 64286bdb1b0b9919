"""Pictures of the graph: mermaid and ascii with every route named, PNG and SVG offline, a self-contained page."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from reinloop import draw_graph
from reinloop.cli.app import main
from reinloop.observe.drawing import LOOK, SVG_NS
from reinloop.observe.pictures import default_graph
from reinloop.errors import ConfigurationError
from reinloop.observe.raster import graphviz_graph

SNAPSHOTS = Path(__file__).parent / "snapshots"
STEPS = ["decide", "parse", "validate", "execute", "approve", "memorize", "guard"]
ROUTE_LABELS = ["reply", "not_called", "actions", "answer / error", "run", "refused", "continue / hint", "finish / break",
                "pause", "done", "approve"]


@pytest.fixture
def no_network(monkeypatch):
    """Fail any connection that leaves 127.0.0.1 (LangGraph's mermaid PNG would call a web service)."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"network call to {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def test_graph_command_prints_the_labelled_mermaid_snapshot(capsys):
    assert main(["graph"]) == 0
    assert capsys.readouterr().out == (SNAPSHOTS / "graph.mmd").read_text(encoding="utf-8")


def test_ascii_drawing_lists_every_conditional_edge_with_its_routes():
    art = draw_graph(format="ascii")
    assert "| decide |" in art and "| guard |" in art
    legend = art.split("conditional edges (route names):\n", 1)[1]
    assert sorted(line.split(": ", 1)[1] for line in legend.splitlines()) == sorted(ROUTE_LABELS)
    assert "  guard -> decide: continue / hint" in legend.splitlines()


def test_png_renders_offline_with_the_graph_extra(no_network, tmp_path, capsys):
    png = draw_graph(format="png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert main(["graph", "--format", "png", "-o", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def test_svg_is_the_drawing_of_the_html_page_with_no_langgraph_names(no_network, monkeypatch):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # SVG needs no extra
    svg = draw_graph(format="svg").decode()
    root = ElementTree.fromstring(svg)  # a well-formed standalone file
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert sorted(texts) == sorted(["start", "end", *STEPS, *ROUTE_LABELS])
    assert ">__start__<" not in svg and ">__end__<" not in svg and "ellipse" not in svg
    rects = {g.get("data-node"): g.find("{http://www.w3.org/2000/svg}rect") for g in root.iter("{http://www.w3.org/2000/svg}g")
             if g.get("data-node")}
    assert all(float(r.get("rx")) >= 8 for r in rects.values())  # rounded boxes
    page_svg = draw_graph(format="html").split("<svg ", 1)[1].split("</svg>", 1)[0]
    assert svg.split("<svg ", 1)[1].split("</svg>", 1)[0] == SVG_NS + page_svg


def test_png_is_drawn_with_the_svg_look_not_langgraph_yellow_ellipses():
    viz = graphviz_graph(default_graph().get_graph())
    try:
        rendered = viz.draw(None, format="svg", prog="dot").decode()  # the PNG's drawing, as text to read
    finally:
        viz.close()
    assert "<ellipse" not in rendered and "yellow" not in rendered and "__start__</text>" not in rendered
    assert rendered.count(f'fill="{LOOK["node_fill"]}"') == len(STEPS)
    assert rendered.count(f'fill="{LOOK["terminal_fill"]}"') >= 2
    for text in ["start", "end", *STEPS, *ROUTE_LABELS]:
        assert re.search(rf">\s*{re.escape(text)}\s*<", rendered), text
    assert rendered.count('stroke-dasharray="5,2"') == len(ROUTE_LABELS)  # one dashed edge per route label


@pytest.mark.parametrize(("fmt", "magic"), [("png", b"\x89PNG"), ("svg", b"<?xml")])
def test_drawing_in_a_new_process_prints_nothing_on_stderr(fmt, magic):
    done = subprocess.run([sys.executable, "-m", "reinloop", "graph", "--format", fmt], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == ""  # no "Fontconfig warning" from the Graphviz wheel's fontconfig
    assert done.stdout.startswith(magic)


def test_png_without_pygraphviz_says_which_extra_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # makes "import pygraphviz" fail
    with pytest.raises(ConfigurationError, match=re.escape("pip install 'reinloop[graph]'")):
        draw_graph(format="png")
    assert main(["graph", "--format", "png", "-o", "unused.png"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reinloop: error: drawing png needs Graphviz through pygraphviz, which is not installed")
    assert "svg and html need nothing extra" in err
    assert not Path("unused.png").exists()


def test_html_drawing_is_one_self_contained_page():
    page = draw_graph(format="html")
    assert "<script" not in page and not re.search(r"https?://", page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for label in ROUTE_LABELS:
        assert f">{label}<" in page
    assert page.count('class="node ') == 9  # six nodes, the approval gate, start and end


def test_unknown_format_lists_the_formats():
    with pytest.raises(ConfigurationError, match="unknown drawing format 'gif'; choose one of: mermaid, ascii, png, svg, html"):
        draw_graph(format="gif")


def test_graph_command_help_has_an_example(capsys):
    for command in ("graph",):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "example: " in capsys.readouterr().out
