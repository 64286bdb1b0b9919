"""Unknown tools and invalid arguments become observations, and the loop goes on."""

from __future__ import annotations

from reinloop.testing import tool_call



def example_calculator():
    """A calculator whose description gives an example expression, as the built-in one did."""
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    from reinloop.tools.arithmetic import evaluate

    class Expression(BaseModel):
        expression: str = Field(description="Arithmetic expression, e.g. '(22*1.8)+32'.")

    from reinloop.tools import configure

    return configure(StructuredTool.from_function(lambda expression: str(evaluate(expression)), name="calculator",
                                                  description="Evaluate an arithmetic expression.", args_schema=Expression),
                     refuse_examples=True)



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
    assert out["scratchpad"][0]["actions"][0]["observation"] == "上海: 多云, 24℃ (demo data)"


def test_bare_string_for_a_multi_parameter_tool_is_refused(make_graph):
    graph, _ = make_graph(["Thought: t\nAction: db_query\nArgs: users 1", "Final Answer: ?"], protocol="react")
    out = graph.invoke({"task": "t"})
    observation = out["scratchpad"][0]["actions"][0]["observation"]
    assert observation.startswith("ERROR: the arguments of db_query must be a JSON object, got 'users 1'")


def test_a_reply_of_5000_calls_is_refused_as_one_error_and_nothing_runs(make_graph):
    from langchain_core.tools import tool

    from reinloop import Limits

    ran = []

    @tool
    def note(text: str) -> str:
        """Take a note."""
        ran.append(text)
        return "noted"

    flood = [tool_call("note", {"text": str(i)}, id=f"c{i}") for i in range(5000)]
    graph, model = make_graph([flood, [tool_call("note", {"text": "one"})], "done"], tools=[note])
    out = graph.invoke({"task": "t"})
    first = out["scratchpad"][0]
    assert ran == ["one"] and first["actions"] == [] and first["error"] is True
    assert first["parse_error"] == (
        "it made 5000 tool calls, more than the 8 allowed in one reply; none of them was run. "
        "Make at most 8 calls per reply, the most useful first"
    )
    assert "it made 5000 tool calls" in model.prompts[1][-1].content  # the model is told, once
    assert out["status"] == "done"

    graph, _ = make_graph([flood[:20], "done"], tools=[note], limits=Limits(max_calls_per_step=None))
    graph.invoke({"task": "t"})
    assert len(ran) == 1 + 20  # switched off: every call runs


def test_a_refusal_echoes_a_huge_argument_or_tool_name_in_a_few_hundred_characters(make_graph):
    huge = "x" * 1_000_000
    graph, _ = make_graph([[tool_call("calculator", {"expression": [huge]}), tool_call(huge, {})], "x"])
    out = graph.invoke({"task": "t"})
    bad_args, bad_name = (a["observation"] for a in out["scratchpad"][0]["actions"])
    assert len(bad_args) < 1000 and "(1,000,004 chars in all)" in bad_args
    assert len(bad_name) < 1000 and "(1,000,002 chars in all)" in bad_name


def test_a_tool_named_in_another_case_runs_and_the_step_records_the_name_as_written(make_graph):
    graph, _ = make_graph([{"tool": "Calculator", "args": {"expression": "17*23"}}, {"final_answer": "391"}],
                          protocol="json")
    out = graph.invoke({"task": "17*23?"})
    action = out["scratchpad"][0]["actions"][0]
    assert action["tool"] == "calculator" and action["asked_tool"] == "Calculator"
    assert action["repairs"] == ["you wrote the tool name 'Calculator'; the tool calculator was called"]
    assert action["observation"] == "391\n[reinloop] note: you wrote the tool name 'Calculator'; the tool calculator was called."
    assert not action["error"] and out["counters"]["errors"] == 0


def test_a_signature_copied_from_the_compact_listing_names_its_tool(make_graph):
    reply = {"tool": "calculator(expression: string)", "args": {"expression": "2*3"}}
    graph, _ = make_graph([reply, {"final_answer": "6"}], protocol="json", tool_detail="compact")
    action = graph.invoke({"task": "2*3?"})["scratchpad"][0]["actions"][0]
    assert action["tool"] == "calculator" and action["observation"].startswith("6\n[reinloop] note: you wrote")
    assert action["asked_tool"] == "calculator(expression: string)"


def test_a_native_call_with_a_loose_name_runs_under_the_real_name(make_graph):
    graph, model = make_graph([[tool_call("Get-Weather", {"city": "Paris"})], "sunny"])
    out = graph.invoke({"task": "weather?"})
    assert out["scratchpad"][0]["actions"][0]["tool"] == "get_weather"
    assert model.prompts[1][-1].name == "get_weather"  # the tool result answers the call under the real name


