"""reinloop.runs and its commands: runs are stored, listed, shown, resumed, pruned and deleted.

Tests that take ``db_url`` run twice: on a SQLite file and on PostgreSQL (``$REINLOOP_DB`` points at it).
"""

from __future__ import annotations

import json

import pytest

from reinloop import Limits
from reinloop.cli.app import main
from reinloop.errors import ConfigurationError, NotResumableError
from reinloop.runs.api import list_runs, prune_runs, resume, run, show_run
from reinloop.testing import ScriptedChatModel, tool_call

from .openai_server import completion


def calc(expression: str) -> dict:
    return completion(tool_calls=[{"name": "calculator", "args": {"expression": expression}}])


def cli_json(capsys, *argv: str) -> tuple[int, object]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_run_stores_its_settings_and_never_an_api_key(openai_server, run_db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-key")
    openai_server.responses.append(completion('{"final_answer": "hello"}'))
    outcome = run("say hello", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
                  limits=Limits(max_steps=4), thread_id="s1", protocol="json", system_prompt="Be brief.")
    assert outcome.status == "done"
    (record,) = list_runs()
    assert (record.thread_id, record.model, record.base_url, record.protocol) == (
        "s1", "openai:gpt-4o-mini", openai_server.base_url, "json")
    assert record.tools == ["calculator"] and record.limits["max_steps"] == 4 and record.system_prompt == "Be brief."
    assert b"sk-very-secret-key" not in run_db.read_bytes()
    assert openai_server.requests[0]["messages"][0]["content"].startswith("Be brief.")


def test_cli_break_then_resume_with_extra_steps_and_a_hint(openai_server, capsys, db_url):
    openai_server.responses += [calc("1+1"), calc("2+2")]
    code = main(["run", "add up", "--base-url", openai_server.base_url, "--tools", "calculator",
                 "--max-steps", "2", "--thread", "c1"])
    out = capsys.readouterr().out
    assert code == 3
    assert "PAUSED at max_steps: reached the step limit: 2 of 2 steps" in out
    assert ("paused at the break: raise the step limit: resume with extra_steps (reinloop resume c1 --extra-steps N); "
            "or end it: reinloop resume c1 --abort") in out
    openai_server.responses.append(completion("4"))
    code = main(["resume", "c1", "--extra-steps", "3", "--hint", "answer now"])
    out = capsys.readouterr().out
    assert code == 0 and "answer: 4" in out and "[step 3/5 · " in out
    assert "[reinloop] answer now" in json.dumps(openai_server.requests[-1], ensure_ascii=False)


def test_a_run_whose_model_endpoint_fails_says_so_and_resumes_from_the_failed_step(openai_server, capsys, db_url):
    from .openai_server import Raw

    down = Raw(500, json.dumps({"error": {"message": "the model server is down"}}))
    openai_server.responses += [calc("6*7"), down, down]  # one call and one retry
    code = main(["run", "multiply", "--base-url", openai_server.base_url, "--thread", "e1", "--model-retries", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert err[0].startswith("reinloop: error: run e1 stopped: ")
    assert err[0].endswith("its progress is saved: resume it with `reinloop resume e1`")
    openai_server.responses.append(completion("42"))
    code, out = cli_json(capsys, "resume", "e1", "--json", "--quiet")
    assert code == 0 and out["answer"] == "42" and out["counters"]["steps"] == 2
    assert len(openai_server.requests) == 4  # the first step was not asked again


def test_resume_abort_ends_the_run_broken(openai_server, capsys, db_url):
    openai_server.responses += [calc("1+1")]
    main(["run", "t", "--base-url", openai_server.base_url, "--max-steps", "1", "--thread", "a1"])
    capsys.readouterr()
    code, out = cli_json(capsys, "resume", "a1", "--abort", "--json", "--quiet")
    assert code == 3 and out["break_reason"] == "aborted" and not out["paused"]
    with pytest.raises(NotResumableError, match="run 'a1' ended broken \\(aborted: aborted by the operator"):
        resume("a1")


def test_resume_reuses_stored_settings_and_flags_override_them(openai_server, capsys):
    openai_server.responses += [calc("1+1")]
    main(["run", "t", "--base-url", openai_server.base_url, "--max-steps", "1", "--max-repeats", "5",
          "--tools", "calculator", "--thread", "o1"])
    capsys.readouterr()
    openai_server.responses += [{"choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": '{"final_answer": "2"}'}}]}]
    code, out = cli_json(capsys, "resume", "o1", "--extra-steps", "1", "--max-steps", "2", "--protocol", "json", "--json", "--quiet")
    assert code == 0 and out["answer"] == "2"
    last = openai_server.requests[-1]
    assert "tools" not in last  # the json protocol describes tools in the prompt instead
    assert "calculator" in json.dumps(last["messages"][0])
    assert out["counters"]["steps"] == 2


