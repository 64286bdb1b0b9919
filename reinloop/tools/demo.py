"""The seeds' demo tools, with their fixed demo data, so their examples run offline."""

from __future__ import annotations

import random

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

DEMO_ROWS: dict[str, dict[str, str]] = {
    "users": {"1": "张三, 年龄30", "2": "李四, 年龄25"},
    "orders": {"1": "订单A, 金额100元", "2": "订单B, 金额200元"},
}
"""Seed 000's mock database."""

DEMO_WEATHER: dict[str, tuple[str, int]] = {
    "杭州": ("多云", 22),
    "北京": ("晴", 18),
    "上海": ("多云", 24),
    "深圳": ("小雨", 29),
}
"""Seeds 001 and 002's weather: condition and temperature in °C."""


class DbQueryInput(BaseModel):
    """Arguments of db_query."""

    table: str = Field(description="table name: users or orders")
    key: str = Field(description="primary key value, e.g. '1'")


def _db_query(table: str, key: str) -> str:
    rows = DEMO_ROWS.get(table)
    if rows is None:
        raise ValueError(f"unknown table {table!r}; tables: {', '.join(DEMO_ROWS)}")
    return f"查询结果: {rows.get(str(key), '未找到记录')}"


db_query: BaseTool = StructuredTool.from_function(
    _db_query,
    name="db_query",
    description="Look up one row of the demo database (tables users and orders) by primary key.",
    args_schema=DbQueryInput,
)


class WeatherInput(BaseModel):
    """Arguments of get_weather."""

    city: str = Field(description="city name in Chinese, e.g. 杭州", min_length=1, max_length=20)


def make_weather_tool(failure_rate: float = 0.0, seed: int | None = None) -> BaseTool:
    """``get_weather`` over the demo data; ``failure_rate`` makes it fail at random (seed 001)."""
    if not 0.0 <= failure_rate <= 1.0:
        raise ValueError(f"failure_rate must be between 0 and 1, got {failure_rate}")
    rng = random.Random(seed)

    def get_weather(city: str) -> str:
        if failure_rate and rng.random() < failure_rate:
            raise ConnectionError("weather service unavailable (simulated failure)")
        condition, temperature = DEMO_WEATHER.get(city.strip(), ("晴", 20))
        return f"{city.strip()}: {condition}, {temperature}℃"

    return StructuredTool.from_function(
        get_weather,
        name="get_weather",
        description="Current weather of a city: condition and temperature in °C. Use only for weather questions.",
        args_schema=WeatherInput,
    )


get_weather: BaseTool = make_weather_tool()
