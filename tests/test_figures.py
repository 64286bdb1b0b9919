"""A calculator expression's names bound to the figures the run's results label with them."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from reinloop import Limits, build_graph
from reinloop.answers import AnswerRules
from reinloop.figures import bind_figures, labelled_figures
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import builtin

ORDER = "order 0\nquantity: 3\nunit price: 12.5\n"


def test_labelled_lines_give_their_figures_without_thousands_separators():
    assert labelled_figures(["- 常住人口 (resident population): 1252 万人 (12,520,000 people)", "- Total: 12,500.5 EUR"]) == [
        (frozenset({"常住人口", "resident", "population"}), "1252"), (frozenset({"total"}), "12500.5")]


@pytest.mark.parametrize(("expression", "bound"), [
    ("quantity * unit_price", "3 * 12.5"),  # what Qwen2.5-Coder-0.5B wrote after reading the order
    ("round(quantity*unitPrice, 2)", "round(3*12.5, 2)"),  # functions are not names
    ("quantity * price", "3 * 12.5"),  # the one label that holds the word
    ("quantity * unit price", "3 * 12.5"),  # words with a space between are one name (Qwen wrote this too)
])
def test_each_name_binds_to_the_one_figure_its_label_gives(expression, bound):
    assert bind_figures(expression, [ORDER])[0] == bound


@pytest.mark.parametrize(("expression", "results"), [
    ("3 * 12.5", [ORDER]),  # no names
    ("quantity * discount", [ORDER]),  # a name no label fits
    ("price * 2", ["unit price: 12.5\nshipping price: 4"]),  # two figures fit
    ("quantity * unit_price", ["quantity: 3\nquantity: 4\nunit price: 1"]),  # two different quantities
])
def test_an_expression_stays_as_written_unless_every_name_binds_to_one_figure(expression, results):
    assert bind_figures(expression, results) is None


@tool
def read_order() -> str:
    """Read the order."""
    return ORDER


def test_under_calculation_tool_a_call_of_names_runs_with_the_results_figures_and_says_so():
    model = ScriptedChatModel(replies=[[tool_call("read_order", {})],
                                       [tool_call("calculator", {"expression": "quantity * unit_price"})],
                                       "The total is 37.5."])
    graph = build_graph(model, [read_order, builtin("calculator")],
                        answers=AnswerRules(calculation_tool="calculator"))
    out = graph.invoke({"task": "计算这个订单的总价"})
    assert out["answer"] == "The total is 37.5."
    action = out["scratchpad"][1]["actions"][0]
    assert action["args"] == {"expression": "3 * 12.5"} and action["observation"] == "37.5"
    assert action["bound_figures"] == {"quantity": "3", "unit_price": "12.5"}
    # without the rule the call runs as written, and the calculator says what is wrong with it
    model = ScriptedChatModel(replies=[[tool_call("read_order", {})],
                                       [tool_call("calculator", {"expression": "quantity * unit_price"})], "ok"])
    out = build_graph(model, [read_order, builtin("calculator")]).invoke({"task": "计算这个订单的总价"})
    assert "holds words ('quantity', 'unit_price')" in out["scratchpad"][1]["actions"][0]["observation"]


def test_under_calculation_tool_a_call_without_the_operation_the_task_names_is_refused():
    from reinloop.answers import operation_problem

    task = "杭州和深圳的常住人口相差多少万人？"
    assert "asks for a difference ('相差') and the expression has no '-'" in operation_problem("1252 + 1779", task)
    assert operation_problem("abs(1252 - 1779)", task) is None
    assert operation_problem("16850*2", "最后计算面积的两倍") is None
    assert operation_problem("1 + 2", "What is the difference of 1 and 2 divided by 3?") is None  # two named: no check
    assert operation_problem("1 + 2", "Compute 1 + 2") is None  # no operation word
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "1252 + 1779"})],
                                       [tool_call("calculator", {"expression": "1779 - 1252"})], "527"])
    out = build_graph(model, [builtin("calculator")], answers=AnswerRules(calculation_tool="calculator")).invoke(
        {"task": task})
    first, second = (s["actions"][0] for s in out["scratchpad"][:2])
    assert "expression has no '-'" in first["observation"] and second["observation"] == "527"
    assert out["answer"] == "527"


def test_under_calculation_tool_a_call_without_the_multiple_the_task_names_is_refused():
    from reinloop.answers import factor_problem, named_factor

    task = "先在手册里查杭州的面积，最后计算面积的两倍。"
    assert "asks for '两倍', a multiple: times 2, and the expression has no 2" in factor_problem("1252 * 16850", task)
    assert factor_problem("16850 * 2", task) is None and factor_problem("2*16850.0", task) is None
    assert named_factor("What is 7 tripled?") == ("tripled", "3") and named_factor("价格的3倍") == ("3倍", "3")
    assert named_factor("3倍还是两倍？") is None and named_factor("double-check 1 + 2") is None  # two, or none
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "1252 * 16850"})],
                                       [tool_call("calculator", {"expression": "16850 * 2"})], "33700"])
    out = build_graph(model, [builtin("calculator")], answers=AnswerRules(calculation_tool="calculator")).invoke(
        {"task": "计算 16850 的两倍。"})
    first, second = (s["actions"][0] for s in out["scratchpad"][:2])
    assert "multiply the figure by 2" in first["observation"] and second["observation"] == "33700"


def test_under_calculation_tool_a_call_of_one_figure_names_the_operation_the_task_asks_for():
    from reinloop.answers import figure_only_problem

    assert "'(16850)' is one figure, not a calculation" in figure_only_problem(" (16850) ", "面积的两倍")
    assert "'两倍': use *" in figure_only_problem("16850", "面积的两倍")
    assert figure_only_problem("round(16850)", "四舍五入") is None and figure_only_problem("16850*2", "x") is None


def test_under_calculation_tool_a_figure_the_results_give_only_in_wan_is_written_in_plain_units():
    from reinloop.figures import scale_figures

    sheet = ["- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里"]
    density = "杭州的人口密度是多少？（人/平方公里，四舍五入取整）"
    assert scale_figures("round(1252 / 16850)", density, sheet) == ("round(12520000 / 16850)", {"1252": "12520000"})
    assert scale_figures("round(1252 * 10000 / 16850)", density, sheet) is None  # converted already
    assert scale_figures("abs(1252 - 1779)", "杭州和深圳的常住人口相差多少万人？", sheet) is None  # asked in 万
    assert scale_figures("30 * 2", "x", ["revenue 30 million; staff: 30"]) is None  # also stated plain
    assert scale_figures("2 * 3", "x", ["revenue 2 million dollars"]) is None  # a plain constant: a factor, maybe
    assert scale_figures("2.5 * 3", "x", ["revenue 2.5 million dollars"]) == ("2500000 * 3", {"2.5": "2500000"})
    assert scale_figures("30 * 2", "x", ["revenue 30 million dollars"]) == ("30000000 * 2", {"30": "30000000"})
    model = ScriptedChatModel(replies=[[tool_call("city_sheet", {})],
                                       [tool_call("calculator", {"expression": "round(1252 / 16850)"})], "743"])

    @tool
    def city_sheet() -> str:
        """The city's figures."""
        return sheet[0]

    out = build_graph(model, [city_sheet, builtin("calculator")],
                      answers=AnswerRules(calculation_tool="calculator", grounded_numbers=True)).invoke({"task": density})
    ran = out["scratchpad"][1]["actions"][0]
    assert ran["args"] == {"expression": "round(12520000 / 16850)"} and ran["observation"] == "743"
    assert ran["scaled_figures"] == {"1252": "12520000"} and out["answer"] == "743"


