"""A summarizer is a model too: what it replies is bounded before it is stored."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from reinloop import Limits, Memory, build_graph
from reinloop.checkpoints import SqliteCheckpointer
from reinloop.testing import ScriptedChatModel

from .conftest import read_page, reads

CONFIG = {"configurable": {"thread_id": "s1"}}


def run(summary_reply, tmp_path):
    model = ScriptedChatModel(replies=[*reads(range(1, 7), "tool_calling"), "done"],
                              summary_reply=summary_reply)
    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        graph = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3), limits=Limits(max_steps=10),
                            checkpointer=saver)
        graph.invoke({"task": "Find the vault code in the report."}, CONFIG)
        return graph.get_state(CONFIG).values  # read back from the file


def test_a_summary_with_lone_surrogates_is_stored_with_replacement_characters(tmp_path):
    out = run("pages read \ud800; the vault code is 4711.", tmp_path)
    assert out["status"] == "done"
    assert "pages read \ufffd; the vault code is 4711." in out["summary"]


def test_a_summary_nested_too_deep_to_read_is_a_summarizer_failure(tmp_path):
    deep: dict = {}
    for _ in range(5000):
        deep = {"a": deep}
    blocks = [{"type": "text", "text": "x", "extras": deep}]
    out = run(lambda messages: AIMessage(content="").model_copy(update={"content": blocks}), tmp_path)
    assert out["status"] == "done" and out["summary"] == ""
    failed = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summary_failed"]
    assert failed and failed[0]["error"].startswith("the summarizer's reply cannot be read: it is nested more than")


def test_absurd_token_counts_from_a_summarizer_are_replaced_by_its_own_count(tmp_path):
    usage = {"input_tokens": 10**30, "output_tokens": -5, "total_tokens": 0}
    reply = AIMessage(content="pages 1-3 read; the vault code is 4711.", usage_metadata=usage)
    out = run(lambda messages: reply, tmp_path)  # stored in SQLite: a 101-bit count could not be
    assert out["status"] == "done" and "4711" in out["summary"]
    summarized = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summarized"]
    assert summarized and all(0 < e["tokens_in"] < 100_000 and 0 < e["tokens_out"] < 1_000 for e in summarized)
