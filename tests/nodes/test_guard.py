"""Every circuit breaker trips, stops the loop at its limit, and says why."""

from __future__ import annotations

import time

import pytest
from langchain_core.tools import tool

from reinloop import Limits
from reinloop.nodes.guard import ONE_STEP_LEFT
from reinloop.nodes.memorize import count, failure
from reinloop.testing import tool_call


def calc(expr: str) -> list[dict]:
    return [tool_call("calculator", {"expression": expr})]


def prompt_text(messages) -> str:
    return "\n".join(str(m.content) for m in messages)


def test_guard_breaks_at_max_steps_without_running_a_step_past_it(make_graph):
    graph, model = make_graph([calc(f"1+{i}") for i in range(10)], limits=Limits(max_steps=3))
    out = graph.invoke({"task": "count forever"})
    assert out["status"] == "broken"
    assert out["break_reason"] == "max_steps"
    assert "3 of 3 steps" in out["break_message"]
    assert out["counters"]["steps"] == 3
    assert model.calls == 3 and len(out["scratchpad"]) == 3


def test_guard_tells_the_model_when_one_step_remains(make_graph):
    graph, model = make_graph([calc("1+1"), calc("1+2"), "2"], limits=Limits(max_steps=3))
    out = graph.invoke({"task": "t"})
    assert ONE_STEP_LEFT not in prompt_text(model.prompts[1])
    assert ONE_STEP_LEFT in prompt_text(model.prompts[2])
    assert out["status"] == "done" and out["answer"] == "2"


@tool
def slow(seconds: float) -> str:
    """Sleep for a while."""
    time.sleep(seconds)
    return "slept"


def test_guard_breaks_on_timeout(make_graph):
    replies = [[tool_call("slow", {"seconds": 0.3})] for _ in range(5)]
    graph, model = make_graph(replies, tools=[slow], limits=Limits(max_seconds=0.25, max_repeats=None))
    out = graph.invoke({"task": "t"})
    assert out["status"] == "broken"
    assert out["break_reason"] == "timeout"
    assert out["counters"]["steps"] == 1 and model.calls == 1
    assert out["counters"]["elapsed_seconds"] >= 0.25


def test_guard_breaks_when_the_token_budget_is_spent(make_graph):
    # the scripted model reports 10 prompt + 5 completion tokens per call
    graph, model = make_graph([calc(f"2*{i}") for i in range(10)], limits=Limits(token_budget=40))
    out = graph.invoke({"task": "t"})
    assert out["break_reason"] == "token_budget"
    assert "45 of 40 tokens" in out["break_message"]
    assert model.calls == 3


def test_guard_warns_once_at_80_percent_of_the_cost_budget_then_breaks_at_it(make_graph):
    # the scripted model reports 10 prompt + 5 completion tokens per call: $0.015 a call at $1,000 / M
    price = {"ScriptedChatModel": {"input": 1000.0, "output": 1000.0}}
    graph, model = make_graph([calc(f"2*{i}") for i in range(10)], limits=Limits(max_cost=0.05), prices=price)
    out = graph.invoke({"task": "t"})
    assert out["break_reason"] == "cost_budget" and out["break_message"] == "spent the cost budget: $0.0600 of $0.05"
    warned = ["of this task's cost budget is spent" in prompt_text(p) for p in model.prompts]
    assert warned == [False, False, False, True]  # $0.045 after call 3 crossed $0.04; call 4 reached $0.06
    assert "90% of this task's cost budget is spent ($0.0450 of $0.05)" in prompt_text(model.prompts[3])


@pytest.mark.parametrize("max_cost, warned", [(0.0500001, None), (0.05, "80%"), (0.0499999, "80%")],
                         ids=["just_under_80", "at_80", "just_over_80"])
def test_the_cost_warning_starts_at_exactly_80_percent_of_the_budget(make_graph, max_cost, warned):
    # $0.01 a call (10 prompt tokens at $1,000 / M): the fifth prompt follows $0.04 spent
    price = {"ScriptedChatModel": {"input": 1000.0, "output": 0.0}}
    graph, model = make_graph([*(calc(f"2*{i}") for i in range(4)), "done"], limits=Limits(max_cost=max_cost),
                              prices=price)
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done" and out["counters"]["cost_usd"] == pytest.approx(0.05)
    shown = [prompt_text(p) for p in model.prompts]
    assert not any("cost budget" in p for p in shown[:4])
    if warned is None:
        assert "cost budget" not in shown[4]
    else:
        assert f"{warned} of this task's cost budget is spent ($0.0400 of ${max_cost:g})" in shown[4]


