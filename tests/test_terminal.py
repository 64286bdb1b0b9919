"""Nothing reinloop prints can drive the operator's terminal: model text and tool output come out inert."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reinloop import Limits
from reinloop.runs.batches import TaskOutcome
from reinloop.cli.batch_console import BatchConsole
from reinloop.observe.console import RunConsole
from reinloop.runs.api import run
from reinloop.observe.terminal import UNSAFE, safe_html, safe_json, safe_text
from reinloop.testing import ScriptedChatModel, tool_call

from .openai_server import Raw, completion

ATTACKS = {
    "window title (OSC 0)": "\x1b]0;pwned\x07",
    "clipboard write (OSC 52)": "\x1b]52;c;cm0gLXJmIH4=\x1b\\",
    "clear screen": "\x1b[2J\x1b[H",
    "concealed text": "\x1b[8mhidden\x1b[28m",
    "carriage return overwrite": "safe\rEVIL",
    "8-bit CSI (C1)": "\x9b2J",
    "bell and backspace": "\x07\x08",
    "bidi override": "\u202egnp.exe",
    "bidi isolate": "\u2066x\u2069",
    "zero-width space": "a\u200bb",
    "invisible tag characters": "\U000e0069\U000e0067\U000e006e",
    "byte order mark": "\ufeffx",
    "line separator": "a\u2028b",
}
HOSTILE = "".join(ATTACKS.values())
KEPT = "line one\n\tindented 温度 22°C 👨\u200d👩\u200d👧 می\u200cخواهم"


def inert(text: str) -> bool:
    return UNSAFE.search(text) is None


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_every_kind_of_control_sequence_comes_out_as_a_visible_escape(attack):
    shown = safe_text(f"before {attack} after")
    assert inert(shown) and shown.startswith("before ") and shown.endswith(" after")
    assert shown != f"before {attack} after"


def test_newlines_tabs_other_scripts_and_joined_emoji_are_left_alone():
    assert safe_text(KEPT) == KEPT


def test_json_output_escapes_them_and_decodes_to_the_same_text():
    value = {"answer": HOSTILE + KEPT, HOSTILE: [HOSTILE]}
    text = safe_json(value)
    assert inert(text) and json.loads(text) == value


def test_an_html_page_holds_them_as_character_references():
    page = safe_html(f"<p>{HOSTILE}</p>")
    assert inert(page) and "&#x202e;" in page and "&#x1b;" in page


def test_the_live_console_on_a_terminal_shows_model_text_inert(tmp_path):
    out = io.StringIO()
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": HOSTILE})], HOSTILE])
    with RunConsole(Limits(), out, terminal=True, live=True) as console:
        outcome = run(HOSTILE, model=model, tools="calculator", db=tmp_path / "r.db", on_event=console.handle)
    assert outcome.answer == HOSTILE
    shown = out.getvalue()
    assert "\\x1b]0;pwned" in shown and "\\u202e" in shown  # the attack is visible as text
    for attack in ("\x1b]", "\x1b[2J", "\x1b[8m", "\x9b", "\x07", "\u202e", "\u200b", "\ufeff", "\U000e0069"):
        assert attack not in shown


def test_the_batch_console_on_a_terminal_shows_answers_and_errors_inert():
    out = io.StringIO()
    with BatchConsole(out, terminal=True) as view:
        view.start(HOSTILE, 2, 2, "w1", 1)
        view.outcome(TaskOutcome("t1", 1, HOSTILE, "done", answer=HOSTILE), {"done": 1, "queued": 1})
        view.outcome(TaskOutcome("t2", 2, HOSTILE, "error", error=HOSTILE), {"done": 1, "error": 1})
    shown = out.getvalue()
    assert shown.count("\\x1b]0;pwned") == 3
    for attack in ("\x1b]", "\x1b[2J", "\x1b[8m", "\x9b", "\u202e"):
        assert attack not in shown


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reinloop", *argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "OPENAI_API_KEY": "sk-test"})


def test_nothing_the_cli_prints_can_drive_the_terminal(openai_server, tmp_path, run_db):
    reply = completion(HOSTILE, tool_calls=[{"name": "calculator", "args": {"expression": HOSTILE}}])
    hostile = json.dumps({"error": {"message": HOSTILE}})
    openai_server.responses += [reply, completion(HOSTILE), Raw(429, hostile, {"Retry-After": "0"}), Raw(400, hostile),
                                completion(HOSTILE)]
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"task": HOSTILE, "thread_id": "b1"}) + "\n", encoding="utf-8")
    url = openai_server.base_url
    outputs = [cli("run", HOSTILE, "--base-url", url, "--thread", "h1", "--tools", "calculator", cwd=tmp_path),
               cli("run", HOSTILE, "--base-url", url, "--thread", "h2", "--model-retries", "1", cwd=tmp_path),
               cli("batch", "tasks.jsonl", "--base-url", url, "--concurrency", "1", cwd=tmp_path)]
    assert [p.returncode for p in outputs] == [0, 1, 0], [p.stderr for p in outputs]
    assert outputs[1].stderr.count("\\x1b]0;pwned") == 2  # the retry warning and the error show the server's text
    for argv in (["runs", "list"], ["runs", "show", "h1"], ["runs", "show", "h1", "--format", "html"]):
        outputs.append(cli(*argv, cwd=tmp_path))
    shown = cli("runs", "show", "h1", "--json", cwd=tmp_path)
    listed = cli("runs", "list", "--json", cwd=tmp_path)
    outputs += [shown, listed]
    assert all(p.returncode == 0 for p in outputs[3:]), [p.stderr for p in outputs[3:]]
    for p in outputs:
        assert inert(p.stdout) and inert(p.stderr), p.args
    assert json.loads(shown.stdout)["state"]["answer"] == HOSTILE  # JSON escapes them losslessly
    assert HOSTILE in {r["task"] for r in json.loads(listed.stdout)}
