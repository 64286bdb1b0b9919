"""At most once across kill -9: an approved call never runs twice, and an unapproved one never runs.

Each test runs real processes on one run database (``tests/approval_agent.py``):
the run pauses for approval, the approving process is killed with SIGKILL at
one point, and a new process resumes it. The side effect is counted in a file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("approval_agent.py")
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def agent(mode: str, where: Path, kill_at: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), mode, str(where), *([kill_at] if kill_at else [])],
                          capture_output=True, text=True, timeout=120)


def sent(where: Path) -> list[str]:
    path = where / "sent.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def outcome(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def paused_run(where: Path) -> None:
    started = outcome(agent("start", where))
    assert started["status"] == "waiting" and [c["call_id"] for c in started["waiting"]] == ["m1"]
    assert sent(where) == []


def killed_while_approving(where: Path, kill_at: str) -> list[str]:
    """Pause a run for approval, kill the approving process at ``kill_at``; the mails sent by then."""
    paused_run(where)
    proc = agent("approve", where, kill_at)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return sent(where)


def resumed_once(where: Path) -> dict:
    """Resume the run in a new process, with no new answer: it ends done, the mail sent exactly once."""
    done = outcome(agent("resume", where))
    assert done["status"] == "done" and sent(where) == ["ann@example.com"]
    return done


def test_killed_before_the_decision_is_stored_the_call_waits_again_and_runs_once_when_approved(tmp_path):
    assert killed_while_approving(tmp_path, "decision") == []
    refused = agent("resume", tmp_path)  # no decision was stored: resuming without one is refused
    assert refused.returncode == 1 and "waits for approval of send_mail (s1-c1-" in refused.stderr
    done = outcome(agent("approve", tmp_path))
    assert done["status"] == "done" and sent(tmp_path) == ["ann@example.com"]


def test_killed_between_the_decision_and_the_call_the_resume_runs_it_once(tmp_path):
    assert killed_while_approving(tmp_path, "between") == []
    done = resumed_once(tmp_path)  # the decision was stored: no new answer is needed
    assert done["observations"][0]["observation"] == "sent to ann@example.com"


def test_killed_during_the_call_the_resume_never_repeats_it_and_says_its_outcome_is_unknown(tmp_path):
    assert killed_while_approving(tmp_path, "during") == ["ann@example.com"]
    (mail,) = resumed_once(tmp_path)["first_step"]
    assert mail["error"] is True and "the outcome of this send_mail call is unknown" in mail["observation"]


def test_killed_after_the_call_the_resume_replays_its_journaled_result(tmp_path):
    assert killed_while_approving(tmp_path, "after") == ["ann@example.com"]
    done = resumed_once(tmp_path)
    assert done["observations"][0]["observation"] == "sent to ann@example.com"
