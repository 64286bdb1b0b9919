"""read_file and write_file stay inside their sandbox, whatever path the model sends."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reinloop.errors import ConfigurationError
from reinloop.tools import builtin, options_of, run_tool
from reinloop.tools.files import SandboxError

from .conftest import fingerprint


@pytest.fixture
def box(tmp_path):
    """A sandbox with a file, next to a secret outside it."""
    root = tmp_path / "box"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("top secret\n", encoding="utf-8")
    (root / "out").symlink_to(tmp_path)  # a directory link leading out
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")  # a file link leading out
    return root


def test_read_file_reads_text_inside_the_sandbox(box):
    read = builtin("read_file", root=box)
    assert read.invoke({"path": "notes/todo.txt"}) == "buy milk\n"
    assert read.invoke({"path": str(box / "notes" / "todo.txt")}) == "buy milk\n"  # absolute, but inside
    assert read.invoke({"path": "notes/../notes/todo.txt"}) == "buy milk\n"


def test_write_file_writes_inside_the_sandbox_and_has_side_effects(box):
    write = builtin("write_file", root=box)
    assert write.invoke({"path": "reports/day1.md", "content": "# 日报\n"}) == "wrote 9 bytes to reports/day1.md"
    assert (box / "reports" / "day1.md").read_text(encoding="utf-8") == "# 日报\n"
    assert options_of(write).side_effects and not options_of(builtin("read_file", root=box)).side_effects


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "leaves the sandbox through '..'"),
        ("notes/../../secret.txt", "leaves the sandbox through '..'"),
        ("/etc/passwd", "is an absolute path outside the sandbox"),
        ("leak.txt", "leads outside the sandbox through a symbolic link"),
        ("out/secret.txt", "leads outside the sandbox through a symbolic link"),
        ("notes/todo.txt\x00.png", "contains a NUL byte"),
        ("missing.txt", r"no file 'missing.txt' in the sandbox; entries of the sandbox root: leak.txt@, notes/, out@"),
        ("notes", r"'notes' is a directory; entries of notes: todo.txt"),
    ],
)
def test_read_file_refuses_paths_outside_or_broken(box, unchanged, path, message):
    began = time.monotonic()
    with pytest.raises(SandboxError, match=message):
        builtin("read_file", root=box).invoke({"path": path})
    assert time.monotonic() - began < 2
    unchanged()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "leaves the sandbox through '..'"),
        ("../evil.txt", "leaves the sandbox through '..'"),
        (None, "is an absolute path outside the sandbox"),  # tmp_path/evil.txt
        ("leak.txt", "leads outside the sandbox through a symbolic link"),
        ("out/evil.txt", "leads outside the sandbox through a symbolic link"),
        ("x\x00y", "contains a NUL byte"),
        ("notes", "is a directory"),
        (".", "is a directory"),
    ],
)
def test_write_file_refuses_paths_outside_and_changes_nothing(box, unchanged, path, message):
    path = path if path is not None else str(box.parent / "evil.txt")
    with pytest.raises(SandboxError, match=message):
        builtin("write_file", root=box).invoke({"path": path, "content": "pwned"})
    unchanged()
    assert (box.parent / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


def test_oversize_binary_fifo_and_hard_linked_files_are_not_read(box):
    (box / "big.txt").write_bytes(b"a" * 2_000)
    (box / "image.bin").write_bytes(b"\xff\xfe\x00\x01")
    os.mkfifo(box / "pipe.txt")
    os.link(box.parent / "secret.txt", box / "hard.txt")
    before = fingerprint(box.parent)
    read = builtin("read_file", root=box, max_bytes=1_000)
    with pytest.raises(SandboxError, match=r"'big.txt' is 2,000 bytes, over the 1,000-byte limit"):
        read.invoke({"path": "big.txt"})
    with pytest.raises(SandboxError, match="is not a UTF-8 text file"):
        read.invoke({"path": "image.bin"})
    began = time.monotonic()
    with pytest.raises(SandboxError, match="is not a regular file"):
        read.invoke({"path": "pipe.txt"})  # opening a FIFO would block: refused at once
    assert time.monotonic() - began < 2
    with pytest.raises(SandboxError, match="has 2 hard links"):
        read.invoke({"path": "hard.txt"})
    assert fingerprint(box.parent) == before


def test_writing_over_a_hard_link_replaces_it_instead_of_writing_through(box):
    os.link(box.parent / "secret.txt", box / "hard.txt")
    builtin("write_file", root=box).invoke({"path": "hard.txt", "content": "new"})
    assert (box / "hard.txt").read_text() == "new"
    assert (box.parent / "secret.txt").read_text() == "top secret\n"


def test_oversize_content_is_refused_by_the_schema(box, unchanged):
    result = run_tool(builtin("write_file", root=box, max_file_bytes=1_000), {"path": "a.txt", "content": "x" * 1_001})
    assert result.error and "String should have at most 1000 characters" in result.observation
    unchanged()


def test_file_errors_reach_the_model_as_clear_observations(box):
    result = run_tool(builtin("read_file", root=box), {"path": "../secret.txt"})
    assert result.observation == (
        "ERROR: SandboxError: path '../secret.txt' leaves the sandbox through '..'; "
        "use a path relative to the sandbox root, e.g. 'notes/todo.txt'"
    )


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
@pytest.mark.parametrize("path", ["a" * 300, "notes/" + "b" * 256 + "/x.txt", "é" * 128])
def test_a_name_over_the_file_systems_limit_is_an_observation_naming_the_limit(box, unchanged, tool, path):
    name = max(path.split("/"), key=len)
    result = run_tool(builtin(tool, root=box), {"path": path, "content": "x"} if tool == "write_file" else {"path": path})
    assert result.error and result.observation.startswith(f"ERROR: SandboxError: the name {name[:40]!r}... in the path is "
                                                          f"too long: {len(name)} characters ({len(name.encode())} bytes)")
    assert f"a file or directory name here has at most {os.pathconf(box, 'PC_NAME_MAX')} bytes" in result.observation
    unchanged()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_any_other_os_error_is_an_observation_without_the_sandbox_path():
    result = run_tool(builtin("write_file", root="/proc/self"), {"path": "x.txt", "content": "x"})
    assert result.observation == "ERROR: SandboxError: 'x.txt' could not be written: No such file or directory (ENOENT)"


def test_the_sandbox_root_must_exist(tmp_path):
    with pytest.raises(ConfigurationError, match="sandbox root '.*nope' is not an existing directory"):
        builtin("read_file", root=tmp_path / "nope")
    with pytest.raises(ConfigurationError, match=r"tool 'write_file' needs a sandbox directory: give --sandbox DIR"):
        builtin("write_file")


def test_a_root_given_through_a_symlink_works(tmp_path, box):
    link = tmp_path / "boxlink"
    link.symlink_to(box)
    assert builtin("read_file", root=link).invoke({"path": "notes/todo.txt"}) == "buy milk\n"
    assert Path(box / "notes" / "todo.txt").exists()


def test_many_calls_leave_no_file_descriptor_open(box):
    read, write = builtin("read_file", root=box), builtin("write_file", root=box)
    before = len(os.listdir("/proc/self/fd"))
    for i in range(200):
        for path in ("notes/todo.txt", "notes", "missing.txt", "out/secret.txt", "notes/../../x"):
            run_tool(read, {"path": path})
        run_tool(write, {"path": f"new/dir/{i}.txt", "content": "x"})
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_links_that_stay_inside_the_sandbox_are_followed(box):
    (box / "alias").symlink_to("notes")  # relative
    (box / "abs").symlink_to(box / "notes")  # absolute, under the root
    (box / "notes" / "up").symlink_to("../notes/todo.txt")
    read, write = builtin("read_file", root=box), builtin("write_file", root=box)
    assert read.invoke({"path": "alias/todo.txt"}) == read.invoke({"path": "abs/up"}) == "buy milk\n"
    assert write.invoke({"path": "alias/new.txt", "content": "n"}) == "wrote 1 bytes to notes/new.txt"
    (box / "loop").symlink_to("loop")
    with pytest.raises(SandboxError, match="goes through more than 40 symbolic links"):
        read.invoke({"path": "loop/x"})
