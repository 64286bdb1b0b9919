"""Unknown tools and invalid arguments become observations, and the loop goes on."""

from __future__ import annotations

from reinloop.testing import tool_call


def test_unknown_tool_observation_lists_the_available_tools(make_graph):
    graph, _ = make_graph([[tool_call("web_search", {"q": "x"})], "fine"])
    out = graph.invoke({"task": "t"})
    action = out["scratchpad"][0]["actions"][0]
    assert action["error"] is True
    assert action["observation"] == (
        "ERROR: unknown tool 'web_search'; available tools: calculator, db_query, get_weather"
    )
    assert out["status"] == "done"


def test_invalid_arguments_give_field_level_errors_and_the_schema(make_graph):
    graph, model = make_graph([[tool_call("db_query", {"table": "users"})], "fine"])
    out = graph.invoke({"task": "t"})
    observation = out["scratchpad"][0]["actions"][0]["observation"]
    assert observation.startswith("ERROR: invalid arguments for db_query: key: Field required")
    assert '"key"' in observation and "primary key value" in observation
    assert model.prompts[1][-1].content == observation  # the model reads it as the tool result


def test_wrong_typed_argument_is_reported_with_the_value(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": ["1+1"]})], "x"])
    out = graph.invoke({"task": "t"})
    assert "expression: Input should be a valid string (got ['1+1'])" in out["scratchpad"][0]["actions"][0]["observation"]


def test_bare_string_argument_fills_a_single_parameter_tool(make_graph):
    graph, _ = make_graph(["Thought: t\nAction: get_weather\nAction Input: 上海", "Final Answer: 24"], protocol="react")
    out = graph.invoke({"task": "t"})
    assert out["scratchpad"][0]["actions"][0]["observation"] == "上海: 多云, 24℃"


def test_bare_string_for_a_multi_parameter_tool_is_refused(make_graph):
    graph, _ = make_graph(["Thought: t\nAction: db_query\nArgs: users 1", "Final Answer: ?"], protocol="react")
    out = graph.invoke({"task": "t"})
    observation = out["scratchpad"][0]["actions"][0]["observation"]
    assert observation.startswith("ERROR: the arguments of db_query must be a JSON object, got 'users 1'")
