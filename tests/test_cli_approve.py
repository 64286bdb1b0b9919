"""Approvals on the command line, each command in a new process: run pauses, runs pending, approve, the inline prompt."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .openai_server import completion

WRITE = {"name": "write_file", "args": {"path": "note.txt", "content": "hello"}, "id": "w1"}


@pytest.fixture
def env(tmp_path):
    (tmp_path / "box").mkdir()
    return {**os.environ, "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}


def reinloop(env, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reinloop", *argv], capture_output=True, text=True, env=env,
                          timeout=timeout)


def start(openai_server, env, tmp_path, *flags: str) -> dict:
    """A write_file run that pauses for approval (the command line's default); its outcome."""
    openai_server.responses += [completion(tool_calls=[WRITE])]
    proc = reinloop(env, "run", "write a note", "--tools", "write_file", "--sandbox", str(tmp_path / "box"),
                    "--db", str(tmp_path / "runs.db"), "--base-url", openai_server.base_url, "--thread", "t1",
                    "--json", "-q", *flags)
    assert proc.returncode == 4, proc.stderr
    return json.loads(proc.stdout)


def note(tmp_path: Path, name: str = "note.txt") -> str | None:
    path = tmp_path / "box" / name
    return path.read_text(encoding="utf-8") if path.exists() else None


def test_run_pauses_before_write_file_by_default_and_approve_runs_it(openai_server, env, tmp_path):
    out = start(openai_server, env, tmp_path)
    [waiting] = out["waiting"]
    assert out["status"] == "waiting" and waiting["call_id"] == "w1" and note(tmp_path) is None
    assert re.fullmatch(r"s1-c1-[0-9a-f]{12}", waiting["id"])  # the operator decides by reinloop's id
    openai_server.responses += [completion("written")]
    proc = reinloop(env, "approve", "t1", waiting["id"], "--db", str(tmp_path / "runs.db"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert "answer: written" in proc.stdout and note(tmp_path) == "hello"


def test_approve_none_lets_write_file_run_without_asking(openai_server, env, tmp_path):
    openai_server.responses += [completion(tool_calls=[WRITE]), completion("written")]
    proc = reinloop(env, "run", "write a note", "--tools", "write_file", "--sandbox", str(tmp_path / "box"),
                    "--db", str(tmp_path / "runs.db"), "--base-url", openai_server.base_url, "--approve", "none", "-q")
    assert proc.returncode == 0, proc.stderr
    assert note(tmp_path) == "hello"


def test_without_a_terminal_run_prints_the_command_that_answers(openai_server, env, tmp_path):
    openai_server.responses += [completion(tool_calls=[WRITE])]
    proc = reinloop(env, "run", "write a note", "--tools", "write_file", "--sandbox", str(tmp_path / "box"),
                    "--db", str(tmp_path / "runs.db"), "--base-url", openai_server.base_url, "--thread", "t1", "-q")
    assert proc.returncode == 4, proc.stderr
    assert "waiting for approval: 1 call(s) of run t1" in proc.stdout
    assert re.search(r"answer with: reinloop approve t1 s1-c1-[0-9a-f]{12} ", proc.stdout)


def test_runs_pending_lists_the_waiting_call_with_its_arguments_pretty_printed(openai_server, env, tmp_path):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    proc = reinloop(env, "runs", "pending", "--db", str(tmp_path / "runs.db"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("t1  ") and lines[0].endswith("write a note")
    assert lines[1] == (f"  {cid}: write_file (step 1): the run asks approval for every call of a tool with side effects, "
                        "write_file among them (approve={'*side_effects': 'ask'})")
    assert lines[2:6] == ["    {", '      "path": "note.txt",', '      "content": "hello"', "    }"]
    listed = json.loads(reinloop(env, "runs", "pending", "--db", str(tmp_path / "runs.db"), "--json").stdout)
    assert [(r["thread_id"], [c["id"] for c in r["calls"]]) for r in listed] == [("t1", [cid])]
    shown = reinloop(env, "runs", "show", "t1", "--db", str(tmp_path / "runs.db")).stdout
    assert f"waiting for approval: {cid}: write_file {{" in shown and f"answer with `reinloop approve t1 {cid}`" in shown


def test_approve_with_edit_writes_what_the_operator_gave(openai_server, env, tmp_path):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    openai_server.responses += [completion("written")]
    edit = json.dumps({"path": "other.txt", "content": "edited"})
    proc = reinloop(env, "approve", "t1", cid, "--edit", edit, "--db", str(tmp_path / "runs.db"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert note(tmp_path) is None and note(tmp_path, "other.txt") == "edited"


def test_an_edit_refused_by_the_schema_quotes_the_expected_arguments_and_the_call_keeps_waiting(openai_server, env, tmp_path):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    proc = reinloop(env, "approve", "t1", cid, "--edit", '{"path": "x.txt"}', "--db", str(tmp_path / "runs.db"))
    assert proc.returncode == 1
    assert f"edited arguments of call '{cid}' were refused: invalid arguments for write_file: content: Field required" in proc.stderr
    assert "Expected: write_file(path: string, content: string), for example" in proc.stderr
    assert note(tmp_path, "x.txt") is None
    pending = json.loads(reinloop(env, "runs", "pending", "--db", str(tmp_path / "runs.db"), "--json").stdout)
    assert pending[0]["calls"][0]["id"] == cid


@pytest.mark.parametrize("decision, seen", [
    (["--reject", "no files today"], "REJECTED: the operator did not allow this write_file call: no files today"),
    (["CALL_ID", "--respond", "the note exists already"], "the note exists already"),
], ids=["reject", "respond"])
def test_reject_and_respond_never_run_the_call_and_the_model_reads_the_operators_text(openai_server, env, tmp_path,
                                                                                       decision, seen):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    openai_server.responses += [completion("fine")]
    proc = reinloop(env, "approve", "t1", *[cid if d == "CALL_ID" else d for d in decision], "--db", str(tmp_path / "runs.db"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert note(tmp_path) is None
    tool_messages = [m for m in openai_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages[-1]["content"] == seen


def test_always_is_remembered_across_resumes_in_new_processes(openai_server, env, tmp_path):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    second = {**WRITE, "args": {"path": "two.txt", "content": "2"}, "id": "w2"}
    openai_server.responses += [completion(tool_calls=[second]), completion("both written")]
    proc = reinloop(env, "approve", "t1", cid, "--always", "--db", str(tmp_path / "runs.db"), "-q")
    assert proc.returncode == 0, proc.stderr  # the second write did not ask
    assert note(tmp_path) == "hello" and note(tmp_path, "two.txt") == "2"
    third = {**WRITE, "args": {"path": "three.txt", "content": "3"}, "id": "w3"}
    openai_server.responses += [completion(tool_calls=[third]), completion("third written")]
    proc = reinloop(env, "run", "one more", "--thread", "t1", "--tools", "write_file", "--sandbox", str(tmp_path / "box"),
                    "--db", str(tmp_path / "runs.db"), "--base-url", openai_server.base_url, "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert note(tmp_path, "three.txt") == "3"


def read_until(fd: int, text: str, timeout: float = 60) -> str:
    seen, deadline = b"", time.monotonic() + timeout
    while text.encode() not in seen:
        assert time.monotonic() < deadline, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
    return seen.decode(errors="replace")


@pytest.mark.parametrize("keys, written", [("y\n", "hello"), ("n\nnot now\n", None),
                                           ('e\n{"path": "note.txt", "content": "typed"}\n', "typed")])
def test_run_in_a_terminal_asks_inline_and_goes_on(openai_server, env, tmp_path, keys, written):
    openai_server.responses += [completion(tool_calls=[WRITE]), completion("finished")]
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "reinloop", "run", "write a note", "--tools", "write_file",
                             "--sandbox", str(tmp_path / "box"), "--db", str(tmp_path / "runs.db"),
                             "--base-url", openai_server.base_url, "--no-color"],
                            stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    try:
        shown = read_until(main, "[a]lways approve this tool in this thread: ")
        assert re.search(r"s1-c1-[0-9a-f]{12}: write_file \(step 1\)", shown) and '"content": "hello"' in shown
        first, _, rest = keys.partition("\n")
        os.write(main, (first + "\n").encode())
        if rest:
            read_until(main, ": ")
            os.write(main, rest.encode())
        shown = read_until(main, "answer: finished")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    assert note(tmp_path) == written


# --- attacks: concurrent answers, misspelt rules, hostile call ids in the terminal --------------------------------


def test_concurrent_approve_commands_run_the_call_once_and_never_fork_the_thread(openai_server, env, tmp_path):
    import sqlite3

    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    openai_server.responses += [completion("written")] * 4
    asked = len(openai_server.requests)
    command = [sys.executable, "-m", "reinloop", "approve", "t1", cid, "--db", str(tmp_path / "runs.db"), "-q"]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in results) == [0, 1, 1, 1], results
    for code, err in results:
        assert code == 0 or "already answered by another process" in err or "waits for approval; waiting: (none)" in err \
            or "has no call waiting for approval" in err, err
    assert len(openai_server.requests) == asked + 1  # only the winner went on to the model
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        forks = conn.execute("SELECT parent_checkpoint_id, COUNT(*) FROM checkpoints WHERE parent_checkpoint_id IS NOT "
                             "NULL GROUP BY thread_id, checkpoint_ns, parent_checkpoint_id HAVING COUNT(*) > 1").fetchall()
        writes = conn.execute("SELECT COUNT(*) FROM tool_journal WHERE tool = 'write_file'").fetchone()[0]
    assert forks == [] and writes == 1 and note(tmp_path) == "hello"


def test_a_second_approve_of_the_same_call_is_refused_and_runs_nothing(openai_server, env, tmp_path):
    cid = start(openai_server, env, tmp_path)["waiting"][0]["id"]
    again = {**WRITE, "args": {"path": "evil.txt", "content": "x"}}  # the model reuses its id w1 at the next step
    openai_server.responses += [completion(tool_calls=[again])]
    assert reinloop(env, "approve", "t1", cid, "--db", str(tmp_path / "runs.db"), "-q").returncode == 4
    for stale in (cid, "w1", "*"):
        proc = reinloop(env, "approve", "t1", stale, "--db", str(tmp_path / "runs.db"), "-q")
        assert proc.returncode == 1 and "waits for approval; waiting: s2-c1-" in proc.stderr, proc.stderr
    assert note(tmp_path, "evil.txt") is None


def misspellings(name: str) -> list[str]:
    """Typos of ``name``: a letter dropped, two swapped, one doubled, another case."""
    return sorted({name[:i] + name[i + 1:] for i in range(len(name))} | {name[:i] + name[i + 1] + name[i] + name[i + 2:]
                   for i in range(len(name) - 1)} | {name[:3] + name[3] + name[3:], name.upper()} - {name})[:12]


@pytest.mark.parametrize("typo", misspellings("write_file")[:6] + ["write_file=always,db_insrt", "side-effect"])
def test_a_misspelt_tool_in_approve_is_refused_like_an_unknown_tool(openai_server, env, tmp_path, typo):
    proc = reinloop(env, "run", "write a note", "--tools", "write_file", "--sandbox", str(tmp_path / "box"),
                    "--db", str(tmp_path / "runs.db"), "--base-url", openai_server.base_url, "--approve", typo, "-q")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--approve must name tools of this run (write_file)" in proc.stderr and "got '" in proc.stderr
    assert openai_server.requests == [] and note(tmp_path) is None


def test_a_misspelt_tool_in_runspec_approve_is_refused(tmp_path):
    from reinloop import RunSpec, run
    from reinloop.errors import SettingError
    from reinloop.testing import ScriptedChatModel

    for typo in misspellings("calculator")[:5]:
        with pytest.raises(SettingError, match=rf"RunSpec.approve must name tools of this run \(calculator\).*got '{typo}'"):
            run("2+2", RunSpec(tools="calculator", approve={typo: True}), model=ScriptedChatModel(replies=["4"]))


HOSTILE = ["\x1b]0;pwned\x07", "\x1b[2K\rapprove calculator", "\u202eelif_etirw", "\x1b]52;c;cm0gLXJm\x07", "\x9b2J"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_inline_prompt_shows_hostile_call_ids_and_arguments_escaped(openai_server, env, tmp_path, hostile):
    call = {"name": "write_file", "args": {"path": "note.txt", "content": hostile}, "id": hostile}
    openai_server.responses += [completion(tool_calls=[call]), completion("finished")]
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "reinloop", "run", "write a note", "--tools", "write_file",
                             "--sandbox", str(tmp_path / "box"), "--db", str(tmp_path / "runs.db"),
                             "--base-url", openai_server.base_url, "--no-color"],
                            stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    try:
        shown = read_until(main, "[a]lways approve this tool in this thread: ")
        os.write(main, b"n\nno\n")
        shown += read_until(main, "answer: finished")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    assert re.search(r"approve write_file s1-c1-[0-9a-f]{12}\? ", shown)
    for raw in ("\x1b]", "\x07", "\u202e", "\x9b", "\x1b[2K"):
        assert raw not in shown, (raw, shown)
    assert note(tmp_path) is None
