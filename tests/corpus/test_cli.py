"""A handful of corpus scenarios through ``reinloop run`` in a subprocess: the same checks as in Python.

The model is the scripted OpenAI-compatible server of :mod:`tests.openai_server` (one for the module); the
tools are the corpus's own, served by :mod:`tests.corpus.mcp_server` over stdio MCP (``--mcp``), which logs
each call with the arguments it ran with. A run is started with the protocol, ``--approve none`` (the command
line otherwise waits for an operator before each side-effecting call) and ``--tools translate`` (the command
line needs one built-in tool; the corpus's tools do not use it); the outcome is read from ``--json`` and the
steps from ``reinloop runs show --json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..openai_server import OpenAIServer, completion
from .scenarios import SCENARIOS, Scenario
from .script import replies, run_problems

pytestmark = pytest.mark.slow  # reinloop and an MCP server in subprocesses, twice per test

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {s.id: s for s in SCENARIOS}

CASES = [
    ("enum-transfer-overnight", "tool_calling"),
    ("currency-pay-gbp", "json"),
    ("live-sensor-after-wait", "react"),
    ("shown-delete-user-json", "tool_calling"),
    ("parallel-repeat-jobs", "tool_calling"),
    ("answer-needs-qa-signoff", "json"),
    ("example-parquet-implied", "react"),
]
"""(scenario, protocol): one scenario of each class the issue found, the protocols taken in turn."""


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """One scripted OpenAI-compatible server for every test of the module."""
    with OpenAIServer() as running:
        yield running


def served(reply: Any) -> dict[str, Any]:
    """A scripted reply as the server's ``chat.completion`` body."""
    if isinstance(reply, list):
        return completion(tool_calls=[{"name": c["name"], "args": c["args"], "id": c["id"]} for c in reply])
    return completion(json.dumps(reply, ensure_ascii=False) if isinstance(reply, dict) else reply)


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reinloop", *argv], capture_output=True, text=True, cwd=ROOT,
                          stdin=subprocess.DEVNULL, timeout=300,
                          env={**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT)})


def run_through_cli(s: Scenario, protocol: str, server: OpenAIServer, tmp_path: Path) -> tuple[dict[str, Any], list]:
    """Run ``s`` with ``reinloop run``; the outcome line, the stored state and the calls the tools ran."""
    server.requests.clear()
    server.responses[:] = [served(r) for r in replies(s, protocol)]
    calls, db = tmp_path / "calls.jsonl", tmp_path / "runs.db"
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"corpus": {
        "command": sys.executable, "args": [str(ROOT / "tests" / "corpus" / "mcp_server.py")],
        "env": {"CORPUS_CALLS": str(calls)}}}}))
    proc = cli("run", s.task, "--model", "openai:gpt-4o-mini", "--base-url", server.base_url, "--protocol", protocol,
               "--tools", "translate", "--mcp", str(servers), "--approve", "none", "--model-retries", "0",
               "--json", "--thread", "corpus", "--db", str(db))
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert outcome["type"] == "outcome", proc.stderr
    shown = cli("runs", "show", "corpus", "--json", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)["state"]
    ran = [(name, args) for name, args in map(json.loads, calls.read_text().splitlines())] if calls.exists() else []
    out = {**state, "status": outcome["status"], "answer": outcome.get("answer")}
    if outcome["status"] == "error" and not server.responses:  # the server's script ran out: a 500 ended the run
        out["exhausted"] = outcome.get("message")
    return out, ran


@pytest.mark.parametrize(("scenario_id", "protocol"), CASES, ids=[f"{i}-{p}" for i, p in CASES])
def test_reinloop_run_runs_the_model_s_calls_as_asked_and_accepts_its_answer(scenario_id, protocol, server, tmp_path):
    s = BY_ID[scenario_id]
    out, ran = run_through_cli(s, protocol, server, tmp_path)
    prompts = [json.dumps(r.get("messages"), ensure_ascii=False) for r in server.requests]
    found = run_problems(s, protocol, out, ran, prompts, len(server.requests))
    assert not found, "\n".join(found)
