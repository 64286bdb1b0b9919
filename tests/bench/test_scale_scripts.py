"""The batch and PostgreSQL storage benchmarks still run (at a tiny size), against the test server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

SCRIPTS = [
    ("batch.py", ["--tasks", "2", "--latency", "0.001"], "| instant | postgresql |"),
    ("postgres_checkpoints.py", ["--steps", "3"], "| 3 |"),
]


@pytest.mark.parametrize(("script", "args", "expected"), SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_scale_benchmark_script_runs_and_prints_its_table(script, args, expected, tmp_path, pg_server_url):
    env = {**os.environ, "REINLOOP_TEST_PG": pg_server_url}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expected in proc.stdout