def test_under_calculation_tool_the_multiple_refusal_names_the_figure_the_task_multiplies():
    from reinloop.answers import factor_problem

    sheet = ["- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里 (km²)"]
    task = "先在手册里查杭州的面积，最后计算面积的两倍。"
    assert factor_problem("1252 * 16850", task, sheet).endswith("multiply 16850 (what the task multiplies) by 2")
    assert factor_problem("1252 * 16850", "What is twice the area?", sheet).endswith("multiply 16850 (what the task multiplies) by 2")
    assert factor_problem("1252 * 16850", task, []).endswith("multiply the figure by 2")
    assert factor_problem("1252 * 2", task, sheet).endswith("does not use 16850; multiply 16850 by 2")
    assert factor_problem("16850 * 2", task, sheet) is None and factor_problem("1252 * 2", task, []) is None


def test_under_calculation_tool_a_refused_multiple_quotes_the_whole_call_the_task_and_results_determine():
    from reinloop.answers import factor_expression

    sheet = ["- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里 (km²)"]
    task = "先在手册里查杭州的面积，最后计算面积的两倍。回答：面积，以及两倍的结果。"
    assert factor_expression(task, sheet) == "16850 * 2"
    assert factor_expression("What is twice the area?", sheet) == "16850 * 2"
    assert factor_expression(task, []) is None  # nothing labelled: no whole call to quote
    assert factor_expression("计算面积。", sheet) is None  # no multiple

    @tool
    def city_sheet() -> str:
        """The city's figures."""
        return sheet[0]

    # what Qwen2.5-Coder-0.5B wrote, and what it wrote once the refusal quoted the call
    model = ScriptedChatModel(replies=[[tool_call("city_sheet", {})],
                                       [tool_call("calculator", {"expression": "12520000 * 2"})],
                                       [tool_call("calculator", {"expression": "16850 * 2"})], "16850, 33700"])
    out = build_graph(model, [city_sheet, builtin("calculator")],
                      answers=AnswerRules(calculation_tool="calculator")).invoke({"task": task})
    refused = out["scratchpad"][1]["actions"][0]["observation"]
    assert refused.endswith('multiply 16850 by 2: call calculator with {"expression": "16850 * 2"}'), refused
    assert out["scratchpad"][2]["actions"][0]["observation"] == "33700" and out["answer"] == "16850, 33700"


