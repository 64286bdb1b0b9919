"""The tool registry accepts any LangChain tool and refuses duplicates."""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool, StructuredTool, tool
from pydantic import BaseModel, Field

from reinloop import DuplicateToolError, ToolRegistry
from reinloop.errors import ConfigurationError, UnknownToolError
from reinloop.tools import builtin, builtins, calculator


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class EchoArgs(BaseModel):
    text: str = Field(description="what to echo", max_length=5)


class Echo(BaseTool):
    name: str = "echo"
    description: str = "Echo the text."
    args_schema: type[BaseModel] = EchoArgs

    def _run(self, text: str) -> str:
        return text


def test_registry_accepts_decorated_subclassed_and_structured_tools():
    structured = StructuredTool.from_function(lambda n: str(n * 2), name="double", description="Double n.")
    registry = ToolRegistry([shout, Echo(), structured])
    assert registry.names() == ["shout", "echo", "double"]
    assert registry.get("echo").invoke({"text": "hi"}) == "hi"


def test_duplicate_tool_names_are_refused():
    registry = ToolRegistry([shout])
    with pytest.raises(DuplicateToolError, match="a tool named 'shout' is already registered; tool names must be unique"):
        registry.register(shout)


def test_non_tools_are_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match="decorate the function with @tool"):
        ToolRegistry([lambda x: x])


def test_schema_carries_field_descriptions_and_constraints():
    schema = ToolRegistry([Echo()]).schema("echo")
    assert schema["properties"]["text"] == {"description": "what to echo", "maxLength": 5, "type": "string"}
    assert "what to echo" in ToolRegistry([Echo()]).describe()


def test_validate_args_reports_each_bad_field():
    problem = ToolRegistry([Echo()]).validate_args("echo", {"text": "too long"})
    assert problem.startswith("invalid arguments for echo: text: String should have at most 5 characters (got 'too long')")


def test_builtin_tools_by_name():
    assert builtin("calculator").invoke({"expression": "2+2"}) == calculator.invoke({"expression": "2+2"}) == "4"
    assert [t.name for t in builtins("calculator, db_query")] == ["calculator", "db_query"]
    with pytest.raises(UnknownToolError, match="no built-in tool named 'web'; built-in tools: calculator, db_insert, db_query"):
        builtin("web")


def test_weather_failure_rate_makes_it_fail():
    always = builtin("get_weather", failure_rate=1.0)
    with pytest.raises(ConnectionError, match="simulated failure"):
        always.invoke({"city": "杭州"})
    assert builtin("get_weather").invoke({"city": "深圳"}) == "深圳: 小雨, 29℃ (demo data)"


def test_a_name_differing_only_in_case_separators_or_a_copied_signature_resolves_to_its_tool():
    registry = ToolRegistry(builtins("calculator,get_weather,db_query"))
    for name in ("Calculator", "CALCULATOR", "calculator(expression: string)", "`calculator`"):
        assert registry.resolve(name) == "calculator", name
    for name in ("Get-Weather", "GetWeather", "get weather", "get_weather(city: string): Current weather"):
        assert registry.resolve(name) == "get_weather", name
    assert registry.resolve("web_search") is None and registry.resolve("") is None and registry.resolve("()") is None


def test_a_loose_name_that_fits_two_tools_resolves_to_none():
    @tool
    def db_query(sql: str) -> str:
        """Query."""
        return sql

    @tool("dbquery")
    def other(sql: str) -> str:
        """Another query."""
        return sql

    registry = ToolRegistry([db_query, other])
    assert registry.resolve("DB-Query") is None
    assert registry.resolve("dbquery") == "dbquery"  # an exact name always wins


def test_each_tools_examples_are_its_own_and_a_tool_registered_later_has_its_examples_too():
    @tool
    def convert(value: str) -> str:
        """Convert units, e.g. '3 km'."""
        return value

    registry = ToolRegistry([shout])
    assert registry.examples_of("shout") == ""
    registry.register(convert)
    assert registry.examples_of("convert") == "3 km"
    assert registry.examples_of("convert") == "3 km" and registry.examples_of("shout") == ""


def test_only_objects_made_of_json_schema_keywords_are_taken_for_a_copied_schema():
    from reinloop.tools.registry import schema_copies

    assert schema_copies({"row": {"anyOf": [{"type": "string"}], "maxProperties": 50}, "table": "notes"}) == ["row"]
    assert schema_copies({"row": {"type": "circle", "radius": "2"}}) == []  # a value with a key of its own
    assert schema_copies({"row": {"description": "x"}}) == []  # no keyword that makes a schema
    assert schema_copies({"row": {}, "n": 1}) == []
