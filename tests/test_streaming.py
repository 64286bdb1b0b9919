"""Streamed replies: tokens through LangGraph's ``messages`` stream, shown live, never changing what is stored."""

from __future__ import annotations

import io

from langchain_openai import ChatOpenAI

from reinloop import Limits, build_graph
from reinloop.cli.app import build_parser, spec_from
from reinloop.observe.console import RunConsole
from reinloop.runs.api import run, show_run
from reinloop.tools import builtins

from .openai_server import completion


def calc(expression: str, thought: str = "Let me compute.") -> dict:
    return completion(thought, tool_calls=[{"name": "calculator", "args": {"expression": expression}}],
                      prompt_tokens=631, completion_tokens=30)  # plausible for the request, so believed


def test_the_test_server_streams_openai_chunks_and_a_usage_chunk(openai_server):
    openai_server.responses.append(completion("Hello there", prompt_tokens=5, completion_tokens=2))
    model = ChatOpenAI(model="gpt-4o-mini", base_url=openai_server.base_url, api_key="not-needed", stream_usage=True)
    chunks = list(model.stream("hi"))
    assert "".join(c.content for c in chunks) == "Hello there" and len(chunks) > 3
    assert sum(chunks[1:], chunks[0]).usage_metadata["input_tokens"] == 5
    assert openai_server.requests[0]["stream"] is True
    assert openai_server.requests[0]["stream_options"] == {"include_usage": True}


def test_python_callers_get_the_reply_tokens_tagged_with_node_and_step(openai_server):
    openai_server.responses += [calc("6*7"), completion("6*7 is 42")]
    graph = build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url)
    pieces = [(m.content, meta["langgraph_node"], meta["reinloop_step"])
              for m, meta in graph.stream({"task": "6*7?"}, stream_mode="messages") if m.content]
    assert "".join(p[0] for p in pieces if p[2] == 1) == "Let me compute."
    assert "".join(p[0] for p in pieces if p[2] == 2) == "6*7 is 42"
    assert {p[1] for p in pieces} == {"decide"} and len(pieces) >= 6  # several chunks per reply


def stored(thread_id: str) -> tuple[list, dict]:
    detail = show_run(thread_id)
    counters = {k: v for k, v in detail.state["counters"].items() if k != "elapsed_seconds"}
    return detail.steps, counters


def test_a_streamed_run_stores_the_same_steps_and_token_counts_as_a_plain_one(openai_server):
    openai_server.responses += [calc("2**10"), completion("2**10 is 1024", prompt_tokens=644, completion_tokens=6)] * 2
    common = {"model": "openai:gpt-4o-mini", "base_url": openai_server.base_url, "tools": "calculator",
              "limits": Limits(max_steps=5)}
    tokens: list[str] = []
    streamed = run("2**10?", thread_id="streamed", on_token=lambda m, meta: tokens.append(m.content), **common)
    plain = run("2**10?", thread_id="plain", stream=False, on_token=lambda m, meta: None, **common)
    assert streamed.answer == plain.answer == "2**10 is 1024"
    assert stored("streamed") == stored("plain")
    assert stored("streamed")[1]["prompt_tokens"] == 631 + 644  # the provider's counts, not estimates
    assert [r.get("stream") for r in openai_server.requests] == [True, True, False, False]
    assert "".join(tokens).startswith("Let me compute.")


def test_the_console_shows_the_reply_as_it_streams_and_calls_once_complete(openai_server):
    openai_server.responses += [calc("1+1"), completion("The answer is 2.")]
    console = RunConsole(Limits(), io.StringIO(), color=False, live=False)
    shown: list[list[str]] = []

    def token(chunk, metadata):
        console.token(chunk, metadata)
        shown.append(console.reply.lines())

    run("1+1?", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
        on_event=console.handle, on_token=token)
    first = [lines for lines in shown if lines and "Let" in lines[0]]
    assert first[0] == ["  writing: Let m"]  # the text as it is written
    assert not any(len(lines) > 1 for lines in first[:3])  # the call only once its arguments are complete
    assert first[-1] == ["  writing: Let me compute.", '  call:    calculator {"expression": "1+1"}']
    assert shown[-1] == ["  writing: The answer is 2."]


def test_no_stream_is_a_run_flag_of_the_spec():
    assert spec_from(build_parser().parse_args(["run", "x"])).stream is True
    assert spec_from(build_parser().parse_args(["run", "x", "--no-stream"])).stream is False


def test_a_resumed_run_streams_its_replies_too(openai_server):
    from reinloop.runs.api import resume

    openai_server.responses += [calc("1+1")]
    assert run("1+1?", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
               thread_id="s1", limits=Limits(max_steps=1)).paused
    openai_server.responses.append(completion("It is 2."))
    tokens: list[tuple[str, int]] = []
    outcome = resume("s1", extra_steps=1, on_token=lambda m, meta: tokens.append((m.content, meta["reinloop_step"])))
    assert outcome.answer == "It is 2." and "".join(t for t, step in tokens if step == 2) == "It is 2."
