"""The sandbox holds while another local process swaps its directories and files for symbolic links.

A separate process (true parallelism, like a real attacker) exchanges a directory or a file of
the sandbox with a symbolic link leading out (``renameat2(RENAME_EXCHANGE)``: the name is
always there, a directory one moment and a link the next), in a tight loop. Meanwhile the
tools run as fast as they can, on paths with many directories below the swapped one (a
check that walks them by path leaves a wide window, even on a busy machine). Whatever the
interleaving, no read may return an outside file's content, no file may appear or change
outside, and the docs index may hold no outside text. Each test runs a bounded time
(:data:`SECONDS`) and stops at the first escape; against the path-checking code this
replaced, every one of 10 runs found an escape within 2 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reinloop.tools.docs import DocsIndex, has_fts5
from reinloop.tools.files import Sandbox

from .conftest import fingerprint

SECONDS = 3.0
DEEP = "/".join(["d"] * 30)
"""Many directories below a swapped one: a check that walks them by path leaves a wide window."""
SECRET = "SECRET-3f9a"
"""A marker only outside files hold: seeing it in a tool's output or the index is an escape."""

SWAPPER = r"""
import ctypes, os, sys, time
seconds, pairs = float(sys.argv[1]), sys.argv[2:]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
swaps = []
for real, target in zip(pairs[0::2], pairs[1::2]):  # a name in the sandbox, the target of a link put in its place
    link = os.path.join(os.path.dirname(real), ".link-" + os.path.basename(real))
    os.symlink(target, link)
    swaps.append((real.encode(), link.encode()))


def exchange(a, b):
    # renameat2(RENAME_EXCHANGE) swaps the two names atomically: the name is always there, a
    # directory one moment and a link leading out the next
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0 and ctypes.get_errno() in (22, 38, 95):
        os.rename(a, a + b".hold")  # no RENAME_EXCHANGE on this file system: the same with three renames
        os.rename(b, a)
        os.rename(a, b)
        os.rename(a + b".hold", a)


print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for real, link in swaps:
        try:
            exchange(real, link)
        except OSError:
            pass
"""


def start_swapper(seconds: float, swaps: list[tuple[Path, str]]) -> subprocess.Popen[str]:
    """The attacking process: swaps each path for a link to its target for ``seconds``."""
    argv = [sys.executable, "-c", SWAPPER, str(seconds)] + [str(x) for pair in swaps for x in pair]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    """End the attacker; it must have been swapping all along (still running)."""
    running = proc.poll() is None
    proc.terminate()
    proc.wait(timeout=10)
    assert running, f"the swapping process died early (exit {proc.returncode}): the test proved nothing"


@pytest.fixture
def world(tmp_path):
    """A sandbox ``box`` and an ``outside`` tree of the same shape, and the swaps of the attack.

    The swapped names are independent (none inside another), so the attacker never works
    through one of its own links and never touches the outside tree itself.
    """
    box, outside = tmp_path / "box", tmp_path / "outside"
    for top, text in ((box, "inside"), (outside, SECRET)):
        for file in (f"a/{DEEP}/todo.txt", f"b/c/{DEEP}/plan.txt", "f/todo.txt"):
            (top / file).parent.mkdir(parents=True, exist_ok=True)
            (top / file).write_text(f"{text} {file}\n")
    (outside / "secret.txt").write_text(f"{SECRET} file\n")
    swaps = [
        (box / "a", str(outside / "a")),  # a directory, absolute link
        (box / "b" / "c", "../../outside/b/c"),  # a directory one level down, relative link
        (box / "f" / "todo.txt", str(outside / "secret.txt")),  # the file itself
    ]
    return box, outside, swaps


def race(swaps: list[tuple[Path, str]], attempt) -> list[str]:
    """Run ``attempt(i, escapes)`` round after round (``i`` from 1) while the attacker swaps, for
    :data:`SECONDS` or until an attempt records an escape; the escapes found."""
    swapper = start_swapper(SECONDS + 60, swaps)
    escapes: list[str] = []
    try:
        end, i = time.monotonic() + SECONDS, 0
        while time.monotonic() < end and not escapes:
            i += 1
            attempt(i, escapes)
    finally:
        stop(swapper)
    return escapes


def test_reads_and_writes_never_leave_the_sandbox_while_its_paths_are_swapped_for_links(world):
    box, outside, swaps = world
    before = fingerprint(outside)
    sandbox = Sandbox(box)
    calls = 0

    def read_and_write(i: int, escapes: list[str]) -> None:
        nonlocal calls
        for path in (f"a/{DEEP}/todo.txt", f"b/c/{DEEP}/plan.txt", "f/todo.txt") * 3:
            try:
                text = sandbox.read(path)
            except (ValueError, OSError):
                continue  # refused: fine
            calls += 1
            if SECRET in text:
                escapes.append(f"read {path} returned {text!r}")
        for path in (f"a/{DEEP}/w{i}.txt", f"b/c/{DEEP}/w{i}.txt"):
            try:
                sandbox.write(path, "written by the tool\n")
            except (ValueError, OSError):
                continue
            calls += 1
        if i % 10 == 0 and fingerprint(outside) != before:
            escapes.append("a file outside the sandbox was created or changed")

    escapes = race(swaps, read_and_write)
    assert not escapes, escapes
    assert fingerprint(outside) == before
    assert calls > 50, f"only {calls} calls went through: the test proved little"


@pytest.mark.skipif(not has_fts5(), reason="this sqlite3 has no FTS5")
def test_docs_indexing_never_reads_outside_while_its_paths_are_swapped_for_links(tmp_path, world):
    docs, outside, swaps = world
    (outside / "huge.md").write_text(f"{SECRET} huge\n" + "x" * 6_000_000)  # over the size cap
    (docs / "f" / "huge.md").write_text("small\n")
    before = fingerprint(outside)
    swaps.append((docs / "f" / "huge.md", str(outside / "huge.md")))
    indexed = 0

    def index_afresh(i: int, escapes: list[str]) -> None:
        nonlocal indexed
        index = DocsIndex(docs, index=tmp_path / "index" / f"{i}.sqlite")  # a fresh index reads every file
        try:
            indexed += index.update().reindexed
        except OSError as exc:  # a file that vanished must be skipped, not crash the tool
            escapes.append(f"indexing crashed: {exc!r}")
        if index.search(SECRET.split("-")[0]):
            escapes.append(f"index {i} holds outside text")

    escapes = race(swaps, index_afresh)
    assert not escapes, escapes
    assert fingerprint(outside) == before
    assert indexed > 20, f"only {indexed} files indexed: the test proved little"
