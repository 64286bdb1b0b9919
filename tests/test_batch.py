"""reinloop.batches and ``reinloop batch``: many tasks, bounded concurrency, any number of workers on one database.

Tests that take ``db_url`` run on a SQLite file and on PostgreSQL. The model
is a scripted one whose every reply is planned from its own prompt
(:func:`reinloop.cli.server.plan`), so concurrent runs cannot take each other's
replies. The multi-process acceptance test is in ``test_batch_workers.py``.
"""

from __future__ import annotations

import json
import threading

import pytest

from reinloop.runs.batches import batch, read_tasks
from reinloop.checkpoints import open_saver
from reinloop.cli.app import main
from reinloop import Memory, RunSpec
from reinloop.errors import ConfigurationError
from reinloop.graph import build_graph
from reinloop.models.pricing import library_price
from reinloop.runs.api import list_runs, resume, thread_config
from reinloop.cli.server import plan
from reinloop.testing import ScriptedChatModel, prompt_text
from reinloop.tools import builtins

from .openai_server import PLAUSIBLE, completion


def planner(n: int = 500) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[plan] * n)


def write_tasks(path, lines) -> str:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
                            for line in lines), encoding="utf-8")
    return str(path)


def arithmetic(n: int) -> list[dict]:
    return [{"task": f"What is {i}*3?"} for i in range(1, n + 1)]


BAD_FILES = [
    (["{\"task\": \"ok\"}", "not json"], r"tasks.jsonl:2: not a JSON object \(Expecting value\)"),
    ([{"task": ""}], r"tasks.jsonl:1: each line needs a \"task\" string"),
    ([{"task": "a", "priority": 1}], r"tasks.jsonl:1: unknown key\(s\) priority; valid keys: task, thread_id, model, base_url, protocol"),
    ([{"task": "a", "tools": "calculator,teleport"}], r"tasks.jsonl:1: unknown tool\(s\) teleport; available: calculator"),
    ([{"task": "a", "limits": {"max_stepz": 3}}], r"tasks.jsonl:1: unknown limit\(s\) max_stepz"),
    ([{"task": "a", "protocol": "xml"}], r"tasks.jsonl:1: unknown protocol 'xml'; choose one of: tool_calling"),
    ([{"task": "a", "tool_detail": "terse"}], r"tasks.jsonl:1: tool_detail must be one of full, compact; got 'terse'"),
    ([{"task": "a", "thread_id": "x"}, {"task": "b", "thread_id": "x"}],
     r"tasks.jsonl:2: thread_id 'x' is also the thread of line 1; give each task its own"),
    ([""], r"tasks.jsonl has no tasks; write one JSON object per line"),
]


@pytest.mark.parametrize("lines, message", BAD_FILES)
def test_a_bad_tasks_file_is_refused_with_its_line_and_nothing_is_queued(tmp_path, run_db, lines, message):
    path = write_tasks(tmp_path / "tasks.jsonl", lines)
    with pytest.raises(ConfigurationError, match=message):
        batch(path, model=planner())
    assert not run_db.exists()


def test_a_missing_tasks_file_is_one_cli_line(tmp_path, cli_error):
    line = cli_error("batch", str(tmp_path / "nope.jsonl"), "--base-url", "http://127.0.0.1:9/v1")
    assert line == f"reinloop: error: cannot read the tasks file {str(tmp_path / 'nope.jsonl')!r}: No such file or directory"


