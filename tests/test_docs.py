"""The README and the docs site are executed: their Python examples run, their graph and tables match the code,
the site builds with ``mkdocs build --strict``, and the README stays one page."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reinloop import Limits

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SNIPPET = re.compile(r'^--8<-- "([^":]+)(?::([\w-]+))?"$', re.M)


def with_snippets(text: str) -> str:
    """``text`` as the site shows it: each ``--8<-- "FILE"`` or ``"FILE:SECTION"`` line replaced by what it includes."""
    def included(match: re.Match[str]) -> str:
        whole = (ROOT / match[1]).read_text(encoding="utf-8")
        if match[2] is None:
            return whole
        start, end = f"<!-- --8<-- [start:{match[2]}] -->", f"<!-- --8<-- [end:{match[2]}] -->"
        assert start in whole and end in whole, f"{match[1]} has no section {match[2]}"
        return whole.split(start, 1)[1].split(end, 1)[0]
    return SNIPPET.sub(included, text)


PAGES = {path.name: with_snippets(path.read_text(encoding="utf-8")) for path in sorted((ROOT / "docs").glob("*.md"))}
SNAPSHOTS = Path(__file__).parent / "snapshots"


def code_blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


EXAMPLES = [("README.md", source) for source in code_blocks("python")] + [
    (f"docs/{name}", source) for name, text in PAGES.items() for source in code_blocks("python", text)]


@pytest.mark.parametrize(("where", "source"), EXAMPLES, ids=lambda v: v.splitlines()[0][:40] if "\n" in v else v)
def test_every_python_example_of_the_readme_and_the_docs_runs(where, source):
    exec(compile(source, where, "exec"), {"__name__": "docs_example"})


def test_every_picture_of_the_graph_in_the_docs_is_the_current_graph():
    pictures = [*code_blocks("mermaid"), *(m for text in PAGES.values() for m in code_blocks("mermaid", text))]
    assert len(pictures) >= 2  # the README's tour and the graph page
    assert set(pictures) == {(SNAPSHOTS / "graph.mmd").read_text(encoding="utf-8")}


def test_the_limits_page_lists_every_limit_with_its_default():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", PAGES["limits.md"], re.M))
    defaults = {f.name: str(f.default) for f in dataclasses.fields(Limits)}
    assert {k: v.strip() for k, v in rows.items()} == defaults


def test_the_readme_is_one_page_and_links_to_the_docs():
    assert README.count("\n") <= 300
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", README))
    assert linked and linked <= set(PAGES)


def test_user_docs_name_no_issue_numbers_nor_the_shared_folder():
    for name, text in {"README.md": README, **PAGES}.items():
        assert "../shared" not in text, name
        assert not re.search(r"\bissue #?\d+", text, re.I), name


def test_the_docs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                          **{k: v for k, v in __import__("os").environ.items()}})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8").count("build_graph") > 1


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
