"""Run reports: the path drawn on the graph with traversal counts, where it broke, and a step timeline."""

from __future__ import annotations

import html
import json
import re

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import RunLog, run_report, visualize
from reinloop.cli.app import main
from reinloop.errors import ConfigurationError, ThreadNotFoundError

from . import chromium

# A run that hits a parse error, a tool error, a repeat hint and a break (json protocol).
TROUBLE = [
    "我认为答案是……",
    {"thought": "compute", "tool": "calculator", "args": {"expression": "1/0"}},
    *[{"thought": "look it up", "tool": "get_weather", "args": {"city": "北京"}}] * 3,
]
CONFIG = {"configurable": {"thread_id": "trouble"}}


@pytest.fixture
def troubled(make_graph, tmp_path):
    """A graph with a checkpointer and a RunLog, after running TROUBLE on thread 'trouble'."""
    log = RunLog(tmp_path / "run.db")
    graph, _ = make_graph(TROUBLE, protocol="json", checkpointer=InMemorySaver(), sinks=[log])
    graph.invoke({"task": "北京天气？"}, CONFIG)
    return graph, log


def edges(report):
    return {(e["source"], e["target"]): (e["count"], e["routes"]) for e in report["graph"]["edges"]}


def test_report_counts_every_edge_with_the_routes_taken(troubled):
    graph, log = troubled
    report = run_report(graph, "trouble", db=log.db)
    assert edges(report) == {
        ("__start__", "decide"): (1, {}),
        ("decide", "parse"): (5, {"reply": 5}),
        ("decide", "guard"): (0, {}),  # a call not made: its estimate crossed max_cost
        ("parse", "memorize"): (1, {"error": 1}),
        ("parse", "validate"): (4, {"actions": 4}),
        ("validate", "execute"): (4, {"run": 4}),
        ("validate", "memorize"): (0, {}),
        ("execute", "memorize"): (4, {"done": 4}),
        ("execute", "approve"): (0, {}),
        ("approve", "execute"): (0, {}),
        ("memorize", "guard"): (5, {}),
        ("guard", "decide"): (4, {"continue": 3, "hint": 1}),
        ("guard", "guard"): (1, {"pause": 1}),  # with a checkpointer the break pauses the run
        ("guard", "__end__"): (0, {}),
    }
    nodes = {n["id"]: (n["visits"], n["errors"]) for n in report["graph"]["nodes"]}
    assert nodes["parse"] == (5, 1) and nodes["execute"] == (4, 1) and nodes["validate"] == (4, 0)
    assert report["path"][:4] == ["__start__", "decide", "parse", "memorize"] and report["path"][-1] == "guard"


def test_report_says_where_and_why_the_run_broke(troubled):
    graph, log = troubled
    latest = run_report(graph, "trouble", db=log.db)["latest"]
    assert latest["status"] == "broken" and latest["broke_at_step"] == 5 and latest["task"] == "北京天气？"
    assert (latest["break_reason"], latest["break_message"]) == (
        "repeated_action", "the same action, with the same result, was issued 3 times in a row (limit 3)")


