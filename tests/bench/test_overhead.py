"""benchmarks/overhead.py --quick: reinloop and create_agent measured side by side, every table filled."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_quick_overhead_run_compares_both_sides_with_and_without_a_saver(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "overhead.py"), "--quick"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    rows = re.findall(r"^\| (none|sqlite) \| (\d+) \| ([\d.]+)[^|]* \| ([\d.]+)[^|]* \| ([\d.]+) \| ([\d.]+) \|", out, re.M)
    assert {(saver, n) for saver, n, *_ in rows} == {(s, n) for s in ("none", "sqlite") for n in ("5", "20")}
    for _, _, ours, theirs, cpu_ratio, _ in rows:
        assert float(ours) > 0 and float(theirs) > 0
        assert abs(float(cpu_ratio) - float(ours) / float(theirs)) < 0.05 * float(cpu_ratio) + 0.01
    assert "reinloop, sqlite (synchronous=NORMAL): size ~ N^k" in out
    assert "create_agent, sqlite (synchronous=FULL): size ~ N^k" in out
    assert re.search(r"\| open the saver \+ `get_tuple` \(wall\) \| 20 \| [\d.]+ ms \| [\d.]+ ms \|", out)
    for n in ("5", "20"):  # a stopped run resumed in a new process, timed to its first model call on both sides
        for clock in ("CPU", "wall"):
            row = re.search(rf"^\| {clock} \| {n} \| (\d+) ms \| (\d+) ms \| ([\d.]+) \|$", out, re.M)
            assert row, (clock, n, out)
            ours, theirs, ratio = int(row[1]), int(row[2]), float(row[3])
            assert ours > 0 and theirs > 0 and abs(ratio - ours / theirs) < 0.01 + 0.01 * ratio
    assert re.search(r"\| first `build_graph` / `create_agent`, CPU \| [\d.]+ ms \| [\d.]+ ms \|", out)
    for command in ("reinloop --help", "reinloop runs list"):
        assert re.search(rf"\| `{command}` vs `python -c \"import langchain.agents\"`, CPU \| \d+ ms \| \d+ ms \|", out)
    assert re.search(r"load average [\d.]+ at the start", out)


def test_the_call_count_compares_both_sides_by_package_with_their_traced_runs(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "overhead.py"), "--calls", "3"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = dict(re.findall(r"^\| (all|langgraph|langchain_core) \| ([\d,.]+) \| [\d,.]+ \|", proc.stdout, re.M))
    assert set(rows) == {"all", "langgraph", "langchain_core"}
    assert float(rows["all"].replace(",", "")) > float(rows["langgraph"].replace(",", "")) > 0
    assert re.search(r"^\| traced child runs \(`on_chain_start`\) \| [\d.]+ \| [\d.]+ \| \|$", proc.stdout, re.M)


def test_the_floor_runs_the_same_calls_through_six_nodes_beside_both_sides(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "overhead.py"), "--floor", "--steps", "5",
                           "--repeats", "1", "--savers", "none", "sqlite"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = re.findall(r"^\| (none|sqlite) \| 5 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", proc.stdout, re.M)
    assert [saver for saver, *_ in rows] == ["none", "sqlite"]
    for _, floor, ours, theirs, floor_ratio, our_ratio in rows:
        floor, ours, theirs = float(floor), float(ours), float(theirs)
        assert floor > 0 and ours > 0 and theirs > 0
        assert abs(float(floor_ratio) - floor / theirs) < 0.01 + 0.02 * floor / theirs
        assert abs(float(our_ratio) - ours / theirs) < 0.01 + 0.02 * ours / theirs


def run_check(tmp_path, *args):
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "overhead.py"), "--check", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)


def test_the_quick_check_holds_both_ratios_to_their_stored_bounds(tmp_path):
    proc = run_check(tmp_path, "--quick")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for saver in ("none", "sqlite"):
        assert re.search(rf"^  ok    {saver}, N = 20: CPU ratio reinloop/create_agent [\d.]+ \(median of 7 pairs\), "
                         rf"stored [\d.]+ \(limit [\d.]+ with 10%\)$", proc.stdout, re.M), proc.stdout


def test_the_check_measures_both_sides_in_pairs_and_takes_the_median_pair_ratio(tmp_path):
    proc = run_check(tmp_path, "--quick", "--steps", "3", "--repeats", "3", "--savers", "none", "sqlite")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for saver in ("none", "sqlite"):
        row = re.search(rf"^\| {saver} \| 3 \| 3 \| ([\d.]+) \(([\d.]+)–([\d.]+)\) \| ([\d.]+) \(([\d.]+)–([\d.]+)\) "
                        rf"\| ([\d.]+) \(([\d.]+)–([\d.]+)\) \|$", proc.stdout, re.M)
        assert row, proc.stdout
        ours, theirs, (ratio, low, high) = row.group(1, 2, 3), row.group(4, 5, 6), row.group(7, 8, 9)
        for median, least, most in (ours, theirs, (ratio, low, high)):
            assert 0 < float(least) <= float(median) <= float(most)
        assert f"{saver}, 3 steps: 3 pair(s) of runs in one process ..." in proc.stderr
        assert f"{saver}, N = 3: CPU ratio {ratio}, no stored bound" in proc.stdout  # the table's ratio is the one checked
    assert list(tmp_path.iterdir()) == []  # the pairs' databases are gone with their temporary directory


def test_the_check_fails_naming_the_ratio_past_an_impossibly_low_stored_bound(tmp_path):
    bounds = tmp_path / "ratios.json"
    bounds.write_text(json.dumps({"tolerance": 0.1, "ratios": {"none": {"5": 0.01}}}))
    proc = run_check(tmp_path, "--quick", "--steps", "5", "--repeats", "1", "--savers", "none", "--ratios", str(bounds))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    failed = re.search(r"none, N = 5: CPU ratio reinloop/create_agent ([\d.]+) \(median of 3 pairs\), stored 0\.01 "
                       r"\(limit 0\.01 with 10%\): (\d+)% above the stored ratio, (\d+)% past the limit", proc.stderr)
    assert failed, proc.stderr
    assert float(failed[1]) > 0.5 and int(failed[2]) > int(failed[3]) > 1000  # by how much, both ways
    assert "overhead check failed: 1 CPU ratio(s) past the stored bound by more than 10%" in proc.stderr
    assert "1 pair(s) a round, 3 round(s)" in proc.stdout  # a ratio past its bound is measured again before it fails
    assert proc.stderr.count("none, 5 steps: 1 pair(s) of runs in one process ...") == 3


def test_the_check_refuses_a_stored_file_it_cannot_read(tmp_path):
    bounds = tmp_path / "ratios.json"
    bounds.write_text("{}")
    proc = run_check(tmp_path, "--ratios", str(bounds))
    assert proc.returncode == 1
    assert f"cannot read the stored ratios {bounds}" in proc.stderr and '"tolerance": 0.1' in proc.stderr