def test_a_batch_runs_every_task_once_and_reports_the_whole_batch(tmp_path, db_url):
    lines = [*arithmetic(10), {"task": "What is 7*6?", "thread_id": "tight", "limits": {"max_steps": 1}}]
    path = write_tasks(tmp_path / "tasks.jsonl", lines)
    seen: list[tuple[str, dict]] = []
    report = batch(path, concurrency=4, db=db_url, model=planner(), tools="calculator",
                   on_outcome=lambda outcome, counts: seen.append((outcome.thread_id, counts)))
    assert report.counts == {"done": 10, "broken": 1, "error": 0} and report.exit_code == 3
    assert sorted(o.thread_id for o in report.outcomes) == sorted(r["thread_id"] for r in report.tasks)
    by_line = {o.line: o for o in report.outcomes}
    assert by_line[3].answer == "9" and by_line[3].steps == 2 and by_line[3].tokens == 30
    assert by_line[11].thread_id == "tight" and by_line[11].break_reason == "max_steps"
    assert seen[-1][1] == {"done": 10, "broken": 1}  # the whole batch's counts, as the bar shows them
    assert report.summary()[0] == {"status": "done", "tasks": 10, "tokens": 300, "seconds": pytest.approx(
        sum(o.seconds for o in report.outcomes if o.status == "done"), abs=0.01), "cost_usd": 0.0,
        "unpriced_calls": 0}  # a scripted model is free
    with open_saver(db_url) as saver:
        assert {r.thread_id: r.status for r in saver.db.runs.list()} == {r["thread_id"]: r["status"] for r in report.tasks}
        assert [e["node"] for e in saver.db.events.events("tight")][:2] == ["decide", "parse"]  # steps in the same database
    done = resume("tight", model=planner(), extra_steps=2)  # a broken task waits at its break
    assert done.status == "done" and done.answer == "42"


def test_starting_the_same_file_again_queues_and_runs_nothing(tmp_path, db_url):
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(3))
    first = batch(path, db=db_url, model=planner(), tools="calculator")
    model = planner()
    again = batch(path, db=db_url, model=model, tools="calculator")
    assert (first.added, again.added, again.outcomes, model.calls) == (3, 0, [], 0)
    assert again.counts == {"done": 3, "broken": 0, "error": 0} and again.exit_code == 0


def test_a_task_whose_worker_died_is_resumed_from_its_checkpoint_not_restarted(tmp_path, db_url):
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(3))
    name, specs = read_tasks(path)
    model = planner()
    with open_saver(db_url) as saver:
        saver.db.queue.enqueue(name, specs)
        dead = saver.db.queue.claim(name, "dead-worker", lease=0.3)
        # the dead worker got as far as the model's tool call: its checkpoint waits before execute
        graph = build_graph(model, builtins("calculator"), checkpointer=saver)
        graph.invoke({"task": dead["task"]}, thread_config(dead["thread_id"]), interrupt_before=["execute"])
    report = batch(path, db=db_url, model=model, tools="calculator", concurrency=2, lease=5, poll=0.05)
    (taken,) = [o for o in report.outcomes if o.thread_id == dead["thread_id"]]
    assert (taken.status, taken.answer, taken.resumed, taken.attempt) == ("done", "3", True, 2)
    prompts = [p for p in model.prompts if "What is 1*3?" in prompt_text(p)]
    assert len(prompts) == 2  # the dead worker's model call was not made again
    with open_saver(db_url) as saver:
        state = saver.get_tuple(thread_config(dead["thread_id"])).checkpoint["channel_values"]
        assert state["run"] == 1 and state["counters"]["steps"] == 2  # one run, not a second start


