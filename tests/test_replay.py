"""reinloop.replay: a stored run re-run on its stored replies, and the first step where it diverges."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from langchain_core.tools import tool

from reinloop import Limits, build_graph
from reinloop.protocols.answers import AnswerRules
from reinloop.cli.app import main
from reinloop.errors import NotReplayableError
from reinloop.runs.replay import EXIT_DIVERGED, replay
from reinloop.protocols.repeats import VARY_TRIES
from reinloop.runs.api import prune_runs, resume, run
from reinloop.testing import replay_model, replay_report

from .openai_server import PLAUSIBLE, completion


def calc(expression: str) -> dict:
    return completion(tool_calls=[{"name": "calculator", "args": {"expression": expression}}], **PLAUSIBLE)


@tool
def lookup(city: str) -> str:
    """The population of a city."""
    return {"Oslo": "709,000", "Bergen": "291,000"}.get(city, "unknown")


@tool("lookup")
def lookup_changed(city: str) -> str:
    """The population of a city."""
    return "a lot"


def looked_up(city: str) -> dict:
    return completion(tool_calls=[{"name": "lookup", "args": {"city": city}}], **PLAUSIBLE)


@pytest.fixture
def recorded(openai_server, run_db):
    """A three-step run recorded through the real OpenAI client: calculator, lookup, answer."""
    openai_server.responses += [calc("2*3"), looked_up("Oslo"), completion("Oslo has 709,000 people; 2*3 is 6", **PLAUSIBLE)]
    outcome = run("population and a product", model="openai:gpt-4o-mini", base_url=openai_server.base_url,
                  tools=["calculator", lookup], thread_id="r1", limits=Limits(max_steps=10))
    assert outcome.status == "done"
    return run_db


def test_a_run_recorded_through_the_openai_client_replays_identically(recorded):
    report = replay("r1", recorded, tools=[lookup])
    assert report.identical and report.divergence is None and report.exit_code == 0
    assert (report.steps, report.model_calls) == (3, 3)
    assert report.outcome["answer"] == "Oslo has 709,000 people; 2*3 is 6"
    assert report.outcome["counters"]["prompt_tokens"] == 3 * 960  # the stored usage, served again


def test_stubbed_tools_serve_the_stored_observations(recorded):
    report = replay("r1", recorded, stub_tools=True, tools=[lookup_changed])  # the stub answers, not the tool
    assert report.identical and report.stub_tools


def test_a_changed_tool_is_a_divergence_at_the_step_it_first_answers_otherwise(recorded):
    report = replay("r1", recorded, tools=[lookup_changed])
    d = report.divergence
    assert (d.run, d.step, d.kind) == (1, 2, "observation")
    assert d.recorded == [("709,000", False)] and d.replayed == [("a lot", False)]
    assert report.exit_code == EXIT_DIVERGED == 5


def test_a_lowered_step_limit_is_a_divergence_at_the_step_the_guard_breaks(recorded):
    d = replay("r1", recorded, tools=[lookup], limits={"max_steps": 1}).divergence
    assert (d.step, d.kind, d.recorded, d.replayed) == (1, "decision", "continue", "pause")


def test_a_changed_system_prompt_is_a_prompt_divergence_at_step_one(recorded):
    d = replay("r1", recorded, tools=[lookup], system_prompt="Answer in French.").divergence
    assert (d.step, d.kind) == (1, "prompt") and d.recorded != d.replayed


def test_a_replay_of_a_paused_run_stops_at_the_same_break(openai_server, run_db):
    openai_server.responses += [calc("1+1"), calc("2+2")]
    outcome = run("add up", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
                  thread_id="p1", limits=Limits(max_steps=2))
    assert outcome.paused
    report = replay("p1", run_db)
    assert report.identical
    assert report.outcome["paused"] and report.outcome["break_reason"] == "max_steps" and report.steps == 2


def test_a_resumed_run_replays_with_the_operators_answer_to_its_break(openai_server, run_db):
    openai_server.responses += [calc("1+1"), calc("2+2")]
    run("add up", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
        thread_id="p2", limits=Limits(max_steps=2))
    openai_server.responses.append(completion("4"))
    assert resume("p2", extra_steps=2, hint="answer now").answer == "4"
    report = replay("p2", run_db)
    assert report.identical and report.outcome["answer"] == "4" and report.steps == 3


def test_a_pruned_run_cannot_be_replayed(recorded):
    prune_runs(recorded, keep_last=1)
    with pytest.raises(NotReplayableError, match=r"run 'r1' has 3 steps but only 0 model replies .* not pruned") as info:
        replay("r1", recorded, tools=[lookup])
    assert (info.value.steps, info.value.replies) == (3, 0)


def test_replay_model_serves_the_stored_replies_in_order(recorded):
    model = replay_model("r1", recorded)
    assert model.remaining() == 3
    from reinloop.tools import builtins

    graph = build_graph(model, [*builtins("calculator"), lookup])
    state = graph.invoke({"task": "population and a product"})
    assert state["answer"] == "Oslo has 709,000 people; 2*3 is 6" and model.remaining() == 0
    assert replay_report("r1", recorded, tools=[lookup]).identical


def test_the_cli_replays_in_a_subprocess_identical_then_diverged(openai_server, run_db):
    openai_server.responses += [calc("6*7"), completion("42")]
    run("multiply", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator", thread_id="c1")
    env = {**os.environ, "REINLOOP_DB": str(run_db)}
    env.pop("OPENAI_API_KEY", None)  # a replay never calls the model
    command = [sys.executable, "-m", "reinloop", "replay", "c1"]
    same = subprocess.run(command, capture_output=True, text=True, env=env)
    assert same.returncode == 0, same.stderr
    assert same.stdout == "replay of c1: identical (2 steps, 2 model calls)\n"
    other = subprocess.run([*command, "--json", "--stub-tools", "--max-steps", "1"], capture_output=True, text=True, env=env)
    assert other.returncode == 5, other.stderr
    report = json.loads(other.stdout)
    assert report["identical"] is False and report["stub_tools"] is True
    assert report["divergence"]["step"] == 1 and report["divergence"]["kind"] == "decision"


def test_replaying_an_unknown_thread_is_a_one_line_error(cli_error):
    assert cli_error("replay", "nope").startswith("reinloop: error: no run database at ")


def test_the_cli_says_where_a_replay_diverged(openai_server, capsys):
    openai_server.responses += [calc("6*7"), completion("42")]
    run("multiply", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator", thread_id="c2")
    assert main(["replay", "c2", "--max-steps", "1"]) == 5
    assert capsys.readouterr().out == ('replay of c2: diverged at run 1, step 1 (decision): step 1: the guard decided '
                                       'otherwise: recorded "continue", replayed "pause"\n')


def test_a_run_recorded_with_fallback_models_replays_on_its_stored_replies_alone(openai_server, run_db, monkeypatch):
    from .openai_server import OpenAIServer

    with OpenAIServer() as fallback:
        openai_server.responses += [completion("6")]
        outcome = run("2*3", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools=["calculator"],
                      thread_id="fb", fallback_models=[f"openai:fallback@{fallback.base_url}"])
    assert outcome.status == "done"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no model is called: none needs a key
    report = replay("fb", run_db)
    assert report.identical and report.model_calls == 1


def test_a_run_whose_steps_re_asked_the_model_replays_every_call_it_made(openai_server, run_db):
    # step 2 repeats step 1's lookup: vary_repeats asks again (the repeat is put aside), and Bergen is kept
    openai_server.responses += [looked_up("Oslo"), looked_up("Oslo"), looked_up("Bergen"),
                                completion("Oslo 709,000, Bergen 291,000")]
    outcome = run("two cities", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools=["calculator", lookup],
                  thread_id="v1", answers=AnswerRules(vary_repeats=True))
    assert outcome.status == "done" and outcome.counters["llm_calls"] == 4
    stored = replay_model("v1", run_db)
    assert stored.remaining() == 4  # the reply put aside is served again, before the one kept
    report = replay("v1", run_db, tools=[lookup])
    assert report.identical and report.model_calls == 4
    assert report.outcome["counters"]["llm_calls"] == 4


def test_a_kept_reply_that_still_repeats_replays_without_shifting_the_later_replies(openai_server, run_db):
    # every re-ask repeats too: the kept reply is itself a repeat, and a replay serving it first would re-ask
    # again and take the next step's reply
    repeats = [looked_up("Oslo") for _ in range(1 + VARY_TRIES + 1)]  # the repeat, its resamples, the withheld re-ask
    openai_server.responses += [looked_up("Oslo"), *repeats, completion("Oslo has 709,000 people")]
    outcome = run("one city", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools=["calculator", lookup],
                  thread_id="v2", answers=AnswerRules(vary_repeats=True))
    calls = outcome.counters["llm_calls"]
    assert outcome.break_reason == "repeated_action" and calls == len(openai_server.requests) > 2
    report = replay("v2", run_db, tools=[lookup])
    assert report.identical, report.divergence
    assert report.model_calls == calls == len(openai_server.requests)


def replay_cli(run_db, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REINLOOP_DB": str(run_db)}
    env.pop("OPENAI_API_KEY", None)  # a replay never calls the model
    return subprocess.run([sys.executable, "-m", "reinloop", "replay", *argv], capture_output=True, text=True, env=env)


def test_a_run_that_hit_its_cost_budget_replays_at_its_recorded_prices(openai_server, run_db):
    # every call costs (960 + 40) * $20 / 1M = $0.02: the warning near the budget, then the break (the estimate of
    # the next call would cross it), come again
    openai_server.responses += [calc("1+1"), calc("2+2"), calc("3+3")]
    outcome = run("add up", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
                  thread_id="cost", prices={"gpt-4o-mini": {"input": 20, "output": 20}}, limits=Limits(max_cost=0.05))
    assert outcome.break_reason == "cost_budget" and outcome.counters["cost_usd"] >= 0.04
    proc = replay_cli(run_db, "cost", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["identical"] and report["outcome"]["break_reason"] == "cost_budget"
    assert report["outcome"]["counters"]["cost_usd"] == pytest.approx(outcome.counters["cost_usd"])


def test_a_run_whose_call_the_operator_edited_replays_the_edited_call(openai_server, run_db, tmp_path):
    from reinloop.runs.pending import approve

    (tmp_path / "box").mkdir()
    write = {"name": "write_file", "args": {"path": "note.txt", "content": "hello"}, "id": "w1"}
    openai_server.responses += [completion(tool_calls=[write])]
    waiting = run("write a note", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="write_file",
                  thread_id="ed", tool_settings={"sandbox": str(tmp_path / "box")}, approve="side-effects")
    assert waiting.status == "waiting"
    openai_server.responses += [completion("written")]
    done = approve("ed", waiting.waiting[0]["id"], edit={"path": "other.txt", "content": "edited"})
    assert done.answer == "written" and (tmp_path / "box" / "other.txt").read_text() == "edited"
    proc = replay_cli(run_db, "ed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "replay of ed: identical (2 steps, 2 model calls)\n"