def test_runs_list_filters_by_status_and_prints_json(openai_server, capsys, db_url):
    openai_server.responses += [completion("done"), calc("1+1")]
    main(["run", "one", "--base-url", openai_server.base_url, "--thread", "l1"])
    main(["run", "two", "--base-url", openai_server.base_url, "--thread", "l2", "--max-steps", "1"])
    capsys.readouterr()
    code, rows = cli_json(capsys, "runs", "list", "--json")
    assert code == 0 and {r["thread_id"]: r["status"] for r in rows} == {"l1": "done", "l2": "paused"}  # as listed
    code, rows = cli_json(capsys, "runs", "list", "--status", "broken", "--json")
    assert [(r["thread_id"], r["paused"], r["break_reason"]) for r in rows] == [("l2", True, "max_steps")]
    assert main(["runs", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["THREAD", "STATUS", "STEPS"] and lines[1].split()[:3] == ["l2", "paused", "1"]


def test_runs_show_has_steps_counters_and_breaks(openai_server, capsys, db_url):
    openai_server.responses += [calc("6*7")]
    main(["run", "multiply", "--base-url", openai_server.base_url, "--thread", "w1", "--max-steps", "1"])
    capsys.readouterr()
    code, detail = cli_json(capsys, "runs", "show", "w1", "--json")
    assert code == 0
    assert detail["state"]["counters"]["steps"] == 1
    assert detail["state"]["scratchpad"][0]["actions"][0]["observation"] == "42"
    assert detail["breaks"][0]["reason"] == "max_steps" and detail["breaks"][0]["resolution"] is None
    assert detail["pending_break"]["message"] == "reached the step limit: 1 of 1 step"
    assert detail["run"]["model"] == "openai:gpt-4o-mini"
    assert main(["runs", "show", "w1"]) == 0
    text = capsys.readouterr().out
    assert "thread w1: paused (at a break: `reinloop resume` goes on)" in text
    assert 'calculator {"expression": "6*7"} -> 42' in text
    assert "break #1" in text and "-> pending" in text


def test_prune_keeps_every_step_and_the_run_stays_resumable(make_graph, run_db, db_url):
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": f"{i}+1"})] for i in range(8)] + ["9"])
    outcome = run("count", model=model, tools="calculator", limits=Limits(max_steps=6, max_repeats=None), thread_id="p1")
    assert outcome.paused
    report = prune_runs(keep_last=1, vacuum=True)
    assert report.threads == 1 and report.checkpoints_after == 1 < report.checkpoints_before
    assert report.bytes_after < report.bytes_before
    assert len(show_run("p1").steps) == 6
    done = resume("p1", model=model, extra_steps=5)
    assert done.status == "done" and done.answer == "9" and done.counters["steps"] == 9


def test_prune_older_than_leaves_recent_runs_alone(openai_server, db_url):
    openai_server.responses += [completion("a")]
    run("t", base_url=openai_server.base_url, thread_id="recent")
    report = prune_runs(keep_last=1, older_than_days=1)
    assert report.threads == 0 and report.checkpoints_after == report.checkpoints_before
    with pytest.raises(ConfigurationError, match="--keep-last must be at least 1, got 0"):
        prune_runs(keep_last=0)


def test_delete_removes_the_run_and_show_then_says_it_is_gone(openai_server, capsys, db_url):
    openai_server.responses += [completion("a")]
    run("t", base_url=openai_server.base_url, thread_id="d1")
    assert main(["runs", "delete", "d1"]) == 0
    assert capsys.readouterr().out == "deleted run d1\n"
    assert list_runs() == []
    assert main(["runs", "show", "d1"]) == 1


def test_a_run_started_with_a_model_object_needs_the_model_to_resume(run_db):
    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "1+1"})], "2"])
    run("t", model=model, tools="calculator", limits=Limits(max_steps=1), thread_id="m1")
    with pytest.raises(ConfigurationError, match=r"started with a model object \(<ScriptedChatModel object>\).*--model"):
        resume("m1", extra_steps=1)
    assert resume("m1", model=model, extra_steps=1).answer == "2"