def test_two_workers_at_once_share_the_batch_and_run_each_task_once(tmp_path, db_url):
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(16))
    reports = []
    workers = [threading.Thread(target=lambda: reports.append(batch(path, db=db_url, model=planner(), tools="calculator",
                                                                    concurrency=3, poll=0.05))) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ran = [o.thread_id for r in reports for o in r.outcomes]
    assert len(ran) == len(set(ran)) == 16
    assert all(r.counts["done"] == 16 for r in reports)


def test_a_thread_id_of_another_batch_is_refused_before_anything_is_queued(tmp_path, db_url):
    batch(write_tasks(tmp_path / "first.jsonl", [{"task": "What is 1*3?", "thread_id": "shared"}]), db=db_url,
          model=planner(), tools="calculator")
    second = write_tasks(tmp_path / "second.jsonl", [{"task": "What is 2*3?"}, {"task": "What is 3*3?", "thread_id": "shared"}])
    with pytest.raises(ConfigurationError, match=r"thread id 'shared' is already a task of batch 'first-\w+' in .*; give"):
        batch(second, db=db_url, model=planner(), tools="calculator")
    with open_saver(db_url) as saver:
        assert [r["thread_id"] for r in saver.db.query("SELECT thread_id FROM tasks")] == ["shared"]


def reply_from_task(body: dict):
    """The OpenAI server's reply: the calculator for the task's product, then the result."""
    messages = body["messages"]
    tool = [m for m in messages if m.get("role") == "tool"]
    if tool:
        return completion(tool[-1]["content"], **PLAUSIBLE)
    expression = json.dumps(messages).split("What is ")[1].split("?")[0]
    return completion(tool_calls=[{"name": "calculator", "args": {"expression": expression}}], **PLAUSIBLE)


def test_cli_batch_prints_a_line_per_task_and_a_summary_table(tmp_path, openai_server, db_url, capsys):
    openai_server.reply = reply_from_task
    path = write_tasks(tmp_path / "tasks.jsonl", [*arithmetic(3), {"task": "What is 5*3?", "limits": {"max_steps": 1}}])
    code = main(["batch", path, "--base-url", openai_server.base_url, "--tools", "calculator", "-n", "2", "--no-color"])
    out = capsys.readouterr().out
    assert code == 3
    assert out.startswith("batch tasks-") and ": 4 tasks (4 new), 2 at a time, worker " in out.splitlines()[0]
    lines = [line for line in out.splitlines() if line.startswith(("✓", "✗"))]
    assert sorted(line.split()[2] for line in lines) == ["1", "2", "3", "4"]
    assert any(line.startswith("✓ line 2 ") and "done  2 steps  2000 tokens" in line and line.endswith("answer: 6")
               for line in lines)
    assert any(line.startswith("✗ line 4 ") and line.endswith("break: max_steps") for line in lines)
    table = out[out.index("batch tasks-", 10):]
    assert "│ done   │     3 │  6,000 │" in table and "│ broken │     1 │  1,000 │" in table
    assert "│ total  │     4 │  7,000 │" in table
    assert "this worker ran 4 of 4 tasks in " in out and "resume a broken or failed task with: reinloop resume THREAD" in out


def test_cli_batch_json_prints_one_object_per_task_then_the_summary(tmp_path, openai_server, capsys):
    openai_server.reply = reply_from_task
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(2))
    code = main(["batch", path, "--base-url", openai_server.base_url, "--tools", "calculator", "--json"])
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and [o["type"] for o in objects] == ["task", "task", "summary"]
    assert sorted(o["answer"] for o in objects[:2]) == ["3", "6"]
    assert objects[2]["counts"] == {"done": 2, "broken": 0, "error": 0}
    gpt_4o_mini = library_price("gpt-4o-mini", 960, 0, 40)  # a known model is priced on 127.0.0.1 too: 4 calls
    assert objects[2]["summary"][0] == {"status": "done", "tasks": 2, "tokens": 4000, "seconds": objects[2]["summary"][0]["seconds"],
                                        "cost_usd": pytest.approx(4 * gpt_4o_mini), "unpriced_calls": 0}


CENT_A_CALL = {"gpt-4o-mini": {"input": 5.0, "output": 130.0}}
"""The configured model (the server reports "scripted"; a call is priced by the configured name) at $0.01 a
call: 960 prompt tokens at $5 / M, 40 completion tokens at $130 / M."""


def test_cli_batch_prints_each_tasks_cost_and_a_cost_column_summed_over_the_batch(tmp_path, openai_server, db_url, capsys):
    openai_server.reply = reply_from_task
    path = write_tasks(tmp_path / "tasks.jsonl", [*arithmetic(3), {"task": "What is 5*3?", "limits": {"max_steps": 1}}])
    code = main(["batch", path, "--base-url", openai_server.base_url, "--tools", "calculator", "-n", "2", "--no-color",
                 "--prices", json.dumps(CENT_A_CALL)])
    out = capsys.readouterr().out
    assert code == 3
    lines = [line for line in out.splitlines() if line.startswith(("✓", "✗"))]
    assert any(line.startswith("✓ line 2 ") and "done  2 steps  2000 tokens  $0.0200  " in line and line.endswith("answer: 6")
               for line in lines)
    assert any(line.startswith("✗ line 4 ") and "broken  1 step  1000 tokens  $0.0100  " in line for line in lines)
    assert sum("  $0.0200  " in line for line in lines) == 3
    table = out[out.index("batch tasks-", 10):].splitlines()
    assert "┃ status ┃ tasks ┃ tokens ┃ task time ┃    cost ┃" in table
    rows = {line.split("│")[1].strip(): line for line in table if line.startswith("│ ")}
    assert rows["done"].startswith("│ done   │     3 │  6,000 │") and rows["done"].endswith("│ $0.0600 │")
    assert rows["broken"].endswith("│ $0.0100 │") and rows["total"].endswith("│ $0.0700 │")


