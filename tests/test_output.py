"""Structured final answers (RunSpec.output): the schema, its JSON form, and runs through the real client.

The end-to-end cases drive ``langchain-openai`` against ``tests/openai_server.py`` in each protocol.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from reinloop import RunSpec, build_graph, resume, run
from reinloop.cli.app import main
from reinloop.errors import ConfigurationError
from reinloop.protocols.memory import active_counter
from reinloop.protocols.memory.prompt import system_message
from reinloop.protocols.output import ANSWER_TOOL, AnswerSchema, output_form
from reinloop.models.retry import RetryPolicy
from reinloop.testing import ScriptedChatModel, prompt_text, tool_call
from reinloop.tools import builtins

from .openai_server import completion

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05, timeout=2.0)


class City(BaseModel):
    """A city and how many people live there."""

    name: str
    population: int = Field(ge=0)


CITY_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
               "required": ["name", "population"]}
VALID = {"name": "Paris", "population": 2100000}
INVALID = {"name": "Paris", "population": "many"}


def graph_on(server, protocol, output=City, **changes):
    return build_graph("openai:test-model", builtins("calculator"), base_url=server.base_url, protocol=protocol,
                       retry=FAST, output=output, **changes)


def answer_reply(protocol, value):
    """A reply that gives ``value`` as the final answer in ``protocol``'s own form."""
    if protocol == "tool_calling":
        return completion(tool_calls=[{"name": ANSWER_TOOL, "args": value}])
    if protocol == "json":
        return completion(json.dumps({"thought": "known", "final_answer": value}))
    return completion(f"Thought: known\nFinal Answer: {json.dumps(value)}")


# --- the schema and its JSON form -----------------------------------------------------------------


def test_a_model_class_is_stored_as_its_schema_and_import_path_and_read_back_as_the_class():
    spec = RunSpec(output=City)
    data = json.loads(spec.to_json())["output"]
    assert data == {"schema": City.model_json_schema(), "model": "tests.test_output:City"}
    assert RunSpec.from_json(spec.to_json()).output is City
    assert RunSpec.from_json(spec.to_json()) == spec


def test_a_json_schema_reads_back_equal():
    spec = RunSpec(output=CITY_SCHEMA)
    assert json.loads(spec.to_json())["output"] == {"schema": CITY_SCHEMA}
    assert RunSpec.from_json(spec.to_json()) == spec


def test_a_class_that_cannot_be_imported_is_stored_as_its_schema_alone():
    class Local(BaseModel):
        answer: str

    form = output_form(Local)
    assert form == {"schema": Local.model_json_schema()}  # no import path: a resume gets dicts
    assert RunSpec.from_dict({"output": form}).output == Local.model_json_schema()


def test_a_stored_import_path_that_no_longer_imports_falls_back_to_the_schema():
    stored = {"schema": CITY_SCHEMA, "model": "tests.test_output:Gone"}
    assert RunSpec.from_dict({"output": stored}).output == CITY_SCHEMA


@pytest.mark.parametrize("bad, match", [
    ({"type": "string"}, r"must describe an object .* got type 'string'; wrap the value"),
    ({"type": "object", "properties": {"a": {"type": "nope"}}}, r"not a valid JSON Schema: .*fix the schema"),
    ("a string", r"must be a Pydantic model class or a JSON Schema \(a dict\), got str"),
])
def test_an_unusable_output_is_a_configuration_error(bad, match):
    with pytest.raises(ConfigurationError, match=match):
        RunSpec(output=bad)


def test_validation_errors_name_each_field_path():
    nested = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]}}}}
    assert AnswerSchema.of(nested).errors({"items": [{"qty": 1}, {"qty": "x"}]}) == ["items[1].qty: 'x' is not of type 'integer'"]
    assert AnswerSchema.of(City).errors({"name": "Paris", "population": -1}) == [
        "population: Input should be greater than or equal to 0"]
    assert AnswerSchema.of(City).errors({"population": 1}) == ["name: Field required"]


