"""A tool that raises anything (but Ctrl-C) or returns what cannot be text gives an error observation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from langchain_core.tools import StructuredTool

from reinloop.tools import configure, run_tool


def make_tool(fn, name="t", **options):
    return configure(StructuredTool.from_function(fn, name=name, description=f"{name} tool"), **options)


def raising(exc):
    def fn(x: str) -> str:
        raise exc

    return fn


class Unreadable(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


class StopsTheProcess(BaseException):
    """Not an Exception, not Ctrl-C."""


@pytest.mark.parametrize(
    ("exc", "observation"),
    [
        (SystemExit(3), "ERROR: SystemExit: 3"),
        (GeneratorExit(), "ERROR: GeneratorExit: (no message)"),
        (StopsTheProcess("bye"), "ERROR: StopsTheProcess: bye"),
        (Unreadable(), "ERROR: Unreadable: (its message could not be read: RuntimeError)"),
        (ValueError("bad \ud800 input"), "ERROR: ValueError: bad \ufffd input"),
    ],
)
def test_anything_a_tool_raises_is_an_error_observation(exc, observation):
    result = run_tool(make_tool(raising(exc)), {"x": "a"})
    assert (result.observation, result.error, result.status) == (observation, True, "error")


def test_ctrl_c_in_a_tool_still_stops_the_run():
    with pytest.raises(KeyboardInterrupt):
        run_tool(make_tool(raising(KeyboardInterrupt())), {"x": "a"})


class NoText:
    def __str__(self):
        raise SystemExit(3)

    __repr__ = __str__


def deep_list(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "kind"),
    [(NoText(), "NoText"), ({"k": NoText()}, "dict"), (deep_list(100_000), "list"), ([10**5000], "list")],
)
def test_a_result_that_cannot_be_turned_into_text_is_an_error_observation(value, kind):
    result = run_tool(make_tool(lambda x: value), {"x": "a"})
    assert result.error and result.status == "error"
    assert result.observation.startswith(f"ERROR: t returned a {kind} that cannot be turned into text (")


def test_a_result_with_lone_surrogates_is_kept_with_replacement_characters():
    result = run_tool(make_tool(lambda x: "a\ud800b"), {"x": "a"})
    assert (result.observation, result.error) == ("a\ufffdb", False)
    orjson.dumps(result.observation)


def test_a_validator_that_raises_system_exit_fails_the_call_not_the_run():
    def validator(text):
        raise SystemExit(3)

    result = run_tool(make_tool(lambda x: "fine", validator=validator), {"x": "a"})
    assert result.error and "its validator raised SystemExit: 3" in result.observation


def test_reinloop_run_goes_on_when_a_tool_raises_system_exit_3(openai_server):
    from tests.openai_server import completion

    openai_server.responses += [completion(tool_calls=[{"name": "shutdown", "args": {"reason": "test"}}]),
                                completion("the service refused to shut down")]
    script = Path(__file__).with_name("exiting_tool_cli.py")
    proc = subprocess.run([sys.executable, str(script), "run", "shut it down", "--base-url", openai_server.base_url,
                           "--tools", "shutdown", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert (outcome["status"], outcome["answer"]) == ("done", "the service refused to shut down")
    tool_results = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["ERROR: SystemExit: 3"]