def test_cli_batch_json_gives_each_tasks_cost_and_the_batchs_cost_per_status(tmp_path, openai_server, capsys):
    openai_server.reply = reply_from_task
    path = write_tasks(tmp_path / "tasks.jsonl", [*arithmetic(2), {"task": "What is 5*3?", "limits": {"max_steps": 1}}])
    code = main(["batch", path, "--base-url", openai_server.base_url, "--tools", "calculator", "--json",
                 "--prices", json.dumps(CENT_A_CALL)])
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 3 and [o["type"] for o in objects] == ["task", "task", "task", "summary"]
    assert sorted((o["line"], o["cost_usd"]) for o in objects[:3]) == [
        (1, pytest.approx(0.02)), (2, pytest.approx(0.02)), (3, pytest.approx(0.01))]
    assert {o["unpriced_calls"] for o in objects[:3]} == {0}
    summary = {row["status"]: row for row in objects[3]["summary"]}
    assert summary["done"]["cost_usd"] == pytest.approx(0.04) and summary["broken"]["cost_usd"] == pytest.approx(0.01)
    assert summary["error"]["cost_usd"] == 0.0 and summary["done"]["unpriced_calls"] == 0
    assert sorted(o["cost_usd"] for o in objects[3]["outcomes"]) == [
        pytest.approx(0.01), pytest.approx(0.02), pytest.approx(0.02)]


