"""``protocol="json_strict"``: JSON replies held to a schema by the endpoint (``response_format``)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from langchain_core.tools import tool
from pydantic import BaseModel

from reinloop import build_graph
from reinloop.protocols import get_protocol
from reinloop.protocols.json_protocol import THOUGHT_CHARS, reply_schema
from reinloop.models.retry import RetryPolicy
from reinloop.tools import ToolRegistry, builtins

from .openai_server import completion

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05, timeout=2.0)


class Point(BaseModel):
    x: int
    y: int


@tool
def plot(points: list[Point], title: str = "") -> str:
    """Plot the points."""
    return f"{len(points)} points"


def test_every_call_of_a_tool_it_has_and_every_answer_fit_the_reply_schema():
    schema = reply_schema(ToolRegistry([*builtins("calculator"), plot]))
    fits = [{"tool": "calculator", "args": {"expression": "6*7"}},
            {"tool": "plot", "args": {"points": [{"x": 1, "y": 2}]}, "thought": "draw it"},
            {"final_answer": "42"}]
    for reply in fits:
        jsonschema.validate(reply, schema)


@pytest.mark.parametrize("reply", [
    {"tool": "calculater", "args": {"expression": "6*7"}},  # a tool it does not have
    {"tool": "calculator", "args": {"expr": "6*7"}},  # an argument the tool does not declare
    {"tool": "plot", "args": {"points": [{"x": "one", "y": 2}]}},  # a $ref'd model's field of the wrong type
    {"thought": "I will think about it"},  # neither a call nor an answer
    {"final_answer": "42", "thought": "x" * (THOUGHT_CHARS + 1)},  # a thought past its bound
])
def test_a_reply_that_is_no_call_of_a_tool_it_has_nor_an_answer_does_not_fit(reply):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(reply, reply_schema(ToolRegistry([*builtins("calculator"), plot])))


def test_a_structured_answer_must_fit_its_own_schema():
    schema = reply_schema(ToolRegistry(builtins("calculator")), Point.model_json_schema())
    jsonschema.validate({"final_answer": {"x": 1, "y": 2}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"final_answer": "1, 2"}, schema)


def test_the_call_comes_before_the_thought_in_the_schema_the_endpoint_holds_replies_to():
    shapes = reply_schema(ToolRegistry(builtins("calculator")))["anyOf"]
    assert list(shapes[0]["properties"]) == ["tool", "args", "thought"]
    assert list(shapes[-1]["properties"]) == ["final_answer", "thought"]


def test_every_request_of_a_json_strict_run_carries_the_reply_schema(openai_server):
    openai_server.responses += [completion('{"tool": "calculator", "args": {"expression": "6*7"}}'),
                                completion('{"final_answer": "42"}')]
    out = build_graph("openai:test-model", builtins("calculator"), base_url=openai_server.base_url,
                      protocol="json_strict", retry=FAST).invoke({"task": "6*7"})
    assert out["answer"] == "42"
    expected = get_protocol("json_strict").response_format(ToolRegistry(builtins("calculator")))
    assert [r.get("response_format") for r in openai_server.requests] == [expected, expected]
    assert all("tools" not in r for r in openai_server.requests)


def test_other_protocols_send_no_response_format(openai_server):
    openai_server.responses += [completion('{"final_answer": "42"}')]
    build_graph("openai:test-model", builtins("calculator"), base_url=openai_server.base_url,
                protocol="json", retry=FAST).invoke({"task": "6*7"})
    assert "response_format" not in openai_server.requests[0]


def test_the_prompt_of_json_strict_shows_the_call_first_and_the_thought_as_optional():
    text = get_protocol("json_strict").instructions(ToolRegistry(builtins("calculator")))
    assert '{"tool": "<tool name>", "args": {<arguments>}}' in text and "may follow" in text
    assert '"thought": "<why>"' not in text


def test_the_benchmark_server_holds_a_json_schema_response_format_by_a_grammar():
    from benchmarks.realserver import grammar_format

    shape = get_protocol("json_strict").response_format(ToolRegistry(builtins("calculator")))
    assert grammar_format(shape) == {"type": "json_object", "schema": shape["json_schema"]["schema"]}
    assert grammar_format({"type": "json_object"}) == {"type": "json_object"}
    assert grammar_format({"type": "text"}) is None and grammar_format(None) is None


def test_llama_cpp_turns_the_reply_schema_of_every_builtin_tool_into_a_grammar(tmp_path):
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="llama-cpp-python is not installed")
    import json

    from reinloop.tools import BUILTINS

    import sqlite3

    sqlite3.connect(tmp_path / "shop.db").execute("create table orders (id integer)")
    tools = builtins(list(BUILTINS), sandbox=tmp_path, db=tmp_path / "shop.db", docs=tmp_path, db_tables="orders")
    schema = reply_schema(ToolRegistry([*tools, plot]))
    gbnf = grammar.json_schema_to_gbnf(json.dumps(schema))
    assert "calculator" in gbnf and "final_answer" in gbnf


def test_a_json_strict_reply_the_length_cap_cut_is_a_failed_step_the_model_is_told_of_not_a_crash(openai_server):
    cut = '{"tool": "calculator", "args": {"expression": "6*'
    openai_server.responses += [completion(cut, finish_reason="length", completion_tokens=20), completion('{"final_answer": "42"}')]
    out = build_graph("openai:test-model", builtins("calculator"), base_url=openai_server.base_url,
                      protocol="json_strict", retry=FAST, max_output_tokens=20).invoke({"task": "6*7"})
    assert out["answer"] == "42" and out["counters"]["errors"] == 1
    assert out["scratchpad"][0]["parse_error"] and "20 tokens" in json.dumps(openai_server.requests[1])


def test_a_model_s_own_request_body_settings_stay_beside_the_reply_schema():
    from langchain_openai import ChatOpenAI

    from reinloop.models.resolve import response_format_kwargs

    model = ChatOpenAI(model="m", api_key="sk-test", extra_body={"top_k": 5})
    kwargs = response_format_kwargs(model, {"type": "json_object"})
    assert kwargs == {"extra_body": {"top_k": 5, "response_format": {"type": "json_object"}}}
