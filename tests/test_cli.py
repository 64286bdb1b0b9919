"""The ``reinloop`` command: exit codes, one-line errors, JSON output, the offline demo."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reinloop import Limits, RunSpec
from reinloop.cli import build_parser, main
from reinloop.cli_options import spec_changes

from .openai_server import completion

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture
def no_network(monkeypatch):
    """Fail any connection that leaves 127.0.0.1."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost") and not isinstance(address, str):
            raise AssertionError(f"network call to {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def test_run_without_an_api_key_says_what_to_set():
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "hi"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "reinloop: error: model 'openai:gpt-4o-mini' needs an API key: set OPENAI_API_KEY "
        "(or use --base-url for a local OpenAI-compatible server such as Ollama or vLLM)"
    ]


def test_run_against_an_openai_compatible_server_prints_json(openai_server, capsys):
    openai_server.responses += [
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "(22*1.8)+32"}}]),
        completion("71.6"),
    ]
    code = main(["run", "convert 22C", "--model", "openai:gpt-4o-mini", "--base-url", openai_server.base_url,
                 "--json", "--thread", "cli-1"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    out = lines[-1]
    assert [line["type"] for line in lines] == ["event"] * 10 + ["outcome"]
    assert code == 0
    assert out["thread_id"] == "cli-1" and out["status"] == "done" and out["answer"] == "71.6"
    assert out["counters"]["prompt_tokens"] == 24  # the server's usage numbers, two calls
    assert len(openai_server.requests) == 2
    assert {t["function"]["name"] for t in openai_server.requests[0]["tools"]} == {"calculator", "db_query", "get_weather"}


def test_run_broken_by_a_guard_exits_3(openai_server, capsys):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": f"1+{i}"}}])
                                for i in range(3)]
    code = main(["run", "loop", "--base-url", openai_server.base_url, "--max-steps", "2", "--tools", "calculator"])
    out = capsys.readouterr().out
    assert code == 3
    assert "run broken: max_steps: reached the step limit: 2 of 2 steps" in out


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", "--protocol", "xml"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", "--max-steps", "many"])
    assert exc.value.code == 2


def test_unknown_tool_name_is_a_one_line_error(capsys):
    code = main(["run", "x", "--base-url", "http://127.0.0.1:9/v1", "--tools", "calculator,web"])
    assert code == 1
    assert capsys.readouterr().err.strip() == (
        "reinloop: error: no built-in tool named 'web'; built-in tools: calculator, db_insert, db_query, "
        "get_weather, read_file, search_docs, sql_query, translate, wait, write_file"
    )


def test_demo_runs_offline_and_says_the_model_is_scripted(no_network, capsys):
    assert main(["demo", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "The model is SCRIPTED" in out and "no network call is made" in out
    # Elapsed seconds are the only value that varies between runs of the demo.
    assert re.sub(r"\d+\.\ds/", "0.0s/", out) == (SNAPSHOTS / "demo.txt").read_text(encoding="utf-8")


def test_demo_json_reports_each_scenario(no_network, capsys):
    assert main(["demo", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    lines = [line for line in lines if line["type"] == "outcome"]
    assert [line["status"] for line in lines] == ["done", "done", "done", "broken"]
    assert [line["answer"] for line in lines][:3] == ["60", "杭州今天多云，22℃。(22*1.8)+32 = 71.6", "6"]
    assert lines[3]["break_reason"] == "repeated_action"
    assert all(line["as_expected"] for line in lines)


def test_every_command_help_has_an_example(capsys):
    for command in ("run", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "example: reinloop " + command in capsys.readouterr().out


def test_every_limit_has_a_command_line_flag_that_can_switch_it_off():
    parser = build_parser()
    args = parser.parse_args(["run", "x", "--max-same-errors", "none", "--max-consecutive-errors", "7"])
    assert RunSpec().replace(**spec_changes(args)).limits == Limits(max_same_errors=None, max_consecutive_errors=7)
    args = parser.parse_args(["run", "x", "--max-calls-per-step", "2", "--tool-workers", "3"])
    assert RunSpec().replace(**spec_changes(args)).limits == Limits(max_calls_per_step=2, tool_workers=3)


def test_max_output_tokens_is_sent_and_none_switches_it_off(openai_server, capsys):
    openai_server.responses += [completion("4"), completion("4")]
    assert main(["run", "2+2?", "--base-url", openai_server.base_url, "--max-output-tokens", "200", "-q"]) == 0
    assert main(["run", "2+2?", "--base-url", openai_server.base_url, "--max-output-tokens", "none", "-q"]) == 0
    first, second = openai_server.requests
    assert first["max_completion_tokens"] == 200 and "max_completion_tokens" not in second
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", "--max-output-tokens", "0"])
    assert exc.value.code == 2
    assert '--max-output-tokens: must be a positive whole number or none, got \'0\'' in capsys.readouterr().err
