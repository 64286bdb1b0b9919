"""The seed write-ups' example agents, end to end, as configurations of one graph."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from reinloop.testing import tool_call


def test_seed_000_user_age_times_two_with_json_protocol(make_graph):
    graph, model = make_graph(
        [
            {"thought": "查询用户1", "tool": "db_query", "args": {"table": "users", "key": "1"}},
            {"thought": "年龄30，乘以2", "tool": "calculator", "args": {"expression": "30*2"}},
            {"thought": "结果60", "final_answer": 60},
        ],
        protocol="json",
    )
    out = graph.invoke({"task": "查询用户ID为1的信息，然后计算他的年龄乘以2的结果"})
    assert out["status"] == "done"
    assert out["answer"] == "60"
    observations = [a["observation"] for s in out["scratchpad"] for a in s["actions"]]
    assert observations == ["查询结果: 张三, 年龄30 (demo data)", "60"]
    assert "db_query" in model.prompts[0][0].content  # tools are described in the prompt


def test_seed_001_weather_then_conversion_with_native_tool_calling(make_graph):
    graph, model = make_graph(
        [
            [tool_call("get_weather", {"city": "杭州"})],
            AIMessage(content="22 > 20", tool_calls=[tool_call("calculator", {"expression": "(22*1.8)+32"})]),
            "71.6",
        ]
    )
    out = graph.invoke({"task": "杭州今天天气怎么样？如果气温高于20度，帮我算一下 (22*1.8)+32 是多少"})
    assert out["status"] == "done"
    assert out["answer"] == "71.6"
    assert out["scratchpad"][1]["actions"][0]["observation"] == "71.6"
    assert {t["function"]["name"] for t in model.bound_tools} == {"calculator", "db_query", "get_weather"}


def test_seed_002_temperature_difference_with_react_protocol(make_graph):
    graph, _ = make_graph(
        [
            'Thought: 查北京\nAction: get_weather\nArgs: {"city": "北京"}',
            'Thought: 查上海\nAction: get_weather\nAction Input: {"city": "上海"}',
            'Thought: 相减\nAction: calculator\nArgs: {"expression": "24-18"}',
            "Thought: 差6度\nFinal Answer: 6",
        ],
        protocol="react",
    )
    out = graph.invoke({"task": "北京和上海的气温相差多少度？"})
    assert out["status"] == "done"
    assert out["answer"] == "6"
    assert out["scratchpad"][1]["actions"][0]["observation"] == "上海: 多云, 24℃ (demo data)"
