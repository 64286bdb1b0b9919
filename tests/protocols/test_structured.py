"""Reading a structured answer out of each protocol's reply (reinloop.protocols.structured), scripted."""

from __future__ import annotations

import json

from reinloop.protocols.output import ANSWER_TOOL, AnswerSchema
from reinloop.protocols import get_protocol
from reinloop.protocols.structured import read_structured

SCHEMA = AnswerSchema.of({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def read(protocol_name, text="", tool_calls=()):
    protocol = get_protocol(protocol_name)
    reply = {"text": text, "tool_calls": list(tool_calls), "invalid_tool_calls": []}
    return read_structured(protocol, reply, protocol.parse(reply), SCHEMA)


def test_a_one_key_answer_object_is_kept_whole_in_json():
    pending = read("json", '{"thought": "t", "final_answer": {"city": "Paris"}}')
    assert pending["output"] == {"city": "Paris"} and json.loads(pending["answer"]) == {"city": "Paris"}


def test_a_json_answer_given_as_a_string_holding_an_object_is_read():
    assert read("json", '{"final_answer": "{\\"city\\": \\"Paris\\"}"}')["output"] == {"city": "Paris"}


def test_a_valid_answer_object_written_without_final_answer_is_taken_in_json():
    assert read("json", '```json\n{"city": "Paris"}\n```')["output"] == {"city": "Paris"}


def test_an_object_that_is_neither_a_call_nor_a_valid_answer_stays_a_parse_error():
    pending = read("json", '{"town": "Paris"}')
    assert pending["parse_error"] and "invalid_output" not in pending


def test_the_answer_tool_named_as_a_react_action_is_the_answer():
    pending = read("react", f'Thought: done\nAction: {ANSWER_TOOL}\nArgs: {{"city": "Paris"}}')
    assert pending["output"] == {"city": "Paris"} and pending["actions"] == []


def test_a_finish_call_in_json_gives_its_arguments_as_the_answer():
    assert read("json", '{"tool": "final_answer", "args": {"city": "Paris"}}')["output"] == {"city": "Paris"}


def test_tool_calls_pass_unchanged():
    pending = read("tool_calling", tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}, "id": "c1"}])
    assert [a["tool"] for a in pending["actions"]] == ["calculator"] and "output" not in pending


def test_an_invalid_answer_keeps_its_value_and_quotes_the_error_path():
    pending = read("tool_calling", tool_calls=[{"name": ANSWER_TOOL, "args": {"city": 3}, "id": "c1"}])
    assert pending["invalid_output"] == {"city": 3}
    assert "city: 3 is not of type 'string'" in pending["parse_error"]