def test_the_cost_budget_breaks_when_the_calls_add_up_to_it_though_their_float_sum_falls_a_hair_short(make_graph):
    # $0.10 a call (10 prompt tokens at $10,000 / M): eight calls sum to 0.7999999999999999 in floating point
    price = {"ScriptedChatModel": {"input": 10000.0, "output": 0.0}}
    graph, model = make_graph([*(calc(f"2*{i}") for i in range(9)), "done"], limits=Limits(max_cost=0.8),
                              prices=price)
    out = graph.invoke({"task": "t"})
    assert out["status"] == "broken" and out["break_reason"] == "cost_budget"
    assert model.calls == 8 and out["counters"]["cost_usd"] == pytest.approx(0.8)
    assert "spent the cost budget: $0.8000 of $0.8" in out["break_message"]


def test_guard_breaks_after_three_consecutive_errors_on_unparseable_replies(make_graph):
    graph, model = make_graph(["no json here", "still none", "nope", "{}"], protocol="json")
    out = graph.invoke({"task": "t"})
    assert out["status"] == "broken"
    assert out["break_reason"] == "same_errors"
    assert out["counters"]["consecutive_errors"] == 3 and model.calls == 3
    # the repair message quotes the problem back to the model
    assert "no JSON object found in the reply: 'no json here'" in prompt_text(model.prompts[1])


def test_a_good_step_resets_the_consecutive_error_count(make_graph):
    replies = ["bad", "bad", {"tool": "calculator", "args": {"expression": "1+1"}}, "bad", "bad",
               {"final_answer": "2"}]
    graph, _ = make_graph(replies, protocol="json")
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done"
    assert out["counters"]["errors"] == 4
    assert out["counters"]["consecutive_errors"] == 0


@tool
def blank(query: str) -> str:
    """Returns nothing at all."""
    return "   "


def test_empty_tool_results_count_as_consecutive_errors(make_graph):
    replies = [[tool_call("blank", {"query": f"q{i}"})] for i in range(5)]
    graph, _ = make_graph(replies, tools=[blank])
    out = graph.invoke({"task": "t"})
    assert out["break_reason"] == "same_errors"
    assert out["scratchpad"][0]["actions"][0]["observation"].startswith("ERROR: the tool returned an empty result")


def test_the_same_tool_refused_three_times_breaks_even_with_different_arguments(make_graph):
    wrong = [[tool_call("get_weather", args)] for args in ({}, {"city": ["杭州"]}, {"town": "杭州"}, {"city": "杭州"})]
    graph, model = make_graph(wrong)
    out = graph.invoke({"task": "weather?"})
    assert out["break_reason"] == "same_errors" and model.calls == 3
    assert out["counters"]["repeats"] == 1  # different arguments each time: not a repeated action
    assert out["break_message"] == (
        "3 failed steps in a row, the same way each time (get_weather: call refused) (limit 3)")


def test_different_mistakes_in_a_row_are_corrected_until_the_consecutive_error_limit(make_graph):
    mistakes = ["no json", {"tool": "web", "args": {}}, {"tool": "calculator", "args": {"expression": "1/0"}},
                {"tool": "calculator", "args": {"expr": "1"}}, {"tool": "get_weather", "args": {}}]
    graph, model = make_graph([*mistakes, {"final_answer": "never reached"}], protocol="json")
    out = graph.invoke({"task": "t"})
    assert out["break_reason"] == "consecutive_errors" and model.calls == 5
    assert out["break_message"] == "5 consecutive failed steps (limit 5)"
    graph, model = make_graph([*mistakes[:4], {"final_answer": "42"}], protocol="json")
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done" and out["counters"]["errors"] == 4


def test_a_failure_of_another_kind_restarts_the_same_way_count(make_graph):
    refused = {"tool": "calculator", "args": {}}
    replies = [refused, refused, {"tool": "calculator", "args": {"expression": "1/0"}}, refused, refused,
               {"final_answer": "ok"}]
    graph, _ = make_graph(replies, protocol="json", limits=Limits(max_consecutive_errors=None))
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done" and out["counters"]["errors"] == 5  # never 3 alike in a row


def test_the_same_way_breaker_can_be_switched_off(make_graph):
    graph, model = make_graph(["no", "json", "here", "at", "all", "ever"], protocol="json",
                              limits=Limits(max_same_errors=None))
    out = graph.invoke({"task": "t"})
    assert out["break_message"] == "5 consecutive failed steps (limit 5)" and model.calls == 5


