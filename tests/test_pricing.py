"""Cost in money, through the real langchain-openai client against the local OpenAI-compatible server."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from reinloop import ConfigurationError, Limits, Memory, build_graph
from reinloop.runs.outcome import Outcome
from reinloop.models.pricing import Price, Pricing
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import builtins

from .openai_server import completion

CONFIG = {"configurable": {"thread_id": "t1"}}


def priced(text: str = "", *, model: str = "gpt-4o-mini", prompt: int = 2000, cached: int = 0, out: int = 50,
           calls: list | None = None) -> dict:
    """A chat.completion body as OpenAI sends it: the model's name and usage with cached prompt tokens."""
    body = completion(text, tool_calls=calls, prompt_tokens=prompt, completion_tokens=out)
    body["model"] = model
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    return body


def add(i: int) -> list:
    return [{"name": "calculator", "args": {"expression": f"{i}+1"}}]


def graph_on(server, model: str = "openai:gpt-4o-mini", base_url: str | None = None, **options):
    return build_graph(model, builtins("calculator"), base_url=base_url or server.base_url, **options)


def remote_url(server) -> str:
    """The server's URL under a host *name* (this machine's, which /etc/hosts points at 127.0.0.1): reinloop cannot
    know where a name leads, so it prices the endpoint as a remote one."""
    import socket

    name = socket.gethostname()
    try:
        loopback = socket.gethostbyname(name).startswith("127.")
    except OSError:
        loopback = False
    if not loopback or name == "localhost":
        pytest.skip(f"this machine's name {name!r} does not lead to 127.0.0.1")
    return f"http://{name}:{server.port}/v1"


def test_a_call_is_priced_from_the_reported_usage_with_its_cached_tokens_at_the_cached_price(openai_server):
    openai_server.responses += [priced(calls=add(1), prompt=2000, cached=1024, out=50), priced("2", prompt=2100, cached=1920, out=10)]
    out = graph_on(openai_server, local_is_free=False).invoke({"task": "1+1"})  # priced as if it were OpenAI's
    # gpt-4o-mini in genai-prices: $0.15 / M input, $0.075 / M cached input, $0.60 / M output
    first = (976 * 0.15 + 1024 * 0.075 + 50 * 0.60) / 1e6
    second = (180 * 0.15 + 1920 * 0.075 + 10 * 0.60) / 1e6
    c = out["counters"]
    assert c["cost_usd"] == pytest.approx(first + second) and c["cached_tokens"] == 1024 + 1920
    assert c["unpriced_calls"] == 0
    assert c["models"]["gpt-4o-mini"] == {"calls": 2, "input_tokens": 4100, "cached_tokens": 2944,
                                          "output_tokens": 60, "usd": pytest.approx(first + second), "unpriced_calls": 0}
    assert [s["cost_usd"] for s in out["scratchpad"]] == [pytest.approx(first), pytest.approx(second)]
    assert [s["cached_tokens"] for s in out["scratchpad"]] == [1024, 1920]


def test_a_price_given_by_the_user_wins_even_over_the_local_rule(openai_server):
    openai_server.responses += [priced("ok", model="my-finetune", prompt=1_000_000, cached=500_000, out=1_000_000)]
    out = graph_on(openai_server, "openai:my-finetune", local_is_free=True,
                   prices={"my-finetune": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}).invoke({"task": "hi"})
    assert out["counters"]["cost_usd"] == pytest.approx(0.5 * 2.0 + 0.5 * 0.5 + 8.0)
    assert out["counters"]["models"]["my-finetune"]["usd"] == pytest.approx(9.25)


def test_an_endpoint_on_this_machine_the_user_says_is_free_costs_nothing_whatever_the_model(openai_server):
    openai_server.responses += [priced("ok", model="gpt-4o-mini", prompt=5000)]
    events: list = []
    out = graph_on(openai_server, local_is_free=True, sinks=[events.append]).invoke({"task": "hi"})
    assert out["counters"]["cost_usd"] == 0.0 and out["counters"]["unpriced_calls"] == 0
    (decided,) = [e for e in events if e["node"] == "decide"]
    assert decided["data"]["cost"][0]["source"] == "local" and decided["data"]["cost"][0]["usd"] == 0.0
    assert "flags" not in decided["data"]["cost"][0]


