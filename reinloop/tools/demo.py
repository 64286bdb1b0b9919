"""The seeds' demo tools, with their fixed demo data, so their examples run offline.

Also ``wait`` (seed 003's timer, bounded) and ``translate`` (a deterministic
glossary translator for benchmarks that need one).

The data does not depend on how a name is written: ``北京``, ``北京市``,
``Beijing`` and ``beijing`` are one city (same condition, same temperature;
the reply is worded in the query's language), ``users``, ``user``, ``Users``
and ``用户`` one table, ``"1"``, ``1`` and ``"01"`` one key.

The data are made up, and a real model given these tools (they are the command
line's default tools) must not take them for facts: every result ends with
:data:`DEMO_LABEL`, and a city without demo data is an error observation
(``no data for 'Paris' ...``), never an invented forecast.
"""

from __future__ import annotations

import random
import re
import time
import unicodedata
from typing import Literal

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field, create_model

from .options import function_tool
from .pool import seconds_left

GLOSSARY: dict[str, str] = {
    "你好": "hello", "世界": "world", "谢谢": "thank you", "再见": "goodbye", "早上好": "good morning",
    "晚安": "good night", "朋友": "friend", "我": "I", "你": "you", "爱": "love", "是": "is",
    "天气": "weather", "今天": "today", "明天": "tomorrow", "昨天": "yesterday", "晴": "sunny",
    "多云": "cloudy", "小雨": "light rain", "下雨": "rain", "温度": "temperature", "气温": "air temperature",
    "杭州": "Hangzhou", "北京": "Beijing", "上海": "Shanghai", "深圳": "Shenzhen",
    "用户": "user", "订单": "order", "数据库": "database", "查询": "query", "计算": "calculate",
    "结果": "result", "年龄": "age", "金额": "amount", "苹果": "apple", "猫": "cat", "狗": "dog",
    "工具": "tool", "智能体": "agent", "人工智能": "artificial intelligence", "机器学习": "machine learning",
    "语言模型": "language model", "文件": "file", "搜索": "search", "文档": "document",
}
"""The demo translator's whole vocabulary, Chinese -> English."""

DEMO_ROWS: dict[str, dict[str, str]] = {
    "users": {"1": "张三, 年龄30", "2": "李四, 年龄25"},
    "orders": {"1": "订单A, 金额100元", "2": "订单B, 金额200元"},
}
"""Seed 000's mock database."""

TABLE_ALIASES: dict[str, str] = {"user": "users", "用户": "users", "用户表": "users",
                                 "order": "orders", "订单": "orders", "订单表": "orders"}
"""Other ways to name a demo table (singular, Chinese); matched without case or spaces."""

DEMO_WEATHER: dict[str, tuple[str, int]] = {
    "杭州": ("多云", 22),
    "北京": ("晴", 18),
    "上海": ("多云", 24),
    "深圳": ("小雨", 29),
}
"""Seeds 001 and 002's weather: condition and temperature in °C."""

DEMO_LABEL = " (demo data)"
"""What ends every result of ``get_weather`` and ``db_query``: their data are the demo's, not the world's."""

CITY_NAMES: dict[str, str] = {zh: GLOSSARY[zh] for zh in DEMO_WEATHER}
"""The demo cities' English names, as the translator knows them (matched without case or spaces)."""

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _name_key(text: str) -> str:
    """A name without case, spaces, punctuation or a trailing "city"/"市"."""
    key = re.sub(r"[\s\W_]+", "", str(text)).lower()
    for suffix in ("city", "市"):
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
    return key


_CITY_KEYS: dict[str, str] = {
    **{_name_key(zh): zh for zh in DEMO_WEATHER},
    **{_name_key(en): zh for zh, en in CITY_NAMES.items()},
    "peking": "北京",
}


class NoDemoDataError(LookupError):
    """``get_weather`` was asked about a city the demo has no data for (``city``); ``known`` lists the ones it has."""

    def __init__(self, city: str, known: list[str]) -> None:
        self.city, self.known = city, known
        super().__init__(f"no data for {city!r}: get_weather is a demo tool with made-up weather for "
                         f"{', '.join(known)} only; it knows nothing about other cities")


def demo_weather(city: str) -> str:
    """The demo weather of ``city``, however it is written; worded in Chinese or English like the query.

    A city without demo data raises :class:`NoDemoDataError`: the model reads that there is no data."""
    name = city.strip()
    canonical = _CITY_KEYS.get(_name_key(name))
    if canonical is None:
        raise NoDemoDataError(name, [f"{zh} ({CITY_NAMES[zh]})" for zh in DEMO_WEATHER])
    condition, temperature = DEMO_WEATHER[canonical]
    if _CJK.search(name):
        return f"{canonical}: {condition}, {temperature}℃{DEMO_LABEL}"
    return f"{CITY_NAMES[canonical]}: {GLOSSARY.get(condition, condition)}, {temperature}℃{DEMO_LABEL}"


class DbQueryInput(BaseModel):
    """Arguments of db_query."""

    table: str = Field(description="table name: users or orders")
    key: str | int = Field(description="primary key value, e.g. '1'")


