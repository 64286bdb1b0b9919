"""Bounds on what a model sends: too deep, too large to store, too costly to repair."""

from __future__ import annotations

import json

import orjson
import pytest
from langchain_core.messages import AIMessage

from reinloop.tools.bounds import (
    MAX_NESTING,
    MAX_REPAIR_CHARS,
    bounded_message,
    check_value,
    clean_text,
    describe_exception,
    nesting_depth,
    repair_problem,
)


def nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_check_value_accepts_the_deepest_nesting_allowed_and_refuses_one_level_more():
    assert check_value(nested(MAX_NESTING)) == (nested(MAX_NESTING), None)
    value, problem = check_value(nested(MAX_NESTING + 1))
    assert value is None and f"at most {MAX_NESTING} levels" in problem


def test_check_value_refuses_nesting_far_beyond_any_recursion_limit():
    value, problem = check_value(nested(100_000))
    assert value is None and "nested more than" in problem


def test_a_container_is_allowed_its_own_levels_above_the_model_values():
    pending = {"actions": [{"args": nested(MAX_NESTING)}]}
    assert check_value(pending)[1] is not None
    assert check_value(pending, MAX_NESTING + 3)[1] is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"n": 2**64}, "too large for a 64-bit integer; send it as a string"),
        ({"n": -(2**63) - 1}, "too large for a 64-bit integer"),
        ({"n": 10**5000}, "about 5001 digits"),
        ({1: "x"}, "a key that is not a string: a int"),
        ({"x": object()}, "not JSON data"),
    ],
)
def test_check_value_refuses_what_storage_cannot_write(value, problem):
    checked, found = check_value(value)
    assert checked is None and problem in found


def test_check_value_keeps_the_largest_64_bit_integers():
    assert check_value([2**64 - 1, -(2**63)])[1] is None


def test_lone_surrogates_are_replaced_so_the_value_can_be_stored():
    value, problem = check_value({"k\ud800": ["a\udfffb", "ok 好"]})
    assert problem is None and value == {"k\ufffd": ["a\ufffdb", "ok 好"]}
    orjson.dumps(value)
    assert clean_text("x\ud83dy") == "x\ufffdy" and clean_text("普通") == "普通"


def test_nesting_depth_counts_brackets_even_inside_strings_an_upper_bound():
    assert nesting_depth('{"a": [1, {"b": 2}]}') == 3
    assert nesting_depth('{"a": "[[[["}') == 5
    assert nesting_depth("{" * 50_000) == 50_000
    assert nesting_depth("no brackets") == 0


def test_repair_is_refused_for_long_intricate_or_deep_damaged_json():
    assert repair_problem('{"tool": "x", "args": {"a": 1},') is None
    assert "too long to repair" in repair_problem("{" + "a" * MAX_REPAIR_CHARS)
    assert "too intricate to repair" in repair_problem("{" + "{a:b}," * 500)
    assert "too deep to repair (brackets nest 150 levels" in repair_problem("[" * 150)


class Hostile(Exception):
    def __str__(self):
        raise SystemExit(3)


def test_describe_exception_survives_a_str_that_raises_even_system_exit():
    assert describe_exception(Hostile()) == "Hostile: (its message could not be read: SystemExit)"
    assert describe_exception(ValueError("  ")) == "ValueError: (no message)"


def test_a_native_call_with_arguments_that_cannot_be_stored_becomes_an_invalid_call():
    message = AIMessage(content="x\ud800", tool_calls=[{"name": "calc", "args": {"e": "1"}, "id": "c1"}])
    message = message.model_copy(update={"tool_calls": [
        *message.tool_calls,
        {"name": "calc", "args": nested(5_000), "id": "c2", "type": "tool_call"},
        {"name": "calc", "args": {"n": 10**30}, "id": "c3", "type": "tool_call"},
    ]})
    text, calls, invalid = bounded_message(message)
    assert text == "x\ufffd"
    assert [c["id"] for c in calls] == ["c1"]
    assert [(c["id"], c["name"]) for c in invalid] == [("c2", "calc"), ("c3", "calc")]
    assert "nested more than" in invalid[0]["error"] and "64-bit" in invalid[1]["error"]
    orjson.dumps([text, calls, invalid])


def test_content_blocks_too_deep_to_read_become_a_note():
    deep_blocks = [nested(5_000)]
    message = AIMessage(content="").model_copy(update={"content": deep_blocks})
    text, _, _ = bounded_message(message)
    assert text.startswith("(the reply's content cannot be read: it is nested")
    assert json.loads(bounded_message(AIMessage(content=[{"type": "text", "text": "hi"}]))[0]) == [
        {"type": "text", "text": "hi"}]