def test_under_calculation_tool_the_named_operation_applied_again_to_the_calculators_own_result_is_refused():
    from reinloop.answers import compounding_problem

    task, area = "最后计算面积的两倍。", "- 面积 (area): 16850 平方公里"
    problem = compounding_problem("33700 * 2", task, ["33700"], [task, area])
    assert problem.startswith("33700 is what the calculator already computed for the task's '两倍'")
    assert compounding_problem("16850 * 2", task, ["33700"], [task, area]) is None  # a looked-up figure
    assert compounding_problem("round(743.0385)", "人口密度", ["743.0385"], ["人口密度"]) is None  # no operator again
    assert compounding_problem("6 * 5", "计算 3 乘以 2 再加 5", ["6"], ["计算 3 乘以 2 再加 5"]) is None  # two operations
    model = ScriptedChatModel(replies=[[tool_call("area", {})], [tool_call("calculator", {"expression": "16850 * 2"})],
                                       [tool_call("calculator", {"expression": "33700 * 2"})], "16850, 33700"])

    @tool("area")
    def area_tool() -> str:
        """The city's area."""
        return area

    out = build_graph(model, [area_tool, builtin("calculator")],
                      answers=AnswerRules(calculation_tool="calculator")).invoke({"task": task})
    again = out["scratchpad"][2]["actions"][0]
    assert "answer with 33700" in again["observation"] and out["answer"] == "16850, 33700"


def test_answer_facts_are_the_asked_figures_and_the_calculation_of_the_tasks_operation():
    from reinloop.answers import answer_facts, asked_items

    sheet = "- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里 (km²)"
    task = "先在手册里查杭州的面积，最后计算面积的两倍。回答：面积，以及两倍的结果。"
    calls = [("city_sheet", {}, sheet), ("calculator", {"expression": "16850 * 2"}, "33700"),
             ("calculator", {"expression": "33700 + 1"}, "33701")]
    assert answer_facts(task, calls, calculation_tool="calculator") == ["面积: 16850", "16850 * 2 = 33700"]
    assert answer_facts(task, calls, asked=False, calculation_tool="calculator") == ["16850 * 2 = 33700"]
    assert answer_facts(task, calls) == ["面积: 16850"]  # no calculator named: no calculation quoted
    assert answer_facts("查面积。", calls, calculation_tool="calculator") == []  # no answer clause, no calculation asked
    assert asked_items(task) == "面积，以及两倍的结果" and asked_items("查面积。") is None


