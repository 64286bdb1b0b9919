"""AnswerRules(vary_repeats=True): a reply repeating a failure of the run is asked for again with sampling."""

from __future__ import annotations

from reinloop.answers import AnswerRules
from reinloop.repeats import VARY_TEMPERATURE
from reinloop.testing import tool_call

BAD = [tool_call("calculator", {"expression": "2+"})]
TWO = [tool_call("calculator", {"expression": "2+2"})]
VARY = AnswerRules(vary_repeats=True)


def memory_events(out):
    return [e for s in out["scratchpad"] for e in s.get("memory") or []]


def test_a_repeated_failed_call_is_asked_again_with_a_seeded_sample_and_the_new_call_runs(make_graph):
    graph, model = make_graph([BAD, BAD, TWO, "4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert [a["args"]["expression"] for s in out["scratchpad"] for a in s["actions"]] == ["2+", "2+2"]
    assert out["answer"] == "4"
    assert model.call_options[2]["temperature"] == VARY_TEMPERATURE and model.call_options[2]["seed"] == 201
    assert "temperature" not in model.call_options[1]
    assert out["counters"]["llm_calls"] == 4  # the reply put aside is counted
    assert {"event": "resampled", "asks": 1, "temperature": VARY_TEMPERATURE, "changed": True} in memory_events(out)


def test_a_repeated_unreadable_reply_in_json_is_asked_again(make_graph):
    bad = "I think so."
    graph, model = make_graph([bad, bad, {"tool": "calculator", "args": {"expression": "1+1"}}, {"final_answer": "2"}],
                              protocol="json", answers=VARY)
    out = graph.invoke({"task": "1+1"})
    assert out["answer"] == "2" and model.call_options[2].get("seed") == 201


def test_a_repeat_of_a_call_that_worked_is_left_to_the_guard_not_resampled(make_graph):
    graph, model = make_graph([TWO, TWO, "4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert out["answer"] == "4" and not any("seed" in o for o in model.call_options)
    assert out["scratchpad"][1]["actions"][0].get("reused")  # answered from the first call, as without the rule


def test_a_model_that_repeats_every_time_is_asked_at_most_twice_more_and_the_guard_sees_the_repeat(make_graph):
    graph, model = make_graph([BAD] * 4 + ["4"], answers=VARY)
    out = graph.invoke({"task": "2+2"})
    assert [o.get("seed") for o in model.call_options[:4]] == [None, None, 201, 202]
    assert out["counters"]["llm_calls"] == 5
    assert {"event": "resampled", "asks": 2, "temperature": VARY_TEMPERATURE, "changed": False} in memory_events(out)


def test_without_the_rule_a_repeat_is_not_asked_again(make_graph):
    graph, model = make_graph([BAD, BAD, "4"])
    graph.invoke({"task": "2+2"})
    assert model.calls == 3 and not any("seed" in o for o in model.call_options)
