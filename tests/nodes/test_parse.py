"""parse in a real graph: a hostile reply is shown to the model as an error, stored, and the run goes on."""

from __future__ import annotations

import json
import sys

import pytest

from reinloop.checkpoints import SqliteCheckpointer
from reinloop.testing import tool_call

CONFIG = {"configurable": {"thread_id": "t1"}}


def deep_dict(depth: int) -> dict:
    value: dict = {"expression": "1+1"}
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP_TEXT = '{"thought": "x", "tool": "calculator", "args": ' + '{"a":' * 2000 + "1" + "}" * 2000 + "}"
HOSTILE = {  # then a final answer; with tool_calling and auto, a text without a usable call is the answer
    "json": [DEEP_TEXT, '{"tool": "calculator", "args": {"expression": "1\\ud800"}}', "{" * 80_000, "x\ud800 {",
             {"final_answer": "done"}],
    "react": ["Thought: x\nAction: calculator\nArgs: " + "[" * 3000, "Thought: \ud800\nAction: calculator\nArgs: {}",
              "Thought: ok\nFinal Answer: done"],
    "tool_calling": [[tool_call("calculator", deep_dict(3000))], [tool_call("calculator", {"n": 10**40})],
                     [tool_call("calculator", {"expression": "\udfff"})], "done \ud800"],
    "auto": [[tool_call("calculator", deep_dict(300))], [tool_call("calculator", {"n": 10**40})], DEEP_TEXT],  # text: the answer
}


@pytest.fixture
def saver(tmp_path):
    with SqliteCheckpointer.open(tmp_path / "runs.db") as s:
        yield s


@pytest.mark.parametrize("protocol", list(HOSTILE))
def test_hostile_replies_are_stored_shown_to_the_model_and_the_run_finishes(make_graph, saver, protocol):
    replies = HOSTILE[protocol]
    graph, model = make_graph(replies, protocol=protocol, checkpointer=saver)
    out = graph.invoke({"task": "compute"}, CONFIG)
    assert out["status"] == "done"
    assert model.calls == len(replies)
    stored = graph.get_state(CONFIG).values  # read back from the SQLite file
    assert len(stored["scratchpad"]) == len(replies)
    json.dumps(stored, sort_keys=True)  # signatures, token counts and reports walk it


def test_a_deep_reply_is_explained_to_the_model_in_its_next_prompt(make_graph, saver):
    graph, model = make_graph([DEEP_TEXT, {"final_answer": "done"}], protocol="json", checkpointer=saver)
    graph.invoke({"task": "compute"}, CONFIG)
    last_prompt = "\n".join(str(m.content) for m in model.prompts[-1])
    assert "it is nested more than 100 levels deep; at most 100 levels are accepted" in last_prompt


def test_a_deep_native_call_gets_an_error_result_for_its_call_id(make_graph, saver):
    graph, _ = make_graph([[tool_call("calculator", deep_dict(3000), id="call_deep")], "done"], checkpointer=saver)
    out = graph.invoke({"task": "compute"}, CONFIG)
    (action,) = out["scratchpad"][0]["actions"]
    assert action["id"] == "call_deep" and action["args"] == {}
    assert "nested more than 100 levels deep" in action["problem"]


def old_parse(protocol, reply):
    """What parse did before the bounds: ``json`` stops with RecursionError on a deep reply."""
    return protocol.parse({**reply, "text": json.dumps(json.loads(reply["text"]))})


