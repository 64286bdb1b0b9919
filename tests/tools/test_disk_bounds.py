"""Disk is bounded: write_file has a per-run quota and a per-file cap, db_insert a per-value cap."""

from __future__ import annotations

import json

import pytest
import sqlite_utils

from langchain_core.messages import ToolMessage

from reinloop.runs.batches import batch
from reinloop.cli.app import main
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import ToolSettings, builtin, builtins, run_tool

from ..openai_server import completion
from .conftest import fingerprint


@pytest.fixture
def box(tmp_path):
    (tmp_path / "box").mkdir()
    return tmp_path / "box"


def test_write_file_refuses_a_write_over_the_run_quota_and_writes_nothing(box):
    write = builtin("write_file", root=box, quota=1_000)
    assert not run_tool(write, {"path": "a.txt", "content": "a" * 600}).error
    assert not run_tool(write, {"path": "b.txt", "content": "b" * 300}).error
    before = fingerprint(box)
    result = run_tool(write, {"path": "c.txt", "content": "c" * 200})
    assert result.error
    assert ("writing 200 bytes to 'c.txt' would exceed this run's write_file quota: 900 of 1,000 bytes are used; "
            "write less (nothing was written), or raise the quota with --write-quota BYTES") in result.observation
    assert fingerprint(box) == before
    assert not run_tool(write, {"path": "c.txt", "content": "c" * 100}).error  # what is left can still be used


def test_rewriting_a_file_counts_again_because_the_quota_bounds_bytes_written(box):
    write = builtin("write_file", root=box, quota=250)
    for _ in range(2):
        assert not run_tool(write, {"path": "same.txt", "content": "x" * 100}).error
    assert run_tool(write, {"path": "same.txt", "content": "x" * 100}).error


def test_the_per_file_cap_counts_utf8_bytes_not_characters(box, tmp_path):
    write = builtin("write_file", root=box, max_file_bytes=10)
    before = fingerprint(tmp_path)
    result = run_tool(write, {"path": "jp.txt", "content": "日本語です"})  # 5 characters, 15 bytes
    assert result.error
    assert "'jp.txt' would be 15 bytes, over write_file's per-file cap of 10 bytes" in result.observation
    assert "--max-file-bytes BYTES" in result.observation
    assert fingerprint(tmp_path) == before


def test_builtins_pass_the_bounds_to_the_tools(box, tmp_path):
    sqlite_utils.Database(tmp_path / "shop.db")["notes"].insert({"id": 1, "text": "x"}, pk="id")
    write, insert = builtins("write_file,db_insert", sandbox=box, db=tmp_path / "shop.db", db_tables="notes",
                             write_quota=5, max_value_bytes=3)
    assert "quota: 0 of 5 bytes" in run_tool(write, {"path": "a.txt", "content": "123456"}).observation
    assert "over db_insert's cap of 3 bytes" in run_tool(insert, {"table": "notes", "row": {"text": "四五"}}).observation


def test_bounds_switched_off_with_none_allow_large_writes(box):
    write = builtin("write_file", root=box, quota=None, max_file_bytes=None)
    assert not run_tool(write, {"path": "big.txt", "content": "x" * 2_000_000}).error


def test_db_insert_refuses_a_value_over_its_cap_and_inserts_nothing(tmp_path):
    db = sqlite_utils.Database(tmp_path / "shop.db")
    db["users"].insert({"id": 1, "name": "张三"}, pk="id")
    insert = builtin("db_insert", path=tmp_path / "shop.db", tables="users", max_value_bytes=100)
    result = run_tool(insert, {"table": "users", "row": {"name": "王" * 34}})  # 34 characters, 102 bytes
    assert result.error
    assert ("the value of column 'name' is 102 bytes, over db_insert's cap of 100 bytes per value; nothing was "
            "inserted") in result.observation
    assert "--max-value-bytes BYTES" in result.observation
    assert db["users"].count == 1
    assert not run_tool(insert, {"table": "users", "row": {"name": "王" * 33}}).error


def write_twice_paused(box, tmp_path, openai_server, thread):
    """A run that writes 8 bytes under a 10-byte quota, then pauses at its step limit; the CLI flags to resume it."""
    openai_server.responses += [
        completion(tool_calls=[{"name": "write_file", "args": {"path": "one.txt", "content": "12345678"}}]),
        completion(tool_calls=[{"name": "write_file", "args": {"path": "two.txt", "content": "12345678"}}]),
        completion("done"),
    ]
    common = ["--base-url", openai_server.base_url, "--db", str(tmp_path / "runs.db"), "--json", "--quiet"]
    code = main(["run", "write twice", "--tools", "write_file", "--sandbox", str(box), "--approve", "none", "--write-quota", "10",
                 "--max-steps", "1", "--thread", thread, *common])
    assert code == 3 and (box / "one.txt").exists()
    return ["resume", thread, "--extra-steps", "2", *common]


