"""The run console: steps as they complete, progress, colours on a terminal, plain text elsewhere, JSON lines."""

from __future__ import annotations

import io
import json
import re

import pytest

from reinloop import Limits, RunLog
from reinloop.cli.app import main
from reinloop.observe.console import JsonConsole, RunConsole, doing, progress
from reinloop.testing import tool_call

from .openai_server import PLAUSIBLE, completion

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RED_BOLD = "\x1b[1;31m"

# parse error, tool error, refused call, then the repeat breaker.
TROUBLE = [
    "我认为答案是……",
    {"tool": "calculator", "args": {"expression": "1/0"}},
    *[{"tool": "get_weather", "args": {"city": "北京"}}] * 3,
]


def show(make_graph, replies, *, protocol="json", limits=None, **console_options):
    """Run ``replies`` through a graph into a RunConsole; return what it printed."""
    limits = limits or Limits()
    graph, _ = make_graph(replies, protocol=protocol, limits=limits)
    out = io.StringIO()
    with RunConsole(limits, out, **console_options) as console:
        for event in graph.stream({"task": "t"}, stream_mode="custom"):
            console.handle(event)
    return out.getvalue()


def test_plain_text_shows_each_step_with_progress_errors_hint_and_break(make_graph):
    out = show(make_graph, TROUBLE)
    assert not ANSI.search(out)  # a StringIO is not a terminal: plain text
    lines = re.sub(r"\d+\.\ds/", "0.0s/", out).splitlines()
    assert lines[:3] == [
        "[step 1/10 · 0.0s/120s · tokens 15 · errors 1/5]",
        "  parse error: no JSON object found in the reply: '我认为答案是……'",
        "  guard:       continue",
    ]
    assert lines[3:7] == [
        "[step 2/10 · 0.0s/120s · tokens 30 · errors 2/5]",
        '  action:      calculator {"expression": "1/0"}',
        "  observation: ERROR: CalculatorError: division by zero",
        "  guard:       continue",
    ]
    assert "  guard:       hint" in lines
    assert lines[-1] == "  guard:       BREAK repeated_action: the same action, with the same result, was issued 3 times in a row (limit 3)"


def test_a_terminal_gets_colours_with_errors_and_the_break_in_red(make_graph):
    out = show(make_graph, TROUBLE, terminal=True, live=False)
    assert RED_BOLD + "BREAK repeated_action" in out
    assert "\x1b[31mERROR: CalculatorError: division by zero" in out
    assert "\x1b[33mYou already did this" in out  # hints in yellow
    assert "● step" not in out  # live=False: no progress line


def test_a_terminal_gets_a_live_progress_line_that_is_cleared_at_the_end(make_graph):
    out = show(make_graph, TROUBLE, terminal=True)
    assert "● step 2/10 · " in ANSI.sub("", out)
    plain = ANSI.sub("", out.rsplit("\n", 1)[0])
    assert plain.count("[step ") == 5


def test_no_color_on_a_terminal_prints_no_escape_codes(make_graph):
    out = show(make_graph, TROUBLE, terminal=True, color=False, live=False)
    assert not ANSI.search(out) and "BREAK repeated_action" in out


def test_progress_shows_each_limit_or_just_the_value_when_the_limit_is_off():
    counters = {"steps": 2, "elapsed_seconds": 1.25, "prompt_tokens": 20, "completion_tokens": 10,
                "consecutive_errors": 1, "repeats": 2}
    assert progress(Limits(token_budget=100, max_seconds=2.5), counters) == (
        "step 2/10 · 1.2s/2.5s · tokens 30/100 · errors 1/5 · repeats 2/3")
    off = Limits(max_steps=None, max_seconds=None, max_consecutive_errors=None, max_same_errors=None, max_repeats=None)
    assert progress(off, counters) == "step 2 · 1.2s · tokens 30 · errors 1 · repeats 2"


@pytest.mark.parametrize("repeats", [0, 1])
def test_progress_shows_no_repeats_for_a_first_action(repeats):
    assert "repeats" not in progress(Limits(), {"steps": 1, "repeats": repeats})


@pytest.mark.parametrize(("event", "said"), [
    (None, "waiting for the model"),
    ({"node": "guard", "decision": "continue"}, "waiting for the model"),
    ({"node": "decide"}, "reading the reply"),
    ({"node": "parse", "actions": [{"tool": "calculator"}]}, "checking the calls"),
    ({"node": "validate", "actions": [{"tool": "calculator"}, {"tool": "get_weather"}]}, "running calculator, get_weather"),
    ({"node": "memorize"}, "checking limits"),
])
def test_the_live_line_says_what_happens_next(event, said):
    assert doing(event) == said