def test_a_value_written_into_the_tool_name_is_its_one_argument(make_graph):
    graph, _ = make_graph([{"tool": "calculator(17*23)", "args": {}}, {"tool": 'calculator(expression="2+2")'},
                           {"final_answer": "ok"}], protocol="json")
    out = graph.invoke({"task": "t"})
    first, second = (s["actions"][0] for s in out["scratchpad"][:2])
    assert (first["tool"], first["args"]) == ("calculator", {"expression": "17*23"})
    assert first["observation"] == "391\n[reinloop] note: you wrote the tool name 'calculator(17*23)'; the tool calculator was called."
    assert first["asked_tool"] == "calculator(17*23)" and second["observation"].startswith("4\n[reinloop] note:")


def test_a_copied_signature_in_the_name_is_no_argument(make_graph):
    graph, _ = make_graph([{"tool": "calculator(expression: string)", "args": {}}, {"final_answer": "ok"}],
                          protocol="json")
    action = graph.invoke({"task": "t"})["scratchpad"][0]["actions"][0]
    assert action["error"] and "expression: Field required" in action["observation"]


def test_a_refusal_describes_the_call_in_words_not_as_a_json_schema(make_graph):
    graph, _ = make_graph([{"tool": "calculator", "args": {"expression": {"type": "string"}}}, {"final_answer": "x"}],
                          protocol="json")
    observation = graph.invoke({"task": "t"})["scratchpad"][0]["actions"][0]["observation"]
    assert 'Expected: calculator(expression: string), for example {"expression": "<expression>"}' in observation
    assert "Arithmetic expression of the figures to compute" in observation and "(1 to 500 characters)" in observation
    assert '"properties"' not in observation and '"type": "object"' not in observation


def test_an_example_value_copied_from_the_tool_description_is_refused_unless_the_task_shares_it(make_graph):
    copied = {"tool": "calculator", "args": {"expression": "(22 * 1.8) + 32"}}
    graph, _ = make_graph([copied, {"final_answer": "x"}], protocol="json", tools=[example_calculator()])
    action = graph.invoke({"task": "read order_0.txt and total it"})["scratchpad"][0]["actions"][0]
    assert action["error"] and "'(22 * 1.8) + 32' is an example from the tool's description" in action["observation"]
    graph, _ = make_graph([copied, {"final_answer": "71.6"}], protocol="json", tools=[example_calculator()])
    action = graph.invoke({"task": "convert 22C to Fahrenheit"})["scratchpad"][0]["actions"][0]
    assert action["observation"] == "71.6"  # the task has 22: the example is the task's own computation


def test_a_format_placeholder_as_an_argument_is_refused(make_graph):
    graph, _ = make_graph([{"tool": "calculator", "args": {"expression": "<expression>"}}, {"final_answer": "x"}],
                          protocol="json")
    action = graph.invoke({"task": "2+2"})["scratchpad"][0]["actions"][0]
    assert action["error"] and "'<expression>' is an example" in action["observation"]


def test_a_copied_example_stays_refused_after_the_refusal_quoted_it(make_graph):
    copied = {"tool": "calculator", "args": {"expression": "(22*1.8)+32"}}
    graph, _ = make_graph([copied, copied, {"final_answer": "x"}], protocol="json", tools=[example_calculator()])
    steps = graph.invoke({"task": "read order_0.txt and total it"})["scratchpad"]
    assert [s["actions"][0]["error"] for s in steps[:2]] == [True, True]
    assert "is an example from the tool's description" in steps[1]["actions"][0]["observation"]


def test_an_argument_the_tool_does_not_declare_is_refused_with_the_declared_ones_and_never_dropped(make_graph):
    ran: list[dict] = []
    from langchain_core.tools import tool

    @tool
    def search(query: str, limit: int = 5) -> str:
        """Search the notes."""
        ran.append({"query": query, "limit": limit})
        return f"{limit} hits for {query}"

    invented = {"tool": "search", "args": {"query": "tea", "limt": 3}}
    graph, _ = make_graph([invented, {"tool": "search", "args": {"query": "tea", "limit": 3}}, {"final_answer": "3"}],
                          protocol="json", tools=[search])
    first, second = (s["actions"][0] for s in graph.invoke({"task": "search tea"})["scratchpad"][:2])
    assert first["error"] and first["args"] == {"query": "tea", "limt": 3}
    assert "search takes no argument 'limt' (did you mean limit?); its arguments are: query, limit" in first["observation"]
    assert ran == [{"query": "tea", "limit": 3}] and second["observation"] == "3 hits for tea"


def test_a_tool_that_allows_extra_arguments_gets_them(make_graph):
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, ConfigDict

    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        query: str

    got: list[dict] = []
    search = StructuredTool.from_function(lambda **kw: got.append(kw) or "ok", name="search", description="Search.",
                                          args_schema=Loose)
    graph, _ = make_graph([{"tool": "search", "args": {"query": "tea", "colour": "green"}}, {"final_answer": "ok"}],
                          protocol="json", tools=[search])
    action = graph.invoke({"task": "t"})["scratchpad"][0]["actions"][0]
    assert not action["error"] and action["args"] == {"query": "tea", "colour": "green"}