def test_a_thread_stuck_on_a_reply_that_crashed_an_older_version_resumes_and_finishes(
        make_graph, tmp_path, monkeypatch):
    # The older version: decide stored the deep reply, then parse raised RecursionError, on every resume.
    with SqliteCheckpointer.open(tmp_path / "runs.db") as old:
        monkeypatch.setattr(sys.modules["reinloop.nodes.parse"], "parse_reply", old_parse)
        monkeypatch.setattr(sys.modules["reinloop.nodes.parse"], "read_safely", lambda read: read())  # no guard then
        graph, _ = make_graph([DEEP_TEXT], protocol="json", checkpointer=old)
        with pytest.raises(RecursionError):
            graph.invoke({"task": "compute 1+1"}, CONFIG)
        with pytest.raises(RecursionError):
            graph.invoke(None, CONFIG)  # resuming replays the stored reply: stuck
        assert graph.get_state(CONFIG).next == ("parse",)
        assert graph.get_state(CONFIG).values["reply"]["text"] == DEEP_TEXT
    monkeypatch.undo()

    # This version, a new process on the same file: the stored reply becomes a parse error and the run goes on.
    with SqliteCheckpointer.open(tmp_path / "runs.db") as fresh:
        graph, model = make_graph([{"tool": "calculator", "args": {"expression": "1+1"}}, {"final_answer": "2"}],
                                  protocol="json", checkpointer=fresh)
        out = graph.invoke(None, CONFIG)
    assert out["status"] == "done" and out["answer"] == "2"
    assert model.calls == 2  # the stored reply was not asked for again
    first, second, _ = out["scratchpad"]
    assert "nested more than 100 levels deep" in first["parse_error"]
    assert second["actions"][0]["observation"] == "2"


@pytest.mark.parametrize("depth", [300, 5000])
def test_deep_arguments_through_the_real_openai_client_become_an_error_result(openai_server, depth, tmp_path):
    from reinloop import build_graph
    from reinloop.tools import builtins

    from ..openai_server import completion

    arguments = '{"expression": ' + "[" * depth + "]" * depth + "}"
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "arguments": arguments, "id": "c1"}]),
                                completion("done")]
    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        graph = build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url,
                            checkpointer=saver)
        out = graph.invoke({"task": "compute"}, CONFIG)
    assert out["status"] == "done" and out["answer"] == "done"
    (action,) = out["scratchpad"][0]["actions"]
    assert action["id"] == "c1" and action["args"] == {} and action["problem"]
    tool_results = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_results] == ["c1"]


def test_arguments_at_the_deepest_nesting_allowed_go_through_signatures_memory_and_storage(make_graph, saver):
    from langchain_core.tools import tool

    from reinloop import Limits
    from reinloop.tools.bounds import MAX_NESTING
    from reinloop.tools import configure

    @configure(cacheable=True)  # so that the repeats are answered from step 1's call: reuse matches deep arguments
    @tool
    def store(data: dict) -> str:
        """Store a document."""
        return "stored"

    args = {"data": deep_dict(MAX_NESTING - 2)}  # {"data": {"a": ... {"expression": "1+1"}}}: 100 levels
    graph, _ = make_graph([{"tool": "store", "args": args}] * 3, protocol="json", tools=[store], checkpointer=saver,
                          limits=Limits(max_repeats=3))
    out = graph.invoke({"task": "store it"}, CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "repeated_action"  # the signatures matched
    stored = graph.get_state(CONFIG).values["scratchpad"]
    assert [s["actions"][0]["observation"].split("\n")[0] for s in stored] == ["stored"] * 3
    assert [s["actions"][0].get("reused") for s in stored] == [None, 1, 1]  # the repeats matched step 1's call
    assert stored[0]["actions"][0]["args"] == args


@pytest.mark.parametrize("usage", [10**30, -5, float("inf"), "many"])
def test_absurd_usage_numbers_from_the_provider_are_replaced_by_our_own_count(make_graph, saver, usage):
    from langchain_core.messages import AIMessage

    reply = AIMessage(content="done")
    reply.usage_metadata = {"input_tokens": usage, "output_tokens": usage, "total_tokens": 0}  # type: ignore[typeddict-item]
    graph, _ = make_graph([reply], checkpointer=saver)
    out = graph.invoke({"task": "compute"}, CONFIG)
    assert out["status"] == "done"
    assert 0 < out["counters"]["prompt_tokens"] < 10_000 and 0 < out["counters"]["completion_tokens"] < 100
