"""At most once across a crash: SIGKILL during a side-effecting call, then resume in a new process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("crash_agent.py")


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_during_a_side_effect_call_never_repeats_it_and_tells_the_model(tmp_path):
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "start", str(tmp_path)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not lines(tmp_path / "sent.txt") and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert lines(tmp_path / "sent.txt") == ["ann@example.com"], proc.stderr.read() if proc.poll() is not None else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stderr.close()

    resumed = subprocess.run([sys.executable, str(SCRIPT), "resume", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert lines(tmp_path / "sent.txt") == ["ann@example.com"]  # the side effect ran once
    assert lines(tmp_path / "pinged.txt") == ["mail", "mail"]  # the idempotent call simply ran again
    ping, mail = out["actions"]
    assert (ping["observation"], ping["error"]) == ("mail answers", False)
    assert mail["error"] is True
    assert "the outcome of this send_mail call is unknown" in mail["observation"]
    assert any("the outcome of this send_mail call is unknown" in text for text in out["shown"])  # the model saw it
    assert out["status"] == "done"
