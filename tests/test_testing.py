"""The scripted model behaves like a chat model and fails loudly when misused."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from reinloop.errors import ScriptExhaustedError
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import calculator


def test_replies_come_in_order_with_fixed_usage():
    model = ScriptedChatModel(replies=["a", {"final_answer": 1}, [tool_call("calculator", {"expression": "1"}, id="x")]],
                              usage=(7, 3))
    first = model.invoke("hi")
    assert first.content == "a" and first.usage_metadata["input_tokens"] == 7
    assert model.invoke("hi").content == '{"final_answer": 1}'
    third = model.invoke("hi")
    assert third.tool_calls[0]["name"] == "calculator" and third.tool_calls[0]["id"] == "x"
    assert model.remaining() == 0


def test_prompts_are_recorded():
    model = ScriptedChatModel(replies=["ok"])
    model.invoke([HumanMessage(content="question")])
    assert model.prompts[0][0].content == "question"


def test_bind_tools_records_schemas_and_returns_a_runnable():
    model = ScriptedChatModel(replies=["ok"])
    bound = model.bind_tools([calculator])
    assert bound.invoke("x").content == "ok"
    assert model.bound_tools[0]["function"]["name"] == "calculator"


def test_exhausted_script_raises_a_clear_error():
    model = ScriptedChatModel(replies=["only one"])
    model.invoke("a")
    with pytest.raises(ScriptExhaustedError, match="ran out of replies: the script has 1 and call 2 was made"):
        model.invoke("b")


def test_exceptions_and_callables_in_the_script():
    model = ScriptedChatModel(replies=[TimeoutError("slow"), lambda messages: f"saw {len(messages)}",
                                       AIMessage(content="m")])
    with pytest.raises(TimeoutError):
        model.invoke("a")
    assert model.invoke([HumanMessage(content="1"), HumanMessage(content="2")]).content == "saw 2"
    assert model.invoke("c").content == "m"
