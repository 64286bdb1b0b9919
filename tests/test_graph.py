"""The compiled graph: its shape, and plain LangGraph invocation in every style."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import AgentContext, Limits, ReinloopGraph, build_graph
from reinloop.errors import ConfigurationError
from reinloop.testing import ScriptedChatModel, tool_call

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_mermaid_drawing_matches_the_snapshot(make_graph):
    graph, _ = make_graph([])
    mermaid = graph.get_graph().draw_mermaid()
    assert mermaid == (SNAPSHOTS / "graph.mmd").read_text(encoding="utf-8")


def test_every_route_name_labels_an_edge(make_graph):
    graph, _ = make_graph([])
    labels = {e.data for e in graph.get_graph().edges if e.conditional}
    assert labels == {"reply", "not_called", "actions", "answer / error", "run", "refused", "continue / hint", "finish / break", "pause",
                      "done", "approve"}


def test_build_graph_returns_a_compiled_state_graph(make_graph):
    from langgraph.graph.state import CompiledStateGraph

    graph, _ = make_graph([])
    assert isinstance(graph, CompiledStateGraph) and isinstance(graph, ReinloopGraph)
    assert set(graph.nodes) == {"__start__", "decide", "parse", "validate", "execute", "approve", "memorize", "guard"}


def test_state_holds_only_json_serialisable_values(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])
    out = graph.invoke({"task": "t"})
    assert json.loads(json.dumps(out)) == out  # no model, tool or limits object leaked into state


def test_stream_yields_one_update_per_node(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])
    nodes = [next(iter(chunk)) for chunk in graph.stream({"task": "t"}, stream_mode="updates")]
    assert nodes == ["decide", "parse", "validate", "execute", "memorize", "guard",
                     "decide", "parse", "memorize", "guard"]


def test_custom_stream_carries_node_events(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])
    events = list(graph.stream({"task": "t"}, stream_mode="custom"))
    guard_events = [e for e in events if e["node"] == "guard"]
    assert [e["decision"] for e in guard_events] == ["continue", "finish"]


def test_ainvoke_and_astream_work(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])
    out = asyncio.run(graph.ainvoke({"task": "t"}))
    assert out["answer"] == "6"

    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])

    async def collect():
        return [c async for c in graph.astream({"task": "t"}, stream_mode="updates")]

    assert len(asyncio.run(collect())) == 10


def test_get_state_with_a_checkpointer_shows_the_outcome(make_graph):
    graph, _ = make_graph(["42"], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"task": "t"}, config)
    snapshot = graph.get_state(config)
    assert snapshot.values["status"] == "done" and snapshot.values["answer"] == "42"
    assert snapshot.next == ()


def test_a_second_task_on_a_thread_sees_the_first_answer(make_graph):
    graph, model = make_graph(["Paris", "It is Paris again"], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"task": "capital of France?"}, config)
    out = graph.invoke({"task": "and again?"}, config)
    assert out["answer"] == "It is Paris again" and out["run"] == 2
    assert out["counters"]["steps"] == 1  # counters start over for the new task
    text = "\n".join(str(m.content) for m in model.prompts[1])
    assert "capital of France?" in text and "Answer: Paris" in text


def test_the_context_can_be_replaced_per_invocation(make_graph):
    graph, _ = make_graph([])
    other = ScriptedChatModel(replies=["from the other model"])
    ctx = AgentContext(model=other, llm=other, tools=graph.reinloop_context.tools,
                       protocol=graph.reinloop_context.protocol, limits=Limits())
    assert graph.invoke({"task": "t"}, context=ctx)["answer"] == "from the other model"


def test_unknown_protocol_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="unknown protocol 'xml'; choose one of: tool_calling, json, react"):
        build_graph(ScriptedChatModel(), protocol="xml")


def test_native_tool_calling_needs_a_model_that_binds_tools():
    from reinloop.tools import builtins

    with pytest.raises(ConfigurationError, match="does not support native tool calling; use protocol='json'"):
        build_graph(ScriptedChatModel(supports_tools=False), builtins("calculator"))


def test_bad_limits_are_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match=r"Limits.max_steps must be positive, got 0; use None to switch it off"):
        Limits(max_steps=0)
    with pytest.raises(ConfigurationError, match="unknown limit"):
        Limits().replace(max_stepz=3)
    with pytest.raises(ConfigurationError, match=r"Limits.tool_workers must be positive, got 0$"):
        Limits(tool_workers=0)
    with pytest.raises(ConfigurationError, match=r"Limits.tool_workers must be a whole number >= 1, got None"):
        Limits(tool_workers=None)
    with pytest.raises(ConfigurationError, match=r"Limits.max_calls_per_step must be a whole number or None, got 2.5"):
        Limits(max_calls_per_step=2.5)


def test_the_graphs_tool_workers_follow_the_limit():
    graph = build_graph(ScriptedChatModel(replies=[]), limits=Limits(tool_workers=3))
    assert graph.reinloop_context.workers.stats()["size"] == 3


def test_langgraph_draw_ascii_works_and_lists_the_pause_loop(make_graph):
    graph, _ = make_graph([{"thought": "look", "tool": "calculator", "args": {"expression": "1+1"}}] * 3,
                          protocol="json", checkpointer=InMemorySaver())
    drawing = graph.get_graph()
    art = drawing.draw_ascii()  # LangGraph's own layout raises "no intersection found" on the self-loop
    assert "| guard |" in art and "| start |" in art and "__start__" not in art
    assert "  guard -> guard: pause" in art.splitlines()
    assert ("guard", "guard") in {(e.source, e.target) for e in drawing.edges}  # the drawing still has the loop
    graph.invoke({"task": "t"}, {"configurable": {"thread_id": "loop"}})
    state = graph.get_state({"configurable": {"thread_id": "loop"}})
    assert state.values["decision"] == "pause" and state.next == ("guard",)  # and the graph still pauses there


def test_langgraph_draw_png_draws_the_reinloop_look(make_graph, tmp_path):
    graph, _ = make_graph([])
    png = graph.get_graph().draw_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert graph.get_graph().draw_png(str(tmp_path / "g.png")) is None
    assert (tmp_path / "g.png").read_bytes() == png


def test_each_router_reads_only_the_channel_it_decides_on(make_graph):
    graph, _ = make_graph(["x"])
    read = {source: sorted(graph.builder.schemas[branch.input_schema])
            for source, branches in graph.builder.branches.items() for branch in branches.values()}
    assert read == {"decide": ["reply"], "parse": ["pending"], "validate": ["pending"], "execute": ["pending"], "guard": ["decision"]}


def test_a_run_without_a_database_imports_no_sqlite_utils_or_numpy():
    import subprocess
    import sys

    probe = ("import json, sys\nfrom reinloop import build_graph\nfrom reinloop.testing import ScriptedChatModel, "
             "tool_call\nfrom reinloop.tools import builtins\nmodel = ScriptedChatModel(replies=[[tool_call("
             "'calculator', {'expression': '6*7'})], '42'])\nout = build_graph(model, builtins('calculator'))"
             ".invoke({'task': 'what is 6*7?'})\nprint(json.dumps([out['status'], sorted(sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == "done"
    assert "sqlite_utils" not in loaded and "numpy" not in loaded  # ~20 MB of peak memory, needed by a database only
