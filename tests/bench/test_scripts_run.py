"""Every benchmark script still runs (at a tiny size): a benchmark that rots is found here, not in a review."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

SCRIPTS = [
    ("checkpoints.py", ["--steps", "4", "--sqlitesaver-max", "4"], "| 4 |"),
    ("tokens.py", ["--steps", "4"], "| 4 |"),
    ("tools.py", ["--docs", "20", "--calls", "10"], "full build"),
    ("run_log_overhead.py", ["3"], "ms"),
    ("parse.py", ["--sizes", "1000", "--depths", "10,1000", "--repeat", "1"], "| nested 1,000 deep |"),
    ("telemetry.py", ["--steps", "2", "--rounds", "1", "--passes", "1"], "| on / off |"),
]


@pytest.mark.parametrize(("script", "args", "expected"), SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_benchmark_script_runs_and_prints_its_table(script, args, expected, tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120, env=None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expected in proc.stdout
