"""The real-model server's pure parts: which replies are tool calls, and how messages meet a chat template."""

from __future__ import annotations

import json

from benchmarks.realserver import parse_calls, template_messages

NAMES = {"calculator", "wait"}
CALL = '{"name": "calculator", "arguments": {"expression": "17*23"}}'


def test_a_bare_json_call_fenced_or_tagged_is_a_call():
    expected = [("calculator", {"expression": "17*23"})]
    assert parse_calls(CALL, NAMES) == expected
    assert parse_calls(f"```json\n{CALL}\n```", NAMES) == expected
    assert parse_calls(f"<tool_call>\n{CALL}\n</tool_call>", NAMES) == expected
    assert parse_calls('{"name": "calculator", "arguments": "{\\"expression\\": \\"17*23\\"}"}', NAMES) == expected


def test_calls_one_after_another_are_all_kept_and_an_imagined_result_after_them_dropped():
    reply = CALL + '\n{"name": "wait", "arguments": {"seconds": 1}}\n{"result": 391}\nThe answer is 391.'
    assert parse_calls(reply, NAMES) == [("calculator", {"expression": "17*23"}), ("wait", {"seconds": 1})]


def test_prose_an_unknown_tool_or_a_cut_call_is_no_call():
    assert parse_calls(f"I would call {CALL}", NAMES) == []
    assert parse_calls('{"name": "rm", "arguments": {}}', NAMES) == []
    assert parse_calls(CALL[:30], NAMES) == []
    assert parse_calls('{"answer": 391}', NAMES) == []


def test_call_arguments_reach_the_template_as_objects():
    messages = [{"role": "user", "content": "17*23?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "17*23"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "391"}]
    out = template_messages(messages, [{"type": "function", "function": {"name": "calculator"}}], True)
    assert out[1]["tool_calls"][0]["function"]["arguments"] == {"expression": "17*23"}
    assert out[1]["content"] == "" and out[2]["role"] == "tool"


def test_a_template_without_tools_gets_them_in_the_system_message_and_results_as_user_turns():
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
    messages = [{"role": "system", "content": "Be careful."}, {"role": "user", "content": "17*23?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "17*23"}'}}]},
                {"role": "tool", "name": "calculator", "content": "391"}]
    out = template_messages(messages, tools, False)
    assert out[0]["role"] == "system" and out[0]["content"].startswith("Be careful.")
    assert '"name": "calculator"' in out[0]["content"]
    assert json.loads(out[2]["content"]) == {"name": "calculator", "arguments": {"expression": "17*23"}}
    assert out[3] == {"role": "user", "content": "Result of calculator: 391"}


def test_a_model_file_that_does_not_load_stops_the_start_with_the_librarys_error(tmp_path, monkeypatch):
    import pytest

    from benchmarks.realserver import MODELS, RealModelUnavailable, serving

    (tmp_path / MODELS["smol135m"].file).write_bytes(b"not a GGUF file")
    monkeypatch.setenv("REINLOOP_MODELS", str(tmp_path))
    with pytest.raises(RealModelUnavailable, match=r"could not write one token \(exit 1\): ValueError: Failed to load "
                                                   r"model from file|llama-cpp-python is not installed"):
        with serving("smol135m", start_timeout=60):
            pass


def test_a_library_that_dies_of_a_signal_at_its_first_decode_makes_the_model_unavailable_with_the_fix(
        tmp_path, monkeypatch):
    import pytest

    from benchmarks import realserver

    model = tmp_path / "m.gguf"
    monkeypatch.setattr(realserver, "_decodes", {})
    monkeypatch.setattr(realserver, "PROBE", "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    with pytest.raises(realserver.RealModelUnavailable, match=r"died of SIGILL at its first decode: .*"
                                                              r"rebuild that library .* \.ci/rebuild-ggml-cpu"):
        realserver.check_decodes(model)
    monkeypatch.setattr(realserver, "PROBE", "import sys\nsys.exit('no such model')\n")
    monkeypatch.setattr(realserver, "_decodes", {})
    with pytest.raises(realserver.RealModelUnavailable, match=r"could not write one token \(exit 1\): no such model"):
        realserver.check_decodes(model)
    monkeypatch.setattr(realserver, "PROBE", "pass\n")
    monkeypatch.setattr(realserver, "_decodes", {})
    realserver.check_decodes(model)  # a library that decodes: no complaint