def test_a_wrap_up_under_the_figure_rules_says_which_results_give_what_the_task_asks():
    # Qwen2.5-Coder-0.5B, shown every result, answered "The area of 杭州 is 33700" (the doubled area as the
    # area) however the request was worded; told which results give what, it answered "16850\n33700"
    sheet = "- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里 (km²)"
    task = "先在手册里查杭州的面积，最后计算面积的两倍。回答：面积，以及两倍的结果。"

    @tool
    def city_sheet() -> str:
        """The city's figures."""
        return sheet

    def run(rules: AnswerRules) -> tuple[dict, ScriptedChatModel]:
        model = ScriptedChatModel(replies=[[tool_call("city_sheet", {})],
                                           [tool_call("calculator", {"expression": "16850 * 2"})], "16850\n33700"])
        graph = build_graph(model, [city_sheet, builtin("calculator")], answers=rules, limits=Limits(max_steps=2))
        return graph.invoke({"task": task}), model

    out, model = run(AnswerRules(wrap_up=True, grounded_numbers=True, calculation_tool="calculator"))
    request = str(model.prompts[-1][-1].content)
    assert request.startswith("Give the final answer to the task now")
    assert request.endswith("The task asks for: 面积，以及两倍的结果. The results give: 面积: 16850; "
                            "16850 * 2 = 33700. Answer with each figure."), request
    assert out["status"] == "done" and out["wrapped_up"] == "max_steps" and out["answer"] == "16850\n33700"
    _, model = run(AnswerRules(wrap_up=True))  # without the figure rules the request is the plain one
    assert str(model.prompts[-1][-1].content).endswith("give the best answer they support.")


CITY_HITS = ("- docs/city_hangzhou.md — 杭州 Hangzhou\n# 杭州 Hangzhou\n\n- 常住人口 (resident population): 1252 万人\n"
             "- 面积 (area): 16850 平方公里\n## 交通\nmetro lines: 12\n"
             "- docs/city_beijing.md — 北京 Beijing\n# 北京 Beijing\n\n- 常住人口 (resident population): 2186 万人\n"
             "- 面积 (area): 16410 平方公里\n")


def test_a_figure_from_the_part_about_an_entity_the_task_does_not_name_is_refused_with_the_named_parts_figure():
    from reinloop.figures import source_problem, titled_parts

    assert [p.title for p in titled_parts(CITY_HITS)] == ["杭州 Hangzhou", "北京 Beijing"]  # top level only
    task = "北京和成都的常住人口相差多少万人？"
    problem = source_problem("1252 - 2186", task, [CITY_HITS])
    assert problem is not None and problem.startswith("1252 is from '杭州 Hangzhou'")
    assert "北京 Beijing: 常住人口 (resident population): 2186" in problem
    assert problem.endswith("No result has a part about 成都 yet: search for it (for example '成都 常住人口').")
    assert source_problem("12 - 2186", task, [CITY_HITS]) is not None  # a sub-heading's figure is its page's
    assert source_problem("2186 - 2140", task, [CITY_HITS, "成都 2140"]) is None  # named, or from an untitled result
    assert source_problem("1252 - 2186", "杭州和北京的常住人口相差多少万人？", [CITY_HITS]) is None  # both named
    assert source_problem("1252 - 1779", "1252 和 1779 相差多少？", [CITY_HITS]) is None  # the task's own figure
    assert source_problem("1252 - 1779", "两个数相差多少？", [CITY_HITS]) is None  # no part named: no evidence
    assert source_problem("1252 - 1779", task, [CITY_HITS.split("- docs/city_beijing")[0]]) is None  # none named
    assert source_problem("1252 - 5", "What is Beijing's population minus 5?", [CITY_HITS]) is not None  # by English name
    assert source_problem("1252 - 5", "What is Beijingers' share?", [CITY_HITS]) is None  # a whole word, not a prefix


def test_the_names_a_task_joins_to_a_named_one_are_the_other_things_it_asks_about():
    from reinloop.figures import joined_names

    assert joined_names("北京和成都的常住人口相差多少万人？", ["北京 Beijing"]) == ["成都"]
    assert joined_names("杭州与北京的面积", ["北京 Beijing"]) == ["杭州"]
    assert joined_names("Beijing and Chengdu: which is larger?", ["北京 Beijing"]) == ["Chengdu"]
    assert joined_names("Beijing and the rest", ["北京 Beijing"]) == []  # a capitalised name, not any word
    assert joined_names("北京的人口密度是多少？", ["北京 Beijing"]) == []