def test_repeated_action_gets_a_hint_then_breaks(make_graph):
    same = [tool_call("get_weather", {"city": "杭州"})]
    graph, model = make_graph([same, same, same, same])
    out = graph.invoke({"task": "weather?"})
    assert out["status"] == "broken"
    assert out["break_reason"] == "repeated_action"
    assert model.calls == 3
    assert "You already did this" not in prompt_text(model.prompts[1])
    assert "You already did this: get_weather" in prompt_text(model.prompts[2])
    assert out["scratchpad"][2]["hints"]  # the step records the hint it was given


def test_a_different_action_resets_the_repeat_count(make_graph):
    a = [tool_call("get_weather", {"city": "杭州"})]
    b = [tool_call("get_weather", {"city": "北京"})]
    graph, _ = make_graph([a, a, b, a, a, "done"])
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done"
    assert [s["index"] for s in out["scratchpad"]] == [1, 2, 3, 4, 5, 6]


def test_limits_set_to_none_switch_guards_off(make_graph):
    same = [tool_call("get_weather", {"city": "杭州"})]
    graph, model = make_graph([same] * 6 + ["ok"], limits=Limits(max_repeats=None, repeat_hint_after=None))
    out = graph.invoke({"task": "t"})
    assert out["status"] == "done" and model.calls == 7


def test_failure_names_how_a_step_failed():
    refused = {"tool": "calculator", "problem": "invalid arguments", "error": True}
    failed = {"tool": "read_file", "observation": "ERROR: not found", "error": True}
    assert failure(None) == "" and failure({"error": False, "actions": []}) == ""
    assert failure({"error": True, "parse_error": "no JSON object found"}) == "unreadable reply"
    assert failure({"error": True, "actions": [failed, refused, {"tool": "wait", "error": False}]}) == (
        "calculator: call refused, read_file: tool failed")


def test_counters_saved_before_the_same_way_count_existed_still_count():
    old = {"steps": 2, "llm_calls": 2, "prompt_tokens": 0, "completion_tokens": 0, "errors": 1,
           "consecutive_errors": 1, "repeats": 0, "elapsed_seconds": 0.0}
    step = {"error": True, "parse_error": "bad", "actions": []}
    assert count(old, step, {"error": True, "parse_error": "worse", "actions": []})["same_errors"] == 1
    assert count({**old, "same_errors": 1}, step, {"error": True, "parse_error": "x", "actions": []})["same_errors"] == 2


def test_the_repeat_hint_shows_the_earlier_result_and_says_it_is_already_known(make_graph):
    graph, model = make_graph([calc("17*23"), calc("17*23"), "391"])
    graph.invoke({"task": "What is 17*23?"})
    hint = prompt_text(model.prompts[2])
    assert ("Its result is already known: calculator gave: 391. It will not change (the tool is declared "
            "cacheable): do not call it again." in hint)


def job_tool(statuses):
    """``job_status``: a live value, not declared cacheable; each call gives the next of ``statuses``."""
    it = iter(statuses)

    @tool
    def job_status(job: str) -> str:
        """The status of a job, now."""
        return next(it)

    return job_status


POLL = [tool_call("job_status", {"job": "j1"})]


def test_a_job_polled_until_done_finishes_without_a_refusal_or_a_break(make_graph):
    graph, model = make_graph([POLL] * 5 + ["j1 is done"], tools=[job_tool(["queued", "running", "running", "running 80%", "done"])])
    out = graph.invoke({"task": "Wait until job j1 is done."})
    assert out["status"] == "done" and out["answer"] == "j1 is done"
    actions = [a for s in out["scratchpad"] for a in s["actions"]]
    assert [a["observation"] for a in actions] == ["queued", "running", "running", "running 80%", "done"]
    assert not any(a.get("problem") or a.get("error") or a.get("reused") for a in actions)
    assert out["counters"]["repeats"] == 0


def test_the_repeat_hint_of_a_tool_not_declared_cacheable_says_what_happened_not_that_it_will_not_change(make_graph):
    graph, model = make_graph([POLL, POLL, "still running"], tools=[job_tool(["running", "running"])])
    graph.invoke({"task": "Is job j1 done?"})
    hint = prompt_text(model.prompts[2])
    assert ("You already did this: job_status with the same arguments, 2 times in a row, and it gave the same "
            "result each time: job_status gave: running.") in hint
    assert "will not change" not in hint and "do not call it again" not in hint


