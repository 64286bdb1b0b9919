"""The README is executed: its Python examples run, its graph and limits table match the code."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from reinloop import Limits

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SNAPSHOTS = Path(__file__).parent / "snapshots"


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


@pytest.mark.parametrize("source", code_blocks("python"), ids=lambda s: s.splitlines()[0][:40])
def test_readme_python_example_runs(source):
    exec(compile(source, "README.md", "exec"), {"__name__": "readme_example"})


def test_readme_shows_the_current_graph():
    (mermaid,) = code_blocks("mermaid")
    assert mermaid == (SNAPSHOTS / "graph.mmd").read_text(encoding="utf-8")


def test_readme_limits_table_lists_every_limit_with_its_default():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", README, re.M))
    defaults = {f.name: str(f.default) for f in dataclasses.fields(Limits)}
    assert {k: v.strip() for k, v in rows.items()} == defaults


def test_readme_setup_commands_match_ci():
    setup, tests = code_blocks("bash")[:2]
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "reinloop demo" in setup and setup.split("&&")[0].strip() == "./install.sh"  # the demo's install
    parts = [part.strip() for part in tests.split("&&")]
    assert parts == ["./install.sh --test", ".venv/bin/python -m pytest"]  # the tests' install, then the tests
    assert [ci.index(part) for part in parts] == sorted(ci.index(part) for part in parts)  # CI runs both, in order
