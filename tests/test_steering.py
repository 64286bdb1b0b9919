"""AnswerRules(calculation_tool=...): a calculator call before any figure is known, or an answer before the
calculation, is asked again at once with the tools narrowed (reinloop.steering)."""

from __future__ import annotations

from reinloop.answers import AnswerRules
from reinloop.steering import CALCULATE_FIRST, FIGURES_FIRST, needs_figures
from reinloop.testing import tool_call

RULES = AnswerRules(calculation_tool="calculator")
TASK = "计算北京的气温的两倍。"
WEATHER = [tool_call("get_weather", {"city": "北京"})]
DOUBLE = [tool_call("calculator", {"expression": "18*2"})]


def memory_events(out):
    return [e for s in out["scratchpad"] for e in s.get("memory") or []]


def test_a_calculator_call_with_names_before_any_lookup_is_asked_again_without_the_calculator(make_graph):
    named = [tool_call("calculator", {"expression": "temperature * 2"})]
    graph, model = make_graph([named, WEATHER, DOUBLE, "北京的气温是18℃，两倍是36。"], answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "北京的气温是18℃，两倍是36。"
    assert model.tools_sent[1] == ["db_query", "get_weather"]  # the re-ask offers every tool but the calculator
    assert [a["tool"] for s in out["scratchpad"] for a in s["actions"]] == ["get_weather", "calculator"]
    assert str(model.prompts[1][-1].content) == FIGURES_FIRST.format(tool="calculator")
    assert out["counters"]["llm_calls"] == 4  # the reply put aside is counted
    assert {"event": "steered", "reason": "figures_first", "tools": ["db_query", "get_weather"]} in memory_events(out)


def test_a_calculator_call_with_made_up_figures_before_any_lookup_is_asked_again(make_graph):
    invented = [tool_call("calculator", {"expression": "1000000 / 2000000"})]
    graph, model = make_graph([invented, WEATHER, DOUBLE, "36"], answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36" and model.tools_sent[1] == ["db_query", "get_weather"]


def test_a_calculator_call_with_the_tasks_own_figures_runs_at_once(make_graph):
    graph, model = make_graph([[tool_call("calculator", {"expression": "17*23"})], "391"], answers=RULES)
    out = graph.invoke({"task": "计算 17*23。"})
    assert out["answer"] == "391" and model.calls == 2 and not memory_events(out)


def test_an_answer_before_the_calculation_is_asked_again_with_the_calculator_alone(make_graph):
    graph, model = make_graph([WEATHER, "18", DOUBLE, "36"], answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36"
    assert model.tools_sent[2] == ["calculator"]
    fresh = model.prompts[2]  # the task and the results, none of the model's own replies
    assert [m.type for m in fresh] == ["system", "human", "human", "human"]
    assert "北京: 晴, 18℃" in str(fresh[2].content)
    assert str(fresh[3].content) == CALCULATE_FIRST.format(tool="calculator", how=" (the task asks for a product, '两倍': use *)")
    assert [s.get("answer") for s in out["scratchpad"]] == [None, None, "36"]  # "18" never became a step
    assert {"event": "steered", "reason": "calculate_first", "tools": ["calculator"]} in memory_events(out)


def test_in_json_the_re_ask_lists_only_the_calculator_and_asks_for_the_format(make_graph):
    graph, model = make_graph([{"tool": "get_weather", "args": {"city": "北京"}}, {"final_answer": "18"},
                               {"tool": "calculator", "args": {"expression": "18*2"}}, {"final_answer": "36"}],
                              protocol="json", answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36"
    system = str(model.prompts[2][0].content)
    assert "- calculator:" in system and "- get_weather:" not in system and "- db_query:" not in system
    assert str(model.prompts[2][-1].content).endswith("Reply following the required format exactly.")


def test_a_steered_reply_that_is_still_wrong_is_refused_by_the_rules_as_before(make_graph):
    graph, model = make_graph([WEATHER, "18", "18", DOUBLE, "36"], answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36"
    refused = out["scratchpad"][1]
    assert "calculator has not computed anything yet" in (refused.get("parse_error") or "")


def test_a_task_that_asks_for_no_calculation_is_not_steered(make_graph):
    graph, model = make_graph([WEATHER, "晴，18℃"], answers=RULES)
    out = graph.invoke({"task": "北京天气怎么样？"})
    assert out["answer"] == "晴，18℃" and model.calls == 2 and not memory_events(out)


def test_without_the_calculation_rule_nothing_is_steered(make_graph):
    named = [tool_call("calculator", {"expression": "temperature * 2"})]
    graph, model = make_graph([named, WEATHER, DOUBLE, "36"])
    graph.invoke({"task": TASK})
    assert model.tools_sent[1] == ["calculator", "db_query", "get_weather"]


def test_an_expression_needs_figures_when_it_names_them_or_takes_one_from_nowhere():
    assert needs_figures("price / hours", "", [])
    assert needs_figures("1299 / 17", "", ["售价 (price): 1299 元"])
    assert not needs_figures("1299 / 18", "", ["售价 (price): 1299 元", "续航: 18 小时"])
    assert not needs_figures("round(17*23, 2)", "计算 17*23", [])


def test_a_calculator_call_of_one_figure_is_refused_and_its_result_never_passes_for_a_computed_one(make_graph):
    alone = [tool_call("calculator", {"expression": "18"})]
    graph, model = make_graph([WEATHER, alone, DOUBLE, "36"], answers=RULES)
    out = graph.invoke({"task": TASK})
    refused = out["scratchpad"][1]["actions"][0]
    assert refused["problem"].startswith("'18' is one figure, not a calculation")
    assert "'两倍': use *" in refused["problem"] and refused.get("observation") != "18"
    assert out["answer"] == "36"


def test_a_calculator_call_written_as_text_is_not_taken_for_an_early_answer(make_graph):
    written = '{"name": "calculator", "arguments": {"expression": "18*2"}}'
    graph, model = make_graph([WEATHER, written, "36"], answers=RULES)
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36" and model.calls == 3 and not memory_events(out)
    assert out["scratchpad"][1]["actions"][0]["observation"] == "36"


def test_a_steered_step_says_why_in_the_memory_events_line():
    from reinloop.memory.explain import event_line

    line = event_line({"event": "steered", "reason": "calculate_first", "tools": ["calculator"]})
    assert line == "the reply answered before the calculation: asked again offering calculator"
    line = event_line({"event": "steered", "reason": "figures_first", "tools": ["search_docs", "read_file"]})
    assert line.endswith("before any figure was known: asked again offering search_docs, read_file")


def cacheable_weather_tools():
    """The default tools, with a get_weather declared cacheable: only a cacheable tool's repeat is withheld."""
    from reinloop.demo.tools import make_weather_tool
    from reinloop.tools import builtins, configure

    return [*builtins("calculator,db_query"), configure(make_weather_tool(), cacheable=True)]


def test_a_repeated_lookup_with_the_figures_in_hand_is_asked_again_with_the_calculator_alone(make_graph):
    rules = AnswerRules(calculation_tool="calculator", vary_repeats=True)
    graph, model = make_graph([WEATHER, WEATHER, DOUBLE, "36"], answers=rules, tools=cacheable_weather_tools())
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36"
    assert model.tools_sent[2] == ["calculator"]  # not "every tool but get_weather": the calculation is next
    assert str(model.prompts[2][-1].content) == "get_weather gave its result already (above). " + CALCULATE_FIRST.format(
        tool="calculator", how=" (the task asks for a product, '两倍': use *)")
    assert [a["tool"] for s in out["scratchpad"] for a in s["actions"]] == ["get_weather", "calculator"]
    assert {"event": "withheld", "tool": "get_weather", "offered": ["calculator"]} in memory_events(out)


def test_a_repeated_lookup_before_any_figure_or_after_the_calculation_is_withheld_as_before(make_graph):
    rules = AnswerRules(calculation_tool="calculator", vary_repeats=True)
    graph, model = make_graph([WEATHER, DOUBLE, WEATHER, "36"], answers=rules,  # the calculator has answered
                              tools=cacheable_weather_tools())
    out = graph.invoke({"task": TASK})
    assert out["answer"] == "36" and model.tools_sent[3] == ["calculator", "db_query"]
    assert {"event": "withheld", "tool": "get_weather"} in memory_events(out)
    graph, model = make_graph([WEATHER, WEATHER, "36"], answers=AnswerRules(vary_repeats=True),  # no calculator rule
                              tools=cacheable_weather_tools())
    graph.invoke({"task": TASK})
    assert model.tools_sent[2] == ["calculator", "db_query"]


def test_an_answer_that_states_its_own_calculation_runs_it_on_the_calculator_instead_of_being_refused(make_graph):
    from reinloop.answers import written_calculation

    task = "计算北京的气温的两倍。"
    assert written_calculation("18 × 2 = 35", task, ["北京: 晴, 18℃"]) == "18 * 2"
    assert written_calculation("18 + 2 = 20", task, ["北京: 晴, 18℃"]) is None  # not the task's operation
    assert written_calculation("19 * 2 = 38", task, ["北京: 晴, 18℃"]) is None  # 19 is in no result
    assert written_calculation("2026-12-01 = 36", task, ["北京: 晴, 18℃"]) is None
    rules = AnswerRules(calculation_tool="calculator", grounded_numbers=True)
    for protocol, wrong, right in [("tool_calling", "18 * 2 = 35", "36"),
                                   ("json", {"final_answer": "18 * 2 = 35"}, {"final_answer": "36"})]:
        graph, model = make_graph([WEATHER if protocol == "tool_calling" else {"tool": "get_weather", "args": {"city": "北京"}},
                                   wrong, right], answers=rules, protocol=protocol)
        out = graph.invoke({"task": task})
        assert out["answer"] == "36", protocol
        action = out["scratchpad"][1]["actions"][0]
        assert action["tool"] == "calculator" and action["args"] == {"expression": "18 * 2"}
        assert action["observation"] == "36" and action["from_answer"] == "18 * 2 = 35"
        assert "36" in " ".join(str(m.content) for m in model.prompts[2])  # the model answers from the result


def test_a_wrap_up_answer_that_states_a_calculation_is_not_run(make_graph):
    from reinloop import Limits

    rules = AnswerRules(calculation_tool="calculator", grounded_numbers=True, wrap_up=True)
    graph, model = make_graph([WEATHER, "18 * 2 = 35"], answers=rules, limits=Limits(max_steps=1))
    out = graph.invoke({"task": "计算北京的气温的两倍。"})
    assert out.get("answer") is None and model.calls == 2  # the wrap-up's answer is refused, no call follows