def test_extra_limits_do_not_apply_to_a_run_that_was_cut_off(make_graph, run_db):
    from reinloop.checkpoints import SqliteCheckpointer

    with SqliteCheckpointer.open(run_db) as saver:
        saver.db.runs.record_settings("x1", {"model": "openai:gpt-4o-mini", "tools": ["calculator"]})
        graph, _ = make_graph([[tool_call("calculator", {"expression": "1+1"})], "2"], checkpointer=saver)
        graph.invoke({"task": "t"}, {"configurable": {"thread_id": "x1"}}, interrupt_before=["execute"])
    with pytest.raises(ConfigurationError, match="not paused at a break .* resume it without them"):
        resume("x1", extra_steps=2, base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("command", [["resume"], ["runs"], ["runs", "list"], ["runs", "show"], ["runs", "prune"], ["runs", "delete"]])
def test_every_new_command_help_has_an_example(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert "example: reinloop " + " ".join(command) in capsys.readouterr().out


class Crash(BaseException):
    """The process dying (not an Exception: nothing may catch it as a run error)."""


def test_a_run_killed_between_a_nodes_writes_and_the_next_checkpoint_resumes(run_db, monkeypatch):
    from reinloop.checkpoints.sql import SqlCheckpointer

    put = SqlCheckpointer.put

    def dying_put(self, config, checkpoint, metadata, new_versions):
        if metadata.get("step") == 2:  # parse's writes are stored; the checkpoint after it never is
            raise Crash
        return put(self, config, checkpoint, metadata, new_versions)

    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "6*7"})], "42"])
    monkeypatch.setattr(SqlCheckpointer, "put", dying_put)
    with pytest.raises(Crash):
        run("multiply", model=model, tools="calculator", thread_id="k1")
    monkeypatch.setattr(SqlCheckpointer, "put", put)
    outcome = resume("k1", model=model)
    assert outcome.status == "done" and outcome.answer == "42" and model.calls == 2


def test_runs_show_text_prints_the_summary_and_the_results_in_hand(run_db, capsys):
    replies = [[tool_call("calculator", {"expression": f"{i}*7"})] for i in range(1, 8)]
    model = ScriptedChatModel(replies=replies)
    run("multiply", model=model, tools="calculator", limits=Limits(max_steps=7), thread_id="m1",
        memory={"summary_batch": 3})  # a fold every 3 steps, so 7 steps have a summary
    capsys.readouterr()
    assert main(["runs", "show", "m1"]) == 0
    text = capsys.readouterr().out
    summary = text.split("summary:\n", 1)[1]
    assert summary.startswith("  Steps 1–3: ") and "7" in summary.splitlines()[0]
    assert 'in hand at the break: step 7: calculator {"expression": "7*7"} -> 49' in text


def test_resume_overrides_retry_memory_and_tool_detail_from_the_command_line(openai_server, capsys):
    openai_server.responses += [calc("1+1")]
    main(["run", "t", "--base-url", openai_server.base_url, "--max-steps", "1", "--tools", "calculator",
          "--thread", "r1"])
    capsys.readouterr()
    openai_server.responses += [completion("2")]
    code, out = cli_json(capsys, "resume", "r1", "--extra-steps", "1", "--tool-detail", "compact",
                         "--model-retries", "0", "--window-steps", "1", "--max-output-tokens", "99", "--json", "--quiet")
    assert code == 0 and out["answer"] == "2"
    first, last = openai_server.requests[0], openai_server.requests[-1]
    assert "description" in first["tools"][0]["function"]["parameters"]["properties"]["expression"]
    assert "description" not in last["tools"][0]["function"]["parameters"]["properties"]["expression"]
    assert last["max_completion_tokens"] == 99
    stored = show_run("r1").spec  # kept for a later resume
    assert (stored["tool_detail"], stored["retry"]["attempts"], stored["memory"]["window_steps"]) == ("compact", 1, 1)


def test_resume_refuses_a_bad_override_naming_the_flag(openai_server, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["resume", "r1", "--window-steps", "zero"])
    assert exc.value.code == 2
    assert '--window-steps: must be a positive whole number or none, got \'zero\'' in capsys.readouterr().err


def test_a_graph_built_in_python_stores_its_own_spec_and_runs_show_prints_it_not_defaults(run_db, capsys):
    from reinloop import SqliteCheckpointer, build_graph
    from reinloop.protocols.answers import AnswerRules
    from reinloop.tools import builtins

    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": "6*7"})], "42"])
    saver = SqliteCheckpointer.open(run_db)
    graph = build_graph(model, builtins("calculator,translate"), protocol="tool_calling", checkpointer=saver,
                        limits=Limits(max_steps=4, max_seconds=None), answers=AnswerRules(min_tool_calls=1))
    assert graph.invoke({"task": "6*7?"}, {"configurable": {"thread_id": "py1"}})["answer"] == "42"
    stored = saver.db.runs.get("py1").spec
    assert stored["tools"] == ["calculator", "translate"] and stored["model"] == "<ScriptedChatModel object>"
    assert stored["limits"]["max_steps"] == 4 and stored["limits"]["max_seconds"] is None
    assert stored["answers"]["min_tool_calls"] == 1
    capsys.readouterr()
    assert main(["runs", "show", "py1"]) == 0
    text = capsys.readouterr().out
    assert "model: <ScriptedChatModel object>  protocol: tool_calling  tools: calculator,translate" in text
    assert "gpt-4o-mini" not in text  # before, a run made in Python showed the defaults as its settings