def test_progress_shows_the_same_way_count_once_two_failures_in_a_row_are_alike():
    counters = {"steps": 3, "consecutive_errors": 2, "same_errors": 2, "repeats": 0}
    assert progress(Limits(), counters).endswith("errors 2/5 (2/3 the same way)")
    assert "the same way" not in progress(Limits(), {**counters, "same_errors": 1})


def one_step(decided: dict) -> list[str]:
    """What the console prints under the step's header for a step whose decide event has ``decided``, answered ok."""
    out = io.StringIO()
    console = RunConsole(Limits(), out)
    counters = {"steps": 1}
    console.handle({"node": "decide", "summary": "", **decided})
    console.handle({"node": "memorize", "summary": "", "step": 1, "answer": "ok", "counters": counters})
    console.handle({"node": "guard", "summary": "", "step": 1, "decision": "finish", "counters": counters})
    return out.getvalue().splitlines()[1:]


def test_memory_events_are_printed_under_their_step():
    assert one_step({"memory": [{"kind": "evicted", "summary": "step 1 left the window"}]}) == [
        "  answer:      ok", "  memory:      evicted: step 1 left the window", "  guard:       finish"]


def test_each_model_fallback_is_printed_first_in_its_step():
    moved = {"from_model": "gpt-4o", "to_model": "gpt-4o-mini", "reason": "context_length", "problem": "HTTP 400"}
    assert one_step({"data": {"fallbacks": [moved]}}) == [
        "  fallback:    gpt-4o -> gpt-4o-mini (context_length): HTTP 400", "  answer:      ok", "  guard:       finish"]


def test_a_node_that_raises_is_printed_as_an_error_line():
    out = io.StringIO()
    RunConsole(Limits(), out).handle({"node": "decide", "summary": "raised ModelCallError: HTTP 500",
                                      "error": "ModelCallError: HTTP 500"})
    assert out.getvalue() == "  error:       decide raised ModelCallError: HTTP 500\n"


def test_json_console_prints_one_event_per_line(make_graph):
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2*3"})], "6"])
    out = io.StringIO()
    console = JsonConsole(out)
    for event in graph.stream({"task": "t"}, stream_mode="custom"):
        console.handle(event)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["event"] * 10
    assert lines[3]["node"] == "execute" and lines[3]["actions"][0]["observation"] == "6"


# --- the CLI flags ---------------------------------------------------------------------------


@pytest.fixture
def two_replies(openai_server):
    openai_server.responses += [
        completion(tool_calls=[{"name": "calculator", "args": {"expression": "2*3"}}], **PLAUSIBLE),
        completion("6", **PLAUSIBLE),
    ]
    return ["run", "2*3?", "--base-url", openai_server.base_url, "--thread", "c1", "--tools", "calculator"]


def test_run_prints_the_thread_the_steps_and_the_outcome(two_replies, capsys):
    assert main(two_replies) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "thread c1" and lines[1].startswith("memory: recent steps until they pass 4000 tokens, then the last 3")
    assert lines[2].startswith("[step 1/10 · ")
    assert lines[-2:] == ["answer: 6", lines[-1]] and lines[-1].startswith("thread c1: 2 steps, 2000 tokens, $0.0003, 0 errors")


def test_run_quiet_prints_only_the_outcome(two_replies, capsys):
    assert main([*two_replies, "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0] == "answer: 6"


def test_run_json_quiet_prints_one_outcome_object(two_replies, capsys):
    assert main([*two_replies, "--json", "-q"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["type"] == "outcome" and json.loads(line)["answer"] == "6"


def test_run_db_logs_every_step(two_replies, tmp_path, capsys):
    db = tmp_path / "cli.db"
    assert main([*two_replies, "-q", "--db", str(db)]) == 0
    assert [e["node"] for e in RunLog(db).steps("c1")][:4] == ["decide", "parse", "validate", "execute"]


def test_demo_quiet_prints_only_the_verdict(capsys):
    assert main(["demo", "-q"]) == 0
    assert capsys.readouterr().out.strip() == "4 scenarios, all ended as expected."


def test_plain_console_prints_plain_text_even_on_a_terminal_and_needs_no_closing(make_graph):
    from reinloop.observe.console import PlainConsole

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    graph, _ = make_graph(TROUBLE, protocol="json")
    out = Terminal()
    console = PlainConsole(Limits(), out)
    for event in graph.stream({"task": "t"}, stream_mode="custom"):
        console.handle(event)
    elapsed = re.compile(r"\d+\.\ds/")
    assert elapsed.sub("", out.getvalue()) == elapsed.sub("", show(make_graph, TROUBLE))
    assert console._live is None
