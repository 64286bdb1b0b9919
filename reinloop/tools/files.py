"""``read_file`` and ``write_file``: file access confined to a sandbox root.

Every path the model gives is walked from the root the user named, one
component at a time, through directory file descriptors: each directory is
opened with ``O_NOFOLLOW | O_DIRECTORY`` *relative to the descriptor of its
parent* (``dir_fd=``), and the file at the end is opened, created and renamed
relative to the descriptor of its directory. No path is ever checked first
and used later, so a local process that swaps a directory or a file for a
symbolic link in the middle of a call gains nothing: a swapped-in link is
seen as a link, and followed only the way the sandbox follows links.

Links inside the sandbox keep working: a link is read with ``readlink`` and
its target walked from the root (absolute targets must lie under the root,
``..`` may not climb above it), at most :data:`MAX_LINKS` links per path.
Anything else (``../``, an absolute path elsewhere, a link leading out, a NUL
byte, a device or FIFO, a file over the size limit, checked with ``fstat`` on
the opened file) is refused with a message that says what to do instead.
Writes go to a temporary file in the target's directory that is then renamed
over the target (a hard or symbolic link at the target is replaced, never
written through). A file with several hard links is not read: one of its
other names may be outside.

``write_file`` counts what it writes against a per-run byte quota and a
per-file cap (:class:`WriteQuota`); a resumed run starts from the bytes its
journaled writes already used (:func:`charge_journaled_writes`).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field, create_model

from ..errors import ConfigurationError
from .options import function_tool

MAX_READ_BYTES = 200_000
from .settings import MAX_FILE_BYTES, WRITE_QUOTA_BYTES  # noqa: E402 (the defaults live with ToolSettings)
MAX_LINKS = 40
NAME_MAX = 255  # bytes of one file or directory name, when the file system does not say (Linux, macOS)
"""Symbolic links followed while walking one path (as the kernel's own limit)."""
QUOTA_KEY = "reinloop_write_quota"
"""The key of ``tool.metadata`` under which ``write_file`` keeps its :class:`WriteQuota`."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SandboxError(ValueError):
    """A path or file the sandbox refuses (``path``, as the model gave it); the message says why and what to do.

    ``limit`` is the size limit in bytes that the file broke, when that is why.
    """

    def __init__(self, message: str, *, path: str, limit: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit


class QuotaError(SandboxError):
    """A write the quota refuses: the limit, what was used and what was asked for are fields."""

    def __init__(self, what: str, limit: int, used: int, wanted: int, path: str) -> None:
        self.what, self.used, self.wanted = what, used, wanted
        if what == "file":
            text = (f"{path!r} would be {wanted:,} bytes, over write_file's per-file cap of {limit:,} bytes; "
                    "write it in smaller files, or raise the cap with --max-file-bytes BYTES "
                    "(from Python: builtin('write_file', max_file_bytes=...))")
        else:
            text = (f"writing {wanted:,} bytes to {path!r} would exceed this run's write_file quota: "
                    f"{used:,} of {limit:,} bytes are used; write less (nothing was written), or raise the quota "
                    "with --write-quota BYTES (from Python: builtin('write_file', quota=...))")
        super().__init__(text, path=path, limit=limit)


class WriteQuota:
    """Bytes ``write_file`` may write in one run (``None``: no limit), and per file; thread-safe."""

    def __init__(self, limit: int | None = WRITE_QUOTA_BYTES, max_file_bytes: int | None = MAX_FILE_BYTES) -> None:
        for name, value in (("quota", limit), ("max_file_bytes", max_file_bytes)):
            if value is not None and (type(value) is not int or value < 0):
                raise ConfigurationError(f"write_file option {name} must be a number of bytes >= 0 or None, got {value!r}")
        self.limit = limit
        self.max_file_bytes = max_file_bytes
        self.used = 0
        self._lock = threading.Lock()

    @contextmanager
    def reserve(self, size: int, path: str) -> Iterator[None]:
        """Hold ``size`` bytes of the quota while the block runs; given back if it fails."""
        if self.max_file_bytes is not None and size > self.max_file_bytes:
            raise QuotaError("file", self.max_file_bytes, self.used, size, path)
        with self._lock:
            if self.limit is not None and self.used + size > self.limit:
                raise QuotaError("run", self.limit, self.used, size, path)
            self.used += size
        try:
            yield
        except BaseException:
            with self._lock:
                self.used -= size
            raise

    def charge(self, size: int) -> None:
        """Count bytes written before (by an earlier process of the same run)."""
        with self._lock:
            self.used += size


@dataclass(frozen=True)
class _Place:
    """Where a path led: an open descriptor of its directory, the last name in it, and the shown path."""

    dir_fd: int
    name: str
    shown: str


class Sandbox:
    """A directory the model may read and write in, and nothing outside it."""

    def __init__(self, root: str | os.PathLike[str], max_read_bytes: int = MAX_READ_BYTES, quota: WriteQuota | None = None) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise ConfigurationError(f"sandbox root {str(root)!r} is not an existing directory; create it or pass another --sandbox")
        self.root = path.resolve()
        self.max_read_bytes = max_read_bytes
        self.quota = quota or WriteQuota()
        try:
            self.name_max = os.pathconf(self.root, "PC_NAME_MAX")
        except (OSError, ValueError):
            self.name_max = NAME_MAX

    # -- walking a path ----------------------------------------------------------------------------

    def _parts(self, relative: str) -> list[str]:
        """The components of ``relative`` below the root (an absolute path must name a place under it)."""
        if "\x00" in relative:
            raise SandboxError("the path contains a NUL byte; give a plain relative path such as 'notes/todo.txt'",
                               path=relative)
        if not relative.strip():
            raise SandboxError("the path is empty; give a relative path such as 'notes/todo.txt'", path=relative)
        if os.path.isabs(relative):
            inside = self._below_root(relative)
            if inside is None:
                raise SandboxError(self._outside(relative, "is an absolute path outside the sandbox"), path=relative)
        else:
            inside = relative.split("/")
        for name in inside:
            size = len(name.encode("utf-8", "surrogatepass"))
            if size > self.name_max:
                raise SandboxError(f"the name {name[:40]!r}... in the path is too long: {len(name)} characters ({size} "
                                   f"bytes), and a file or directory name here has at most {self.name_max} bytes; give "
                                   "a shorter name", path=relative, limit=self.name_max)
        return inside

    def _below_root(self, absolute: str) -> list[str] | None:
        parts = [p for p in absolute.split("/") if p]
        root = [p for p in self.root.as_posix().split("/") if p]
        return parts[len(root):] if parts[: len(root)] == root else None

    @staticmethod
    def _outside(relative: str, why: str) -> str:
        return f"path {relative!r} {why}; use a path relative to the sandbox root, e.g. 'notes/todo.txt'"

    @contextmanager
    def _walk(self, relative: str, *, create: bool = False) -> Iterator[_Place]:
        """Walk ``relative`` to the directory holding its last component; yields that directory's descriptor.

        Every directory on the way is opened relative to the one before, never by path; ``create`` makes
        missing directories. The last component is checked not to be a link (a link there is followed
        like one in the middle); a link swapped in after that check is refused by ``O_NOFOLLOW`` at the open.
        """
        parts = self._parts(relative)
        stack = [os.open(self.root, _DIR_FLAGS)]
        names: list[str] = []
        links = 0
        try:
            while True:
                name = parts.pop(0) if parts else "."
                if name in ("", ".") and parts:
                    continue
                if name == "..":
                    if len(stack) == 1:
                        why = "leads outside the sandbox through a symbolic link" if links else "leaves the sandbox through '..'"
                        raise SandboxError(self._outside(relative, why), path=relative)
                    os.close(stack.pop())
                    names.pop()
                    if parts:
                        continue
                    name = "."
                if name in ("", "."):
                    yield _Place(stack[-1], ".", "/".join(names) or ".")
                    return
                target = self._link(stack[-1], name)
                if target is not None:
                    links += 1
                    if links > MAX_LINKS:
                        raise SandboxError(f"path {relative!r} goes through more than {MAX_LINKS} symbolic links; give the real path",
                                           path=relative)
                    parts = self._splice(relative, target, parts, stack, names)
                    continue
                if not parts:
                    yield _Place(stack[-1], name, "/".join([*names, name]))
                    return
                fd = self._open_dir(stack[-1], name, relative, create)
                if fd is None:  # became a link between the two calls: look again
                    parts.insert(0, name)
                    links += 1
                    continue
                stack.append(fd)
                names.append(name)
        finally:
            for fd in stack:
                os.close(fd)

    @staticmethod
    def _link(dir_fd: int, name: str) -> str | None:
        """The target of ``name`` if it is a symbolic link, else ``None``."""
        try:
            return os.readlink(name, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
                return None
            raise

    def _splice(self, relative: str, target: str, parts: list[str], stack: list[int], names: list[str]) -> list[str]:
        """The components left to walk once a link's ``target`` replaces it; an absolute target restarts at the root."""
        if os.path.isabs(target):
            inside = self._below_root(target)
            if inside is None:
                raise SandboxError(self._outside(relative, "leads outside the sandbox through a symbolic link"),
                                   path=relative)
            while len(stack) > 1:
                os.close(stack.pop())
            names.clear()
            return [*inside, *parts]
        return [*target.split("/"), *parts]

    def _open_dir(self, dir_fd: int, name: str, relative: str, create: bool) -> int | None:
        """The descriptor of directory ``name`` in ``dir_fd``, made if missing and ``create``; ``None`` if it is a link."""
        for _ in range(3):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create:
                    raise SandboxError(f"no directory {name!r} on the path {relative!r} in the sandbox",
                                       path=relative) from None
                with _ignoring(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return None
                if exc.errno == errno.ENOTDIR:
                    raise SandboxError(f"{name!r} on the path {relative!r} is a file, not a directory",
                                       path=relative) from None
                raise
        raise SandboxError(f"the directories of {relative!r} keep changing; try again", path=relative)

    # -- reading -----------------------------------------------------------------------------------

    def read(self, path: str) -> str:
        """The text of the file at ``path`` (relative to the root)."""
        with told(path, "read"), self._walk(path) as place:
            try:
                fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=place.dir_fd)
            except FileNotFoundError:
                raise SandboxError(f"no file {path!r} in the sandbox; {self.listing(place.dir_fd, place.shown.rpartition('/')[0])}",
                                   path=path) from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise SandboxError(f"{path!r} was replaced by a symbolic link while being read; try again",
                                       path=path) from None
                raise
            try:
                info = os.fstat(fd)  # the size and kind of what was opened, not of what a path named before
                if stat.S_ISDIR(info.st_mode):
                    raise SandboxError(f"{path!r} is a directory; {self.listing(fd, place.shown)}", path=path)
                self._check_readable(path, info)
            except BaseException:
                os.close(fd)
                raise
            with os.fdopen(fd, "rb") as f:
                data = f.read(self.max_read_bytes + 1)
        if len(data) > self.max_read_bytes:  # it grew after the fstat
            raise SandboxError(f"{path!r} is over the {self.max_read_bytes:,}-byte limit; it is not read",
                               path=path, limit=self.max_read_bytes)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxError(f"{path!r} is not a UTF-8 text file; only text files can be read", path=path) from None

    def _check_readable(self, relative: str, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"{relative!r} is not a regular file (a device, FIFO or socket); only files can be read",
                               path=relative)
        if info.st_nlink > 1:
            raise SandboxError(f"{relative!r} has {info.st_nlink} hard links, one of which may be outside the sandbox; it is not read",
                               path=relative)
        if info.st_size > self.max_read_bytes:
            raise SandboxError(f"{relative!r} is {info.st_size:,} bytes, over the {self.max_read_bytes:,}-byte limit; it is not read",
                               path=relative, limit=self.max_read_bytes)

    def listing(self, dir_fd: int, where: str, limit: int = 30) -> str:
        """A short list of an open sandbox directory's entries, to help the model find its way."""
        with os.scandir(dir_fd) as entries:
            # links marked as links, not followed: where they lead is not the sandbox's to tell
            names = sorted(e.name + ("@" if e.is_symlink() else "/" if e.is_dir(follow_symlinks=False) else "") for e in entries)
        shown = ", ".join(names[:limit]) + (f", ... ({len(names)} entries)" if len(names) > limit else "")
        return f"entries of {where if where not in ('', '.') else 'the sandbox root'}: {shown or '(empty)'}"

    # -- writing -----------------------------------------------------------------------------------

    def write(self, path: str, content: str) -> str:
        """Write ``content`` to the file at ``path`` (relative to the root), replacing it."""
        data = content.encode("utf-8")
        with told(path, "written"), self._walk(path, create=True) as place:
            if place.name == "." or _is_dir(place.dir_fd, place.name):
                raise SandboxError(f"{path!r} is a directory; give a file path such as 'notes/todo.txt'", path=path)
            with self.quota.reserve(len(data), place.shown):
                self._replace(place, data)
        return f"wrote {len(data):,} bytes to {place.shown}"

    @staticmethod
    def _replace(place: _Place, data: bytes) -> None:
        """Write ``data`` to a new file beside the target, then rename it over the target (both by ``dir_fd``)."""
        tmp = f".reinloop-{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=place.dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, place.name, src_dir_fd=place.dir_fd, dst_dir_fd=place.dir_fd)
        except BaseException:
            with _ignoring(FileNotFoundError):
                os.unlink(tmp, dir_fd=place.dir_fd)
            raise


@contextmanager
def told(path: str, doing: str) -> Iterator[None]:
    """An ``OSError`` no check foresaw (a full disk, a permission, a read-only file system) as a :class:`SandboxError`:
    the model reads what failed, never a crash or the sandbox's own path."""
    try:
        yield
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise SandboxError(f"{path!r} could not be {doing}: {exc.strerror or type(exc).__name__} ({code})",
                           path=path) from None


@contextmanager
def _ignoring(*kinds: type[BaseException]) -> Iterator[None]:
    try:
        yield
    except kinds:
        pass


def _is_dir(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def open_beneath(root: str | os.PathLike[str], relative: str) -> int:
    """A read-only descriptor of the file ``relative`` under ``root``, no symbolic link followed on the way.

    Each directory is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to the one before, the file with
    ``O_NOFOLLOW | O_NONBLOCK``: a link anywhere on the path (also one swapped in meanwhile) raises ``OSError``.
    """
    *dirs, name = relative.split("/")
    if name in ("", ".", "..") or any(d in ("", ".", "..") for d in dirs):
        raise OSError(errno.EINVAL, f"not a plain relative path: {relative!r}")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in dirs:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


class ReadFileInput(BaseModel):
    """Arguments of read_file."""

    path: str = Field(
        description="path of a text file relative to the sandbox root, e.g. 'notes/todo.txt'",
        min_length=1,
        max_length=500,
    )


def _write_input(max_chars: int | None) -> type[BaseModel]:
    """The arguments of write_file; ``content`` is capped at the per-file cap (a character is at least a byte)."""
    return create_model(
        "WriteFileInput",
        __doc__="Arguments of write_file.",
        path=(str, Field(
            description="path of the file to create or replace, relative to the sandbox root, e.g. 'out/report.md'",
            min_length=1,
            max_length=500,
        )),
        content=(str, Field(description="the complete new content of the file (UTF-8 text)", max_length=max_chars)),
    )


def read_file_tool(root: str | os.PathLike[str] | None = None, max_bytes: int = MAX_READ_BYTES) -> BaseTool:
    """``read_file``: read a UTF-8 text file inside the sandbox ``root``."""
    sandbox = _sandbox("read_file", root, max_bytes)
    return function_tool(
        sandbox.read,
        name="read_file",
        description=f"Read a UTF-8 text file (at most {max_bytes:,} bytes) from the sandbox directory. "
        "Paths are relative to the sandbox root; reading a directory lists its entries.",
        args_schema=ReadFileInput,
        parallel_safe=True,
        transient=(),
    )


def write_file_tool(
    root: str | os.PathLike[str] | None = None,
    quota: int | None = WRITE_QUOTA_BYTES,
    max_file_bytes: int | None = MAX_FILE_BYTES,
) -> BaseTool:
    """``write_file``: create or replace a text file inside the sandbox ``root`` (has side effects).

    ``quota`` is the bytes it may write in one run, ``max_file_bytes`` the cap of one file (``None``: no limit).
    """
    limits = WriteQuota(quota, max_file_bytes)
    sandbox = _sandbox("write_file", root, quota=limits)
    room = f" Each file at most {max_file_bytes:,} bytes." if max_file_bytes is not None else ""
    tool = function_tool(
        sandbox.write,
        name="write_file",
        description="Create or replace a UTF-8 text file in the sandbox directory with the given content. "
        "Paths are relative to the sandbox root; missing directories are created." + room,
        args_schema=_write_input(max_file_bytes),
        side_effects=True,
        transient=(),
    )
    tool.metadata = {**(tool.metadata or {}), QUOTA_KEY: limits}
    return tool


def charge_journaled_writes(
    tools: Iterable[BaseTool],
    journal_rows: Iterable[Mapping[str, Any]],
    args_by_call: Mapping[tuple[int, str], Mapping[str, Any]] | None = None,
) -> int:
    """Count the writes a run's journal holds against its ``write_file`` quota (on resume); the bytes counted.

    The journal says which calls ran (a call that returned an error wrote nothing; a call that never
    finished may have written, and counts); ``args_by_call`` (step, call id) -> arguments gives their
    whole content, from the checkpointed state: the journal keeps only a preview of long strings.
    """
    used = 0
    for row in journal_rows:
        if row.get("tool") != "write_file" or row.get("error"):
            continue
        args = (args_by_call or {}).get((row.get("step"), row.get("call_id")))
        if args is None:
            args = json.loads(row["args"]) if isinstance(row.get("args"), str) else row.get("args") or {}
        content = args.get("content")
        used += len(content.encode("utf-8")) if isinstance(content, str) else 0
    for tool in tools:
        quota = (tool.metadata or {}).get(QUOTA_KEY)
        if isinstance(quota, WriteQuota):
            quota.charge(used)
    return used


def _sandbox(tool: str, root: str | os.PathLike[str] | None, max_bytes: int = MAX_READ_BYTES, quota: WriteQuota | None = None) -> Sandbox:
    if root is None:
        raise ConfigurationError(
            f"tool {tool!r} needs a sandbox directory: give --sandbox DIR (from Python: builtin({tool!r}, root=DIR))"
        )
    return Sandbox(root, max_bytes, quota)