def test_the_write_quota_holds_across_a_resume_in_a_new_process(box, tmp_path, openai_server, capsys):
    """The quota is per run: the bytes written before a pause are counted when the run resumes."""
    resume = write_twice_paused(box, tmp_path, openai_server, "q1")
    capsys.readouterr()
    code = main(resume)
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 0 and outcome["answer"] == "done"
    assert not (box / "two.txt").exists()
    seen = json.dumps(openai_server.requests[2]["messages"], ensure_ascii=False)
    assert "this run's write_file quota: 8 of 10 bytes are used" in seen


def test_a_new_task_on_the_same_thread_is_a_new_run_with_a_fresh_quota(box, tmp_path, openai_server, capsys):
    rundb = str(tmp_path / "runs.db")
    openai_server.responses += [
        completion(tool_calls=[{"name": "write_file", "args": {"path": "first.txt", "content": "12345678"}}]),
        completion("first done"),
        completion(tool_calls=[{"name": "write_file", "args": {"path": "second.txt", "content": "1"}}]),
        completion(tool_calls=[{"name": "write_file", "args": {"path": "third.txt", "content": "12345678"}}]),
        completion("second done"),
    ]
    common = ["--base-url", openai_server.base_url, "--db", rundb, "--json", "--quiet"]
    tools = ["--tools", "write_file", "--sandbox", str(box), "--approve", "none", "--write-quota", "10", "--thread", "t"]
    assert main(["run", "task one", *tools, *common]) == 0
    assert main(["run", "task two", *tools, "--max-steps", "1", *common]) == 3
    assert main(["resume", "t", "--extra-steps", "2", *common]) == 0
    assert (box / "third.txt").exists()  # 1 + 8 bytes in the second run; the first run's 8 are not counted


def test_resume_can_raise_the_write_quota(box, tmp_path, openai_server, capsys):
    resume = write_twice_paused(box, tmp_path, openai_server, "q2")
    assert main([*resume, "--write-quota", "1KB"]) == 0
    assert (box / "two.txt").read_text() == "12345678"


def test_size_flags_take_units_and_none(capsys):
    from reinloop.cli.app import build_parser
    from reinloop.cli.options import spec_changes

    args = build_parser().parse_args(["run", "x", "--write-quota", "10MB", "--max-file-bytes", "512k",
                                      "--max-value-bytes", "none"])
    assert spec_changes(args)["tool_settings"] == {"write_quota": 10_000_000, "max_file_bytes": 512_000,
                                                   "max_value_bytes": None}
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", "--write-quota", "lots"])
    assert exc.value.code == 2
    assert ('--write-quota: must be a size in bytes such as 10000000, 10MB or 512KB or none, got \'lots\''
            in capsys.readouterr().err)


def writer(messages):
    """Writes 8 bytes to a file named after its task, then answers."""
    task = next(str(m.content)[len("Task: "):] for m in messages if str(m.content).startswith("Task: "))
    seen = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    return seen[-1] if seen else [tool_call("write_file", {"path": f"{task}.txt", "content": "12345678"})]


def test_each_task_of_a_batch_has_its_own_write_quota(box, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": name}) + "\n" for name in ("one", "two", "three")))
    report = batch(str(tasks), db=str(tmp_path / "runs.db"), model=ScriptedChatModel(replies=[writer] * 20),
                   tools="write_file", tool_settings=ToolSettings(sandbox=str(box), write_quota=10), concurrency=1)
    assert report.exit_code == 0
    assert sorted(p.name for p in box.iterdir()) == ["one.txt", "three.txt", "two.txt"]


def test_a_resume_counts_long_writes_whole_though_the_journal_keeps_a_preview(box, tmp_path, openai_server, capsys):
    long_text = "字" * 500  # 500 characters (the journal keeps 400 of them), 1,500 bytes
    openai_server.responses += [
        completion(tool_calls=[{"name": "write_file", "args": {"path": "long.txt", "content": long_text}}]),
        completion(tool_calls=[{"name": "write_file", "args": {"path": "more.txt", "content": "a" * 600}}]),
        completion("done"),
    ]
    common = ["--base-url", openai_server.base_url, "--db", str(tmp_path / "runs.db"), "--json", "--quiet"]
    assert main(["run", "write", "--tools", "write_file", "--sandbox", str(box), "--approve", "none", "--write-quota", "2000",
                 "--max-steps", "1", "--thread", "q3", *common]) == 3
    assert main(["resume", "q3", "--extra-steps", "2", *common]) == 0
    assert not (box / "more.txt").exists()  # 1,500 + 600 > 2,000
    assert "1,500 of 2,000 bytes are used" in json.dumps(openai_server.requests[2]["messages"], ensure_ascii=False)