def test_the_answer_tool_takes_the_schema_without_titles():
    tool = AnswerSchema.of(City).tool()["function"]
    assert tool["name"] == ANSWER_TOOL
    assert tool["parameters"] == {"properties": {"name": {"type": "string"}, "population": {"minimum": 0, "type": "integer"}},
                                  "required": ["name", "population"], "type": "object", "description": City.__doc__}


def test_a_tool_named_like_the_answer_tool_is_refused():
    from langchain_core.tools import tool

    @tool
    def final_answer(text: str) -> str:
        """Answer."""
        return text

    with pytest.raises(ConfigurationError, match="a tool is named 'final_answer'.*rename the tool"):
        build_graph("openai:test-model", [final_answer], base_url="http://127.0.0.1:9/v1", output=City)


# --- what the model is told ------------------------------------------------------------------------------

SHAPED = '{"name": "<name>", "population": 1}'  # City's example answer: its required fields, within their bounds


def system_text(protocol, output=City):
    graph = build_graph(ScriptedChatModel(replies=[]), builtins("calculator"), protocol=protocol, output=output)
    return str(system_message(graph.reinloop_context).content)


@pytest.mark.parametrize("protocol", ["tool_calling", "auto"])
def test_under_native_tool_calling_the_prompt_asks_for_the_answer_tool_and_never_for_plain_text(protocol):
    text = system_text(protocol)
    assert "plain text" not in text
    assert f"give it by calling the {ANSWER_TOOL} tool, alone" in text
    assert "reply with it as plain text" in system_text(protocol, output=None)  # the plain rule, for text answers


@pytest.mark.parametrize("protocol", ["json", "react"])
def test_text_protocols_show_the_answer_as_an_object_shaped_by_the_schema(protocol):
    text = system_text(protocol)
    assert (f'"final_answer": {SHAPED}' if protocol == "json" else f"Final Answer: {SHAPED}") in text
    assert "<the answer>" not in text and '"<answer>"' not in text


@pytest.mark.parametrize(("protocol", "bad", "shown"), [
    ("json", "not json", f'{{"thought": "one short sentence", "final_answer": {SHAPED}}}'),
    ("react", "no format", f"Final Answer: {SHAPED}"),
    ("tool_calling", "", f"calling {ANSWER_TOOL}, alone, with {SHAPED}"),
], ids=["json", "react", "tool_calling"])
def test_the_correction_example_shows_the_answer_as_an_object_shaped_by_the_schema(protocol, bad, shown):
    good = [tool_call(ANSWER_TOOL, VALID)] if protocol == "tool_calling" else (
        {"final_answer": VALID} if protocol == "json" else f"Final Answer: {json.dumps(VALID)}")
    model = ScriptedChatModel(replies=[bad, bad, good])
    out = build_graph(model, builtins("calculator"), protocol=protocol, output=City).invoke({"task": "t"})
    feedback = out["scratchpad"][1]["feedback"]  # the second failure in a row gets the example
    assert shown in feedback and "<the answer>" not in feedback and "plain text" not in feedback
    assert out["output"] == City(**VALID)


def test_the_answer_tools_schema_sent_through_the_api_is_counted_with_the_tools():
    model = ScriptedChatModel(replies=[[tool_call(ANSWER_TOOL, VALID)]])
    out = build_graph(model, builtins("calculator"), output=City).invoke({"task": "t"})
    assert [t["function"]["name"] for t in model.bound_tools] == ["calculator", ANSWER_TOOL]
    sent = [json.dumps(model.bound_tools[:1], ensure_ascii=False, separators=(",", ":")),
            json.dumps(model.bound_tools[1], ensure_ascii=False, separators=(",", ":"))]
    assert out["scratchpad"][0]["prompt_parts"]["tools"] == sum(active_counter().count(s) for s in sent)


