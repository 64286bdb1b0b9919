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

from reinloop import ConfigurationError, Limits, RunSpec
from reinloop.cli.app import build_parser, main
from reinloop.cli.options import in_flag_terms, spec_changes, spec_flags

from .openai_server import PLAUSIBLE, completion

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
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "(22*1.8)+32"}}], **PLAUSIBLE),
        completion("71.6", **PLAUSIBLE),
    ]
    code = main(["run", "convert 22C", "--model", "openai:gpt-4o-mini", "--base-url", openai_server.base_url,
                 "--json", "--thread", "cli-1"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    out = lines[-1]
    assert [line["type"] for line in lines] == ["event"] * 10 + ["outcome"]
    assert code == 0
    assert out["thread_id"] == "cli-1" and out["status"] == "done" and out["answer"] == "71.6"
    assert out["counters"]["prompt_tokens"] == 2 * 960  # the server's usage numbers (plausible ones), two calls
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


def test_unknown_tool_name_is_a_one_line_usage_error_before_the_header(capsys):
    code = main(["run", "x", "--base-url", "http://127.0.0.1:9/v1", "--tools", "calculator,web"])
    assert code == 2
    out, err = capsys.readouterr()
    assert out == ""  # no `thread <id>` line first
    assert err.strip() == (
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


@pytest.mark.parametrize("flag", [f.flag for f in spec_flags() if f.kind.startswith(("int", "float"))])
def test_every_number_flag_refuses_a_negative_value_in_flag_terms(flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", flag, "-1"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"argument {flag}: must be " in err and "got '-1'" in err
    assert not re.search(r"\b(Limits|RetryPolicy|Memory|ToolSettings|AnswerRules|RunSpec)\.|None", err)


ZERO_FLAGS = {"--model-retries": 0, "--tool-retries": 0, "--min-tool-calls": 0}
"""The whole-number flags for which 0 is a value: no retries (one attempt), no tool call needed."""


@pytest.mark.parametrize("flag", [f for f in spec_flags() if f.kind.startswith("int")], ids=lambda f: f.flag)
def test_a_whole_number_flag_takes_zero_exactly_when_the_library_does(flag, capsys):
    field = flag.alias.to_field(0) if flag.alias else 0  # --model-retries 0 is RetryPolicy.attempts=1
    data: dict = {flag.path[-1]: field}
    for part in reversed(flag.path[:-1]):
        data = {part: data}
    try:
        RunSpec.from_dict(data)
    except ConfigurationError:
        library = False
    else:
        library = True
    assert library == (flag.flag in ZERO_FLAGS)
    if library:
        assert flag.parse("0") == field
    else:
        with pytest.raises(SystemExit) as exc:
            main(["run", "x", flag.flag, "0"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"argument {flag.flag}: must be " in err and "got '0'" in err


def test_tool_retries_zero_reaches_the_limits(capsys):
    from reinloop.cli.options import spec_changes

    args = build_parser().parse_args(["run", "x", "--tool-retries", "0"])
    assert RunSpec().replace(**spec_changes(args)).limits.tool_retries == 0
    with pytest.raises(ConfigurationError, match=r"Limits.tool_retries must be >= 0, got -1"):
        Limits(tool_retries=-1)


def test_max_steps_minus_one_says_what_the_flag_takes(capsys):
    with pytest.raises(SystemExit):
        main(["run", "x", "--max-steps", "-1"])
    assert "argument --max-steps: must be a positive whole number or none, got '-1'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["run", ""], ["run", "   "], ["run", "x", "--tools", ""], ["run", "x", "--tools", " , "],
                                  ["batch", "t.jsonl", "--concurrency", "0"], ["resume", "t", "--extra-steps", "-1"],
                                  ["runs", "prune", "--keep-last", "-1"]])
def test_empty_or_impossible_values_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().out == ""


def test_a_spec_error_found_after_parsing_is_worded_in_flags():
    from reinloop.errors import SettingError

    error = SettingError("Limits", "max_steps", "must be positive", value=-1, none="off")
    assert str(error) == "Limits.max_steps must be positive, got -1; use None to switch it off"
    assert in_flag_terms(error) == "--max-steps must be positive, got -1; use none to switch it off"
    retries = SettingError("RetryPolicy", "attempts", "must be at least 1", shown=False)
    assert in_flag_terms(retries) == "--model-retries must be at least 1"
    unflagged = SettingError("RunSpec", "limits", "must be a Limits (or a mapping of its fields), got int", shown=False)
    assert in_flag_terms(unflagged) == str(unflagged) == "RunSpec.limits must be a Limits (or a mapping of its fields), got int"


def test_only_a_setting_error_is_reworded_never_a_message_that_names_a_setting():
    text = "Limits.max_steps must be positive, got -1; use None to switch it off"
    assert in_flag_terms(ConfigurationError(text)) == text


@pytest.mark.parametrize(("make", "owner", "name"), [
    (lambda: Limits(max_steps=0), "Limits", "max_steps"),
    (lambda: RunSpec(memory={"window_steps": 0}), "Memory", "window_steps"),
    (lambda: RunSpec(tool_settings={"write_quota": 0}), "ToolSettings", "write_quota"),
    (lambda: RunSpec(model=""), "RunSpec", "model"),
    (lambda: RunSpec(approve={"write_file": "sometimes"}), "RunSpec", "approve"),
])
def test_a_refused_setting_carries_which_setting_and_why_as_fields(make, owner, name):
    from reinloop.errors import SettingError

    with pytest.raises(SettingError) as refused:
        make()
    assert (refused.value.owner, refused.value.name) == (owner, name)
    assert refused.value.reason.startswith("must ") and refused.value.reason in str(refused.value)


def paused_run(openai_server, thread, *extra):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}])]
    return main(["run", "What is 6*7?", "--base-url", openai_server.base_url, "--max-steps", "1", "--tools",
                 "calculator", "--thread", thread, "-q", *extra])


