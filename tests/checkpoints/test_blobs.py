"""Long strings are stored once (``blobs``); the steps table and the journal keep a preview and the hash."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from reinloop import Limits, Memory, RunSpec; from reinloop.runs import api as runs
from reinloop.checkpoints import SqliteCheckpointer, open_saver
from reinloop.checkpoints.blobs import BLOB_MIN_CHARS, PREVIEW_CHARS, REF
from reinloop.checkpoints.schema import latest_version
from reinloop.runs.outcome import Outcome
from reinloop.checkpoints.runlog import read_events
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import configure, write_file_tool
from reinloop.checkpoints.journal import CallKey

from .fixtures.old_run import NOTE, RECEIPT, THREAD, file_note

FIXTURES = Path(__file__).parent / "fixtures"
LONG = "".join(f"row {i}: the quick brown fox jumps over the lazy dog. " for i in range(2000))  # ~110 KB


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@configure(side_effects=True)
@tool
def archive(text: str) -> str:
    """Archive a text and return its receipt (a side effect: journaled)."""
    return "receipt: " + text[::-1]


def run_archive(db: str, *, steps: int = 1, thread: str = "t1", memory: Memory | None = None) -> Outcome:
    model = ScriptedChatModel(replies=[[tool_call("archive", {"text": LONG}, id="call_1")], "archived"])
    return runs.run("archive it", db=db, model=model, tools=[archive], limits=Limits(max_steps=steps), thread_id=thread,
                    memory=memory)


def first_observation(saver, thread: str = "t1") -> str:
    """The observation of the first call, as the state holds it (tool output is cut to 2,000 characters)."""
    state = saver.get_tuple(runs.thread_config(thread)).checkpoint["channel_values"]
    observation = state["scratchpad"][0]["actions"][0]["observation"]
    assert observation.startswith("receipt: ") and len(observation) >= BLOB_MIN_CHARS
    return observation


def test_a_20_mb_write_file_argument_makes_a_run_database_under_twice_the_bytes_exchanged(tmp_path):
    content = ("lorem ipsum dolor sit amet, consectetur 12345. " * 430_000)[:20_000_000]
    call = tool_call("write_file", {"path": "big.txt", "content": content}, id="call_1")
    model = ScriptedChatModel(replies=[[call], "I could not write it."])
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    db = tmp_path / "big.db"
    out = runs.run("write the file", db=db, model=model, tools=[write_file_tool(sandbox)], thread_id="big")
    with SqliteCheckpointer.open(db) as saver:
        state = saver.get_tuple(runs.thread_config("big")).checkpoint["channel_values"]
        stored = saver.db.storage_bytes()
        action = state["scratchpad"][0]["actions"][0]
        exchanged = len(json.dumps(call["args"])) + len(action["observation"]) + len(out.answer or "")
        assert action["args"]["content"] == content  # the state still holds it whole
        assert saver.db.query("SELECT count(*) AS n FROM blobs")[0]["n"] == 1
    assert stored <= 2 * exchanged, f"{stored:,} bytes stored for {exchanged:,} exchanged"


def test_the_steps_table_keeps_a_preview_and_the_hash_of_a_long_argument_and_observation(db_url):
    run_archive(db_url, steps=3)
    with open_saver(db_url) as saver:
        receipt = first_observation(saver)
        events = read_events(saver, "t1")
        executed = next(e for e in events if e["node"] == "execute")
        (action,) = executed["actions"]
        for text, shown in ((LONG, action["args"]["text"]), (receipt, action["observation"])):
            assert shown == f"{text[:PREVIEW_CHARS]}… [{len(text):,} chars in all; sha256 {sha(text)}]"
            (row,) = saver.db.query("SELECT value FROM blobs WHERE thread_id = ? AND hash = ?", ("t1", sha(text)))
            value = row["value"]
            assert (value if isinstance(value, str) else bytes(value).decode()) == text  # found whole by that hash
        longest = max(len(json.dumps(e, ensure_ascii=False)) for e in events)
        assert longest < 4 * PREVIEW_CHARS + 2000
        state = saver.get_tuple(runs.thread_config("t1")).checkpoint["channel_values"]
        assert state["scratchpad"][0]["actions"][0]["args"]["text"] == LONG


def test_the_journal_keeps_a_preview_of_the_arguments_and_replays_the_whole_observation(db_url):
    run_archive(db_url)
    with open_saver(db_url) as saver:
        receipt = first_observation(saver)
        (raw,) = saver.db.query("SELECT args, observation, observation_hash FROM tool_journal")
        args = raw["args"] if isinstance(raw["args"], dict) else json.loads(raw["args"])
        assert args["text"].startswith(LONG[:PREVIEW_CHARS]) and sha(LONG) in args["text"]
        assert len(raw["observation"]) < PREVIEW_CHARS + 200 and raw["observation_hash"] == sha(receipt)
        (entry,) = saver.db.journal.rows("t1")
        assert entry["observation"] == receipt  # what a resumed run replays instead of calling again
        key = CallKey(**{k: entry[k] for k in ("thread_id", "run", "step", "position", "call_id", "tool", "args_hash")})
        assert saver.db.journal.get(key).observation == receipt


def test_a_long_string_repeated_across_channels_and_writes_is_stored_once(db_url):
    run_archive(db_url, steps=3)
    with open_saver(db_url) as saver:
        counts = saver.db.query("SELECT hash, count(*) AS n FROM blobs GROUP BY hash")
        assert sorted(r["n"] for r in counts) == [1, 1]  # the argument and the observation, once each
        texts = saver.db.query("SELECT sum(chars) AS n FROM blobs")[0]["n"]
        assert texts == len(LONG) + len(first_observation(saver))


def test_a_paused_run_with_long_strings_resumes_and_the_model_sees_them_whole(db_url):
    out = run_archive(db_url, memory=Memory(max_prompt_tokens=None))  # the whole step fits the next prompt
    assert out.paused
    model = ScriptedChatModel(replies=["archived"])
    with open_saver(db_url) as saver:
        receipt = first_observation(saver)
        resumed = runs.resume_with(saver.db, "t1", extra_steps=1, model=model, tools=[archive])
    assert resumed.status == "done" and resumed.answer == "archived"
    call, result = next((m, n) for m, n in zip(model.prompts[0], model.prompts[0][1:]) if getattr(m, "tool_calls", None))
    assert call.tool_calls[0]["args"]["text"] == LONG and result.content == receipt


def test_strings_that_look_like_blob_references_come_back_unchanged(tmp_path):
    ref = REF + "0" * 64
    tricky = {"short": ref, "quoted": f'"{ref}"', "keys": {"a": 1, ref: [f",{ref}", f'["{ref}"]'], ref[:-1] + "1": ref},
              "long": REF + "x" * BLOB_MIN_CHARS, "list": [REF, "a" * BLOB_MIN_CHARS]}
    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"x": tricky}
        checkpoint["channel_versions"] = {"x": saver.get_next_version(None)}
        stored = saver.put(config, checkpoint, {}, checkpoint["channel_versions"])
        saver.put_writes(stored, [("x", tricky)], "task-1")
        got = saver.get_tuple(stored)
        assert got.checkpoint["channel_values"]["x"] == tricky and got.pending_writes[0][2] == tricky


def test_a_value_with_more_long_strings_than_one_query_reads_back_whole(tmp_path):
    texts = [f"{i:05d} " + "y" * BLOB_MIN_CHARS for i in range(1200)]  # more hashes than one IN (...) list holds
    with SqliteCheckpointer.open(tmp_path / "runs.db") as saver:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"x": {"texts": texts}}
        checkpoint["channel_versions"] = {"x": saver.get_next_version(None)}
        stored = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {},
                           checkpoint["channel_versions"])
        assert saver.get_tuple(stored).checkpoint["channel_values"]["x"]["texts"] == texts
        assert saver.db.query("SELECT count(*) AS n FROM blobs")[0]["n"] == 1200


def test_pruning_and_deleting_drop_the_blobs_nothing_refers_to_any_more(db_url):
    run_archive(db_url, steps=3, thread="a")
    run_archive(db_url, steps=3, thread="b")
    with open_saver(db_url) as saver:
        saver.copy_thread("a", "c")
        saver.delete_thread("a")
        assert saver.db.query("SELECT count(*) AS n FROM blobs WHERE thread_id = 'a'")[0]["n"] == 0
        state = saver.get_tuple(runs.thread_config("c")).checkpoint["channel_values"]
        assert state["scratchpad"][0]["actions"][0]["args"]["text"] == LONG  # the copy has its own blobs
        saver.prune(["b"], strategy="keep_latest")
        kept = {r["hash"] for r in saver.db.query("SELECT hash FROM blobs WHERE thread_id = 'b'")}
        assert kept == {sha(LONG), sha(first_observation(saver, "b"))}  # still needed by the latest state and journal
        assert saver.get_tuple(runs.thread_config("b")).checkpoint["channel_values"]["scratchpad"][0]["actions"][0][
            "args"]["text"] == LONG


def test_a_custom_serde_gets_every_state_value_whole(tmp_path):
    class Sealed(JsonPlusSerializer):
        """Stands for an encrypting serde: nothing may be stored beside it in the clear."""

    with SqliteCheckpointer.open(tmp_path / "runs.db", serde=Sealed()) as saver:
        graph_model = ScriptedChatModel(replies=[[tool_call("archive", {"text": LONG}, id="call_1")], "archived"])
        out = runs.run_with(saver.db, "archive it", RunSpec(model="scripted", tools=["archive"]), runs.Given(graph_model, (archive,)),
                            thread_id="t")
        assert out.status == "done"
        for name in ("channel_values", "checkpoint_writes"):
            assert saver.db.query(f"SELECT count(*) AS n FROM {name} WHERE type = 'json-refs'")[0]["n"] == 0
        # only the journal's observation, which is stored in the clear with any serde
        assert {r["hash"] for r in saver.db.query("SELECT hash FROM blobs")} == {
            r["observation_hash"] for r in saver.db.query("SELECT observation_hash FROM tool_journal")}


def test_a_run_stored_before_blobs_existed_opens_shows_and_resumes(tmp_path):
    db = tmp_path / "old.db"
    with gzip.open(FIXTURES / "v4-paused-run.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    detail = runs.show_run(THREAD, db)  # opening migrates it
    assert detail.run.status == "broken" and detail.pending_break is not None
    assert detail.steps[0]["actions"][0]["args"]["text"] == NOTE and detail.steps[0]["actions"][0]["observation"] == RECEIPT
    with open_saver(db) as saver:
        versions = [r["version"] for r in saver.db.query("SELECT version FROM migrations ORDER BY version")]
        assert versions == list(range(1, latest_version() + 1))
        (entry,) = saver.db.journal.rows(THREAD)
        assert entry["observation"] == RECEIPT and entry["observation_hash"] is None
        model = ScriptedChatModel(replies=[[tool_call("file_note", {"text": NOTE}, id="call_2")], "filed twice"])
        out = runs.resume_with(saver.db, THREAD, extra_steps=2, model=model, tools=[file_note])
        assert out.status == "done" and out.answer == "filed twice"
        assert RECEIPT in json.dumps([m.content for m in model.prompts[0]], ensure_ascii=False)
        state = saver.get_tuple(runs.thread_config(THREAD)).checkpoint["channel_values"]
        assert [a["observation"] for s in state["scratchpad"] for a in s["actions"]] == [RECEIPT, RECEIPT]
        assert saver.db.query("SELECT count(*) AS n FROM blobs")[0]["n"] == 2  # the new step's strings, once each
