"""The architecture is checked, not claimed: the import-linter contract in ``.importlinter`` holds.

ARCHITECTURE.md says which room may import which; ``lint-imports`` reads the same rule from
``.importlinter`` and fails on an upward import or a cycle between the modules of a package.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def test_every_import_linter_contract_is_kept() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(LINT), "--no-cache"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout, done.stdout[-2000:]


def test_the_package_root_holds_the_design_card_and_the_rooms_only() -> None:
    entries = sorted(p.name for p in (ROOT / "reinloop").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 14, entries


def private_imports(path: Path) -> list[str]:
    """``langgraph._internal``-style imports in ``path``: a private module of another package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                  if not n.startswith("reinloop") and any(p.startswith("_") for p in n.split(".")[1:])]
    return found


def test_no_private_module_of_another_package_is_imported() -> None:
    found = [hit for path in sorted((ROOT / "reinloop").rglob("*.py")) for hit in private_imports(path)]
    assert found == [], "\n".join(found)


def test_a_name_of_a_module_that_became_a_package_resolves_with_a_warning_and_public_ones_without():
    import warnings

    import reinloop.runs

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from reinloop.runs import list_runs, run  # the run layer's public face: no warning
    assert run.__module__ == "reinloop.runs.api" and list_runs.__module__ == "reinloop.runs.rundb"
    with pytest.warns(DeprecationWarning, match=r"reinloop\.runs\.thread_config moved to reinloop\.runs\.api"):
        reinloop.runs.__getattr__("thread_config")
    with pytest.raises(AttributeError, match="has no attribute 'nosuch'"):
        reinloop.runs.__getattr__("nosuch")
