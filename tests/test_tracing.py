"""LangChain callbacks given in ``config`` reach the model and the tools, so LangSmith tracing works when enabled."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from reinloop.testing import tool_call

REPLIES = [[tool_call("calculator", {"expression": "2*3"})], "6"]


class Recorder(BaseCallbackHandler):
    """Records model and tool starts, and whether each ran inside a parent run (the node's)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bool]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.seen.append(("model", "", kwargs.get("parent_run_id") is not None))

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.seen.append(("tool", serialized.get("name", ""), kwargs.get("parent_run_id") is not None))


EXPECTED = [("model", "", True), ("tool", "calculator", True), ("model", "", True)]


def test_callbacks_in_config_see_every_model_and_tool_call(make_graph):
    graph, _ = make_graph(REPLIES)
    recorder = Recorder()
    graph.invoke({"task": "t"}, {"callbacks": [recorder]})
    assert recorder.seen == EXPECTED


def test_callbacks_reach_the_model_and_tools_in_async_runs_too(make_graph):
    graph, _ = make_graph(REPLIES)
    recorder = Recorder()
    asyncio.run(graph.ainvoke({"task": "t"}, {"callbacks": [recorder]}))
    assert recorder.seen == EXPECTED


def test_callbacks_in_config_see_every_call_once_with_telemetry_on_too(make_graph):
    from opentelemetry.sdk.trace import TracerProvider

    graph, _ = make_graph(REPLIES, telemetry=True, tracer_provider=TracerProvider())
    recorder = Recorder()
    graph.invoke({"task": "t"}, {"callbacks": [recorder]})
    assert recorder.seen == EXPECTED


class ChainNames(BaseCallbackHandler):
    """Records the name of every traced chain run (LangGraph's graph, its nodes, anything traced inside)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(str(kwargs.get("name")))


NODES = {"decide", "parse", "validate", "execute", "memorize", "guard"}


def test_nodes_are_traced_runs_and_the_routers_are_not_as_create_agents_edges(make_graph):
    graph, _ = make_graph(REPLIES)
    recorder = ChainNames()
    graph.invoke({"task": "t"}, {"callbacks": [recorder]})
    assert NODES <= set(recorder.names)
    assert [name for name in recorder.names if name.startswith("route_")] == []


def test_the_routers_are_untraced_in_async_runs_too(make_graph):
    graph, _ = make_graph(REPLIES)
    recorder = ChainNames()
    asyncio.run(graph.ainvoke({"task": "t"}, {"callbacks": [recorder]}))
    assert NODES <= set(recorder.names)
    assert [name for name in recorder.names if name.startswith("route_")] == []