def test_a_known_model_behind_a_proxy_on_this_machine_is_priced_and_flagged_as_served_here(openai_server):
    openai_server.responses += [priced("ok", model="gpt-4o", prompt=1_000_000, out=10)]
    events: list = []
    out = build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, sinks=[events.append]).invoke({"task": "hi"})
    assert out["counters"]["cost_usd"] == pytest.approx(2.5 + 10 * 10 / 1e6)  # gpt-4o: $2.50 / M in, $10 / M out
    (call,) = [e for e in events if e["node"] == "decide"][0]["data"]["cost"]
    assert call["source"] == "genai-prices" and call["model"] == "gpt-4o"
    assert call["flags"] == ["priced as gpt-4o (genai-prices) though served on this machine: say local_is_free=True "
                             "(--local-is-free) if this endpoint is free"]


def test_a_model_on_this_machine_the_price_table_does_not_know_is_free_and_flagged_as_such(openai_server):
    openai_server.responses += [priced(calls=add(1), model="my-finetune-7b"), priced("2", model="my-finetune-7b")]
    events: list = []
    out = graph_on(openai_server, "openai:my-finetune-7b", sinks=[events.append]).invoke({"task": "1+1"})
    c = out["counters"]
    assert out["status"] == "done" and c["unpriced_calls"] == 0 and c["cost_usd"] == 0.0
    calls = [e["data"]["cost"][0] for e in events if e["node"] == "decide"]
    assert [(call["source"], call["usd"], call["flags"]) for call in calls] == [
        ("local", 0.0, ["priced at $0: local model not in the price table"])] * 2


def test_a_model_no_price_is_known_for_is_counted_and_flagged_never_priced_at_zero(openai_server):
    openai_server.responses += [priced(calls=add(1), model="my-finetune-7b"), priced("2", model="my-finetune-7b")]
    events: list = []
    out = graph_on(openai_server, "openai:my-finetune-7b", remote_url(openai_server), sinks=[events.append]).invoke(
        {"task": "1+1"})
    c = out["counters"]
    assert out["status"] == "done" and c["unpriced_calls"] == 2 and c["cost_usd"] == 0.0
    assert c["models"]["my-finetune-7b"]["unpriced_calls"] == 2
    decided = [e for e in events if e["node"] == "decide"]
    assert all(e["data"]["cost"][0]["usd"] is None for e in decided)
    assert "; cost unknown: no price known for model 'my-finetune-7b'; give one with prices=" in decided[0]["summary"]
    outcome = Outcome.from_state("t1", out)
    assert outcome.unpriced_calls == 2 and outcome.as_dict()["unpriced_calls"] == 2


