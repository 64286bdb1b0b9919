"""Pictures of the graph: mermaid and ascii with every route named, PNG and SVG offline, a self-contained page."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import pytest

from reinloop import draw_graph
from reinloop.cli import main
from reinloop.errors import ConfigurationError

SNAPSHOTS = Path(__file__).parent / "snapshots"
ROUTE_LABELS = ["actions", "answer / error", "run", "refused", "continue / hint", "finish / break", "pause", "done",
                "approve"]


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


def test_png_and_svg_render_offline_with_the_graph_extra(no_network, tmp_path, capsys):
    png = draw_graph(format="png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    svg = draw_graph(format="svg").decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ["decide", "parse", "validate", "execute", "memorize", "guard", *ROUTE_LABELS]:
        assert f">{text}<" in svg, text
    assert main(["graph", "--format", "png", "-o", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def test_png_without_pygraphviz_says_which_extra_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # makes "import pygraphviz" fail
    with pytest.raises(ConfigurationError, match=re.escape("pip install 'reinloop[graph]'")):
        draw_graph(format="svg")
    assert main(["graph", "--format", "png", "-o", "unused.png"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("reinloop: error: drawing png needs Graphviz through pygraphviz, which is not installed")
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