def _db_query(table: str, key: str | int) -> str:
    name = _name_key(table)
    rows = DEMO_ROWS.get(TABLE_ALIASES.get(name, name))
    if rows is None:
        raise ValueError(f"unknown table {table!r}; tables: {', '.join(DEMO_ROWS)}")
    wanted = str(key).strip()
    wanted = wanted.lstrip("0") or wanted if wanted.isdigit() else wanted
    return f"查询结果: {rows.get(wanted, '未找到记录')}{DEMO_LABEL}"


db_query: BaseTool = function_tool(
    _db_query,
    name="db_query",
    description="Look up one row of the demo database (made-up tables users and orders) by primary key.",
    args_schema=DbQueryInput,
    parallel_safe=True,
    transient=(),
)


class WeatherInput(BaseModel):
    """Arguments of get_weather."""

    city: str = Field(description="city name, in Chinese or English, e.g. 杭州 or Hangzhou", min_length=1, max_length=20)


def make_weather_tool(failure_rate: float = 0.0, seed: int | None = None) -> BaseTool:
    """``get_weather`` over the demo data; ``failure_rate`` makes it fail at random (seed 001)."""
    if not 0.0 <= failure_rate <= 1.0:
        raise ValueError(f"failure_rate must be between 0 and 1, got {failure_rate}")
    rng = random.Random(seed)

    def get_weather(city: str) -> str:
        if failure_rate and rng.random() < failure_rate:
            raise ConnectionError("weather service unavailable (simulated failure)")
        return demo_weather(city)

    return function_tool(  # its ConnectionError is transient: retried
        get_weather,
        name="get_weather",
        description="Demo weather of a city (made-up data, not live): condition and temperature in °C. Use only "
                    "for weather questions.",
        args_schema=WeatherInput,
        parallel_safe=True,
    )


get_weather: BaseTool = make_weather_tool()


class WaitInput(BaseModel):
    """Arguments of wait."""

    seconds: float = Field(description="how long to wait, in seconds", ge=0)


def make_wait_tool(max_seconds: float = 20.0) -> BaseTool:
    """``wait``: sleep for a bounded number of seconds (seed 003's timer; handy to test timeouts).

    The default bound is under ``Limits.tool_timeout``'s default (30 s), so every wait the tool accepts
    can finish: with 60, Qwen2.5-Coder-0.5B asked for 60 s, which held a worker 30 s and then failed as
    a timeout."""
    if not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive, got {max_seconds}")
    schema = create_model(
        "WaitInput",
        __base__=WaitInput,
        seconds=(float, Field(description=f"how long to wait, in seconds (at most {max_seconds:g})", ge=0, le=max_seconds)),
    )

    def wait(seconds: float) -> str:
        # Not much past the call's deadline: the worker comes back soon after the call is abandoned
        # (0.1 s after it, so that the caller reports the timeout, not this error).
        allowed = min(seconds, (seconds_left(seconds) or 0.0) + 0.1)
        time.sleep(allowed)
        if allowed < seconds:
            raise TimeoutError(f"stopped after {allowed:.3g} s of {seconds:g}: the call's deadline came first")
        return f"waited {seconds:g} s"

    return function_tool(
        wait,
        name="wait",
        description=f"Wait (sleep) for a number of seconds, at most {max_seconds:g}, then continue.",
        args_schema=schema,
        parallel_safe=True,
        transient=(),
    )




class TranslateInput(BaseModel):
    """Arguments of translate."""

    text: str = Field(description="the text to translate (glossary words only; this is a demo translator)", min_length=1, max_length=500)
    target: Literal["en", "zh"] = Field(description="the language to translate into: 'en' (English) or 'zh' (Chinese)")


def _longest_match(units: list[str], glossary: dict[str, str], joiner: str) -> list[str]:
    out, i = [], 0
    while i < len(units):
        for j in range(len(units), i, -1):
            phrase = joiner.join(units[i:j])
            if phrase in glossary:
                out.append(glossary[phrase])
                i = j
                break
        else:
            known = ", ".join(sorted(glossary)[:12])
            raise ValueError(f"no glossary entry for {units[i]!r}; this demo translator only knows words such as: {known}, ...")
    return out


def _translate(text: str, target: str) -> str:
    if target == "en":
        chars = [c for c in text if not (c.isspace() or unicodedata.category(c).startswith("P"))]
        return " ".join(_longest_match(chars, GLOSSARY, ""))
    english = {v.lower(): k for k, v in GLOSSARY.items()}
    words = re.findall(r"[A-Za-z']+", text.lower())
    if not words:
        raise ValueError(f"no English words in {text!r}; to translate Chinese into English use target='en'")
    return "".join(_longest_match(words, english, " "))


translate: BaseTool = function_tool(
    _translate,
    name="translate",
    description="Translate short Chinese <-> English text word by word with a small fixed glossary (a deterministic demo translator).",
    args_schema=TranslateInput,
    parallel_safe=True,
    transient=(),
    cacheable=True,  # a fixed glossary: the same text always gives the same translation
)