def test_an_unpriced_call_under_a_cost_budget_stops_the_run_and_a_resume_lets_unpriced_calls_pass(openai_server):
    openai_server.responses += [priced(calls=add(i), model="my-finetune-7b") for i in range(3)]
    openai_server.responses += [priced("3", model="my-finetune-7b")]
    graph = graph_on(openai_server, "openai:my-finetune-7b", remote_url(openai_server), limits=Limits(max_cost=1.0),
                     checkpointer=InMemorySaver())
    out = graph.invoke({"task": "1+1"}, CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "cost_budget"
    assert "1 model call(s) could not be priced (model my-finetune-7b), so max_cost=$1 cannot be kept" in out["break_message"]
    out = graph.invoke(Command(resume={"action": "continue"}), CONFIG)
    assert out["status"] == "done" and out["answer"] == "3" and out["counters"]["unpriced_calls"] == 4


def test_the_cost_budget_warns_the_model_at_80_percent_then_breaks_and_resumes_with_extra_cost(openai_server):
    # each call: 1,000,000 fresh input tokens of gpt-4o-mini = $0.15
    openai_server.responses += [priced(calls=add(i), prompt=1_000_000, out=0) for i in range(5)]
    openai_server.responses += [priced("done", prompt=1_000_000, out=0)]
    graph = graph_on(openai_server, local_is_free=False, limits=Limits(max_cost=0.5), checkpointer=InMemorySaver())
    out = graph.invoke({"task": "count"}, CONFIG)
    assert out["status"] == "broken" and out["break_reason"] == "cost_budget"
    assert out["break_message"] == "spent the cost budget: $0.6000 of $0.5"
    assert len(openai_server.requests) == 4  # $0.45 after 3 calls (90%): warned; $0.60 after 4: stopped
    warned = [m["content"] for m in openai_server.requests[3]["messages"] if "cost budget" in str(m["content"])]
    assert warned and "90% of this task's cost budget is spent ($0.4500 of $0.5)" in warned[0]
    assert not any("cost budget" in str(m["content"]) for r in openai_server.requests[:3] for m in r["messages"])
    pending = graph.get_state(CONFIG).interrupts[0].value
    assert pending["reason"] == "cost_budget" and "--extra-cost" in pending["how_to_resume"]
    out = graph.invoke(Command(resume={"action": "continue", "extra_cost": 0.5}), CONFIG)
    assert out["status"] == "done" and out["answer"] == "done"
    assert out["counters"]["cost_usd"] == pytest.approx(0.90, abs=1e-4) and out["extensions"]["cost"] == 0.5


def test_a_resume_with_a_negative_extra_cost_is_refused(openai_server):
    openai_server.responses += [priced(calls=add(1), prompt=1_000_000, out=0)]
    graph = graph_on(openai_server, local_is_free=False, limits=Limits(max_cost=0.1), checkpointer=InMemorySaver())
    graph.invoke({"task": "count"}, CONFIG)
    with pytest.raises(ConfigurationError, match="resume extra_cost must be a number >= 0, got -1"):
        graph.invoke(Command(resume={"action": "continue", "extra_cost": -1}), CONFIG)


def test_summarizer_calls_are_priced_with_the_summarizers_own_price():
    replies = [[tool_call("calculator", {"expression": f"{i}+1"})] for i in range(8)] + ["done"]
    summarizer = ScriptedChatModel(usage=(1000, 100))
    graph = build_graph(ScriptedChatModel(replies=replies), builtins("calculator"),
                        memory=Memory(summarizer=summarizer, summary_batch=3), prices={"ScriptedChatModel": Price(input=1.0, output=10.0)})
    out = graph.invoke({"task": "count"})
    folds = sum(e["event"] == "summarized" for s in out["scratchpad"] for e in s["memory"])
    assert folds >= 1
    agent_calls = out["counters"]["llm_calls"] - folds
    # a price by class name covers both: the agent's calls report 10 in + 5 out, the summarizer's 1000 + 100
    assert out["counters"]["cost_usd"] == pytest.approx(folds * (1000 * 1.0 + 100 * 10.0) / 1e6
                                                        + agent_calls * (10 * 1.0 + 5 * 10.0) / 1e6)


def test_a_price_must_be_dollars_per_million_tokens():
    with pytest.raises(ConfigurationError, match=r"prices\['m'\] needs 'input' and 'output'"):
        Pricing.of({"m": {"input": 1.0}})
    with pytest.raises(ConfigurationError, match="Price.output must be a number of dollars per million tokens >= 0"):
        Price(input=1.0, output=-2)


def test_the_html_report_shows_each_steps_cost_and_the_runs_cost_per_model():
    from reinloop import visualize
    from reinloop.models.caching import CachingChatModel

    replies = [[tool_call("calculator", {"expression": f"{i}+1"})] for i in range(3)] + ["done"]
    model = CachingChatModel(inner=ScriptedChatModel(replies=replies))  # replies priced as gpt-5-mini
    graph = build_graph(model, builtins("calculator"), system_prompt="Be careful. " * 400, checkpointer=InMemorySaver())
    out = graph.invoke({"task": "count"}, CONFIG)
    page = visualize(graph, thread_id="t1", format="html")
    total = out["counters"]["models"]["gpt-5-mini"]
    assert total["calls"] == 4 and total["cached_tokens"] > 0
    assert f"gpt-5-mini: 4 calls, ${total['usd']:.4f}" in page
    assert page.count(" cached</span>") == 3  # the first call found nothing in the cache; the others did


def test_the_cli_breaks_at_max_cost_shows_the_cost_and_resumes_with_extra_cost(openai_server, tmp_path, capsys):
    import json
    import re

    from reinloop.cli.app import main

    openai_server.responses += [priced(calls=add(i), model="my-model", prompt=1_000_000, out=0) for i in range(3)]
    openai_server.responses += [priced("done", model="my-model", prompt=1_000_000, out=0)]
    db = str(tmp_path / "runs.db")
    prices = json.dumps({"my-model": {"input": 0.10, "output": 0.0}})  # $0.10 a call here
    code = main(["run", "count", "--model", "openai:my-model", "--base-url", openai_server.base_url, "--tools", "calculator", "--db", db,
                 "--thread", "c1", "--prices", prices, "--max-cost", "0.25", "--no-color"])
    out = capsys.readouterr().out
    assert code == 3 and "run broken: cost_budget: spent the cost budget: $0.3000 of $0.25" in out
    assert re.search(r"thread c1: 3 steps, \d+ tokens, \$0\.3000, 0 errors", out)
    assert "[step 2/10 · " in out and " · $0.2000/$0.25 · " in out  # the live line shows the budget
    assert "reinloop resume c1 --extra-cost 0.50" in out
    assert main(["runs", "list", "--db", db]) == 0 and "   $0.3000  " in capsys.readouterr().out
    code = main(["resume", "c1", "--db", db, "--extra-cost", "0.5", "--base-url", openai_server.base_url, "--json"])
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 0 and outcome["answer"] == "done" and outcome["cost_usd"] == pytest.approx(0.40)
    assert main(["runs", "show", "c1", "--db", db]) == 0
    assert "cost: $0.4000; my-model: 4 calls, $0.4000, 0 of 4,000,000 input tokens cached" in capsys.readouterr().out



TEN_CENTS_A_CALL = {"my-model": {"input": 0.10, "output": 0.0}}
"""``my-model`` at $0.10 a call of 1,000,000 fresh input tokens and no output."""


def run_priced(server, db: str, thread_id: str, calls: int, **changes):
    """A stored run on ``my-model``: ``calls - 1`` calculator calls, then the answer ``done``, $0.10 a call."""
    from reinloop.runs.api import run

    server.responses += [priced(calls=add(i), model="my-model", prompt=1_000_000, out=50) for i in range(calls - 1)]
    server.responses += [priced("done", model="my-model", prompt=1_000_000, out=50)]
    return run("count", db=db, thread_id=thread_id, model="openai:my-model", base_url=server.base_url, tools=["calculator"],
               prices=TEN_CENTS_A_CALL, **changes)


def test_runs_list_and_runs_show_json_give_a_priced_runs_cost(openai_server, tmp_path, capsys):
    import json

    from reinloop.cli.app import main

    db = str(tmp_path / "runs.db")
    assert run_priced(openai_server, db, "p1", calls=2).cost_usd == pytest.approx(0.20)
    assert main(["runs", "list", "--db", db, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["thread_id"] == "p1" and listed["counters"]["cost_usd"] == pytest.approx(0.20)
    assert listed["counters"]["models"]["my-model"]["usd"] == pytest.approx(0.20)
    assert listed["counters"]["unpriced_calls"] == 0
    assert main(["runs", "show", "p1", "--db", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["counters"]["cost_usd"] == pytest.approx(0.20)
    assert shown["state"]["counters"]["cost_usd"] == pytest.approx(0.20)
    assert shown["state"]["counters"]["models"]["my-model"] == {
        "calls": 2, "input_tokens": 2_000_000, "cached_tokens": 0, "output_tokens": 100, "usd": pytest.approx(0.20),
        "unpriced_calls": 0}
    assert [s["cost_usd"] for s in shown["state"]["scratchpad"]] == [pytest.approx(0.10)] * 2
    assert [[(c["model"], c["source"], c["usd"]) for c in s["cost"]] for s in shown["report"]["steps"]] == [
        [("my-model", "prices", pytest.approx(0.10))]] * 2


def test_python_resume_with_extra_cost_continues_a_run_paused_at_its_cost_budget_to_done(openai_server, tmp_path):
    from reinloop.runs.api import resume

    db = str(tmp_path / "runs.db")
    paused = run_priced(openai_server, db, "p2", calls=4, limits={"max_cost": 0.25})
    assert (paused.status, paused.paused, paused.break_reason) == ("broken", True, "cost_budget")
    assert paused.break_message == "spent the cost budget: $0.3000 of $0.25" and paused.cost_usd == pytest.approx(0.30)
    assert len(openai_server.requests) == 3
    done = resume("p2", db=db, extra_cost=0.5)
    assert (done.status, done.answer, done.paused) == ("done", "done", False)
    assert done.cost_usd == pytest.approx(0.40) and done.counters["steps"] == 4 and len(openai_server.requests) == 4

def test_the_cli_refuses_prices_that_are_not_json(capsys):
    from reinloop.cli.app import main

    with pytest.raises(SystemExit) as exit_:
        main(["run", "t", "--prices", "cheap"])
    assert exit_.value.code == 2 and "argument --prices: must be a JSON object, got 'cheap'" in capsys.readouterr().err
