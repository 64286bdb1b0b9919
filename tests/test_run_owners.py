"""Whose process holds a claim: an answer claim whose process is gone may be taken over, a live one never."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from reinloop.runs.rundb import gone, process_mark


def test_a_claim_of_a_live_process_is_not_gone():
    assert not gone(process_mark())


def test_a_claim_of_a_finished_process_is_gone_also_before_it_is_reaped():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie keeps its pid
    assert gone({"pid": child.pid, "host": socket.gethostname()})
    child.wait()
    assert gone({"pid": child.pid, "host": socket.gethostname()})


def test_a_claim_from_another_host_or_without_a_pid_is_never_called_gone():
    assert not gone({"pid": 2**22 + 12345, "host": "elsewhere"})
    assert not gone({"host": socket.gethostname()})
    assert not gone({"pid": True, "host": socket.gethostname()})
    assert not gone({"pid": "1", "host": socket.gethostname()})
