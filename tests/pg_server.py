"""A throwaway PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` into a temp dir, on 127.0.0.1.

``.ci/run`` starts one itself and exports its URL as ``REINLOOP_TEST_PG``;
when that variable is absent and the binaries are installed (Debian's
``postgresql`` package), the ``pg_server_url`` fixture starts one with
:func:`start` for the session, so ``python -m pytest`` works in a fresh shell.
As root, the server runs as the ``postgres`` user (``initdb`` refuses root).
TCP logins need the password (scram), so wrong credentials are really refused.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .local_net import free_port

VARIABLE = "REINLOOP_TEST_PG"
PASSWORD = "reinloop-test"


def bindir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl`` (Debian's newest version first), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Server:
    """A running server: its URL, and how to stop it."""

    url: str
    directory: Path
    bindir: Path

    def stop(self) -> None:
        """Stop the server and delete its files."""
        _as_postgres([str(self.bindir / "pg_ctl"), "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop"],
                     check=False)
        shutil.rmtree(self.directory, ignore_errors=True)


def _as_postgres(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60)


def start(*, durable: bool = False) -> Server:
    """Start a fresh server on a free port of 127.0.0.1; raises RuntimeError if that is impossible.

    Tests run it with ``fsync=off`` (nothing to keep); ``durable=True`` keeps PostgreSQL's defaults, for benchmarks.
    """
    binaries = bindir()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (no initdb): apt-get install postgresql")
    directory = Path(tempfile.mkdtemp(prefix="reinloop-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres")
    (directory / "pw").write_text(PASSWORD + "\n")
    port = free_port()
    try:
        _as_postgres([str(binaries / "initdb"), "-D", str(directory / "data"), "-U", "postgres", "--auth-local=trust",
                      "--auth-host=scram-sha-256", f"--pwfile={directory / 'pw'}", "-E", "UTF8", "--no-sync"])
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {directory} -c max_connections=200"
        options += "" if durable else " -c fsync=off"
        _as_postgres([str(binaries / "pg_ctl"), "-D", str(directory / "data"), "-o", options,
                      "-l", str(directory / "log"), "-w", "start"])
    except subprocess.CalledProcessError as exc:
        log = (directory / "log").read_text() if (directory / "log").exists() else ""
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {exc.stderr or exc.stdout}{log}") from None
    return Server(f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/postgres", directory, binaries)