def test_report_timeline_has_one_entry_per_step_with_what_happened(troubled):
    graph, log = troubled
    steps = run_report(graph, "trouble", db=log.db)["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    assert steps[0]["parse_error"].startswith("no JSON object found") and steps[0]["actions"] == []
    (action,) = steps[1]["actions"]
    assert action["args"] == {"expression": "1/0"} and action["error"] is True
    assert steps[1]["error"] == "calculator: ERROR: CalculatorError: division by zero"
    assert steps[2]["thought"] == "look it up" and steps[2]["actions"][0]["observation"] == "北京: 晴, 18℃ (demo data)"
    assert all(s["tokens_in"] == 10 and s["tokens_out"] == 5 and s["latency_ms"] > 0 for s in steps)
    assert [s["decision"] for s in steps] == ["continue", "continue", "continue", "hint", "pause"]
    assert steps[3]["hints"][0].startswith("You already did this")
    assert [n["node"] for n in steps[1]["nodes"]] == ["decide", "parse", "validate", "execute", "memorize", "guard"]


def test_without_a_node_events_table_the_report_is_rebuilt_from_checkpoints(troubled):
    graph, log = troubled
    full, rebuilt = run_report(graph, "trouble", db=log.db), run_report(graph, "trouble")
    assert (full["source"], rebuilt["source"]) == ("node_events table", "checkpoints")
    assert rebuilt["path"] == full["path"] and edges(rebuilt) == edges(full)
    assert rebuilt["latest"] == full["latest"]
    keys = ("step", "thought", "answer", "error", "parse_error", "tokens_in", "decision", "reason", "hints")
    assert [{k: s[k] for k in keys} for s in rebuilt["steps"]] == [{k: s[k] for k in keys} for s in full["steps"]]


def test_a_thread_with_two_tasks_reports_both_runs(make_graph, tmp_path):
    log = RunLog(tmp_path / "r.db")
    graph, _ = make_graph(["Paris", "Still Paris"], checkpointer=InMemorySaver(), sinks=[log])
    for task in ("capital of France?", "and now?"):
        graph.invoke({"task": task}, {"configurable": {"thread_id": "chat"}})
    report = run_report(graph, "chat", db=log.db)
    assert [(r["run"], r["task"], r["status"], r["answer"]) for r in report["runs"]] == [
        (1, "capital of France?", "done", "Paris"), (2, "and now?", "done", "Still Paris")]
    assert edges(report)[("__start__", "decide")] == (2, {})
    assert edges(report)[("parse", "memorize")] == (2, {"answer": 2})


def test_a_run_stopped_by_an_exception_is_reported_as_failed(make_graph, tmp_path):
    log = RunLog(tmp_path / "r.db")
    graph, _ = make_graph([RuntimeError("endpoint exploded")], sinks=[log])
    with pytest.raises(RuntimeError):
        graph.invoke({"task": "t"}, {"configurable": {"thread_id": "boom"}})
    latest = run_report(graph, "boom", db=log.db)["latest"]
    assert latest["status"] == "failed" and latest["error"] == "RuntimeError: endpoint exploded"
    assert "Stopped by an error:</b> RuntimeError: endpoint exploded" in visualize(graph, thread_id="boom", db=log.db)


def test_an_unknown_thread_says_how_to_record_runs(troubled):
    graph, log = troubled
    with pytest.raises(ThreadNotFoundError, match=r"no run recorded for thread 'nope' in the node_events table of .* or in "
                                                  r"the graph's checkpoints; record runs with build_graph\(\.\.\., sinks="):
        run_report(graph, "nope", db=log.db)


def test_visualize_writes_json_with_the_same_data(troubled, tmp_path):
    graph, log = troubled
    text = visualize(graph, thread_id="trouble", db=log.db, format="json", path=tmp_path / "run.json")
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert json.loads(text) == data
    assert data["latest"]["break_reason"] == "repeated_action" and len(data["events"]) == 28


def test_visualize_still_takes_the_old_run_keyword_with_a_deprecation_warning(troubled):
    graph, log = troubled
    with pytest.warns(DeprecationWarning, match=r"visualize\(run=\.\.\.\) is deprecated: .* pass thread_id="):
        old = visualize(graph, run="trouble", db=log.db, format="json")
    assert json.loads(old) == json.loads(visualize(graph, thread_id="trouble", db=log.db, format="json"))


def test_visualize_refuses_both_the_thread_id_and_its_old_name(troubled):
    graph, log = troubled
    with pytest.raises(ConfigurationError, match="both thread_id and run"):
        visualize(graph, thread_id="trouble", run="trouble", db=log.db)


def test_run_html_is_self_contained(troubled, tmp_path):
    graph, log = troubled
    page = visualize(graph, thread_id="trouble", path=tmp_path / "run.html", db=log.db)
    assert (tmp_path / "run.html").read_text(encoding="utf-8") == page
    assert "<script" not in page and not re.search(r"https?://", page)
    assert not re.search(r"""\b(src|href)=["'](?!data:|#)""", page)
    assert "default-src 'none'; style-src 'unsafe-inline'; img-src data:" in page
    assert "Broke at step 5: repeated_action" in page and "continue ×3 / hint ×1" in page
    assert '<p class="path">start → decide → parse → memorize' in page and "__start__ →" not in page


def test_run_html_renders_in_headless_chromium_without_any_request(troubled, tmp_path):
    graph, log = troubled
    visualize(graph, thread_id="trouble", path=tmp_path / "run.html", db=log.db)
    page = chromium.render(tmp_path / "run.html", tmp_path)
    assert page.page_requests == []
    dom = page.dom
    assert dom.count('<g class="node ') == 9 and 'class="node step visited broke"' in dom
    assert "continue ×3 / hint ×1</text>" in dom  # edge labels are drawn inside the SVG
    rows = re.findall(r'<tr class="([^"]*)" data-step="(\d+)"', dom)
    assert rows == [("error", "1"), ("error", "2"), ("", "3"), ("", "4"), ("break", "5")]
    assert chromium.png_size(page.screenshot) == (1200, 2400)
    assert page.screenshot.stat().st_size > 50_000  # a blank page of that size is ~13 KB


def test_the_chromium_check_sees_a_page_that_fetches(tmp_path):
    (tmp_path / "leaky.html").write_text('<img src="https://example.com/pixel.png">')
    assert chromium.render(tmp_path / "leaky.html", tmp_path, size=(200, 200)).page_requests == [
        "https://example.com/pixel.png"]


def test_runs_show_html_explains_a_demo_run(tmp_path, capsys):
    db = str(tmp_path / "demo.db")
    assert main(["demo", "-q", "--db", db]) == 0
    assert main(["runs", "show", "demo-3", "--db", db, "--format", "html", "-o", str(tmp_path / "run.html")]) == 0
    assert "Broke at step 3: repeated_action" in (tmp_path / "run.html").read_text(encoding="utf-8")


def test_runs_show_json_carries_the_report_data(openai_server, run_db, capsys):
    from .openai_server import completion

    openai_server.responses += [completion("hello")]
    assert main(["run", "say hello", "--base-url", openai_server.base_url, "--thread", "r1", "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "show", "r1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["state"]["answer"] == "hello" and data["report"]["latest"]["answer"] == "hello"
    assert [n["node"] for n in data["report"]["steps"][0]["nodes"]] == ["decide", "parse", "memorize", "guard"]


def test_runs_show_without_a_database_says_how_to_make_one(tmp_path, capsys):
    assert main(["runs", "show", "t1", "--db", str(tmp_path / "none.db"), "--format", "html"]) == 1
    assert "reinloop: error: " in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_a_taken_edge_names_only_the_routes_taken(troubled):
    graph, log = troubled
    page = visualize(graph, thread_id="trouble", db=log.db)
    labels = re.findall(r'<g class="elabel ([^"]*)">.*?<text[^>]*>([^<]*)</text>', page)
    by_text = {text: set(cls.split()) for cls, text in labels}
    assert "taken" in by_text["error"] and "taken" in by_text["pause"]  # taken once: the route alone, no "×1"
    assert "taken" in by_text["actions ×4"] and "taken" in by_text["continue ×3 / hint ×1"]
    assert "untaken" in by_text["finish / break"]  # never taken: every route it could carry
    assert not any(t.startswith(("answer", "error ×")) for t in by_text)  # not "answer / error ×1"


def test_run_html_shows_the_correction_sent_back_after_an_unusable_reply(troubled):
    graph, log = troubled
    report = run_report(graph, "trouble", db=log.db)
    feedback = report["steps"][0]["feedback"]
    assert feedback and "no JSON object found" in feedback and report["steps"][1]["feedback"] is None
    page = visualize(graph, thread_id="trouble", db=log.db)
    assert f'<b>sent back to the model:</b><pre>{html.escape(feedback)}</pre>' in page
    rebuilt = run_report(graph, "trouble")  # without the steps table, from the checkpoints
    assert rebuilt["steps"][0]["feedback"] == feedback


def test_run_html_header_names_model_endpoint_tokens_and_duration_without_credentials(openai_server, run_db, tmp_path):
    from .openai_server import completion

    host = openai_server.base_url.split("://", 1)[1].split("/", 1)[0]
    secret_url = openai_server.base_url.replace("://", "://alice:s3cretpw@", 1) + "?api_key=k3yk3y"
    openai_server.responses += [completion("4", prompt_tokens=1234, completion_tokens=56)]
    assert main(["run", "2+2?", "--model", "openai:gpt-4o-mini", "--base-url", secret_url, "--thread", "h1", "-q"]) == 0
    assert main(["runs", "show", "h1", "--format", "html", "-o", str(tmp_path / "run.html")]) == 0
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    facts = re.search(r'<dl class="facts">(.*?)</dl>', page).group(1)
    assert f"<dt>model</dt><dd><code>gpt-4o-mini</code> at <code>http://{host}</code></dd>" in facts
    assert "<dt>tokens</dt><dd>1,234 in / 56 out</dd>" in facts
    assert re.search(r"<dt>duration</dt><dd>\d+(\.\d)? m?s</dd>", facts)
    assert '<div class="answer"><b>answer:</b> 4</div>' in page
    assert "s3cretpw" not in page and "k3yk3y" not in page and "alice" not in page
    latest = run_report(thread_id="h1", db=run_db)["latest"]
    assert (latest["model"], latest["endpoint"], latest["tokens_in"], latest["tokens_out"]) == (
        "gpt-4o-mini", f"http://{host}", 1234, 56)
    assert 0 < latest["seconds"] < 60


def test_run_html_gives_the_actions_column_half_the_table(troubled):
    graph, log = troubled
    page = visualize(graph, thread_id="trouble", db=log.db)
    assert '<colgroup><col class="step"><col class="did">' in page
    assert "table-layout:fixed" in page and "col.did{width:50%}" in page
    args = html.escape(json.dumps({"expression": "1/0"}))
    assert f'<code class="args">{args}</code>' in page  # spaces to wrap at, not one character a line


def test_the_report_shows_a_pending_approval_then_the_operators_decision_on_the_timeline(tmp_path):
    from langchain_core.tools import tool

    from reinloop.runs.pending import approve
    from reinloop.runs.api import run
    from reinloop.testing import ScriptedChatModel, tool_call
    from reinloop.tools import configure

    @configure(side_effects=True, approval=True)
    @tool
    def send_mail(to: str) -> str:
        """Send a mail."""
        return "sent"

    db = str(tmp_path / "runs.db")
    run("mail ann", db=db, thread_id="m", tools=[send_mail],
        model=ScriptedChatModel(replies=[[tool_call("send_mail", {"to": "ann"}, id="m1")]]))
    report = run_report(thread_id="m", db=db)
    assert report["latest"]["status"] == "waiting"
    [waiting] = report["steps"][-1]["waiting"]
    cid = waiting["id"]
    assert waiting == {"id": cid, "call_id": "m1", "tool": "send_mail", "args": {"to": "ann"},
                       "awaiting": "send_mail is configured to need approval"}
    page = visualize(thread_id="m", db=db)
    assert 'class="status waiting"' in page and "WAITING for approval: <code>send_mail</code>" in page
    approve("m", cid, reject="not today", db=db, tools=[send_mail], model=ScriptedChatModel(replies=["ok"]))
    report = run_report(thread_id="m", db=db)
    assert report["latest"]["status"] == "done" and report["steps"][0]["waiting"] == []
    assert report["steps"][0]["approvals"] == [{"id": cid, "call_id": "m1", "action": "reject", "always": False,
                                                "message": "not today"}]
    assert f'<div class="approval">operator: reject <code>{cid}</code>: not today</div>' in visualize(thread_id="m", db=db)


def test_the_report_shows_each_model_fallback_in_its_step(tmp_path):
    from reinloop import build_graph
    from reinloop.models.retry import RetryPolicy
    from reinloop.testing import ScriptedChatModel

    log = RunLog(tmp_path / "run.db")
    primary = ScriptedChatModel(replies=[TimeoutError("slow"), TimeoutError("slow")])
    graph = build_graph(primary, [], fallback_models=[ScriptedChatModel(replies=["42"])], checkpointer=InMemorySaver(),
                        sinks=[log], retry=RetryPolicy(attempts=2, base_delay=0.0))
    graph.invoke({"task": "6*7"}, {"configurable": {"thread_id": "moved"}})
    step = run_report(graph, "moved", db=log.db)["steps"][0]
    assert [(f["reason"], f["to_model"]) for f in step["fallbacks"]] == [("retries_exhausted", "ScriptedChatModel")]
    page = visualize(graph, thread_id="moved", db=log.db)
    assert "model fallback: ScriptedChatModel &rarr; ScriptedChatModel (retries_exhausted)" in page


def test_runs_show_text_and_html_list_the_same_record_a_resumed_break_and_an_operators_edit(openai_server, run_db,
                                                                                             tmp_path):
    import os
    import subprocess
    import sys

    from reinloop.runs.pending import approve
    from reinloop.runs.api import resume, run

    from .openai_server import completion

    (tmp_path / "box").mkdir()
    write = {"name": "write_file", "args": {"path": "note.txt", "content": "hello"}, "id": "w1"}
    calc = {"name": "calculator", "args": {"expression": "6*7"}, "id": "c1"}
    openai_server.responses += [completion(tool_calls=[write])]
    waiting = run("write a note, then multiply", model="openai:gpt-4o-mini", base_url=openai_server.base_url,
                  tools=["write_file", "calculator"], thread_id="rec", approve="side-effects",
                  tool_settings={"sandbox": str(tmp_path / "box")}, limits={"max_steps": 2})
    openai_server.responses += [completion(tool_calls=[calc])]
    assert approve("rec", waiting.waiting[0]["id"], edit={"path": "other.txt", "content": "edited"}).paused
    openai_server.responses += [completion("42")]
    assert resume("rec", extra_steps=1).answer == "42"

    def show(*flags: str) -> str:
        env = {**os.environ, "REINLOOP_DB": str(run_db)}
        proc = subprocess.run([sys.executable, "-m", "reinloop", "runs", "show", "rec", *flags], capture_output=True,
                              text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    text, page = show(), html.unescape(show("--format", "html"))
    broke = re.search(r'^break #1 at .*: max_steps: reached the step limit: 2 of 2 steps -> \{"action": "continue", "extra_steps": 1, .*\}$',
                      text, re.M)
    edited = re.search(r'^operator edited write_file at run 1 step 1: \{"path": "other.txt", "content": "edited"\} '
                       r'\(the model asked \{"path": "note.txt", "content": "hello"\}\)$', text, re.M)
    assert broke and edited, text
    assert broke.group(0) in page and edited.group(0) in page
