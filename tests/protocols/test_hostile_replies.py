"""No reply, however deep, large or malformed, makes a parser raise, hang, or produce what cannot be stored."""

from __future__ import annotations

import json
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reinloop.tools.bounds import MAX_NESTING
from reinloop.protocols import PROTOCOLS, get_protocol
from reinloop.protocols.base import parse_reply
from reinloop.protocols.json_protocol import JsonProtocol

TEXT_PROTOCOLS = ("json", "json_strict", "react", "auto")
SECONDS_PER_REPLY = 5.0  # loose: a hostile reply took tens of seconds before; the benchmark holds the real target


def read(protocol: str, reply: dict) -> dict:
    """Parse with the protocol itself (it must not raise), check the result is usable and storable."""
    began = time.monotonic()
    pending = get_protocol(protocol).parse(reply)
    elapsed = time.monotonic() - began
    assert elapsed < SECONDS_PER_REPLY, f"{protocol} took {elapsed:.1f} s"
    kinds = [bool(pending.get("parse_error")), pending.get("answer") is not None, bool(pending.get("actions"))]
    assert sum(kinds) == 1, pending
    orjson.dumps(pending)  # what a checkpoint must write
    json.dumps(pending, sort_keys=True)  # what action signatures and token counts do
    return pending


def as_react(json_text: str) -> str:
    return "Thought: go\nAction: calculator\nArgs: " + json_text


def in_call(args_text: str) -> str:
    return '{"thought": "go", "tool": "calculator", "args": ' + args_text + "}"


@pytest.mark.parametrize("protocol", TEXT_PROTOCOLS)
@pytest.mark.parametrize("opener", ['{"a":', "[", '{"a":[', "{"])
def test_a_reply_nested_2000_deep_becomes_a_parse_error(protocol, opener):
    closer = {'{"a":': "}", "[": "]", '{"a":[': "]}", "{": "}"}[opener]
    args = opener * 2000 + "1" + closer * 2000
    text = as_react(args) if protocol == "react" else in_call(args)
    pending = read(protocol, {"text": text})
    if protocol == "react":  # ReAct keeps unusable arguments verbatim for validation to explain
        assert pending["actions"][0]["args"] == {}
    elif protocol == "auto":  # a reply that is no usable call is the answer, as in tool calling
        assert pending["actions"] == []
    elif opener == "{":  # not JSON at all, and too costly to repair
        assert "not valid JSON" in pending["parse_error"] and "to repair" in pending["parse_error"]
    else:
        assert "nested more than 100 levels deep" in pending["parse_error"]


def test_the_error_says_how_deep_is_allowed():
    pending = JsonProtocol().parse({"text": in_call("[" * 500 + "]" * 500)})
    assert f"at most {MAX_NESTING} levels are accepted" in pending["parse_error"]


@pytest.mark.parametrize("protocol", TEXT_PROTOCOLS)
def test_80000_open_braces_are_read_within_seconds_and_never_repaired(protocol):
    pending = read(protocol, {"text": "{" * 80_000})  # json-repair alone took tens of seconds
    if protocol == "json":
        assert "too long to repair (80,000 characters" in pending["parse_error"]
    else:  # react: no Action line; auto: no call, so the text is the answer
        assert not pending["actions"]


def test_a_native_call_nested_too_deep_is_a_call_with_a_problem():
    args: object = 1
    for _ in range(3000):
        args = {"a": args}
    pending = read("tool_calling", {"text": "", "tool_calls": [{"name": "calculator", "args": args, "id": "c1"}]})
    (action,) = pending["actions"]
    assert action["id"] == "c1" and action["args"] == {} and "nested more than" in action["problem"]


def test_a_json_reply_with_a_huge_number_is_stored_or_refused_never_crashes():
    for digits in (20, 5000):
        pending = read("json", {"text": in_call('{"expression": ' + "9" * digits + "}")})
        assert pending.get("parse_error") or pending["actions"]


def test_a_lone_surrogate_escaped_in_json_is_replaced():
    pending = read("json", {"text": in_call('{"expression": "1\\ud800+1"}')})
    assert pending["actions"][0]["args"] == {"expression": "1\ufffd+1"}