def test_the_answer_tool_alone_is_counted_when_the_run_has_no_other_tool():
    model = ScriptedChatModel(replies=[[tool_call(ANSWER_TOOL, VALID)]])
    out = build_graph(model, [], output=City).invoke({"task": "t"})
    sent = json.dumps(model.bound_tools[0], ensure_ascii=False, separators=(",", ":"))
    assert out["scratchpad"][0]["prompt_parts"]["tools"] == active_counter().count(sent) > 0


# --- through the real client, in every protocol ---------------------------------------------------------


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_a_valid_answer_is_the_output_as_the_model_instance(openai_server, protocol):
    openai_server.responses.append(answer_reply(protocol, VALID))
    out = graph_on(openai_server, protocol).invoke({"task": "the largest city of France"})
    assert out["output"] == City(**VALID) and isinstance(out["output"], City)
    assert json.loads(out["answer"]) == VALID and out["status"] == "done"
    system = openai_server.requests[0]["messages"][0]["content"]
    assert '"population":{"minimum":0,"type":"integer"}' in system  # the schema, shown compactly
    tools = [t["function"]["name"] for t in openai_server.requests[0].get("tools") or []]
    assert tools == (["calculator", ANSWER_TOOL] if protocol == "tool_calling" else [])


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_an_invalid_answer_is_sent_back_with_its_errors_and_counts_as_a_failed_step(openai_server, protocol):
    openai_server.responses += [answer_reply(protocol, INVALID), answer_reply(protocol, VALID)]
    out = graph_on(openai_server, protocol).invoke({"task": "the largest city of France"})
    first = out["scratchpad"][0]
    assert first["error"] and first["invalid_output"] == INVALID and "output" not in first
    assert "population: Input should be a valid integer" in first["parse_error"]
    assert out["counters"]["errors"] == 1 and out["output"] == City(**VALID)
    assert out["invalid_output"] is None  # a valid answer came after it
    second_prompt = json.dumps(openai_server.requests[1]["messages"], ensure_ascii=False)
    assert "population: Input should be a valid integer" in second_prompt


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_a_json_schema_output_is_a_validated_dict(openai_server, protocol):
    openai_server.responses += [answer_reply(protocol, {"name": "Paris"}), answer_reply(protocol, VALID)]
    out = graph_on(openai_server, protocol, output=CITY_SCHEMA).invoke({"task": "the largest city of France"})
    assert out["output"] == VALID
    assert "(root): 'population' is a required property" in out["scratchpad"][0]["parse_error"]


def test_tool_calls_run_before_the_answer_tool_is_called(openai_server):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "2100*1000"}}]),
                                answer_reply("tool_calling", VALID)]
    out = graph_on(openai_server, "tool_calling").invoke({"task": "Paris, 2100 thousand people"})
    assert out["scratchpad"][0]["actions"][0]["observation"] == "2100000"
    assert out["output"].population == 2100000


def test_the_answer_tool_called_beside_other_tools_runs_none_of_them(openai_server):
    openai_server.responses += [
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}}, {"name": ANSWER_TOOL, "args": VALID}]),
        answer_reply("tool_calling", VALID)]
    out = graph_on(openai_server, "tool_calling").invoke({"task": "t"})
    first = out["scratchpad"][0]
    assert first["actions"] == [] and "must be called alone" in first["parse_error"]


def test_a_plain_text_answer_under_native_tools_is_refused_unless_it_is_a_valid_object(openai_server):
    openai_server.responses += [completion("Paris"), completion(json.dumps(VALID))]
    out = graph_on(openai_server, "tool_calling").invoke({"task": "t"})
    assert out["scratchpad"][0]["invalid_output"] == "Paris"
    assert "(root): the answer must be a JSON object" in out["scratchpad"][0]["parse_error"]
    assert out["output"] == City(**VALID)


# --- the invalid_output break -------------------------------------------------------------------------


