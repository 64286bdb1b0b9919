"""Real model endpoints that fail: the real langchain-openai client against a local server.

Every test counts the requests the server received.
"""

from __future__ import annotations

import json
import time

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import Limits, ModelCallError, build_graph
from reinloop.models.retry import RetryPolicy
from reinloop.testing import ScriptedChatModel
from reinloop.tools import builtins

from .openai_server import LLAMA_CPP_TOO_LONG, PLAUSIBLE, Raw, completion

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05, timeout=2.0)


def graph_for(server, protocol="tool_calling", retry=FAST, **kwargs):
    return build_graph("openai:test-model", builtins("calculator,get_weather"), base_url=server.base_url,
                       protocol=protocol, retry=retry, **kwargs)


def test_plain_reply_is_the_answer(openai_server):
    openai_server.responses.append(completion("hello", **PLAUSIBLE))
    out = graph_for(openai_server).invoke({"task": "say hello"})
    assert out["answer"] == "hello" and len(openai_server.requests) == 1
    assert out["counters"]["prompt_tokens"] == 960  # from the server's usage block (a plausible one)


def test_tool_calls_through_the_real_client(openai_server):
    openai_server.responses += [completion(tool_calls=[{"name": "get_weather", "args": {"city": "上海"}}]),
                                completion("24")]
    out = graph_for(openai_server).invoke({"task": "上海气温"})
    assert out["scratchpad"][0]["actions"][0]["observation"] == "上海: 多云, 24℃ (demo data)"
    second = openai_server.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "上海: 多云, 24℃ (demo data)"


def test_json_protocol_through_the_real_client(openai_server):
    openai_server.responses += [completion('{"tool": "calculator", "args": {"expression": "6*7"}}'),
                                completion('```json\n{"final_answer": "42"}\n```')]
    out = graph_for(openai_server, protocol="json").invoke({"task": "6*7"})
    assert out["answer"] == "42"
    assert "tools" not in openai_server.requests[0]  # text protocols describe tools in the prompt


def test_broken_json_arguments_become_an_observation_and_the_model_recovers(openai_server):
    openai_server.responses += [
        completion(tool_calls=[{"name": "calculator", "arguments": '{"expression": "6*7"', "id": "c1"}]),
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}, "id": "c2"}]),
        completion("42"),
    ]
    out = graph_for(openai_server).invoke({"task": "6*7"})
    first = out["scratchpad"][0]["actions"][0]
    assert first["error"] and first["observation"].startswith("ERROR: the arguments are not valid JSON")
    assert out["answer"] == "42" and len(openai_server.requests) == 3
    tool_msg = openai_server.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "c1"


def test_429_is_retried_after_the_servers_retry_after(openai_server):
    openai_server.responses += [Raw(429, json.dumps({"error": {"message": "slow down"}}), {"Retry-After": "0.3"}),
                                completion("ok")]
    start = time.monotonic()
    out = graph_for(openai_server).invoke({"task": "t"})
    assert out["answer"] == "ok" and len(openai_server.requests) == 2
    assert time.monotonic() - start >= 0.3


@pytest.mark.parametrize(
    "failure",
    [
        Raw(500, json.dumps({"error": {"message": "boom"}})),
        Raw(503, "upstream down"),
        Raw(200, '{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "mess'),  # truncated body
        Raw(200, json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []})),
        Raw(200, json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m"})),  # no choices
        Raw(200, json.dumps(completion("late")), delay=3.0),  # slower than the 2 s timeout
    ],
    ids=["500", "503", "truncated-body", "empty-choices", "no-choices", "timeout"],
)
def test_transient_failures_are_retried(openai_server, failure):
    openai_server.responses += [failure, completion("ok")]
    out = graph_for(openai_server).invoke({"task": "t"})
    assert out["answer"] == "ok"
    assert len(openai_server.requests) == 2


@pytest.mark.parametrize(
    ("status", "fix"),
    [(400, "the request was rejected"), (401, "the API key was refused: check OPENAI_API_KEY"),
     (404, "the model or endpoint does not exist: check --model and --base-url")],
)
def test_permanent_failures_fail_fast_with_the_endpoint_and_the_fix(openai_server, status, fix):
    openai_server.responses.append(Raw(status, json.dumps({"error": {"message": "nope"}})))
    with pytest.raises(ModelCallError) as exc:
        graph_for(openai_server).invoke({"task": "t"})
    message = str(exc.value)
    assert message.startswith(f"model endpoint {openai_server.base_url} answered HTTP {status}: {fix}")
    assert "\n" not in message
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("body", [{"error": {"message": "too long", "code": "context_length_exceeded", "param": "messages"}},
                                  LLAMA_CPP_TOO_LONG], ids=["openai", "llama.cpp"])
