"""Where a node is in the run: one helper reads LangGraph's config for every node and event."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from reinloop.observe.location import Location, locate


class S(TypedDict, total=False):
    run: int
    counters: dict[str, int]


def located_in_graph(checkpointer: Any) -> Location:
    seen: list[Location] = []

    def probe(state: S) -> dict[str, Any]:
        seen.append(locate(state))
        return {}

    builder = StateGraph(S)
    builder.add_node("probe", probe)
    builder.add_edge(START, "probe")
    builder.add_edge("probe", END)
    graph = builder.compile(checkpointer=checkpointer)
    graph.invoke({"run": 3, "counters": {"steps": 4}}, {"configurable": {"thread_id": "t-7"}})
    return seen[0]


def test_a_node_in_a_checkpointed_run_knows_its_thread_run_step_node_and_checkpoint() -> None:
    here = located_in_graph(InMemorySaver())
    assert (here.thread_id, here.run, here.step, here.node) == ("t-7", 3, 5, "probe")
    assert here.checkpointed
    assert here.checkpoint_id and here.task_id and here.superstep is not None


def test_without_a_checkpointer_a_node_knows_its_thread_but_points_at_no_checkpoint() -> None:
    here = located_in_graph(None)
    assert here.thread_id == "t-7"
    assert not here.checkpointed
    assert here.checkpoint_id is None


def test_outside_a_graph_run_the_location_is_empty() -> None:
    assert locate() == Location()
    assert not locate().checkpointed


def test_a_new_run_started_by_the_update_is_the_location_of_its_events() -> None:
    here = locate({"run": 1, "counters": {"steps": 9}}, {}, {"run": 2})
    assert (here.run, here.step) == (2, 10)
    assert here.event_fields()["thread_id"] is None
