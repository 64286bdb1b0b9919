"""The benchmark harness runs, and its answer key comes from the real tools."""

from __future__ import annotations

import json

from benchmarks.eval.__main__ import main, table
from benchmarks.eval.tasks import all_tasks, is_correct, solve


def test_fifty_tasks_whose_answer_keys_come_from_running_their_plans():
    tasks = all_tasks()
    assert len(tasks) == 50
    assert sum(len(t.steps) >= 5 for t in tasks) >= 10  # facts needed 3+ steps back
    plan = solve(tasks[0])
    assert is_correct(f"about {plan.answer} people per km²", plan)
    assert not is_correct("no idea", plan)


def test_a_tool_call_written_as_text_is_no_answer_even_when_it_holds_the_key():
    note = next(t for t in all_tasks() if t.id == "D-0")
    plan = solve(note)
    assert plan.answer in note.text  # the key is in the task: echoing the task must not score
    assert is_correct(f"The value recorded is {plan.answer}.", plan)
    call = '{"name": "db_insert", "arguments": {"table": "notes", "row": {"value": "%s"}}}' % plan.answer
    assert not is_correct(call, plan)
    assert not is_correct(f"```json\n{call}\n```", plan)
    assert not is_correct(f"<tool_call>\n{call}\n</tool_call>", plan)


def test_an_answer_that_repeats_the_task_does_not_score_though_the_task_holds_the_key():
    note = next(t for t in all_tasks() if t.id == "D-1")
    plan = solve(note)
    assert not is_correct(note.text, plan, note.text)  # SmolLM2 under create_agent "answered" so
    assert not is_correct(f"好的：{note.text[:30]}", plan, note.text)
    assert is_correct(f"value={plan.answer}", plan, note.text)
    assert is_correct(f"The value for key=ticket-101 in the notes table is {plan.answer}.", plan, note.text)


def test_an_answer_that_restates_the_question_before_its_figure_scores_where_the_task_lacks_the_key():
    task = next(t for t in all_tasks() if t.id == "A-aurora")
    plan = solve(task)
    assert plan.answer == "72.17" and plan.answer not in task.text
    assert is_correct("Aurora X1 智能手表的售价除以续航小时数是 72.17 元每小时。", plan, task.text)  # Qwen, tool calling
    assert not is_correct(task.text, plan, task.text)