def test_every_workers_report_sums_the_cost_of_the_tasks_all_workers_ran(tmp_path, db_url):
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(6))
    prices = {"ScriptedChatModel": {"input": 500.0, "output": 1000.0}}  # 10 + 5 tokens a call: $0.01
    other_reported = threading.Event()

    def first(outcome, counts):  # hold the first worker after its first task until the second has finished one
        assert other_reported.wait(60), "the second worker finished no task"

    reports: dict[str, object] = {}
    workers = [
        threading.Thread(target=lambda: reports.__setitem__("first", batch(
            path, db=db_url, model=planner(), tools="calculator", prices=prices, concurrency=1, poll=0.05,
            on_outcome=first))),
        threading.Thread(target=lambda: reports.__setitem__("second", batch(
            path, db=db_url, model=planner(), tools="calculator", prices=prices, concurrency=1, poll=0.05,
            on_outcome=lambda outcome, counts: other_reported.set()))),
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ran = {name: [o.cost_usd for o in r.outcomes] for name, r in reports.items()}
    assert ran["first"] and ran["second"] and len(ran["first"]) + len(ran["second"]) == 6
    assert all(cost == pytest.approx(0.02) for costs in ran.values() for cost in costs)  # 2 calls a task
    for report in reports.values():  # each worker's summary counts every task, whichever worker ran it
        assert report.summary()[0] == {"status": "done", "tasks": 6, "tokens": 180, "seconds": report.summary()[0]["seconds"],
                                       "cost_usd": pytest.approx(0.12), "unpriced_calls": 0}
        assert sorted(r["cost_usd"] for r in report.tasks) == [pytest.approx(0.02)] * 6


def test_cli_batch_tool_detail_reaches_every_request_and_every_stored_run(tmp_path, openai_server, capsys):
    openai_server.reply = reply_from_task
    path = write_tasks(tmp_path / "tasks.jsonl", arithmetic(2))
    code = main(["batch", path, "--base-url", openai_server.base_url, "--tools", "calculator", "--json",
                 "--tool-detail", "compact"])
    assert code == 0
    sent = {json.dumps(request["tools"]) for request in openai_server.requests}
    assert len(openai_server.requests) == 4 and len(sent) == 1
    assert "description" not in json.loads(sent.pop())[0]["function"]["parameters"]["properties"]["expression"]
    assert {run.spec["tool_detail"] for run in list_runs()} == {"compact"}


def test_a_task_line_sets_its_own_tool_detail(tmp_path, openai_server):
    openai_server.reply = reply_from_task
    lines = [{"task": "What is 1*3?", "thread_id": "full"}, {"task": "What is 2*3?", "thread_id": "compact",
                                                             "tool_detail": "compact"}]
    report = batch(write_tasks(tmp_path / "tasks.jsonl", lines), base_url=openai_server.base_url, tools="calculator")
    assert report.counts["done"] == 2
    assert {run.thread_id: run.spec["tool_detail"] for run in list_runs()} == {"full": "full", "compact": "compact"}
    described = {"description" in r["tools"][0]["function"]["parameters"]["properties"]["expression"]
                 for r in openai_server.requests}
    assert described == {True, False}  # each task's requests carried its own detail


def test_batch_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    assert "example: reinloop batch tasks.jsonl --concurrency" in capsys.readouterr().out


def test_a_task_line_overrides_any_run_spec_key_memory_included(tmp_path, run_db):
    lines = [{"task": "What is 1*3?", "thread_id": "plain"},
             {"task": "What is 2*3?", "thread_id": "tuned", "memory": {"window_steps": 1, "summarize": False},
              "max_output_tokens": 77, "limits": {"max_steps": 4}}]
    report = batch(write_tasks(tmp_path / "tasks.jsonl", lines), model=planner(), tools="calculator",
                   memory={"window_steps": 2})
    assert report.counts["done"] == 2
    specs = {run.thread_id: RunSpec.from_dict(run.spec) for run in list_runs()}
    assert specs["plain"].memory.window_steps == 2 and specs["plain"].max_output_tokens == 1024
    assert specs["tuned"].memory == Memory(window_steps=1, summarize=False)
    assert (specs["tuned"].max_output_tokens, specs["tuned"].limits.max_steps) == (77, 4)


def test_a_task_line_with_a_bad_memory_setting_is_refused_with_its_line(tmp_path, run_db):
    path = write_tasks(tmp_path / "tasks.jsonl", [{"task": "a", "memory": {"window_steps": 0}}])
    with pytest.raises(ConfigurationError, match="tasks.jsonl:1: Memory.window_steps must be a positive integer"):
        batch(path, model=planner())
    assert not run_db.exists()


def test_a_task_waiting_for_approval_is_parked_while_the_others_go_on_and_the_batch_names_it(tmp_path, openai_server, capsys):
    from reinloop.runs.pending import approve

    def reply(body: dict):
        if "write the note" not in json.dumps(body["messages"]):
            return reply_from_task(body)
        done = any(m.get("role") == "tool" for m in body["messages"])
        return completion("noted") if done else completion(
            tool_calls=[{"name": "write_file", "args": {"path": "n.txt", "content": "hi"}, "id": "w1"}])

    openai_server.reply = reply
    (tmp_path / "box").mkdir()
    db = str(tmp_path / "runs.db")
    lines = [*arithmetic(2), {"task": "write the note", "thread_id": "note", "tools": "write_file",
                              "tool_settings": {"sandbox": str(tmp_path / "box")}}]
    code = main(["batch", write_tasks(tmp_path / "tasks.jsonl", lines), "--base-url", openai_server.base_url,
                 "--tools", "calculator", "--db", db, "--no-color"])
    out = capsys.readouterr().out
    assert code == 4, out
    assert any(line.startswith("… line 3  note  waiting") and line.endswith("waiting for approval") for line in out.splitlines())
    assert "waiting for approval: line 3  note  write the note: reinloop approve note" in out
    assert sum(line.startswith("✓ line ") for line in out.splitlines()) == 2
    assert not (tmp_path / "box" / "n.txt").exists()
    outcome = approve("note", db=db, base_url=openai_server.base_url)
    assert outcome.status == "done" and (tmp_path / "box" / "n.txt").read_text() == "hi"


def test_each_task_reads_its_own_sandbox_never_another_tasks(tmp_path, run_db):
    from langchain_core.messages import ToolMessage

    from reinloop.testing import tool_call

    def reply(messages):
        seen = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        return seen[0] if seen else [tool_call("read_file", {"path": "secret.txt"})]

    lines = []
    for name in ("alice", "bob"):
        box = tmp_path / name
        box.mkdir()
        (box / "secret.txt").write_text(f"the secret of {name}", encoding="utf-8")
        lines.append({"task": f"read the secret of {name}", "thread_id": name, "tools": "read_file",
                      "tool_settings": {"sandbox": str(box)}})
    report = batch(write_tasks(tmp_path / "tasks.jsonl", lines), model=ScriptedChatModel(replies=[reply] * 20),
                   concurrency=2)
    answers = {o.thread_id: o.answer for o in report.outcomes}
    assert answers == {"alice": "the secret of alice", "bob": "the secret of bob"}, answers