def test_an_optional_argument_with_a_bad_value_is_refused_and_never_defaulted(make_graph):
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    class Search(BaseModel):
        query: str
        limit: int = Field(default=5, ge=1, le=20)

    ran: list[tuple] = []
    search = StructuredTool.from_function(lambda query, limit=5: ran.append((query, limit)) or f"{limit} hits for {query}",
                                          name="search", description="Search the notes.", args_schema=Search)
    graph, model = make_graph([{"tool": "search", "args": {"query": "tea", "limit": 1000000}},
                               {"tool": "search", "args": {"query": "tea", "limit": 20}}, {"final_answer": "20 hits"}],
                              protocol="json", tools=[search])
    first, second = (s["actions"][0] for s in graph.invoke({"task": "search tea"})["scratchpad"][:2])
    assert first["problem"] and "limit: Input should be less than or equal to 20 (got 1000000)" in first["problem"]
    assert first["args"] == {"query": "tea", "limit": 1000000}
    assert ran == [("tea", 20)] and second["observation"] == "20 hits for tea"


def test_the_runs_results_are_read_only_for_an_argument_that_is_a_tools_example(make_graph):
    from reinloop.nodes.validate import check_action

    graph, _ = make_graph(["x"], tools=[example_calculator()])
    tools = graph.reinloop_context.tools
    asked: list[str] = []

    def known() -> str:
        asked.append("known")
        return "convert 22C"

    plain = check_action({"tool": "calculator", "args": {"expression": "17 * 3 + 4"}}, tools, known)
    assert plain["problem"] is None and asked == []  # a long run's results are not joined for an ordinary value
    copied = check_action({"tool": "calculator", "args": {"expression": "(22*1.8)+32"}}, tools, known)
    assert copied["problem"] is None and asked == ["known"]  # the results hold 22: the example is the run's own


def test_a_tool_that_does_not_opt_in_takes_its_own_example_and_any_placeholder_looking_value(make_graph):
    from langchain_core.tools import tool

    got: list[str] = []

    @tool
    def export(fmt: str, html: str = "") -> str:
        """Export the table. fmt: the file format, for example 'csv' or 'parquet'."""
        got.append(fmt + html)
        return "exported"

    graph, _ = make_graph([{"tool": "export", "args": {"fmt": "parquet", "html": "<br>"}}, {"final_answer": "done"}],
                          protocol="json", tools=[export])
    action = graph.invoke({"task": "export it"})["scratchpad"][0]["actions"][0]
    assert not action["error"] and got == ["parquet<br>"]


def test_a_placeholder_the_task_itself_contains_is_a_real_value(make_graph):
    graph, _ = make_graph([{"tool": "calculator", "args": {"expression": "<expression>"}}, {"final_answer": "x"}],
                          protocol="json", tools=[example_calculator()])
    action = graph.invoke({"task": "evaluate the literal text <expression>"})["scratchpad"][0]["actions"][0]
    assert "is an example" not in action["observation"]


def test_an_example_copied_without_its_brackets_is_still_the_example(make_graph):
    # Qwen2.5-Coder-0.5B wrote the calculator's example '(22*1.8)+32' as "22 * 1.8 + 32" for a density task
    graph, _ = make_graph([{"tool": "calculator", "args": {"expression": "22 * 1.8 + 32"}}, {"final_answer": "x"}],
                          protocol="json", tools=[example_calculator()])
    action = graph.invoke({"task": "杭州的人口密度是多少？"})["scratchpad"][0]["actions"][0]
    assert action["error"] and "'22 * 1.8 + 32' is an example from the tool's description" in action["observation"]


def test_a_near_miss_tool_name_is_refused_with_a_suggestion_and_never_run(make_graph):
    graph, model = make_graph([{"tool": "calculater", "args": {"expression": "2+2"}}, {"final_answer": "4"}],
                              protocol="json")
    action = graph.invoke({"task": "2+2"})["scratchpad"][0]["actions"][0]
    assert action["error"] and action["tool"] == "calculater"
    assert "unknown tool 'calculater' (did you mean calculator?); available tools: calculator" in action["observation"]


def test_near_miss_suggests_one_name_only_and_none_when_it_could_be_several():
    from reinloop.tools.registry import near_miss

    assert near_miss("limt", ["query", "limit"]) == "limit"
    assert near_miss("expr", ["expression", "units"]) == "expression"
    assert near_miss("na", ["name", "names"]) is None and near_miss("zzz", ["query"]) is None


def test_a_mended_tool_name_is_shown_by_runs_show_and_the_report(tmp_path):
    import subprocess
    import sys

    from reinloop.runs.api import run
    from reinloop.testing import ScriptedChatModel

    db = tmp_path / "runs.db"
    model = ScriptedChatModel(replies=[{"tool": "Calculator", "args": {"expression": "2+2"}}, {"final_answer": "4"}])
    run("2+2", model=model, tools=["calculator"], db=db, protocol="json", thread_id="m")
    for fmt in ("text", "html"):
        shown = subprocess.run([sys.executable, "-m", "reinloop", "runs", "show", "m", "--db", str(db), "--format", fmt],
                               capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert "repaired: you wrote the tool name" in shown.stdout and "Calculator" in shown.stdout, fmt