def test_invalid_answers_that_trip_the_error_breaker_pause_the_run_and_a_hint_resumes_it(openai_server):
    openai_server.responses += [answer_reply("json", INVALID)] * 3
    spec = RunSpec(model="openai:test-model", base_url=openai_server.base_url, protocol="json", retry=FAST,
                   tools=("calculator",), output=City)
    paused = run("the largest city of France", spec, thread_id="city")
    assert paused.status == "broken" and paused.paused and paused.break_reason == "invalid_output"
    assert "the last answer did not match the output schema" in paused.break_message
    assert paused.output is None and paused.invalid_output == INVALID
    openai_server.responses.append(answer_reply("json", VALID))
    done = resume("city", hint="population is a whole number of people")
    assert done.status == "done" and done.output == City(**VALID) and done.invalid_output is None
    assert "population is a whole number of people" in json.dumps(openai_server.requests[-1]["messages"])
    assert done.as_dict()["output"] == VALID


def test_an_aborted_run_keeps_its_last_invalid_answer_marked_invalid(openai_server):
    openai_server.responses += [answer_reply("react", INVALID)] * 3
    spec = RunSpec(model="openai:test-model", base_url=openai_server.base_url, protocol="react", retry=FAST,
                   tools=("calculator",), output=City)
    run("the largest city of France", spec, thread_id="city")
    ended = resume("city", abort=True)
    assert ended.status == "broken" and ended.break_reason == "aborted"
    assert ended.answer is None and ended.output is None and ended.invalid_output == INVALID


def test_without_a_checkpointer_the_break_ends_the_run_with_the_invalid_answer_kept(openai_server):
    openai_server.responses += [answer_reply("tool_calling", INVALID)] * 3
    out = graph_on(openai_server, "tool_calling").invoke({"task": "t"})
    assert (out["status"], out["break_reason"]) == ("broken", "invalid_output")
    assert out["answer"] is None and out["output"] is None and out["invalid_output"] == INVALID


# --- the command line -------------------------------------------------------------------------------


def test_output_schema_flag_validates_the_answer_and_json_shows_it(openai_server, tmp_path, capsys):
    schema = tmp_path / "city.json"
    schema.write_text(json.dumps(CITY_SCHEMA), encoding="utf-8")
    openai_server.responses += [answer_reply("tool_calling", INVALID), answer_reply("tool_calling", VALID)]
    code = main(["run", "the largest city of France", "--base-url", openai_server.base_url, "--tools", "calculator",
                 "--output-schema", str(schema), "--json", "--thread", "cli-city"])
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 0 and out["output"] == VALID and out["invalid_output"] is None
    assert main(["runs", "show", "cli-city", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"]["output"] == VALID
    assert main(["runs", "show", "cli-city"]) == 0
    shown = capsys.readouterr().out
    assert f"answer: {json.dumps(VALID)} (structured, valid)" in shown
    assert '"output": {"schema": {"type": "object"' in shown  # the stored spec keeps the schema


def test_the_cli_prints_an_invalid_last_answer_as_invalid(openai_server, tmp_path, capsys):
    schema = tmp_path / "city.json"
    schema.write_text(json.dumps(CITY_SCHEMA), encoding="utf-8")
    openai_server.responses += [answer_reply("json", INVALID)] * 3
    code = main(["run", "t", "--base-url", openai_server.base_url, "--tools", "calculator", "--protocol", "json",
                 "--output-schema", str(schema), "--thread", "cli-bad"])
    out = capsys.readouterr().out
    assert code == 3
    assert f"last answer, INVALID (it does not match the output schema): {json.dumps(INVALID)}" in out
    assert "run broken: invalid_output:" in out


def test_output_schema_flag_refuses_a_file_that_is_not_a_schema(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "string"}', encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["run", "t", "--output-schema", str(bad)])
    assert exited.value.code == 2
    assert "argument --output-schema: the output schema (RunSpec.output) must describe an object" in capsys.readouterr().err


def test_a_wrap_up_answer_is_validated_too():
    from reinloop.protocols.answers import AnswerRules
    from reinloop.testing import ScriptedChatModel, tool_call

    same = [tool_call("calculator", {"expression": "2+2"})]
    model = ScriptedChatModel(replies=[same, same, same, "Paris"])  # stuck, then a wrap-up answer in plain text
    out = build_graph(model, builtins("calculator"), output=City, answers=AnswerRules(wrap_up=True)).invoke({"task": "t"})
    assert out["status"] == "broken" and out["output"] is None and out["invalid_output"] == "Paris"
    assert out["answer"] is None


def test_a_batch_line_takes_a_schema_and_a_bad_one_is_refused_by_its_line(tmp_path):
    from reinloop.runs.batches import read_tasks

    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"task": "t", "output": CITY_SCHEMA}) + "\n", encoding="utf-8")
    _, tasks = read_tasks(good)
    assert RunSpec().replace(**{k: v for k, v in tasks[0]["spec"].items() if k != "task"}).output == CITY_SCHEMA
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task": "t", "output": {"type": "string"}}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"bad.jsonl:1: the output schema \(RunSpec.output\) must describe an object"):
        read_tasks(bad)


