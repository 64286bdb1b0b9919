"""install.sh: the demo's install first, the tests' with ``--test``; one progress line per long step; the
steps' own output only when one fails.

The script runs for real in a subprocess, on a copy of the checkout, with
stand-ins for the commands that would reach the network or the system
(``apt-get``, ``python3 -m venv`` and the ``pip`` it makes): they print what
the real ones print (setuptools' editable-install banner, apt's notes) and
record how they were called.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BANNER = """  setuptools/command/editable_wheel.py:354: BuildBackendWarning: Editable installation.
  !!
          Please be careful with folders in your working directory with the same
          name as your package as they may take precedence during imports.
  !!"""
PIP = f"""#!/bin/bash
echo "pip $*" >> "$CALLS"
echo "Collecting langgraph"
cat >&2 <<'BANNER'
{BANNER}
BANNER
case "$*" in "install --quiet -e "*)
    if [ -n "${{PIP_FAILS:-}}" ]; then
        echo "ERROR: No matching distribution found for langgraph>=1.2" >&2
        exit 1
    fi
esac
"""
PYTHON3 = """#!/bin/bash
echo "python3 $*" >> "$CALLS"
mkdir -p "$3/bin" && cp "$STUBS/pip.stub" "$3/bin/pip" && chmod +x "$3/bin/pip"
"""
APT_GET = """#!/bin/bash
echo "apt-get $*" >> "$CALLS"
echo "Selecting previously unselected package chromium."
echo "debconf: delaying package configuration, since apt-utils is not installed" >&2
"""
TOOLS = ("bash", "dirname", "mktemp", "tail", "rm", "ls", "env", "mkdir", "cp", "chmod", "cat")


@pytest.fixture
def checkout(tmp_path: Path) -> dict[str, Path]:
    """A copy of install.sh, stand-in commands on a PATH without chromium, and where they record their calls."""
    (tmp_path / "src").mkdir()
    shutil.copy(ROOT / "install.sh", tmp_path / "src" / "install.sh")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for tool in TOOLS:
        (stubs / tool).symlink_to(shutil.which(tool))
    for name, text in {"python3": PYTHON3, "apt-get": APT_GET, "id": "#!/bin/bash\necho 0\n", "pip.stub": PIP}.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    (tmp_path / "tmp").mkdir()
    return {"src": tmp_path / "src", "stubs": stubs, "calls": tmp_path / "calls.txt", "tmp": tmp_path / "tmp"}


def install(checkout: dict[str, Path], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": str(checkout["stubs"]), "CALLS": str(checkout["calls"]), "STUBS": str(checkout["stubs"]),
               "TMPDIR": str(checkout["tmp"]), "HOME": str(checkout["tmp"]), **env}
    return subprocess.run(["bash", "install.sh", *args], cwd=checkout["src"], env=environ, capture_output=True,
                          text=True, timeout=60)


def test_the_first_install_is_the_package_alone_with_one_line_per_step(checkout):
    done = install(checkout)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no setuptools banner
    assert done.stdout.splitlines() == [
        "install.sh: creating .venv ...",
        "install.sh: upgrading pip in .venv ...",
        "install.sh: installing reinloop into .venv (pip, a minute) ...",
        "install.sh: done; try .venv/bin/reinloop demo",
    ]
    calls = checkout["calls"].read_text().splitlines()
    assert not [c for c in calls if c.startswith("apt-get")]  # no chromium, no postgresql for the demo
    assert calls[-1] == "pip install --quiet -e ."  # no test extra
    assert os.listdir(checkout["tmp"]) == []  # the log went with the script


def test_the_test_install_adds_the_test_extra_and_the_system_packages_waiting_for_apts_lock(checkout):
    assert install(checkout).returncode == 0
    checkout["calls"].unlink()
    done = install(checkout, "--test")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no apt notes
    lines = done.stdout.splitlines()
    assert lines[0] == "install.sh: updating apt's package lists ..."
    assert lines[1].startswith("install.sh: installing chromium fonts-wqy-microhei") and lines[1].endswith(
        "with apt-get (a few minutes) ...")
    assert lines[2:] == [  # the venv of the first command is used again
        "install.sh: installing reinloop and its test dependencies into .venv (pip, a few minutes) ...",
        "install.sh: done; run the tests with .venv/bin/python -m pytest",
    ]
    calls = checkout["calls"].read_text().splitlines()
    assert calls[0] == "apt-get -o DPkg::Lock::Timeout=120 update -qq"
    assert calls[1].startswith("apt-get -o DPkg::Lock::Timeout=120 install -y -qq chromium fonts-wqy-microhei")
    assert calls[-1] == "pip install --quiet -e .[test]"


def test_an_unknown_option_is_a_usage_error(checkout):
    done = install(checkout, "--tests")
    assert done.returncode == 2 and done.stderr == "usage: ./install.sh [--test]  (--test: also what the tests need)\n"
    assert not checkout["calls"].exists()


def test_a_failing_step_shows_its_output_and_stops(checkout):
    done = install(checkout, "--test", PIP_FAILS="1")
    assert done.returncode == 1
    assert "done" not in done.stdout
    err = done.stderr.splitlines()
    assert err[0] == ("install.sh: installing reinloop and its test dependencies into .venv (pip, a few minutes) "
                      "failed; its last output:")
    assert err[-1] == "ERROR: No matching distribution found for langgraph>=1.2" and "Collecting langgraph" in err
