"""AnswerRules(vary_repeats=True): a reply repeating the run is asked for again with sampling."""

from __future__ import annotations

from reinloop.answers import AnswerRules
from reinloop.repeats import VARY_TEMPERATURE
from reinloop.testing import tool_call

TWO = [tool_call("calculator", {"expression": "2+2"})]
THREE = [tool_call("calculator", {"expression": "3+3"})]


def test_a_repeated_call_is_asked_again_with_a_seeded_sample_and_the_new_call_runs(make_graph):
    graph, model = make_graph([TWO, TWO, THREE, "4 and 6"], answers=AnswerRules(vary_repeats=True))
    out = graph.invoke({"task": "2+2 and 3+3"})
    assert [a["args"]["expression"] for s in out["scratchpad"] for a in s["actions"]] == ["2+2", "3+3"]
    assert out["answer"] == "4 and 6"
    assert model.call_options[2]["temperature"] == VARY_TEMPERATURE and model.call_options[2]["seed"] == 201
    assert "temperature" not in model.call_options[1]
    assert out["counters"]["llm_calls"] == 4  # the reply put aside is counted
    events = [e for s in out["scratchpad"] for e in s.get("memory") or []]
    assert {"event": "resampled", "asks": 1, "temperature": VARY_TEMPERATURE, "changed": True} in events


def test_a_repeated_text_reply_in_json_is_asked_again(make_graph):
    bad = "I think so."
    graph, model = make_graph([bad, bad, {"tool": "calculator", "args": {"expression": "1+1"}}, {"final_answer": "2"}],
                              protocol="json", answers=AnswerRules(vary_repeats=True))
    out = graph.invoke({"task": "1+1"})
    assert out["answer"] == "2" and model.call_options[2].get("seed") == 201


def test_a_model_that_repeats_every_time_is_asked_at_most_twice_more_and_the_guard_sees_the_repeat(make_graph):
    graph, model = make_graph([TWO] * 4 + ["4"], answers=AnswerRules(vary_repeats=True))
    out = graph.invoke({"task": "2+2"})
    assert [o.get("seed") for o in model.call_options[:4]] == [None, None, 201, 202]
    assert out["counters"]["llm_calls"] == 5
    events = [e for s in out["scratchpad"] for e in s.get("memory") or []]
    assert {"event": "resampled", "asks": 2, "temperature": VARY_TEMPERATURE, "changed": False} in events


def test_without_the_rule_a_repeat_is_not_asked_again(make_graph):
    graph, model = make_graph([TWO, TWO, "4"])
    graph.invoke({"task": "2+2"})
    assert model.calls == 3 and not any("seed" in o for o in model.call_options)
