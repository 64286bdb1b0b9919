"""The parsers read what models really send, and never raise on anything."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reinloop.protocols import JsonProtocol, ReactProtocol, ToolCallingProtocol

JSON = JsonProtocol()
REACT = ReactProtocol()
NATIVE = ToolCallingProtocol()


def only_action(pending):
    assert pending["parse_error"] is None and pending["answer"] is None
    (action,) = pending["actions"]
    return action["tool"], action["args"]


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "calculator", "args": {"expression": "1+1"}}',
        '```json\n{"tool": "calculator", "args": {"expression": "1+1"}}\n```',
        'Sure, here you go:\n{"tool": "calculator", "args": {"expression": "1+1"}}\nHope it helps!',
        '{"tool": "calculator", "args": {"expression": "1+1"},}',  # trailing comma
        "{'tool': 'calculator', 'args': {'expression': '1+1'}}",  # single quotes
        '{"tool": "calculator", "args": {"expression": "1+1"',  # truncated braces
        '{"action": "calculator", "action_input": {"expression": "1+1"}}',  # seed 004 keys
        '{"tool": "calculator", "args": "{\\"expression\\": \\"1+1\\"}"}',  # args as a JSON string
        '```\n{"thought": "x", "tool": "calculator", "arguments": {"expression": "1+1"}}',  # unclosed fence
    ],
)
def test_json_protocol_reads_damaged_tool_calls(text):
    assert only_action(JSON.parse({"text": text})) == ("calculator", {"expression": "1+1"})


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('{"final_answer": "60"}', "60"),
        ('{"thought": "done", "final_answer": 60}', "60"),
        ('{"action": "final_answer", "action_input": {"answer": "71.6"}}', "71.6"),
        ('```json\n{"answer": "6"}\n```', "6"),
    ],
)
def test_json_protocol_reads_final_answers(text, answer):
    pending = JSON.parse({"text": text})
    assert pending["parse_error"] is None and pending["answer"] == answer


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply is empty"),
        ("   \n ", "the reply is empty"),
        ("I think the answer is 42", "no JSON object found in the reply: 'I think the answer is 42'"),
        ('{"foo": 1, "bar": 2}', 'neither a "tool" nor a "final_answer" key (keys: bar, foo)'),
        ('{"tool": "", "args": {}}', 'neither a "tool" nor a "final_answer" key'),
        ("[1, 2, 3]", "no JSON object found"),
        ("{}", "not a usable JSON object"),
    ],
)
def test_json_protocol_explains_unusable_replies(text, problem):
    pending = JSON.parse({"text": text})
    assert pending["actions"] == [] and pending["answer"] is None
    assert problem in pending["parse_error"]


def test_json_protocol_keeps_non_object_args_verbatim_for_validation():
    pending = JSON.parse({"text": '{"tool": "get_weather", "args": "北京"}'})
    assert pending["actions"][0]["raw_args"] == "北京"


@pytest.mark.parametrize(
    "text",
    [
        'Thought: need weather\nAction: get_weather\nArgs: {"city": "北京"}',
        'Thought: need weather\nAction: get_weather\nAction Input: {"city": "北京"}',
        'thought: lower case\naction: get_weather\nargs: {"city": "北京"}',
        'Thought: x\nAction: `get_weather`\nArgs: ```json\n{"city": "北京"}\n```',
        'Thought: x\nAction: get_weather\nArgs: {"city": "北京"}\nObservation: 北京 99度\nFinal Answer: 99',
        'Action: get_weather\nArgs: {"city": "北京",}',
    ],
)
def test_react_protocol_reads_actions_and_ignores_invented_observations(text):
    assert only_action(REACT.parse({"text": text})) == ("get_weather", {"city": "北京"})


def test_react_protocol_reads_final_answer_and_thought():
    pending = REACT.parse({"text": "Thought: 24-18=6\nFinal Answer: 相差6度"})
    assert (pending["thought"], pending["answer"]) == ("24-18=6", "相差6度")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply is empty"),
        ("The weather is nice.", 'found neither an "Action:" line nor a "Final Answer:" line'),
        ("Thought: x\nAction:\nArgs: {}", '"Action:" is followed by no tool name'),
        ("Final Answer:   ", '"Final Answer:" is followed by nothing'),
    ],
)
def test_react_protocol_explains_unusable_replies(text, problem):
    assert problem in REACT.parse({"text": text})["parse_error"]


def test_tool_calling_protocol_reads_calls_answers_and_empty_replies():
    calls = [{"name": "calculator", "args": {"expression": "1"}, "id": "c1"}]
    assert only_action(NATIVE.parse({"text": "thinking", "tool_calls": calls})) == ("calculator", {"expression": "1"})
    assert NATIVE.parse({"text": " 42 "})["answer"] == "42"
    assert NATIVE.parse({"text": ""})["parse_error"] == "the reply is empty: neither a tool call nor an answer"


def outcome_kinds(pending) -> int:
    return sum([bool(pending["parse_error"]), pending["answer"] is not None, bool(pending["actions"])])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_makes_a_text_protocol_raise(text):
    for protocol in (JSON, REACT, NATIVE):
        assert outcome_kinds(protocol.parse({"text": text})) == 1


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["tool", "args", "action", "action_input", "final_answer", "thought", "x"]), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_like, st.sampled_from(["{}", "```json\n{}\n```", "text {} text", "{}}}", "{"]))
def test_no_json_shaped_reply_makes_the_json_protocol_raise(value, frame):
    import json

    text = frame.replace("{}", json.dumps(value, ensure_ascii=False)) if frame != "{" else "{" + json.dumps(value)[:-1]
    assert outcome_kinds(JSON.parse({"text": text})) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"name": st.text(max_size=10), "args": json_like, "id": st.text(max_size=5)}), max_size=3),
       st.lists(st.fixed_dictionaries({"name": st.one_of(st.none(), st.text(max_size=5)), "args": st.one_of(st.none(), st.text(max_size=10)), "id": st.none()}), max_size=2),
       st.text(max_size=20))
def test_no_tool_call_payload_makes_the_native_protocol_raise(calls, invalid, text):
    assert outcome_kinds(NATIVE.parse({"text": text, "tool_calls": calls, "invalid_tool_calls": invalid})) == 1