def test_a_poll_whose_result_never_changes_still_breaks_as_a_repeated_action(make_graph):
    graph, _ = make_graph([POLL] * 4, tools=[job_tool(["running"] * 4)])
    out = graph.invoke({"task": "Wait until job j1 is done."})
    assert out["break_reason"] == "repeated_action" and out["counters"]["steps"] == 3


def test_a_poll_that_never_ends_still_breaks_on_max_steps(make_graph):
    ticks = [f"running, {i} s elapsed" for i in range(20)]
    graph, model = make_graph([POLL] * 20, tools=[job_tool(ticks)], limits=Limits(max_steps=6))
    out = graph.invoke({"task": "Wait until job j1 is done."})
    assert out["status"] == "broken" and out["break_reason"] == "max_steps"
    assert model.calls == 6 and out["counters"]["repeats"] == 1  # each call issued once with its result


def test_the_same_calls_count_as_a_repeat_only_while_their_results_are_the_same():
    zero = {"steps": 1, "llm_calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0,
            "consecutive_errors": 0, "same_errors": 0, "repeats": 1, "elapsed_seconds": 0.0}

    def step(observation, **extra):
        action = {"tool": "job_status", "args": {"job": "j1"}, "observation": observation, "error": False, **extra}
        return {"error": False, "actions": [action]}

    assert count(zero, step("running"), step("queued"))["repeats"] == 1
    assert count(zero, step("running"), step("running"))["repeats"] == 2
    reused = step("running\n(already known: this is the earlier result of the same call at step 1, ...)", reused=1)
    assert count(zero, reused, step("running"))["repeats"] == 2  # a cacheable tool's reused result is the same one
    refused = {"tool": "calculator", "args": {"expression": "x"}, "problem": "bad", "error": True}
    again = {**refused, "observation": "ERROR: bad (this was failed step 2 in a row: change the call, ...)"}
    assert count(zero, {"error": True, "actions": [refused]}, {"error": True, "actions": [again]})["repeats"] == 2


def test_the_last_step_hint_asks_for_the_best_answer_from_the_results_in_hand(make_graph):
    graph, model = make_graph([calc("2+2"), calc("4*2"), calc("8+4"), "12"], limits=Limits(max_steps=4))
    out = graph.invoke({"task": "2+2, times 2, plus 4"})
    last = prompt_text(model.prompts[3])
    assert ONE_STEP_LEFT in last
    assert ('The latest tool results: step 1: calculator {"expression": "2+2"} -> 4; step 2: calculator '
            '{"expression": "4*2"} -> 8; step 3: calculator {"expression": "8+4"} -> 12. Answer from them.') in last
    assert out["answer"] == "12"


def test_a_run_that_breaks_keeps_the_answer_in_hand_in_its_outcome_and_break(make_graph, tmp_path):
    from reinloop.runs.outcome import Outcome
    from reinloop.checkpoints import SqliteCheckpointer

    replies = [calc("2+2"), calc("4*2"), calc("8+4"), calc("8+4"), calc("8+4")]
    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        graph, _ = make_graph(replies, checkpointer=saver)
        config = {"configurable": {"thread_id": "t1"}}
        state = graph.invoke({"task": "2+2, times 2, plus 4"}, config)
        outcome = Outcome.from_state("t1", state)
        assert outcome.status == "broken" and outcome.break_reason == "repeated_action" and outcome.answer is None
        assert [(r["step"], r["observation"]) for r in outcome.observations] == [(1, "4"), (2, "8"), (3, "12")]
        assert outcome.as_dict()["observations"][-1] == {"step": 3, "tool": "calculator",
                                                         "args": {"expression": "8+4"}, "observation": "12"}
        (pending,) = graph.get_state(config).interrupts
        assert pending.value["observations"][-1]["observation"] == "12"


def test_the_error_breaker_tripped_by_an_invalid_structured_answer_breaks_as_invalid_output():
    from reinloop.nodes.guard import tripped
    from reinloop.state import new_counters, new_extensions

    counters = {**new_counters(), "steps": 3, "errors": 3, "consecutive_errors": 3, "same_errors": 3}
    invalid = {"error": True, "parse_error": "the final answer '{}' does not match the answer schema: city: Field required",
               "invalid_output": {}, "actions": []}
    unreadable = {"error": True, "parse_error": "the reply is empty", "actions": []}
    reason, message = tripped(Limits(), counters, new_extensions(), invalid)
    assert reason == "invalid_output" and "city: Field required" in message
    assert tripped(Limits(), counters, new_extensions(), unreadable)[0] == "same_errors"
    assert failure(invalid) == "invalid structured answer" != failure(unreadable)
