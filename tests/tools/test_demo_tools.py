"""The demo tools: weather with failures (retried), a bounded wait, a glossary translator."""

from __future__ import annotations

import time

import pytest

from reinloop import Limits
from reinloop.tools.demo import translate
from reinloop.tools import ToolExecutor, builtin, options_of, run_tool


def test_weather_failures_are_transient_and_retried():
    always = configure_fast(builtin("get_weather", failure_rate=1.0))
    result = run_tool(always, {"city": "杭州"}, Limits(tool_retries=2))
    assert result.observation == "ERROR: ConnectionError: weather service unavailable (simulated failure) (gave up after 3 attempts)"
    sometimes = configure_fast(builtin("get_weather", failure_rate=0.5, seed=3))
    assert run_tool(sometimes, {"city": "杭州"}, Limits(tool_retries=5)).observation == "杭州: 多云, 22℃ (demo data)"


def configure_fast(tool):
    from reinloop.tools import configure

    return configure(tool, backoff=0.001)


def test_weather_failure_rate_must_be_a_probability():
    with pytest.raises(ValueError, match="failure_rate must be between 0 and 1, got 2"):
        builtin("get_weather", failure_rate=2)


def test_wait_sleeps_a_bounded_time():
    wait = builtin("wait", max_seconds=1)
    assert wait.invoke({"seconds": 0.01}) == "waited 0.01 s"
    schema = wait.get_input_schema().model_json_schema()["properties"]["seconds"]
    assert (schema["minimum"], schema["maximum"]) == (0, 1)
    for seconds in (-1, 2, 1e308):
        result = run_tool(wait, {"seconds": seconds})
        assert result.error and "seconds" in result.observation


def test_every_wait_the_default_tool_accepts_can_finish_within_the_default_tool_timeout():
    schema = builtin("wait").get_input_schema().model_json_schema()["properties"]["seconds"]
    assert 0 < schema["maximum"] < Limits().tool_timeout  # 60 was accepted, and timed out at 30
    assert run_tool(builtin("wait"), {"seconds": 60}).error  # refused at once, not slept on


@pytest.mark.parametrize(
    ("text", "target", "expected"),
    [("杭州今天天气", "en", "Hangzhou today weather"), ("你好，世界！", "en", "hello world"),
     ("Hello world", "zh", "你好世界"), ("Machine Learning", "zh", "机器学习"), ("thank you", "zh", "谢谢")],
)
def test_translate_uses_its_glossary_both_ways(text, target, expected):
    assert translate.invoke({"text": text, "target": target}) == expected


def test_translate_refuses_words_it_does_not_know():
    result = run_tool(translate, {"text": "量子计算", "target": "en"})
    assert result.error and result.observation.startswith("ERROR: ValueError: no glossary entry for '量'")
    result = run_tool(translate, {"text": "你好", "target": "zh"})
    assert "no English words in '你好'; to translate Chinese into English use target='en'" in result.observation
    assert run_tool(translate, {"text": "hi", "target": "fr"}).error


def test_demo_tools_declare_their_options():
    assert options_of(builtin("get_weather")).parallel_safe
    assert options_of(builtin("get_weather")).transient == (TimeoutError, ConnectionError)
    assert options_of(builtin("calculator")).transient == ()
    assert options_of(builtin("wait")).parallel_safe and options_of(translate).parallel_safe


def test_wait_gives_its_worker_back_soon_after_its_deadline():
    executor = ToolExecutor(Limits(tool_timeout=0.3))
    began = time.monotonic()
    result = executor.run_one(builtin("wait"), {"seconds": 15})
    assert result.status == "timeout"
    while executor.pool.stats()["running"] and time.monotonic() - began < 10:
        time.sleep(0.02)
    assert time.monotonic() - began < 0.3 + 1.5  # not the 15 s asked for
    assert executor.pool.stats()["overdue"] == 0


@pytest.mark.parametrize("city", ["北京", "北京市", " 北京 ", "Beijing", "beijing", "BEIJING", "Beijing City", "Peking"])
def test_weather_is_the_same_for_every_way_of_writing_a_city(city):
    weather = builtin("get_weather")
    expected = "北京: 晴, 18℃ (demo data)" if "北京" in city else "Beijing: sunny, 18℃ (demo data)"
    assert weather.invoke({"city": city}) == expected


@pytest.mark.parametrize(("zh", "en"), [("杭州", "Hangzhou"), ("上海", "Shanghai"), ("深圳", "Shenzhen")])
def test_weather_in_chinese_and_english_carries_the_same_data(zh, en):
    weather = builtin("get_weather")
    in_zh, in_en = weather.invoke({"city": zh}), weather.invoke({"city": en})
    temperature = in_zh.rsplit(", ", 1)[1]
    assert in_en.endswith(", " + temperature) and in_en.startswith(en + ": ")
    condition_zh = in_zh.split(": ", 1)[1].split(",")[0]
    assert translate.invoke({"text": condition_zh, "target": "en"}) == in_en.split(": ", 1)[1].split(",")[0]


@pytest.mark.parametrize(("table", "key"), [("users", "1"), ("user", "1"), ("Users", 1), ("用户", "01"), (" USERS ", " 1 ")])
def test_db_query_finds_the_same_row_under_any_table_alias_or_key_form(table, key):
    assert run_tool(builtin("db_query"), {"table": table, "key": key}).observation == "查询结果: 张三, 年龄30 (demo data)"


def test_db_query_still_refuses_an_unknown_table():
    result = run_tool(builtin("db_query"), {"table": "products", "key": "1"})
    assert result.error and "unknown table 'products'; tables: users, orders" in result.observation


@pytest.mark.parametrize("city", ["Paris", "巴黎", "Atlantis"])
def test_weather_of_a_city_without_demo_data_is_an_error_never_an_invented_forecast(city):
    result = run_tool(builtin("get_weather"), {"city": city})
    assert result.error and result.observation.startswith(f"ERROR: NoDemoDataError: no data for {city!r}: get_weather "
                                                          "is a demo tool with made-up weather for 杭州 (Hangzhou), ")


def test_a_real_model_reads_that_the_default_tools_data_are_demo_data_or_missing(openai_server, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.openai_server import completion

    openai_server.responses += [
        completion(tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "a"},
                               {"name": "get_weather", "args": {"city": "Beijing"}, "id": "b"},
                               {"name": "db_query", "args": {"table": "users", "key": "1"}, "id": "c"}]),
        completion("no data for Paris"),
    ]
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "weather in Paris and Beijing; user 1", "-q",
                           "--base-url", openai_server.base_url, "--db", str(tmp_path / "runs.db")],
                          capture_output=True, text=True, env=env, timeout=120)  # the default tools
    assert proc.returncode == 0, proc.stderr
    seen = {m["tool_call_id"]: m["content"] for m in openai_server.requests[-1]["messages"] if m["role"] == "tool"}
    assert seen["a"].startswith("ERROR: NoDemoDataError: no data for 'Paris'"), json.dumps(seen, ensure_ascii=False)
    assert (seen["b"], seen["c"]) == ("Beijing: sunny, 18℃ (demo data)", "查询结果: 张三, 年龄30 (demo data)")
