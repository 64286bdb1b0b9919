"""Compact tool detail: tools shown in a fraction of the tokens, calls still checked against the full schema."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from reinloop import Limits, ToolRegistry, build_graph
from reinloop.cli.app import main
from reinloop.errors import ConfigurationError
from reinloop.protocols.memory.tokens import estimate_tokens
from reinloop.runs.api import list_runs, resume, run
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import builtins
from reinloop.tools.detail import summary

from ..openai_server import completion


class LookupArgs(BaseModel):
    query: str = Field(description="a few keywords, e.g. 'refund policy'", min_length=1, max_length=300)
    limit: int = Field(default=5, ge=1, le=20, description="how many results")
    lang: Literal["en", "zh"] = Field(default="en", description="the language to search in")
    ids: list[int] = Field(default_factory=list, description="documents to search only")


class Lookup(BaseTool):
    name: str = "lookup"
    description: str = "Look things up in the handbook. Returns the best matches, with a snippet each."
    args_schema: type[BaseModel] = LookupArgs

    def _run(self, query: str, limit: int = 5, lang: str = "en", ids: list[int] | None = None) -> str:
        return f"{query}:{limit}:{lang}:{ids}"


def descriptions_in(schema: Any) -> list[str]:
    """Every ``description`` anywhere in a JSON schema."""
    if isinstance(schema, dict):
        found = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return found + [d for v in schema.values() for d in descriptions_in(v)]
    if isinstance(schema, list):
        return [d for v in schema for d in descriptions_in(v)]
    return []


def test_compact_text_is_one_signature_line_per_tool():
    registry = ToolRegistry([Lookup()], detail="compact")
    assert registry.describe() == (
        '- lookup(query: string, limit?: integer = 5, lang?: "en" | "zh" = "en", ids?: integer[]): '
        "Look things up in the handbook."
    )
    assert "refund" not in ToolRegistry([Lookup()], detail="full").describe().split("args schema")[0]
    assert "refund policy" in ToolRegistry([Lookup()]).describe()  # full detail keeps the argument descriptions


class Address(BaseModel):
    city: str = Field(description="the city")
    zip: int | None = None


class ShipArgs(BaseModel):
    to: Address
    tags: list[str] = Field(default_factory=list)


class Ship(BaseTool):
    name: str = "ship"
    description: str = "Ship a parcel.\nCosts money."
    args_schema: type[BaseModel] = ShipArgs

    def _run(self, to: dict[str, Any], tags: list[str] | None = None) -> str:
        return "shipped"


def test_compact_lines_spell_out_nested_objects_and_optional_values():
    assert ToolRegistry([Ship()], detail="compact").describe() == (
        "- ship(to: {city: string, zip?: integer | null = null}, tags?: string[]): Ship a parcel."
    )


class TagArgs(BaseModel):
    row: dict[str, int | str | None] = Field(description="column -> value", min_length=1)


class Tag(BaseTool):
    name: str = "tag"
    description: str = "Store a row."
    args_schema: type[BaseModel] = TagArgs

    def _run(self, row: dict[str, Any]) -> str:
        return "stored"


def test_compact_mappings_keep_their_value_types_in_lines_and_schemas():
    registry = ToolRegistry([Tag()], detail="compact")
    assert registry.describe() == "- tag(row: {[name: string]: integer | string | null}): Store a row."
    (bound,) = registry.bindable()
    assert bound["function"]["parameters"]["properties"]["row"] == {
        "type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}}


def test_compact_bound_schema_keeps_names_types_required_enums_and_defaults_only():
    full = ToolRegistry([Lookup()]).schema("lookup")
    (bound,) = ToolRegistry([Lookup()], detail="compact").bindable()
    function = bound["function"]
    assert function["name"] == "lookup" and function["description"] == "Look things up in the handbook."
    params = function["parameters"]
    assert params["type"] == "object" and params["required"] == full["required"] == ["query"]
    assert params["properties"] == {
        "query": {"type": "string"},
        "limit": {"type": "integer", "default": 5},
        "lang": {"type": "string", "enum": ["en", "zh"], "default": "en"},
        "ids": {"type": "array", "items": {"type": "integer"}},
    }
    assert descriptions_in(params) == [] and descriptions_in(full)  # the full one had them


def test_summary_is_the_first_sentence_and_never_longer_than_a_line():
    assert summary("Read a file. At most 200 KB.") == "Read a file."
    assert summary("Run one SELECT on world.db (tables: notes). Read-only.") == "Run one SELECT on world.db (tables: notes)."
    assert summary("查询天气。返回摄氏度。") == "查询天气。"
    assert summary("no full stop at all") == "no full stop at all"
    long = summary("word " * 100)
    assert len(long) == 160 and long.endswith("…")


def test_unknown_detail_is_refused_with_the_choices():
    with pytest.raises(ConfigurationError, match="tool_detail must be one of full, compact; got 'tiny'"):
        build_graph(ScriptedChatModel(replies=[]), builtins("calculator"), tool_detail="tiny")  # type: ignore[arg-type]


def test_build_graph_shows_a_registry_at_the_detail_asked_without_changing_it():
    registry = ToolRegistry(builtins("calculator"))
    model = ScriptedChatModel(replies=["2"])
    build_graph(model, registry, tool_detail="compact").invoke({"task": "1+1"})
    assert registry.detail == "full"
    assert descriptions_in(model.bound_tools[0]["function"]["parameters"]) == []
    kept = ScriptedChatModel(replies=["2"])
    build_graph(kept, ToolRegistry(builtins("calculator"), detail="compact")).invoke({"task": "1+1"})
    assert kept.bound_tools == model.bound_tools  # a registry's own detail is kept when none is asked


@pytest.mark.parametrize("protocol", ["tool_calling", "json"])
def test_compact_tools_cut_the_first_prompt_by_a_third_natively_and_by_more_than_half_as_text(protocol):
    tools = [*builtins("calculator,db_query,get_weather,translate,wait"), Lookup()]

    def first_prompt_tokens(detail: str) -> int:
        model = ScriptedChatModel(replies=['{"final_answer": "ok"}' if protocol == "json" else "ok"])
        build_graph(model, tools, protocol=protocol, tool_detail=detail).invoke({"task": "anything"})  # type: ignore[arg-type]
        sent = "\n".join(str(m.content) for m in model.prompts[0])
        return estimate_tokens(sent) + sum(estimate_tokens(json.dumps(t, ensure_ascii=False)) for t in model.bound_tools)

    full, compact = first_prompt_tokens("full"), first_prompt_tokens("compact")
    # native calls keep the JSON schema's frame; text lines drop it too
    assert compact < (0.7 if protocol == "tool_calling" else 0.4) * full, (compact, full)


@pytest.mark.parametrize("protocol", ["tool_calling", "json"])
def test_a_wrong_call_under_compact_tools_gets_every_argument_described_back(make_graph, protocol):
    wrong = ([tool_call("lookup", {"limit": 50})] if protocol == "tool_calling"
             else '{"tool": "lookup", "args": {"limit": 50}}')
    right = ([tool_call("lookup", {"query": "refund"})] if protocol == "tool_calling"
             else '{"tool": "lookup", "args": {"query": "refund"}}')
    done = "found" if protocol == "tool_calling" else '{"final_answer": "found"}'
    graph, model = make_graph([wrong, right, done], protocol=protocol, tools=[Lookup()], tool_detail="compact")
    out = graph.invoke({"task": "find the refund policy"})
    assert out["status"] == "done" and out["answer"] == "found"
    assert "refund policy" not in json.dumps(model.bound_tools) + str(model.prompts[0][0].content)
    error_prompt = "\n".join(str(m.content) for m in model.prompts[1])
    assert "invalid arguments for lookup" in error_prompt
    assert "a few keywords, e.g. 'refund policy'" in error_prompt and "(1 to 20)" in error_prompt
    assert out["scratchpad"][1]["actions"][0]["observation"] == "refund:5:en:[]"


def test_a_stored_run_resumes_with_the_tool_detail_it_started_with(run_db):
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "1+1"})]])
    paused = run("add", model=model, tools="calculator", tool_detail="compact", limits=Limits(max_steps=1),
                 thread_id="d1")
    assert paused.paused
    (record,) = list_runs()
    assert record.spec["tool_detail"] == "compact"
    again = ScriptedChatModel(replies=["2"])
    assert resume("d1", model=again, extra_steps=1).answer == "2"
    assert again.bound_tools == model.bound_tools
    assert descriptions_in(again.bound_tools[0]["function"]["parameters"]) == []


def test_a_bad_detail_fails_before_the_run_database_is_made(run_db):
    with pytest.raises(ConfigurationError, match="tool_detail"):
        run("add", model=ScriptedChatModel(replies=[]), tools="calculator", tool_detail="short")  # type: ignore[arg-type]
    assert not run_db.exists()


def test_cli_tool_detail_reaches_the_endpoint_and_runs_show(openai_server, capsys):
    openai_server.responses += [completion("4")]
    code = main(["run", "2+2", "--base-url", openai_server.base_url, "--tools", "calculator",
                 "--tool-detail", "compact", "--thread", "c9", "--quiet"])
    assert code == 0
    (sent,) = openai_server.requests[0]["tools"]
    assert sent["function"]["parameters"] == {"type": "object", "properties": {"expression": {"type": "string"}},
                                              "required": ["expression"]}
    capsys.readouterr()
    assert main(["runs", "show", "c9"]) == 0
    assert "tools: calculator (compact)" in capsys.readouterr().out


def test_the_prompt_budget_counts_the_tool_schemas_actually_sent():
    def tools_part(detail: str) -> int:
        out = build_graph(ScriptedChatModel(replies=["ok"]), [Lookup()], tool_detail=detail).invoke(  # type: ignore[arg-type]
            {"task": "t"})
        return int(out["scratchpad"][0]["prompt_parts"]["tools"])

    assert tools_part("compact") < 0.7 * tools_part("full")  # before: the full schemas were counted either way
