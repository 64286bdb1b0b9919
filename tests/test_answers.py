"""What a final answer must be: the model's own words (never refused for their wording), no echo of our marker text,
and the caller's opt-in rules."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from reinloop import Limits, SqliteCheckpointer
from reinloop.protocols.answers import AnswerRules, echo_problem, written_call
from reinloop.protocols.profiles import small_model
from reinloop.tools import configure
from reinloop.errors import ConfigurationError
from reinloop.testing import tool_call

TOOLS = ["calculator", "db_query", "get_weather"]
CALC = '{"name": "calculator", "arguments": {"expression": "3*12.5"}}'


def test_a_text_that_is_only_a_whole_json_call_of_a_known_tool_is_read_as_that_call():
    assert written_call(CALC, TOOLS) == {"tool": "calculator", "args": {"expression": "3*12.5"}}
    assert written_call('```json\n{"tool": "Calculator", "args": {"expression": "1"}}\n```', TOOLS) == {
        "tool": "calculator", "args": {"expression": "1"}}


def test_a_cut_call_a_call_among_prose_or_json_data_is_no_written_call():
    assert written_call('{"name": "calculator", "arguments": {"expression": "(3*12.5)"}', TOOLS) is None
    assert written_call('The calculator says {"name": "calculator"}', TOOLS) is None
    assert written_call(CALC + "\nThat is the call you asked for.", TOOLS) is None
    assert written_call('{"name": "Alice", "age": 3}', TOOLS) is None  # an answer that is JSON data


def test_only_reinloops_own_marker_text_makes_an_answer_an_echo():
    assert echo_problem("[reinloop] You already did this: read_file with the same arguments") is not None
    assert echo_problem("Your last reply could not be used: no JSON object found") is not None
    assert echo_problem("call a tool through the tool-calling API (e.g. search_docs with {}), or") is not None
    for answer in ("The total is 37.5", "The task still needs sign-off from QA.", "You already did this: twice.",
                   "任务还需要 QA 签字。", "Call the tools API with a JSON body, for example curl -d '{}'."):
        assert echo_problem(answer) is None, answer


def test_answer_rules_refuse_bad_values_with_the_field_named():
    with pytest.raises(ConfigurationError, match="min_tool_calls"):
        AnswerRules(min_tool_calls=-1)
    with pytest.raises(ConfigurationError, match="wrap_up"):
        AnswerRules(wrap_up="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown answer rule"):
        AnswerRules().replace(wrapup=True)


def test_under_tool_calling_an_answer_that_looks_like_a_call_is_the_answer(make_graph):
    graph, model = make_graph([CALC])
    out = graph.invoke({"task": "don't run anything, only show me the calculator call as JSON"})
    assert out["status"] == "done" and out["answer"] == CALC
    assert out["scratchpad"][0]["actions"] == [] and model.calls == 1


def test_under_tool_calling_a_cut_looking_call_in_an_uncut_reply_is_the_answer(make_graph):
    half = '{"name": "calculator", "arguments": {"expression": "(3*12.5)"}'
    graph, _ = make_graph([half])
    assert graph.invoke({"task": "show me a half-written call"})["answer"] == half


def test_text_calls_runs_an_answer_that_is_only_a_call_and_tells_the_model(make_graph):
    graph, model = make_graph([CALC, "The total is 37.5"], answers=AnswerRules(text_calls=True))
    out = graph.invoke({"task": "3 items at 12.5"})
    assert out["status"] == "done" and out["answer"] == "The total is 37.5"
    action = out["scratchpad"][0]["actions"][0]
    assert action["tool"] == "calculator" and action["from_text"] is True
    assert action["observation"].startswith("37.5") and "[reinloop] note: your reply wrote this call as text" in action["observation"]
    assert "wrote this call as text" in str(model.prompts[1])


def test_text_calls_sends_back_a_cut_call_written_as_text_and_the_default_takes_it_as_the_answer(make_graph):
    cut = '{"name": "calculator", "arguments": {"expression": "3*12.5"}'
    graph, _ = make_graph([cut, "37.5"], answers=AnswerRules(text_calls=True))
    out = graph.invoke({"task": "3 items at 12.5"})
    assert out["answer"] == "37.5" and "not a whole JSON call" in out["scratchpad"][0]["parse_error"]
    graph, _ = make_graph([cut])
    assert graph.invoke({"task": "3 items at 12.5"})["answer"] == cut


def test_text_calls_never_runs_a_side_effecting_tool_written_as_text(make_graph):
    from langchain_core.tools import tool

    ran = []

    @configure(side_effects=True)
    @tool
    def delete_user(user_id: str) -> str:
        """Delete a user."""
        ran.append(user_id)
        return "deleted"

    text = '{"name": "delete_user", "arguments": {"user_id": "u1"}}'
    graph, _ = make_graph([text, f"The call: {text}"], tools=[delete_user], answers=AnswerRules(text_calls=True))
    out = graph.invoke({"task": "show me the delete_user call as JSON, run nothing"})
    assert out["answer"] == f"The call: {text}" and ran == []
    assert "delete_user changes the world, so a call written as text is never run" in out["scratchpad"][0]["parse_error"]
    graph, _ = make_graph([text], tools=[delete_user])  # the default: the text is the answer
    assert graph.invoke({"task": "show me the delete_user call as JSON"})["answer"] == text and ran == []


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


def test_a_number_from_memory_is_accepted_as_the_models_answer(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "17*23"})], "17*23 = 421"])
    assert graph.invoke({"task": "compute 17*23"})["answer"] == "17*23 = 421"


def test_ask_next_step_ends_every_prompt_with_the_next_step_question_and_its_echo_is_no_answer(make_graph):
    from reinloop.protocols.answers import NEXT_STEP_CUE

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
    from reinloop.runs.outcome import Outcome

    graph, _ = make_graph([REPEAT, REPEAT, REPEAT, AIMessage(content="391")], answers=AnswerRules(wrap_up=True))
    outcome = Outcome.from_state("t", graph.invoke({"task": "compute 17*23"}))
    assert outcome.status == "done" and outcome.wrapped_up == "repeated_action"


def test_the_answer_rules_are_run_spec_fields_with_flags(tmp_path):
    import subprocess
    import sys

    from reinloop import RunSpec

    spec = RunSpec().replace(answers={"wrap_up": True, "min_tool_calls": 1})
    assert RunSpec.from_json(spec.to_json()).answers == AnswerRules(wrap_up=True, min_tool_calls=1)
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "x", "--min-tool-calls", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--min-tool-calls: must be a whole number >= 0" in proc.stderr


def test_a_stored_spec_naming_a_retired_rule_is_read_with_the_rule_off_and_a_warning():
    from reinloop import RunSpec

    stored = RunSpec().to_dict()
    stored["answers"] = {**stored["answers"], "grounded_numbers": True, "calculation_tool": "calculator"}
    with pytest.warns(DeprecationWarning, match="calculation_tool, grounded_numbers were removed"):
        spec = RunSpec.from_dict(stored)
    assert spec.answers == AnswerRules()


def test_the_small_model_profile_turns_on_its_four_switches_each_of_which_can_be_turned_off():
    assert small_model() == AnswerRules(wrap_up=True, ask_next_step=True, vary_repeats=True, text_calls=True)
    assert small_model(text_calls=False).text_calls is False and small_model(min_tool_calls=1).min_tool_calls == 1
    with pytest.raises(ConfigurationError, match="unknown answer rule"):
        small_model(grounded=True)


def test_a_wrap_up_answer_is_marked_as_one_by_the_cli_runs_show_and_the_report(tmp_path, capsys):
    import subprocess
    import sys

    from reinloop.cli.app import print_outcome
    from reinloop.runs.api import run
    from reinloop.testing import ScriptedChatModel

    db = tmp_path / "runs.db"
    model = ScriptedChatModel(replies=[REPEAT, REPEAT, REPEAT, "17*23 is 391."])
    outcome = run("compute 17*23", model=model, tools=["calculator"], db=db, answers=AnswerRules(wrap_up=True),
                  thread_id="w")
    assert outcome.wrapped_up == "repeated_action"
    mark = "17*23 is 391. [wrap-up answer: given without tools after the run got stuck (repeated_action)"
    print_outcome(outcome, False)
    assert mark in capsys.readouterr().out
    for fmt in ("text", "html"):
        shown = subprocess.run([sys.executable, "-m", "reinloop", "runs", "show", "w", "--db", str(db), "--format", fmt],
                               capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert "[wrap-up answer: given without tools after the run got stuck (repeated_action)" in shown.stdout, fmt


def test_under_text_calls_a_wrap_up_that_writes_a_call_as_text_takes_the_break_it_stood_in_for(make_graph):
    rules = AnswerRules(wrap_up=True, text_calls=True)
    graph, _ = make_graph([REPEAT, REPEAT, REPEAT, '{"name": "db_query", "arguments": {"sql": "SELECT'], answers=rules)
    out = graph.invoke({"task": "compute 17*23"})
    assert out["status"] == "broken" and out["break_reason"] == "repeated_action" and out["answer"] is None
    assert "wrote a tool call as text" in out["scratchpad"][-1]["parse_error"]