# --- hostile schemas: too deep, too big, looping, catastrophic patterns -------------------------------


def deep_schema(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


HOSTILE_SCHEMAS = {
    "400 levels": (deep_schema(400), "is refused: it is nested more than 64 levels deep"),
    "a $ref loop": ({"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                     "properties": {"x": {"$ref": "#/$defs/a"}}}, "makes a loop that never reaches a property or an item"),
    "3 MB": ({"type": "object", "properties": {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(25_000)}},
             "characters long; at most 200,000 are accepted"),
    "a remote $ref": ({"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/x.json"}}},
                      "is not local (only #... references are followed, nothing is fetched)"),
}


@pytest.mark.parametrize("name", HOSTILE_SCHEMAS)
def test_output_schema_flag_refuses_a_hostile_schema_in_one_line_at_once(tmp_path, name):
    import subprocess
    import sys
    import time

    schema, message = HOSTILE_SCHEMAS[name]
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "t", "--output-schema", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert time.monotonic() - began < 30  # the 3 MB schema took 98 s to refuse
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "the output schema (RunSpec.output)" in proc.stderr and message in proc.stderr, proc.stderr


def test_a_recursive_schema_of_a_model_is_no_loop():
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    assert AnswerSchema.of(Node).errors({"name": "a", "children": [{"name": "b", "children": "no"}]}) == [
        "children[0].children: Input should be a valid list"]
    schema = {"type": "object", "$defs": Node.model_json_schema()["$defs"], "properties": {"tree": {"$ref": "#/$defs/Node"}}}
    assert RunSpec(output=schema).output == schema
    assert AnswerSchema.of(schema).errors({"tree": {"name": "a", "children": [{"name": 1}]}}) == [
        "tree.children[0].name: 1 is not of type 'string'"]


def test_a_catastrophic_pattern_in_the_output_schema_judges_the_answer_in_linear_time():
    import time

    schema = {"type": "object", "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["word"]}
    attack = "a" * 29 + "b"  # 34.6 s of one step with Python's re
    model = ScriptedChatModel(replies=[json.dumps({"thought": "t", "final_answer": {"word": attack}}),
                                       json.dumps({"thought": "t", "final_answer": {"word": "aaa"}})])
    began = time.monotonic()
    out = build_graph(model, builtins("calculator"), protocol="json", output=schema,
                      limits={"max_seconds": 5}).invoke({"task": "t"})
    assert time.monotonic() - began < 5
    assert out["status"] == "done" and out["output"] == {"word": "aaa"}
    assert f"word: '{attack}' does not match '^(a+)+$'" in prompt_text(model.prompts[1])


def test_an_output_schema_with_a_pattern_re2_cannot_take_is_refused():
    schema = {"type": "object", "properties": {"pair": {"type": "string", "pattern": "^(a)\\1$"}}}
    with pytest.raises(ConfigurationError, match=r"its pattern '\^\(a\)\\\\1\$' cannot be matched in linear time by RE2"):
        RunSpec(output=schema)
