"""Later prompts replay what was read from a reply, not the reply: a small model copies its own replies."""

from __future__ import annotations

import json

from reinloop import Limits
from reinloop.testing import tool_call
from langchain_core.messages import AIMessage


def ai_texts(prompt):
    return [str(m.content) for m in prompt if m.type == "ai"]


def test_a_json_call_wrapped_in_chatter_is_replayed_as_the_call_alone(make_graph):
    chatty = 'Sure! Here it is:\n{"thought": "multiply", "tool": "calculator", "args": {"expression": "17*23"}}\nHope it helps'
    graph, model = make_graph([chatty, {"final_answer": "391"}], protocol="json")
    out = graph.invoke({"task": "17*23"})
    assert out["scratchpad"][0]["raw"] == chatty  # stored verbatim
    assert ai_texts(model.prompts[1]) == [json.dumps({"thought": "multiply", "tool": "calculator",
                                                      "args": {"expression": "17*23"}})]


def test_a_cut_reply_of_one_call_repeated_is_replayed_as_its_one_call_that_ran(make_graph):
    line = '{"thought": "x", "tool": "calculator", "args": {"expression": "1+1"}}\n'
    from reinloop.testing import cut_off
    graph, model = make_graph([cut_off(line * 20), {"final_answer": "2"}], protocol="json")
    graph.invoke({"task": "1+1"})
    assert ai_texts(model.prompts[1]) == [line.strip()]


def test_a_thought_holding_json_is_left_out_of_the_replay(make_graph):
    graph, model = make_graph([{"thought": '{"tool": "x"} then', "tool": "calculator", "args": {"expression": "2"}},
                               {"final_answer": "2"}], protocol="json")
    graph.invoke({"task": "2"})
    assert json.loads(ai_texts(model.prompts[1])[0])["thought"] == ""


def test_react_calls_are_replayed_in_react_lines(make_graph):
    reply = "Thought: add\nAction: calculator\nArgs: {\"expression\": \"1+1\"}\nObservation: 2\nThought: done"
    graph, model = make_graph([reply, "Thought: ok\nFinal Answer: 2"], protocol="react")
    graph.invoke({"task": "1+1"})
    assert ai_texts(model.prompts[1]) == ['Thought: add\nAction: calculator\nArgs: {"expression": "1+1"}']


def test_a_tool_calling_step_replays_its_calls_without_the_junk_text_beside_them(make_graph):
    junk = "\n".join(['{"name": "db_query", "arguments": {"table": "x"}}'] * 10)
    graph, model = make_graph([AIMessage(content=junk, tool_calls=[tool_call("calculator", {"expression": "2"})]),
                               "2"], limits=Limits())
    graph.invoke({"task": "2"})
    replayed = [m for m in model.prompts[1] if m.type == "ai"]
    assert replayed[0].content == "" and replayed[0].tool_calls[0]["name"] == "calculator"
