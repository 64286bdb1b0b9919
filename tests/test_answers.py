"""What a final answer must be: no call written as text, no echo of our messages, and the caller's rules."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from reinloop import Limits, SqliteCheckpointer
from reinloop.answers import AnswerRules, echo_problem, ungrounded, written_call
from reinloop.errors import ConfigurationError
from reinloop.testing import tool_call

TOOLS = ["calculator", "db_query", "get_weather"]
CALC = '{"name": "calculator", "arguments": {"expression": "3*12.5"}}'


def test_a_whole_json_call_of_a_known_tool_is_read_as_that_call():
    assert written_call(CALC + "\n" + CALC, TOOLS) == ({"tool": "calculator", "args": {"expression": "3*12.5"}}, True)
    assert written_call('```json\n{"tool": "Calculator", "args": {"expression": "1"}}\n```', TOOLS)[0] == {
        "tool": "calculator", "args": {"expression": "1"}}


def test_a_cut_json_call_is_call_shaped_but_no_call_and_prose_is_neither():
    assert written_call('{"name": "calculator", "arguments": {"expression": "(3*12.5)"}', TOOLS) == (None, True)
    assert written_call('The calculator says {"name": "calculator"}', TOOLS) == (None, False)
    assert written_call('{"name": "Alice", "age": 3}', TOOLS) == (None, False)  # an answer that is JSON data


def test_an_answer_that_repeats_our_hint_or_correction_is_an_echo():
    assert echo_problem("[reinloop] You already did this: read_file with the same arguments") is not None
    assert echo_problem("Your last reply could not be used: no JSON object found") is not None
    assert echo_problem("The total is 37.5") is None


def test_numbers_are_grounded_in_the_task_or_a_result_or_one_rounded():
    sources = ["计算 17*23", "391", "727.137"]
    assert ungrounded("17*23 = 421", sources) == ["421"]
    assert ungrounded("The answer is 391.", sources) == []
    assert ungrounded("about 727.14, or 727", sources) == []
    assert ungrounded("1,252 万人", ["1252"]) == []


def test_answer_rules_refuse_bad_values_with_the_field_named():
    with pytest.raises(ConfigurationError, match="min_tool_calls"):
        AnswerRules(min_tool_calls=-1)
    with pytest.raises(ConfigurationError, match="wrap_up"):
        AnswerRules(wrap_up="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown answer rule"):
        AnswerRules().replace(wrapup=True)


def test_under_tool_calling_a_call_written_as_text_runs_as_that_call(make_graph):
    graph, model = make_graph([CALC + "\n" + CALC, "The total is 37.5"])
    out = graph.invoke({"task": "3 items at 12.5"})
    assert out["status"] == "done" and out["answer"] == "The total is 37.5"
    assert out["scratchpad"][0]["actions"][0]["tool"] == "calculator"
    assert out["scratchpad"][0]["actions"][0]["observation"] == "37.5"


def test_under_tool_calling_a_cut_call_written_as_text_is_corrected_not_taken_for_the_answer(make_graph):
    cut = '{"name": "calculator", "arguments": {"expression": "(3*12.5)"}'
    graph, model = make_graph([cut, [tool_call("calculator", {"expression": "3*12.5"})], "37.5"])
    out = graph.invoke({"task": "3 items at 12.5"})
    assert out["answer"] == "37.5"
    assert "tool call written out as text" in out["scratchpad"][0]["parse_error"]


@pytest.mark.parametrize("protocol", ["json", "tool_calling"])
def test_an_answer_echoing_our_hint_is_refused(make_graph, protocol):
    echo = "[reinloop] You already did this: calculator with the same arguments"
    first = {"final_answer": echo} if protocol == "json" else echo
    last = {"final_answer": "4"} if protocol == "json" else "4"
    graph, _ = make_graph([first, last], protocol=protocol)
    out = graph.invoke({"task": "2+2"})
    assert out["answer"] == "4" and "repeats reinloop's message" in out["scratchpad"][0]["parse_error"]


def test_min_tool_calls_refuses_an_answer_from_memory_until_a_tool_has_answered(make_graph):
    graph, _ = make_graph(["It is 4.", [tool_call("calculator", {"expression": "2+2"})], "It is 4."],
                          answers=AnswerRules(min_tool_calls=1))
    out = graph.invoke({"task": "2+2"})
    assert out["answer"] == "It is 4." and len(out["scratchpad"]) == 3
    assert "needs at least 1 successful tool call" in out["scratchpad"][0]["parse_error"]


def test_grounded_numbers_refuses_a_number_no_tool_gave(make_graph):
    graph, model = make_graph([[tool_call("calculator", {"expression": "17*23"})], "17*23 = 421", "17*23 = 391"],
                              answers=AnswerRules(grounded_numbers=True))
    out = graph.invoke({"task": "compute 17*23"})
    assert out["answer"] == "17*23 = 391"
    assert "421" in out["scratchpad"][1]["parse_error"] and "calculator" in out["scratchpad"][1]["parse_error"]


def test_grounded_answers_refuse_talk_about_a_tool_that_repeats_no_result(make_graph):
    # Qwen2.5-Coder-0.5B under tool calling, after db_insert had answered: its "answer" was this sentence
    graph, _ = make_graph([[tool_call("calculator", {"expression": "17*23"})],
                           "Next comes the function `calculator`.", "The calculator returned 391."],
                          answers=AnswerRules(grounded_numbers=True))
    out = graph.invoke({"task": "compute 17*23"})
    assert out["answer"] == "The calculator returned 391."
    assert "talks about the tool 'calculator'" in out["scratchpad"][1]["parse_error"]


def test_without_the_rules_a_number_from_memory_is_accepted(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "17*23"})], "17*23 = 421"])
    assert graph.invoke({"task": "compute 17*23"})["answer"] == "17*23 = 421"


def test_ask_next_step_ends_every_prompt_with_the_next_step_question_and_its_echo_is_no_answer(make_graph):
    from reinloop.answers import NEXT_STEP_CUE

    graph, model = make_graph([[tool_call("calculator", {"expression": "2+2"})], NEXT_STEP_CUE, "It is 4."],
                              answers=AnswerRules(ask_next_step=True))
    out = graph.invoke({"task": "2+2"})
    assert [str(p[-1].content) for p in model.prompts] == [NEXT_STEP_CUE] * 3
    assert out["answer"] == "It is 4." and "repeats reinloop's message" in out["scratchpad"][1]["parse_error"]
    graph, model = make_graph([[tool_call("calculator", {"expression": "2+2"})], "It is 4."])
    graph.invoke({"task": "2+2"})
    assert not any(NEXT_STEP_CUE in str(m.content) for p in model.prompts for m in p)


REPEAT = [tool_call("calculator", {"expression": "17*23"})]


@pytest.mark.parametrize("protocol", ["tool_calling", "json"])
def test_a_stuck_run_wraps_up_with_one_tool_free_call_and_ends_done(make_graph, protocol):
    call = REPEAT if protocol == "tool_calling" else {"tool": "calculator", "args": {"expression": "17*23"}}
    final = "It is 391." if protocol == "tool_calling" else {"final_answer": "391"}
    graph, model = make_graph([call, call, call, final], protocol=protocol, answers=AnswerRules(wrap_up=True))
    out = graph.invoke({"task": "compute 17*23"})
    assert out["status"] == "done" and out["wrapped_up"] == "repeated_action"
    assert out["answer"] in ("It is 391.", "391")
    wrap_up = model.prompts[-1]
    assert "Give the final answer to the task now" in str(wrap_up[-1].content)
    assert "calculator {\"expression\": \"17*23\"} -> 391" in str(wrap_up)
    assert not any(m.type == "ai" for m in wrap_up)  # none of its own looping replies
    if protocol == "tool_calling":
        assert model.tools_sent[0] and model.tools_sent[-1] == []  # the wrap-up call had no tools


def test_a_wrap_up_that_calls_a_tool_takes_the_break_it_stood_in_for(make_graph):
    graph, model = make_graph([REPEAT, REPEAT, REPEAT, REPEAT], answers=AnswerRules(wrap_up=True))
    out = graph.invoke({"task": "compute 17*23"})
    assert out["status"] == "broken" and out["break_reason"] == "repeated_action"
    assert "the wrap-up call without tools gave no usable answer" in out["break_message"]
    assert out["scratchpad"][-1]["actions"] == [] and model.calls == 4  # its call did not run


def test_without_results_in_hand_a_stuck_run_breaks_without_a_wrap_up(make_graph):
    graph, model = make_graph(["{{", "{{", "{{"], protocol="json", answers=AnswerRules(wrap_up=True))
    out = graph.invoke({"task": "compute 17*23"})
    assert out["break_reason"] == "same_errors" and model.calls == 3


def test_wrap_up_is_off_by_default_so_a_limit_means_its_number_of_calls(make_graph):
    graph, model = make_graph([REPEAT, REPEAT, REPEAT])
    out = graph.invoke({"task": "compute 17*23"})
    assert out["break_reason"] == "repeated_action" and model.calls == 3


def test_a_paused_run_whose_wrap_up_failed_resumes_and_finishes(make_graph, tmp_path):
    from langgraph.types import Command

    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        graph, model = make_graph([REPEAT, REPEAT, REPEAT, REPEAT, "It is 391."], checkpointer=saver,
                                  answers=AnswerRules(wrap_up=True), limits=Limits(max_repeats=3))
        config = {"configurable": {"thread_id": "w1"}}
        graph.invoke({"task": "compute 17*23"}, config)
        state = graph.get_state(config).values
        assert state["break_reason"] == "repeated_action" and state["decision"] == "pause"
        out = graph.invoke(Command(resume={"action": "continue", "hint": "answer 391"}), config)
        assert out["status"] == "done" and out["answer"] == "It is 391." and out["wrapped_up"] is None
        assert model.tools_sent[-1]  # back in the loop, with its tools


def test_the_outcome_says_an_answer_came_from_a_wrap_up(make_graph):
    from reinloop.outcome import Outcome

    graph, _ = make_graph([REPEAT, REPEAT, REPEAT, AIMessage(content="391")], answers=AnswerRules(wrap_up=True))
    outcome = Outcome.from_state("t", graph.invoke({"task": "compute 17*23"}))
    assert outcome.status == "done" and outcome.wrapped_up == "repeated_action"


def test_an_answer_copying_the_format_example_of_a_correction_is_refused(make_graph):
    # Qwen2.5-0.5B answered a correction with its example line: the example is ours, not an answer
    cut = '{"name": "calculator", "arguments": {"expression": "(1+1)"}'
    echo = "call a tool through the tool-calling API (e.g. calculator with"
    graph, model = make_graph([cut, cut, echo, "4"], limits=Limits(max_same_errors=5))
    out = graph.invoke({"task": "2+2"})
    assert echo in str(model.prompts[2][-1].content)  # the second correction shows the example
    assert out["answer"] == "4" and "repeats reinloop's message" in out["scratchpad"][2]["parse_error"]


def test_the_answer_rules_are_run_spec_fields_with_flags(tmp_path):
    import subprocess
    import sys

    from reinloop import RunSpec

    spec = RunSpec().replace(answers={"wrap_up": True, "min_tool_calls": 1})
    assert RunSpec.from_json(spec.to_json()).answers == AnswerRules(wrap_up=True, min_tool_calls=1)
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "x", "--min-tool-calls", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--min-tool-calls: must be a whole number >= 0" in proc.stderr


def test_grounded_numbers_refuse_an_answer_stating_false_arithmetic_with_grounded_figures(make_graph):
    # Qwen's wrap-up for "how far apart are 1779 and 17790000": every figure is in a result, the sum is false
    graph, _ = make_graph([[tool_call("calculator", {"expression": "1779*10000"})],
                           "17790000 - 1779 = 17790000", "17790000 is 1779 万"],
                          answers=AnswerRules(grounded_numbers=True))
    out = graph.invoke({"task": "1779 万 in people"})
    assert "'17790000 - 1779 = 17790000', which is false" in out["scratchpad"][1]["parse_error"]
    assert out["answer"] == "17790000 is 1779 万"


def test_a_true_equation_rounded_as_written_passes_the_arithmetic_check():
    from reinloop.answers import false_equation

    assert false_equation("1252*10000/16850 ≈ 743; 1252 / 16850 = 0.07 and 17*23 = 391") is None
    assert false_equation("2 + 2 = 5") == "2 + 2 = 5"
    assert false_equation("12,520,000 / 16850 = 743.03") is None


def test_an_answer_parroting_the_next_step_question_is_an_echo():
    # Qwen's JSON "answer" after the next-step question: "The task still needs to be completed."
    assert "the task still needs" in (echo_problem("The task still needs to be completed.") or "")
    assert echo_problem("The capital of France is Paris.") is None


def test_an_answer_that_only_repeats_words_of_the_task_is_refused_unless_it_repeats_a_result():
    from reinloop.answers import task_echo_problem

    task = "先查杭州的面积，最后计算面积的两倍。回答：面积，以及两倍的结果。"
    assert "only repeats words of the task" in task_echo_problem("面积,以及两倍的结果", task, ["16850 km²"])
    assert task_echo_problem("16850 and 33700", task, ["16850 km²", "33700"]) is None
    # a value the task names and a result returned (recorded, then read back) is an answer
    assert task_echo_problem("status-open-0", "记录 value=status-open-0，然后查询。", ["status-open-0"]) is None
    assert task_echo_problem("杭州", task, ["16850"]) is not None  # a CJK word of the task
    assert task_echo_problem("深圳", "杭州和深圳哪个人口多？", ["深圳 Shenzhen: 1779 万人"]) is None
    assert task_echo_problem("州", task, ["16850"]) is None and task_echo_problem("5", "3 or 5?", ["x"]) is None


def test_under_grounded_numbers_a_run_answering_with_the_tasks_words_is_asked_again(make_graph):
    task = "Compute 2+2, then answer: the sum of both."
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2+2"})], "the sum of both", "It is 4."],
                          answers=AnswerRules(grounded_numbers=True))
    out = graph.invoke({"task": task})
    assert out["answer"] == "It is 4."
    assert "only repeats words of the task" in out["scratchpad"][1]["parse_error"]


def test_a_task_asking_for_a_calculation_is_told_by_its_words():
    from reinloop.answers import asks_for_calculation

    assert asks_for_calculation("读取 inbox/order_0.txt，计算这个订单的总价（数量乘以单价）。")
    assert asks_for_calculation("杭州和深圳的常住人口相差多少万人？")
    assert asks_for_calculation("What is the difference between the two prices?")
    assert asks_for_calculation("杭州的人口密度是多少？（人/平方公里，四舍五入取整）")
    assert asks_for_calculation("What is the density, rounded to the nearest whole number?")
    assert not asks_for_calculation("把“你好”翻译成英文，写入文件 out/word_0.txt。")
    assert not asks_for_calculation("Which totalitarian regimes are named in the text?")  # a word, not a stem


def test_under_calculation_tool_an_answer_must_state_a_number_the_calculator_returned(make_graph):
    from reinloop.answers import calculation_problem

    task = "计算这个订单的总价：quantity: 3, unit price: 12.5"
    assert "has not computed anything yet; call calculator" in calculation_problem('{"quantity": 3}', task, "calculator", [])
    assert "states no number calculator returned" in calculation_problem("3 and 12.5", task, "calculator", ["37.5"])
    assert calculation_problem("The total is 37.5.", task, "calculator", ["37.5"]) is None
    assert calculation_problem("about 743", "计算密度", "calculator", ["743.0267"]) is None  # rounded from it
    assert calculation_problem("hello", "翻译 你好", "calculator", []) is None  # no calculation asked
    # a difference stated without its sign: Qwen's wrap-up "The answer is 527." after 1252 - 1779 = -527
    assert calculation_problem("The answer is 527.", "相差多少万人？", "calculator", ["-527"]) is None
    assert ungrounded("相差 527 万人", ["-527"]) == []

    graph, _ = make_graph([[tool_call("calculator", {"expression": "3*12.5"})], "quantity 3, unit price 12.5",
                           "The total is 37.5."], answers=AnswerRules(calculation_tool="calculator"))
    out = graph.invoke({"task": task})
    assert out["answer"] == "The total is 37.5."
    assert "states no number calculator returned" in out["scratchpad"][1]["parse_error"]


def test_calculation_tool_must_name_one_of_the_runs_tools(make_graph):
    with pytest.raises(ConfigurationError, match=r"AnswerRules.calculation_tool must name one of the run's tools "
                                                 r"\(calculator, db_query, get_weather\), got 'calc'"):
        make_graph(["x"], answers=AnswerRules(calculation_tool="calc"))
    with pytest.raises(ConfigurationError, match="must be the name of one of the run's tools"):
        AnswerRules(calculation_tool="  ")


def test_under_grounded_numbers_an_answer_without_a_figure_the_tasks_answer_clause_asks_for_is_refused(make_graph):
    from langchain_core.tools import tool

    from reinloop.answers import asked_figures
    from reinloop.tools import builtins

    sheet = "- 常住人口 (resident population): 1252 万人\n- 面积 (area): 16850 平方公里 (km²)"
    task = "先在手册里查杭州的面积，最后计算面积的两倍。回答：面积，以及两倍的结果。"
    assert asked_figures(task, [sheet]) == [("面积", "16850")]
    assert asked_figures("回答：面积的两倍。", [sheet]) == []  # a multiple of it is asked, not the area
    assert asked_figures("最后计算面积的两倍。", [sheet]) == []  # no answer clause
    assert asked_figures("Answer with the area.", [sheet, "- area: 9"]) == []  # two figures for one name

    @tool
    def city_sheet() -> str:
        """The city's figures."""
        return sheet

    # Qwen2.5-Coder-0.5B's answer: the doubled area called the area, and the area nowhere
    graph, _ = make_graph([[tool_call("city_sheet", {})], [tool_call("calculator", {"expression": "16850 * 2"})],
                           "The area of 杭州 is 33700 square kilometers (km²).", "面积 16850 平方公里，两倍是 33700。"],
                          tools=[city_sheet, *builtins("calculator")], answers=AnswerRules(grounded_numbers=True))
    out = graph.invoke({"task": task})
    refused = out["scratchpad"][2]["parse_error"]
    assert refused.startswith("the task asks the answer to state 面积 (16850 in the results), and your answer does not")
    assert out["answer"] == "面积 16850 平方公里，两倍是 33700。"
