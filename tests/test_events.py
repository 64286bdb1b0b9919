"""Events: one per node transition, completed with location and latency, sent to logging, stream and sinks."""

from __future__ import annotations

import json
import logging

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import Limits
from reinloop.errors import ScriptExhaustedError
from reinloop.observe.events import EVENT_FIELDS, emit, make_event, record_memory
from reinloop.testing import tool_call

TWO_STEPS = [[tool_call("calculator", {"expression": "2*3"})], "6"]
NODES_OF_TWO_STEPS = ["decide", "parse", "validate", "execute", "memorize", "guard", "decide", "parse", "memorize", "guard"]


def custom_events(graph, task="t", config=None):
    return list(graph.stream({"task": task}, config, stream_mode="custom"))


def test_each_node_transition_publishes_exactly_one_event(make_graph):
    graph, _ = make_graph(TWO_STEPS)
    events = custom_events(graph)
    assert [e["node"] for e in events] == NODES_OF_TWO_STEPS
    assert [e["step"] for e in events] == [1] * 6 + [2] * 4
    assert all(set(e) <= EVENT_FIELDS for e in events)
    assert json.loads(json.dumps(events)) == events  # plain data: it crosses processes and lands in SQLite


def test_events_carry_latency_tokens_actions_and_the_guard_decision(make_graph):
    graph, _ = make_graph(TWO_STEPS)
    events = custom_events(graph)
    assert all(e["latency_ms"] >= 0 and e["started_at"] > 0 for e in events)
    decide, execute, guard = events[0], events[3], events[5]
    assert (decide["tokens_in"], decide["tokens_out"]) == (10, 5)  # the scripted model's usage
    assert decide["data"]["task"] == "t"  # the first decide of a run names its task
    (action,) = execute["actions"]
    assert action["tool"] == "calculator" and action["args"] == {"expression": "2*3"}
    assert action["observation"] == "6" and action["error"] is False and action["latency_ms"] >= 0
    assert guard["decision"] == "continue" and guard["counters"]["steps"] == 1
    assert events[-1]["decision"] == "finish" and events[-2]["answer"] == "6"


def test_checkpoint_id_is_the_checkpoint_the_node_started_from(make_graph):
    graph, _ = make_graph(TWO_STEPS, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    events = custom_events(graph, config=config)
    history = {s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(config)}
    for event in events:
        snapshot = history[event["checkpoint_id"]]
        assert snapshot.next == (event["node"],)
        assert snapshot.metadata["step"] + 1 == event["superstep"]
        assert event["thread_id"] == "t1" and event["checkpoint_ns"] == "" and event["task_id"]


def test_without_a_checkpointer_no_event_points_at_a_checkpoint(make_graph):
    graph, _ = make_graph(TWO_STEPS)
    assert {e["checkpoint_id"] for e in custom_events(graph)} == {None}


def test_a_second_task_on_the_thread_is_run_2_from_its_first_event(make_graph):
    graph, _ = make_graph(["one", "two"], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    custom_events(graph, "first", config)
    events = custom_events(graph, "second", config)
    assert {e["run"] for e in events} == {2}
    assert events[0]["data"]["task"] == "second" and events[0]["step"] == 1


def test_each_transition_is_one_info_line_with_the_payload_at_debug(make_graph, caplog):
    graph, _ = make_graph(TWO_STEPS)
    with caplog.at_level(logging.DEBUG, logger="reinloop"):
        graph.invoke({"task": "t"})
    infos = [r for r in caplog.records if r.levelno == logging.INFO and r.name.startswith("reinloop.nodes.")]
    assert [r.name.rsplit(".", 1)[1] for r in infos] == NODES_OF_TWO_STEPS  # one logger per node module
    assert infos[3].getMessage() == "execute: calculator -> ok"
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.name == "reinloop.nodes.execute"]
    payload = json.loads(debug[0].getMessage().split(" event: ", 1)[1])
    assert payload["actions"][0]["observation"] == "6" and "latency_ms" in payload


def test_sinks_receive_the_same_events_as_the_stream(make_graph):
    received = []
    graph, _ = make_graph(TWO_STEPS, sinks=[received.append])
    assert custom_events(graph) == received


def test_a_node_that_raises_still_publishes_an_event_with_the_error(make_graph):
    received = []
    graph, _ = make_graph([], sinks=[received.append])  # the script is empty: decide raises
    with pytest.raises(ScriptExhaustedError):
        graph.invoke({"task": "t"})
    (event,) = received
    assert event["node"] == "decide" and event["error"].startswith("ScriptExhaustedError: ScriptedChatModel ran out")
    assert event["summary"].startswith("raised ScriptExhaustedError") and event["latency_ms"] >= 0


def test_parse_errors_refusals_and_tool_errors_are_the_events_error(make_graph):
    replies = ["not json", {"tool": "nosuch", "args": {}}, {"tool": "calculator", "args": {"expression": "1/0"}},
               {"final_answer": "gave up"}]
    graph, _ = make_graph(replies, protocol="json", limits=Limits(max_consecutive_errors=None))
    errors = [(e["node"], e["error"]) for e in custom_events(graph) if e.get("error")]
    assert [n for n, _ in errors] == ["parse", "memorize", "validate", "memorize", "execute", "memorize"]
    assert errors[0][1].startswith("no JSON object found in the reply")
    assert errors[2][1].startswith("nosuch: unknown tool 'nosuch'; available tools:")
    assert errors[4][1] == "calculator: ERROR: CalculatorError: division by zero"


def test_memory_events_attach_to_the_event_of_the_node_they_happened_in(make_graph):
    @tool
    def recall(topic: str) -> str:
        """Recall a note."""
        record_memory("recalled", f"1 note about {topic}", hits=1)
        return "the note"

    graph, _ = make_graph([[tool_call("recall", {"topic": "tea"})], "done"], tools=[recall])
    events = custom_events(graph)
    assert [e["node"] for e in events if e.get("memory")] == ["execute"]
    assert events[3]["memory"] == [{"kind": "recalled", "summary": "1 note about tea", "data": {"hits": 1}}]


def test_emit_outside_a_graph_run_publishes_at_once():
    sent = []

    class FakeRuntime:
        stream_writer = staticmethod(sent.append)
        context = None

    event = emit(FakeRuntime(), "guard", "finish", decision="finish", extra_detail=3)
    assert sent == [event] == [{"node": "guard", "summary": "finish", "decision": "finish", "data": {"extra_detail": 3}}]


def test_unknown_fields_go_under_data_and_none_extras_are_dropped():
    assert make_event("parse", "s", thought="x", fallback=None, n=1) == {
        "node": "parse", "summary": "s", "thought": "x", "data": {"n": 1}}


def test_a_memory_event_emitted_inside_a_node_joins_that_nodes_event(make_graph):
    @tool
    def forget(topic: str) -> str:
        """Forget a note."""
        from langgraph.runtime import get_runtime

        emit(get_runtime(), "memory", "evicted step 1 from the window", event="evicted", steps=[1])
        return "forgotten"

    graph, _ = make_graph([[tool_call("forget", {"topic": "tea"})], "done"], tools=[forget])
    events = custom_events(graph)
    assert "memory" not in [e["node"] for e in events]  # no event of its own
    assert events[3]["node"] == "execute" and events[3]["memory"] == [
        {"kind": "evicted", "summary": "evicted step 1 from the window", "data": {"steps": [1]}}]
