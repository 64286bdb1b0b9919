"""Fixtures for the tool tests: a fingerprint of a directory tree, to prove nothing changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest


def fingerprint(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root`` (symlinks not followed): content hash and mtime."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else "-"
            seen[path.relative_to(root).as_posix()] = (digest, info.st_mtime_ns)
    return seen


@pytest.fixture
def unchanged(tmp_path):
    """Call ``unchanged()`` at the end of a test: no file under tmp_path was created, changed or removed."""
    before = fingerprint(tmp_path)

    def check() -> None:
        assert fingerprint(tmp_path) == before

    return check
