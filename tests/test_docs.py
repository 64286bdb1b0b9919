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
    assert parts == ["./install.sh --test", ".venv/bin/python -m pytest -q"]  # the tests' install, then the tests
    assert [ci.index(part) for part in parts] == sorted(ci.index(part) for part in parts)  # CI runs both, in order


@pytest.mark.slow
def test_readme_test_command_ends_with_the_pass_and_fail_count(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    (_, tests) = code_blocks("bash")[:2]
    words = tests.split("&&")[-1].split()
    assert words[:3] == [".venv/bin/python", "-m", "pytest"]
    (tmp_path / "test_two.py").write_text("def test_passes():\n    pass\n\n\ndef test_fails():\n    assert False\n")
    # the project's own configuration (its addopts), on a two-test file instead of the suite
    command = [sys.executable, *words[1:], "-c", str(root / "pyproject.toml"), "--rootdir", str(tmp_path),
               "-p", "no:cacheprovider", str(tmp_path / "test_two.py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert "1 failed, 1 passed" in done.stdout.splitlines()[-1]