class Exploding:
    """A user's protocol whose parse raises what no protocol should."""

    name = "exploding"

    def __init__(self, exc):
        self.exc = exc

    def parse(self, reply):
        raise self.exc


@pytest.mark.parametrize("exc", [RecursionError("deep"), SystemExit(3), GeneratorExit(), MemoryError()])
def test_parse_reply_turns_anything_a_parse_raises_into_a_parse_error(exc):
    pending = parse_reply(Exploding(exc), {"text": "x"})
    assert pending["parse_error"].startswith(f"the reply could not be read ({type(exc).__name__}")


def test_parse_reply_lets_ctrl_c_through():
    with pytest.raises(KeyboardInterrupt):
        parse_reply(Exploding(KeyboardInterrupt()), {"text": "x"})


# Hypothesis: deep nesting, huge inputs, lone surrogates, huge numbers, in every protocol.

openers = st.sampled_from(['{"a":', "[", "{", '{"a":[', "{'a':", '{"a": {"b": [', "[{", "{a:"])
closers = st.sampled_from(["", "}", "]", "]}", "}]"])


@st.composite
def deep_texts(draw):
    """Text nested deep: balanced, truncated, or mixed brackets, raw or inside a call."""
    depth = draw(st.integers(MAX_NESTING - 2, 5000))
    body = draw(openers) * depth + draw(st.sampled_from(["1", '"x"', "", "null"])) + draw(closers) * draw(
        st.integers(0, depth))
    return draw(st.sampled_from([body, in_call(body), "```json\n" + in_call(body) + "\n```", as_react(body)]))


@st.composite
def huge_texts(draw):
    """Up to 1 MB: a chunk (possibly with lone surrogates or huge numbers) repeated, in a frame."""
    chunk = draw(st.one_of(
        st.text(min_size=1, max_size=12),
        st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
        st.sampled_from(["{a:b},", "{", "[1,", '"\\ud800",', "\n \n", "Observation:", "```", "\\", '"', "9" * 30]),
    ))
    size = draw(st.sampled_from([1_000, 10_000, 100_000, 1_000_000]))
    body = chunk * (size // len(chunk) + 1)
    return draw(st.sampled_from([body, in_call(body), "{" + body, as_react(body), "Thought: t\n" + body]))


lone_surrogates = st.text(st.characters(min_codepoint=0xD000, max_codepoint=0xE000), max_size=30)
huge_numbers = st.integers(min_value=2**64).map(str) | st.integers(19, 6000).map(lambda n: "9" * n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(TEXT_PROTOCOLS), deep_texts())
def test_no_deeply_nested_reply_makes_a_parser_raise(protocol, text):
    read(protocol, {"text": text})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(TEXT_PROTOCOLS), huge_texts())
def test_no_huge_reply_makes_a_parser_raise_or_hang(protocol, text):
    read(protocol, {"text": text})


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(TEXT_PROTOCOLS), lone_surrogates, huge_numbers)
def test_no_surrogate_or_huge_number_makes_a_parser_raise(protocol, junk, number):
    for text in (in_call('{"e": "' + junk + '", "n": ' + number + "}"), junk, in_call(json.dumps(junk)), as_react(junk)):
        read(protocol, {"text": text})


native_args = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | lone_surrogates
    | st.integers(min_value=2**63).map(lambda n: n * 10**40),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3) | lone_surrogates, children,
                                                                    max_size=3),
    max_leaves=10,
)


@st.composite
def deep_native_args(draw):
    value = draw(native_args)
    for _ in range(draw(st.integers(0, 3000))):
        value = {"a": value} if draw(st.booleans()) else [value]
    return value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["tool_calling", "auto"]), deep_native_args(), lone_surrogates)
def test_no_native_tool_call_makes_a_parser_raise(protocol, args, text):
    calls = [{"name": "calculator", "args": args, "id": "c1"}]
    read(protocol, {"text": text, "tool_calls": calls, "invalid_tool_calls": [{"name": text, "args": text, "id": None}]})


def test_every_protocol_is_covered():
    assert set(PROTOCOLS) == {*TEXT_PROTOCOLS, "tool_calling"}
