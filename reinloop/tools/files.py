"""``read_file`` and ``write_file``: file access confined to a sandbox root.

Every path the model gives is resolved against the root the user named,
symbolic links included, and must land inside it; anything else (``../``,
an absolute path elsewhere, a symlink leading out, a NUL byte, a device or
FIFO, a file over the size limit) is refused with a message that says what
to do instead. Two extra locks close the usual gaps between the check and
the use: the final path component is opened with ``O_NOFOLLOW`` (a symlink
swapped in after the check is not followed), and writes go to a temporary
file in the same directory that is then renamed over the target (a hard or
symbolic link at the target is replaced, never written through). A file with
several hard links is not read: one of its other names may be outside.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..errors import ConfigurationError
from .options import configure

MAX_READ_BYTES = 200_000
MAX_WRITE_CHARS = 100_000


class SandboxError(ValueError):
    """A path or file the sandbox refuses; the message says why and what to do."""


class Sandbox:
    """A directory the model may read and write in, and nothing outside it."""

    def __init__(self, root: str | os.PathLike[str], max_read_bytes: int = MAX_READ_BYTES) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise ConfigurationError(f"sandbox root {str(root)!r} is not an existing directory; create it or pass another --sandbox")
        self.root = path.resolve()
        self.max_read_bytes = max_read_bytes

    def resolve(self, relative: str) -> Path:
        """The real path of ``relative`` inside the root; raises :class:`SandboxError` otherwise."""
        if "\x00" in relative:
            raise SandboxError("the path contains a NUL byte; give a plain relative path such as 'notes/todo.txt'")
        if not relative.strip():
            raise SandboxError("the path is empty; give a relative path such as 'notes/todo.txt'")
        candidate = self.root / relative  # an absolute `relative` replaces the root here
        real = candidate.resolve()
        if not real.is_relative_to(self.root):
            raise SandboxError(self._outside_message(relative))
        return real

    @staticmethod
    def _outside_message(relative: str) -> str:
        if os.path.isabs(relative):
            why = "is an absolute path outside the sandbox"
        elif ".." in Path(relative).parts:
            why = "leaves the sandbox through '..'"
        else:
            why = "leads outside the sandbox through a symbolic link"
        return f"path {relative!r} {why}; use a path relative to the sandbox root, e.g. 'notes/todo.txt'"

    def read(self, path: str) -> str:
        """The text of the file at ``path`` (relative to the root)."""
        real = self.resolve(path)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise SandboxError(f"no file {path!r} in the sandbox; {self.listing(real.parent)}") from None
        try:
            self._check_readable(path, os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as f:
            data = f.read(self.max_read_bytes + 1)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxError(f"{path!r} is not a UTF-8 text file; only text files can be read") from None

    def _check_readable(self, relative: str, info: os.stat_result) -> None:
        if stat.S_ISDIR(info.st_mode):
            raise SandboxError(f"{relative!r} is a directory; {self.listing(self.resolve(relative))}")
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"{relative!r} is not a regular file (a device, FIFO or socket); only files can be read")
        if info.st_nlink > 1:
            raise SandboxError(f"{relative!r} has {info.st_nlink} hard links, one of which may be outside the sandbox; it is not read")
        if info.st_size > self.max_read_bytes:
            raise SandboxError(f"{relative!r} is {info.st_size:,} bytes, over the {self.max_read_bytes:,}-byte limit; it is not read")

    def write(self, path: str, content: str) -> str:
        """Write ``content`` to the file at ``path`` (relative to the root), replacing it."""
        real = self.resolve(path)
        if real == self.root or real.is_dir():
            raise SandboxError(f"{path!r} is a directory; give a file path such as 'notes/todo.txt'")
        real.parent.mkdir(parents=True, exist_ok=True)
        if not real.parent.resolve().is_relative_to(self.root):  # a directory swapped for a link meanwhile
            raise SandboxError(self._outside_message(path))
        data = content.encode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=".reinloop-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, real)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return f"wrote {len(data):,} bytes to {real.relative_to(self.root).as_posix()}"

    def listing(self, directory: Path, limit: int = 30) -> str:
        """A short list of a sandbox directory's entries, to help the model find its way."""
        if not directory.is_dir() or not directory.resolve().is_relative_to(self.root):
            return "list a directory by reading its parent"
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in directory.iterdir())
        shown = ", ".join(names[:limit]) + (f", ... ({len(names)} entries)" if len(names) > limit else "")
        where = directory.relative_to(self.root).as_posix()
        return f"entries of {where if where != '.' else 'the sandbox root'}: {shown or '(empty)'}"


class ReadFileInput(BaseModel):
    """Arguments of read_file."""

    path: str = Field(
        description="path of a text file relative to the sandbox root, e.g. 'notes/todo.txt'",
        min_length=1,
        max_length=500,
    )


class WriteFileInput(BaseModel):
    """Arguments of write_file."""

    path: str = Field(
        description="path of the file to create or replace, relative to the sandbox root, e.g. 'out/report.md'",
        min_length=1,
        max_length=500,
    )
    content: str = Field(description="the complete new content of the file (UTF-8 text)", max_length=MAX_WRITE_CHARS)


def read_file_tool(root: str | os.PathLike[str] | None = None, max_bytes: int = MAX_READ_BYTES) -> BaseTool:
    """``read_file``: read a UTF-8 text file inside the sandbox ``root``."""
    sandbox = _sandbox("read_file", root, max_bytes)
    return configure(
        StructuredTool.from_function(
            sandbox.read,
            name="read_file",
            description=f"Read a UTF-8 text file (at most {max_bytes:,} bytes) from the sandbox directory. "
            "Paths are relative to the sandbox root; reading a directory lists its entries.",
            args_schema=ReadFileInput,
        ),
        parallel_safe=True,
        transient=(),
    )


def write_file_tool(root: str | os.PathLike[str] | None = None) -> BaseTool:
    """``write_file``: create or replace a text file inside the sandbox ``root`` (has side effects)."""
    sandbox = _sandbox("write_file", root)
    return configure(
        StructuredTool.from_function(
            sandbox.write,
            name="write_file",
            description="Create or replace a UTF-8 text file in the sandbox directory with the given content. "
            "Paths are relative to the sandbox root; missing directories are created.",
            args_schema=WriteFileInput,
        ),
        side_effects=True,
        transient=(),
    )


def _sandbox(tool: str, root: str | os.PathLike[str] | None, max_bytes: int = MAX_READ_BYTES) -> Sandbox:
    if root is None:
        raise ConfigurationError(
            f"tool {tool!r} needs a sandbox directory: give --sandbox DIR (from Python: builtin({tool!r}, root=DIR))"
        )
    return Sandbox(root, max_bytes)
