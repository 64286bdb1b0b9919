"""The served demo graph: a planning scripted model that never runs out of replies."""

from __future__ import annotations

from reinloop.cli.server import graph, planned_calls


def test_the_planner_looks_up_each_city_then_computes():
    assert planned_calls("杭州今天天气怎么样？如果气温高于20度，帮我算一下 (22*1.8)+32 是多少") == [
        ("get_weather", {"city": "杭州"}), ("calculator", {"expression": "(22*1.8)+32"})]
    assert planned_calls("北京和上海差多少度") == [("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    assert planned_calls("hello") == []


def test_the_served_graph_answers_run_after_run():
    answers = [graph.invoke({"task": task})["answer"] for task in ["What is 2+3*4?", "北京天气？", "hello"] * 3]
    assert answers[:3] == ["14", "北京: 晴, 18℃ (demo data)", "(demo model) I have no tool for this task: hello"]
    assert answers[3:] == answers[:3] * 2