def test_runs_list_shows_the_status_names_status_accepts(openai_server, capsys):
    assert paused_run(openai_server, "p1") == 3
    capsys.readouterr()
    assert main(["runs", "list"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["THREAD", "STATUS", "STEPS", "COST", "UPDATED", "TASK", "OUTCOME"]
    assert row.split()[:3] == ["p1", "paused", "1"]
    for status, listed in (("paused", ["p1"]), ("broken", ["p1"]), ("done", [])):
        assert main(["runs", "list", "--status", status, "--json"]) == 0
        assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == listed


def test_runs_list_aligns_columns_by_display_width_and_shortens_long_ids():
    from rich.cells import cell_len

    from reinloop.cli.runs import table_row

    rows = [table_row(["t" * 30, "done", "1", "-", "2026-12-01 20:00:00", "查询用户ID为1的信息，然后计算他的年龄乘以2的结果" * 2, "60"]),
            table_row(["short", "broken", "12", "$0.0010", "2026-12-01 20:00:00", "plain task", "max_steps"])]
    assert rows[0].startswith("t" * 13 + "…  done")
    starts = [[cell_len(row[:row.index(word)]) for word in ("2026", row.split()[-1])] for row in rows]
    assert starts[0] == starts[1]  # the UPDATED and OUTCOME columns start at the same cell in both rows


def test_runs_show_numbers_breaks_within_the_thread_and_shows_the_protocol_after_resume(openai_server, capsys):
    assert paused_run(openai_server, "first", "--protocol", "json") == 3
    assert paused_run(openai_server, "second", "--protocol", "json") == 3
    openai_server.responses += [completion("6*7 = 42")]
    assert main(["resume", "second", "--extra-steps", "1", "--protocol", "tool_calling", "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "show", "second"]) == 0
    out = capsys.readouterr().out
    assert "protocol: tool_calling" in out
    assert re.findall(r"break #\d+", out) == ["break #1"]


def test_one_step_is_said_in_the_singular(openai_server, capsys):
    openai_server.responses += [completion("42", **PLAUSIBLE)]
    assert main(["run", "What is 6*7?", "--base-url", openai_server.base_url, "--no-color", "--tools", "calculator"]) == 0
    assert re.search(r"thread \w+: 1 step, 1000 tokens, \$0\.0002, 0 errors", capsys.readouterr().out)


def test_a_run_waiting_for_approval_is_listed_as_waiting(openai_server, tmp_path, capsys):
    openai_server.responses += [completion(tool_calls=[{"name": "write_file", "args": {"path": "a.txt", "content": "hi"}}])]
    assert main(["run", "Write hi to a.txt", "--base-url", openai_server.base_url, "--tools", "write_file",
                 "--sandbox", str(tmp_path), "--thread", "w1", "-q"]) == 4
    capsys.readouterr()
    assert main(["runs", "list", "--status", "waiting", "--json"]) == 0
    assert [(r["thread_id"], r["status"]) for r in json.loads(capsys.readouterr().out)] == [("w1", "waiting")]
    assert main(["runs", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["w1", "waiting"]
