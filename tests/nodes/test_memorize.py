"""Failed steps get corrections that change and escalate; ``protocol="auto"`` moves on from a format that fails."""

from __future__ import annotations

from reinloop import Limits
from reinloop.testing import prompt_text


def test_a_repeated_unreadable_reply_gets_an_escalating_correction_so_no_two_prompts_are_the_same(make_graph):
    graph, model = make_graph(["I think it is 391", "I think it is 391", "I think it is 391",
                               {"final_answer": "391"}], protocol="json", limits=Limits(max_same_errors=4))
    out = graph.invoke({"task": "What is 17*23? Use the calculator."})
    assert out["answer"] == "391"
    prompts = [prompt_text(p) for p in model.prompts]
    assert len(set(prompts)) == len(prompts)  # every prompt differs from the one before
    assert "no JSON object found in the reply: 'I think it is 391'" in prompts[1]
    assert "Your last 2 replies in a row could not be used; this is attempt 3" in prompts[2]
    assert '{"thought": "one short sentence", "tool": "calculator", "args": {"expression": "<expression>"}}' in prompts[2]
    assert "this is attempt 4" in prompts[3]
    feedback = [s.get("feedback") for s in out["scratchpad"][:3]]
    assert feedback[0].startswith("Your last reply could not be used") and "attempt 3" in feedback[1]


def test_react_corrections_show_a_react_example(make_graph):
    graph, model = make_graph(["hmm", "hmm", "Thought: ok\nFinal Answer: 4"], protocol="react")
    graph.invoke({"task": "2+2?"})
    assert 'Action: calculator\nArgs: {"expression": "<expression>"}' in prompt_text(model.prompts[2])


def test_a_refused_call_repeated_is_told_which_failed_step_in_a_row_it_is(make_graph):
    wrong = {"tool": "web", "args": {"q": "2+2"}}
    graph, model = make_graph([wrong, wrong, {"final_answer": "4"}], protocol="json")
    out = graph.invoke({"task": "2+2?"})
    assert "failed step 2 in a row" in out["scratchpad"][1]["actions"][0]["observation"]
    assert prompt_text(model.prompts[1]) != prompt_text(model.prompts[2])


def test_identical_successful_steps_never_give_two_identical_prompts(make_graph):
    call = {"tool": "calculator", "args": {"expression": "1+1"}}
    limits = Limits(repeat_hint_after=None, max_repeats=None)
    graph, model = make_graph([call, call, call, {"final_answer": "2"}], protocol="json", limits=limits)
    out = graph.invoke({"task": "1+1?"})
    prompts = [prompt_text(p) for p in model.prompts]
    assert all(a != b for a, b in zip(prompts, prompts[1:]))
    # step 2 observed step 1's result marked as already known, so prompt 3 differs by itself; step 3 repeats
    # step 2 exactly, dedup shows it once, and prompt 4 would equal prompt 3 but for the note
    assert "this prompt is the same as the one your last reply answered" in prompts[3]
    assert out["scratchpad"][3]["hints"]  # the step records the note it was shown


def test_auto_moves_to_json_then_react_after_unreadable_replies_and_records_it(make_graph):
    replies = ["", "", "no json", "still no json", "Thought: done\nFinal Answer: 4"]
    graph, model = make_graph(replies, protocol="auto")
    out = graph.invoke({"task": "2+2?"})
    assert out["status"] == "done" and out["answer"] == "4"
    assert [s.get("switched_to") for s in out["scratchpad"]] == [None, "json", None, "react", None]
    assert out["protocol"] == "react"
    assert "Reply with exactly one JSON object" in prompt_text(model.prompts[2])
    assert "The reply format changes now, to the react format" in prompt_text(model.prompts[4])
    assert "Final Answer: <the answer>" in model.prompts[4][0].content  # the system prompt is ReAct's now