def test_json_report_has_every_contestant_and_field(capsys):
    assert main(["--limit", "3", "--fault-rate", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"reinloop", "reinloop_compact", "create_agent", "bare_loop"}
    for numbers in report.values():
        assert set(numbers) == {"success_rate", "mean_iterations", "prompt_tokens_per_task",
                                "prompt_tokens_per_correct_answer", "completion_tokens_per_task",
                                "seconds_per_task", "framework_ms_per_step", "endings", "usd_per_correct_answer",
                                "cache_hit_rate", "unpriced_calls"}
        assert numbers["unpriced_calls"] == 0  # the simulated model behind the cache is priced as gpt-5-mini
    assert report["reinloop"]["usd_per_correct_answer"] > 0 and report["create_agent"]["cache_hit_rate"] > 0
    assert report["reinloop"]["success_rate"] == 1.0  # without faults, every plan is followed to its answer
    assert report["reinloop"]["endings"] == {"answer": 3, "limit": 0, "crash": 0}
    # every task solved: a correct answer costs what a task costs
    assert report["reinloop"]["prompt_tokens_per_correct_answer"] == report["reinloop"]["prompt_tokens_per_task"]
    assert report["reinloop_compact"]["success_rate"] == 1.0  # compact tool lines lose no task
    # same calls, same steps: the difference is the tool schemas each call carries
    assert report["reinloop_compact"]["mean_iterations"] == report["reinloop"]["mean_iterations"]
    assert report["reinloop_compact"]["prompt_tokens_per_task"] < 0.6 * report["reinloop"]["prompt_tokens_per_task"]


def test_the_same_suite_runs_against_a_real_endpoint(openai_server, capsys):
    from tests.openai_server import completion

    plain, as_json = completion("I do not know"), completion('{"final_answer": "I do not know"}')
    # one answer per contestant, in their order: native tool calling, JSON, native, JSON
    openai_server.responses += [plain, as_json, plain, as_json]
    assert main(["--limit", "1", "--model", "openai:test-model", "--base-url", openai_server.base_url,
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(openai_server.requests) == 4  # every contestant really called the endpoint
    assert {name: r["endings"]["answer"] for name, r in report.items()} == {
        "reinloop": 1, "reinloop_compact": 1, "create_agent": 1, "bare_loop": 1}
    assert all(r["success_rate"] == 0.0 for r in report.values())  # a wrong answer is a failure
    assert all(r["prompt_tokens_per_correct_answer"] is None for r in report.values())  # no answer to divide by


def test_the_table_prices_a_correct_answer_and_shows_a_dash_for_a_loop_with_none():
    def numbers(per_task, per_answer):
        return {"success_rate": 0.5, "mean_iterations": 3.0, "prompt_tokens_per_task": per_task,
                "prompt_tokens_per_correct_answer": per_answer, "framework_ms_per_step": 1.0,
                "endings": {"answer": 2, "limit": 0, "crash": 0}}

    rows = table({"create_agent": numbers(1000, 4000), "reinloop": numbers(800, 1000),
                  "bare_loop": numbers(300, None)}).splitlines()
    assert "prompt tokens / correct answer" in rows[0]
    assert "| 800 | 0.80x | 1,000 (0.25x) |" in rows[3]
    assert "| 300 | 0.30x | — |" in rows[4]


def test_one_task_per_family_covers_every_family_shortest_plans_first():
    from benchmarks.eval.tasks import FAMILIES, family, select

    chosen = select(all_tasks(), "first-of-each")
    assert sorted(family(t.id) for t in chosen) == sorted(FAMILIES)
    assert [len(t.steps) for t in chosen] == sorted(len(t.steps) for t in chosen)
    assert [t.id for t in select(all_tasks(), "F,D-1")] == ["F-0", "F-1", "F-2", "F-3", "D-1"]


def test_an_unknown_task_or_family_is_a_usage_error_naming_the_families(capsys):
    assert main(["--tasks", "Z", "--json"]) == 2
    assert "no task or family 'Z'; families are A, B, C, D, E, F, H" in capsys.readouterr().err


def test_real_tier_without_the_model_file_says_how_to_fetch_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REINLOOP_MODELS", str(tmp_path))
    assert main(["--real", "qwen0.5b", "--tasks", "F-0"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ")
    assert "fetch-models.sh" in error or "llama-cpp-python is not installed" in error


def test_a_saved_run_is_reported_again_per_protocol_and_family_and_rescored(tmp_path, capsys):
    save = tmp_path / "runs.jsonl"
    assert main(["--tasks", "F-0,D-0", "--contestants", "reinloop,create_agent", "--fault-rate", "0",
                 "--save", str(save), "--json"]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in save.read_text().splitlines()]
    assert [(r["task"], r["contestant"]) for r in lines] == [
        ("F-0", "reinloop"), ("F-0", "create_agent"), ("D-0", "reinloop"), ("D-0", "create_agent")]
    lines[0]["correct"] = False  # a stale verdict: the report scores the answer again
    lines[3]["answer"] = '{"name": "db_insert", "arguments": {"row": {"value": "status-open-0"}}}'
    save.write_text("".join(json.dumps(r) + "\n" for r in lines[:-1] + [lines[-1], {**lines[0], "task": "C-0"}]))
    assert main(["--report-from", str(save)]) == 0
    out = capsys.readouterr().out
    assert "| reinloop | tool_calling | 100% |" in out
    assert "| create_agent | native tool calls | 50% |" in out
    assert "| D: database insert, then query | 1/1 | 0/1 |" in out
    assert "| all | 2/2 | 1/2 |" in out  # C-0 has one contestant's run only: left out


def test_rules_sets_the_answer_rules_of_the_ruled_contestants_and_refuses_unknown_fields(monkeypatch, capsys):
    import pytest

    from benchmarks.eval import contestants
    from benchmarks.eval.__main__ import parse_args
    from reinloop.protocols.answers import AnswerRules

    monkeypatch.setattr(contestants, "SMALL_MODEL_RULES", contestants.SMALL_MODEL_RULES)
    parse_args(["--contestants", "reinloop_ruled", "--rules", '{"min_tool_calls": 2, "vary_repeats": true}'])
    assert contestants.SMALL_MODEL_RULES == AnswerRules(min_tool_calls=2, vary_repeats=True)
    with pytest.raises(SystemExit):
        parse_args(["--rules", '{"min_tools": 2}'])
    assert "not AnswerRules as JSON" in capsys.readouterr().err


def test_no_system_prompt_sends_reinloop_its_rules_alone_and_create_agent_no_system_message(
        openai_server, monkeypatch, capsys):
    from benchmarks.eval import contestants
    from tests.openai_server import completion

    monkeypatch.setattr(contestants, "SYSTEM", contestants.SYSTEM)  # parse_args sets it for the process
    openai_server.responses += [completion("I do not know"), completion("I do not know")]
    assert main(["--limit", "1", "--model", "openai:test-model", "--base-url", openai_server.base_url,
                 "--contestants", "reinloop,create_agent", "--no-system-prompt", "--json"]) == 0
    ours, theirs = (request["messages"] for request in openai_server.requests)
    assert ours[0]["role"] == "system" and ours[0]["content"].startswith("Call the tools you need")
    assert "careful assistant" not in ours[0]["content"]
    assert [m["role"] for m in theirs] == ["user"]


def test_the_report_names_the_commit_the_run_started_on_and_says_when_the_tree_had_changes(tmp_path):
    import subprocess

    from benchmarks.eval.__main__ import git_commit

    def git(repo, *args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                              capture_output=True, text=True, check=True).stdout.strip()

    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    for repo in (clean, dirty):
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / "loop.py").write_text("x = 1\n")
        git(repo, "add", "loop.py")
        git(repo, "commit", "-q", "-m", "first")
    started = git(clean, "rev-parse", "--short", "HEAD")
    assert git_commit(clean) == started
    (clean / "loop.py").write_text("x = 2\n")
    git(clean, "commit", "-q", "-am", "made while the run ran")
    assert git_commit(clean) == started  # the code the run loaded, not the newest commit
    (dirty / "loop.py").write_text("x = 3\n")
    assert git_commit(dirty) == git(dirty, "rev-parse", "--short", "HEAD") + " + uncommitted changes"
    assert git_commit(tmp_path) == "unknown"  # no checkout