def test_under_grounded_numbers_a_calculation_with_the_wrong_citys_figure_is_refused_and_the_run_recovers():
    @tool
    def search_docs(query: str) -> str:
        """Search the handbook."""
        return CITY_HITS

    task = "北京的常住人口的两倍是多少万人？"
    model = ScriptedChatModel(replies=[[tool_call("search_docs", {"query": "常住人口"})],
                                       [tool_call("calculator", {"expression": "1252 * 2"})],
                                       [tool_call("calculator", {"expression": "2186 * 2"})], "4372"])
    out = build_graph(model, [search_docs, builtin("calculator")],
                      answers=AnswerRules(grounded_numbers=True)).invoke({"task": task})
    wrong, right = (s["actions"][0] for s in out["scratchpad"][1:3])
    assert wrong["problem"].startswith("1252 is from '杭州 Hangzhou'") and "2186" in wrong["observation"]
    assert right["observation"] == "4372" and out["answer"] == "4372"
    off = build_graph(ScriptedChatModel(replies=[[tool_call("search_docs", {"query": "常住人口"})],
                                                 [tool_call("calculator", {"expression": "1252 * 2"})], "2504"]),
                      [search_docs, builtin("calculator")]).invoke({"task": task})
    assert off["scratchpad"][1]["actions"][0]["observation"] == "2504"  # without the rule the call runs


def test_under_both_rules_the_wrong_entity_is_named_before_the_missing_operation():
    @tool
    def search_docs(query: str) -> str:
        """Search the handbook."""
        return CITY_HITS

    model = ScriptedChatModel(replies=[[tool_call("search_docs", {"query": "常住人口"})],
                                       [tool_call("calculator", {"expression": "1252 + 2186"})]])
    out = build_graph(model, [search_docs, builtin("calculator")], limits=Limits(max_steps=2),
                      answers=AnswerRules(grounded_numbers=True, calculation_tool="calculator")).invoke(
        {"task": "北京和成都的常住人口相差多少万人？"})
    assert out["scratchpad"][1]["actions"][0]["problem"].startswith("1252 is from '杭州 Hangzhou'")
    assert "expression has no '-'" not in out["scratchpad"][1]["actions"][0]["problem"]


def test_under_calculation_tool_a_division_the_other_way_round_from_the_task_is_refused():
    from reinloop.answers import division_order, division_problem

    sheet = "# Comet 2\n- 售价 (price): 699 元\n- 重量 (weight): 52 克\n- 续航 (battery life): 30 小时\n"
    task = "Comet 2 无线耳机的售价除以续航小时数是多少元每小时？"
    assert division_order(task, [sheet]) == ("售价", "699", "续航", "30")
    assert "write 699 / 30" in division_problem("round(30 / 699, 2)", task, [sheet])
    assert division_problem("699 / 30", task, [sheet]) is None and division_problem("30 / 699", "售价是多少？", [sheet]) is None
    assert division_order("the price divided by the battery life", [sheet]) == ("price", "699", "battery", "30")
    assert division_order("售价除以续航，再除以重量", [sheet]) is None  # two divisions: no one order
    assert division_order("售价除以续航", ["- 售价: 699\n- 售价: 799\n- 续航: 30"]) is None  # two prices

    @tool
    def read_sheet() -> str:
        """The product sheet."""
        return sheet

    model = ScriptedChatModel(replies=[[tool_call("read_sheet", {})], [tool_call("calculator", {"expression": "30 / 699"})],
                                       [tool_call("calculator", {"expression": "699 / 30"})], "23.3"])
    out = build_graph(model, [read_sheet, builtin("calculator")], answers=AnswerRules(calculation_tool="calculator")).invoke(
        {"task": task})
    swapped, right = (s["actions"][0] for s in out["scratchpad"][1:3])
    assert "the other way round" in swapped["observation"] and right["observation"] == "23.3" and out["answer"] == "23.3"


def test_under_calculation_tool_a_figure_subtracted_from_or_divided_by_itself_is_refused():
    from reinloop.answers import self_operation_problem

    assert "subtracts 2186 from itself" in self_operation_problem("2186 - 2186")
    assert "divides 2.5 by itself" in self_operation_problem("(2.5/2.5)")
    assert self_operation_problem("2186 - 21860") is None and self_operation_problem("12186 - 2186") is None
    assert self_operation_problem("2186 - 2140") is None and self_operation_problem("2186 + 2186") is None
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "2186 - 2186"})],
                                       [tool_call("calculator", {"expression": "2186 - 2140"})], "46"])
    out = build_graph(model, [builtin("calculator")], answers=AnswerRules(calculation_tool="calculator")).invoke(
        {"task": "2186 和 2140 相差多少？"})
    first, second = (s["actions"][0] for s in out["scratchpad"][:2])
    assert "from itself" in first["observation"] and second["observation"] == "46" and out["answer"] == "46"