def test_a_prompt_too_long_for_the_model_says_to_lower_the_prompt_budget(openai_server, body):
    openai_server.responses.append(Raw(400, json.dumps(body)))
    with pytest.raises(ModelCallError) as exc:
        graph_for(openai_server).invoke({"task": "t"})
    assert exc.value.context_exceeded and len(openai_server.requests) == 1
    assert str(exc.value).startswith(f"model endpoint {openai_server.base_url} answered HTTP 400: the prompt is too "
                                     "large: lower --max-prompt-tokens or --window-steps (")


def test_exhausted_retries_leave_the_run_resumable(openai_server):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "2+2"}}])]
    openai_server.responses += [Raw(500, "down")] * 4
    graph = graph_for(openai_server, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "r1"}}
    with pytest.raises(ModelCallError, match="gave up after 4 attempts. The run is saved: resume it"):
        graph.invoke({"task": "2+2"}, config)
    assert len(openai_server.requests) == 5
    snapshot = graph.get_state(config)
    assert snapshot.next == ("decide",) and snapshot.values["counters"]["steps"] == 1
    openai_server.responses.append(completion("4"))
    out = graph.invoke(None, config)
    assert out["answer"] == "4" and out["counters"]["steps"] == 2
    assert len(openai_server.requests) == 6  # the finished tool step was not repeated


def test_retry_waits_never_run_past_max_seconds(openai_server):
    openai_server.responses.append(Raw(429, "{}", {"Retry-After": "100"}))
    start = time.monotonic()
    with pytest.raises(ModelCallError, match=r"not retrying: the next wait \(100.0 s\) is longer than the .* s left of max_seconds"):
        graph_for(openai_server, limits=Limits(max_seconds=5)).invoke({"task": "t"})
    assert time.monotonic() - start < 5 and len(openai_server.requests) == 1


def test_auto_protocol_takes_text_that_looks_like_a_call_for_the_answer_and_never_runs_it(openai_server):
    text = '{"tool": "calculator", "args": {"expression": "6*7"}}'
    openai_server.responses += [completion(text)]
    out = graph_for(openai_server, protocol="auto").invoke({"task": "show me the calculator call for 6*7 as JSON"})
    assert out["answer"] == text and out.get("protocol") is None and out["scratchpad"][0]["actions"] == []
    assert len(openai_server.requests) == 1 and "tools" in openai_server.requests[0]


def test_auto_protocol_falls_back_when_the_endpoint_rejects_tools(openai_server):
    openai_server.responses += [Raw(400, json.dumps({"error": {"message": "model does not support tools"}})),
                                completion('{"final_answer": "fine"}')]
    out = graph_for(openai_server, protocol="auto").invoke({"task": "t"})
    assert out["answer"] == "fine" and out["protocol"] == "json"
    assert len(openai_server.requests) == 2 and "tools" not in openai_server.requests[1]


def test_auto_protocol_keeps_the_tools_when_the_endpoint_rejects_another_field_in_words_about_tools(openai_server):
    body = {"error": {"message": "the tool result in messages[2] is too long", "param": "messages"}}
    openai_server.responses.append(Raw(400, json.dumps(body)))
    with pytest.raises(ModelCallError) as raised:
        graph_for(openai_server, protocol="auto").invoke({"task": "t"})
    assert (raised.value.status_code, raised.value.param) == (400, "messages")
    assert len(openai_server.requests) == 1  # no second call without tools


def test_auto_protocol_keeps_native_calls_when_the_model_makes_them(openai_server):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}}]),
                                completion("2")]
    out = graph_for(openai_server, protocol="auto").invoke({"task": "1+1"})
    assert out["answer"] == "2" and out.get("protocol") is None
    assert all("tools" in r for r in openai_server.requests)


def test_auto_protocol_uses_json_for_a_model_without_tool_support():
    graph = build_graph(ScriptedChatModel(supports_tools=False, replies=['{"final_answer": "x"}']),
                        builtins("calculator"), protocol="auto")
    assert graph.reinloop_context.protocol.name == "json"
    assert graph.invoke({"task": "t"})["answer"] == "x"
