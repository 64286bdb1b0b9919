"""The docs' memory page lists every Memory setting with its default."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from reinloop import Memory

README = (Path(__file__).parent.parent.parent / "docs" / "memory.md").read_text(encoding="utf-8")
MEMORY_SECTION = README


def test_readme_memory_table_lists_every_setting_with_its_default():
    rows = dict(re.findall(r"^\| `(\w+)=[^`]*` \| ([^|]+) \|", MEMORY_SECTION, re.M))
    defaults = {f.name: str(f.default) for f in dataclasses.fields(Memory)}
    assert {k: v.strip() for k, v in rows.items()} == defaults


def test_readme_shows_the_benchmark_command_and_its_table():
    assert "python benchmarks/tokens.py" in README
    assert re.search(r"^\| 15 \| [\d,]+ \| [\d,]+ \| [\d.]+x \|", README, re.M)
