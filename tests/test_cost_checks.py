"""The usage an endpoint reports is checked, never trusted, and a call that would cross max_cost is not made.

Through the real langchain-openai client against the local OpenAI-compatible server, which here plays an
endpoint (or a proxy) that reports usage that cannot be right.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from reinloop import Limits, build_graph
from reinloop.models.pricing import is_local, is_local_host, library_price

from .openai_server import completion

ROOT = Path(__file__).resolve().parents[1]


def reply(text: str = "", *, model: str, prompt: int | None, out: int | None, calls: list | None = None) -> dict:
    """A chat.completion body reporting ``model`` and the given usage (``None``: no usage block at all)."""
    body = completion(text, tool_calls=calls, prompt_tokens=prompt or 0, completion_tokens=out or 0, model=model)
    if prompt is None and out is None:
        del body["usage"]
    return body


def decide_costs(events: list) -> list[dict]:
    return [call for e in events if e["node"] == "decide" for call in (e.get("data") or {}).get("cost") or []]


def test_zero_usage_is_counted_from_the_request_and_the_reply_and_flagged(openai_server):
    openai_server.responses += [reply("The answer is 42, as the tables show.", model="gpt-4o", prompt=0, out=0)]
    events: list = []
    out = build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, sinks=[events.append]).invoke(
        {"task": "What is six times seven? Say it in a sentence."})
    (call,) = decide_costs(events)
    assert call["input_tokens"] > 50 and call["output_tokens"] >= 8  # the system prompt and the task; the reply
    assert call["usd"] == pytest.approx(library_price("gpt-4o", call["input_tokens"], 0, call["output_tokens"]))
    assert call["usd"] > 0 and call["counted"] is True
    assert any(f.startswith(f"usage implausible: 0 prompt tokens reported for a request counted at "
                            f"{call['input_tokens']:,}") for f in call["flags"])
    assert any(f.startswith("usage implausible: 0 completion tokens reported for 37 bytes received") for f in call["flags"])
    c = out["counters"]  # the token budget counts what was priced, and the step's record says why
    assert (c["prompt_tokens"], c["completion_tokens"]) == (call["input_tokens"], call["output_tokens"])
    assert out["scratchpad"][-1]["cost_flags"][:2] == call["flags"][:2]


def test_a_huge_reply_reported_as_a_few_tokens_is_priced_by_the_bytes_received(openai_server):
    text = "lorem ipsum dolor sit amet " * 66_667  # 1.8 MB
    openai_server.responses += [reply(text, model="gpt-4o", prompt=900, out=18)]
    events: list = []
    build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, sinks=[events.append]).invoke({"task": "write"})
    (call,) = decide_costs(events)
    assert call["output_tokens"] > 300_000  # 5 words of 1 token each per 27 bytes, at the least half of it
    assert any(f"18 completion tokens reported for {len(text):,} bytes received; priced as the "
               f"{call['output_tokens']:,} estimated from them" in f for f in call["flags"])
    assert call["usd"] > 3.0  # $10 / M output tokens of gpt-4o


def test_a_reply_without_usage_is_counted_not_left_unpriced_or_free(openai_server):
    openai_server.responses += [reply("Forty-two.", model="gpt-4o", prompt=None, out=None)]
    events: list = []
    out = build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, sinks=[events.append]).invoke({"task": "6*7?"})
    (call,) = decide_costs(events)
    assert call["usd"] > 0 and out["counters"]["unpriced_calls"] == 0
    assert call["flags"][0].startswith(f"usage not reported: counted {call['input_tokens']:,} prompt tokens in the "
                                       f"request and estimated {call['output_tokens']:,} completion tokens")


def test_a_reported_model_name_other_than_the_configured_one_is_priced_as_the_configured_model(openai_server):
    openai_server.responses += [reply("ok", model="gpt-4o-mini", prompt=1_000_000, out=10)]
    events: list = []
    out = build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, sinks=[events.append]).invoke({"task": "hi"})
    (call,) = decide_costs(events)
    assert call["model"] == "gpt-4o" and out["counters"]["cost_usd"] == pytest.approx(2.5 + 10 * 10 / 1e6)
    assert "the endpoint reported model 'gpt-4o-mini': priced as the configured 'gpt-4o'" in call["flags"]


def test_a_dated_snapshot_of_the_configured_model_is_the_same_model_and_not_flagged(openai_server):
    openai_server.responses += [reply("ok", model="gpt-4o-2024-08-06", prompt=2_000, out=2)]
    events: list = []
    build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, local_is_free=True,
                sinks=[events.append]).invoke({"task": "hi"})
    (call,) = decide_costs(events)
    assert "flags" not in call


def test_a_call_whose_estimate_would_cross_max_cost_is_not_made_and_the_run_breaks_on_the_budget(openai_server):
    # my-model: $10 / M in, $1,000 / M out; the reply cap (1,024 tokens) alone is estimated at about $1.02
    prices = {"my-model": {"input": 10.0, "output": 1000.0}}
    step = [{"name": "calculator", "args": {"expression": "1+1"}}]
    openai_server.responses += [reply(calls=step, model="my-model", prompt=1_000, out=1_000) for _ in range(3)]
    from reinloop.tools import builtins

    graph = build_graph("openai:my-model", builtins("calculator"), base_url=openai_server.base_url, prices=prices,
                        limits=Limits(max_cost=2.0))
    out = graph.invoke({"task": "add"})
    assert len(openai_server.requests) == 1  # $1.01 spent; the second call, at about $1.02 more, was not made
    assert out["status"] == "broken" and out["break_reason"] == "cost_budget"
    assert out["break_message"].startswith("the next model call was not made: its estimated cost $1.02")
    assert "at the reply cap, my-model) would take the run from $1.0100 to $2.03" in out["break_message"]
    assert "past max_cost=$2" in out["break_message"]
    assert out["counters"]["cost_usd"] == pytest.approx(1.01) and out["counters"]["llm_calls"] == 1


@pytest.mark.parametrize("host, local", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("localhost", True), ("LOCALHOST", True), ("::1", True),
    ("0.0.0.0", True), ("::ffff:127.0.0.1", True),
    ("127.example.com", False), ("127.0.0.1.nip.io", False), ("localhost.evil.com", False), ("10.0.0.2", False),
    ("api.openai.com", False),
])
def test_only_loopback_addresses_and_localhost_are_this_machine(host, local):
    assert is_local_host(host) is local
    url = f"http://[{host}]:8000/v1" if ":" in host else f"http://{host}:8000/v1"
    assert is_local(ChatOpenAI(model="gpt-4o", base_url=url, api_key="k")) is local


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reinloop", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k"})


def test_the_cli_says_an_unknown_local_model_is_priced_at_zero_on_the_console_runs_show_and_the_report(
        openai_server, tmp_path):
    openai_server.responses += [reply("hello", model="my-finetune-7b", prompt=900, out=2)]
    db = str(tmp_path / "runs.db")
    run = cli("run", "say hello", "--model", "openai:my-finetune-7b", "--base-url", openai_server.base_url,
              "--tools", "calculator", "--db", db, "--thread", "t1", "--no-color", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "cost:        priced at $0: local model not in the price table" in run.stdout
    shown = cli("runs", "show", "t1", "--db", db, cwd=tmp_path)
    assert "  cost: priced at $0: local model not in the price table" in shown.stdout
    page = cli("runs", "show", "t1", "--db", db, "--format", "html", cwd=tmp_path)
    assert "cost: priced at $0: local model not in the price table" in page.stdout


def test_the_cli_does_not_make_a_call_that_would_cross_max_cost_and_says_so(openai_server, tmp_path):
    step = [{"name": "calculator", "args": {"expression": "1+1"}}]
    openai_server.responses += [reply(calls=step, model="my-model", prompt=1_000, out=1_000) for _ in range(3)]
    prices = json.dumps({"my-model": {"input": 10.0, "output": 1000.0}})
    db = str(tmp_path / "runs.db")
    run = cli("run", "add", "--model", "openai:my-model", "--base-url", openai_server.base_url, "--tools",
              "calculator", "--db", db, "--thread", "c1", "--prices", prices, "--max-cost", "2", "--no-color",
              cwd=tmp_path)
    assert run.returncode == 3, run.stderr
    assert "run broken: cost_budget: the next model call was not made: its estimated cost $1.02" in run.stdout
    assert "past max_cost=$2" in run.stdout and "reinloop resume c1 --extra-cost" in run.stdout
    assert len(openai_server.requests) == 1


def test_a_refused_reply_reporting_no_usage_is_counted_from_its_request(openai_server):
    from .openai_server import OpenAIServer

    with OpenAIServer() as fallback:
        openai_server.responses.append(reply(model="gpt-4o", prompt=0, out=0) | {"choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "refusal": "no"}, "finish_reason": "stop"}]})
        fallback.responses.append(reply("42", model="gpt-4o", prompt=2_000, out=2))
        events: list = []
        build_graph("openai:gpt-4o", [], base_url=openai_server.base_url, fallback_models=[f"openai:gpt-4o@{fallback.base_url}"],
                    sinks=[events.append]).invoke({"task": "6*7"})
    refused, answered = decide_costs(events)
    counted = re.match(r"usage implausible: 0 prompt tokens reported for a request counted at (\d+)", refused["flags"][0])
    assert counted and int(counted[1]) > 20  # the system message and the task, not a token or two
    assert refused["input_tokens"] == int(counted[1]) and refused["usd"] > 0 and refused["counted"] is True
    assert answered["input_tokens"] == 2_000


def proxied(server) -> dict[str, str]:
    """Environment that sends the OpenAI client's plain-HTTP requests through ``server`` as a forward proxy: a host
    name that resolves nowhere here (``127.example.com``) still reaches the scripted server."""
    return {"HTTP_PROXY": f"http://127.0.0.1:{server.port}", "http_proxy": f"http://127.0.0.1:{server.port}",
            "NO_PROXY": "", "no_proxy": ""}


def cli_json(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict:
    """The outcome line of ``reinloop run --json``."""
    done = subprocess.run([sys.executable, "-m", "reinloop", *args, "--json"], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                                     "OPENAI_API_KEY": "k", **(env or {})})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_cli_prices_a_known_model_on_a_host_name_starting_127_as_remote_even_with_local_is_free(
        openai_server, tmp_path):
    openai_server.responses += [reply("hi", model="gpt-4o", prompt=1_000_000, out=10) for _ in range(2)]
    url = "http://127.example.com:8000/v1"  # a DNS name, which may lead anywhere: not this machine
    for free in ([], ["--local-is-free"]):
        out = cli_json("run", "say hi", "--model", "openai:gpt-4o", "--base-url", url, "--tools", "calculator",
                       "--db", str(tmp_path / "runs.db"), *free, cwd=tmp_path, env=proxied(openai_server))
        assert out["status"] == "done" and out["counters"]["cost_usd"] == pytest.approx(2.5 + 10 * 10 / 1e6)
        assert out["counters"]["models"]["gpt-4o"]["unpriced_calls"] == 0
    assert len(openai_server.requests) == 2  # both runs reached the endpoint under that name


def test_the_cli_prices_a_known_model_on_this_machine_and_says_so_unless_told_local_is_free(openai_server, tmp_path):
    openai_server.responses += [reply("hi", model="gpt-4o", prompt=1_000_000, out=10) for _ in range(2)]
    db = str(tmp_path / "runs.db")
    args = ("run", "say hi", "--model", "openai:gpt-4o", "--base-url", openai_server.base_url, "--tools", "calculator",
            "--db", db, "--no-color")
    priced = cli(*args, "--thread", "p", cwd=tmp_path)
    assert priced.returncode == 0, priced.stderr
    assert ("cost:        priced as gpt-4o (genai-prices) though served on this machine: say local_is_free=True "
            "(--local-is-free) if this endpoint is free") in priced.stdout
    assert "thread p: 1 step, 1000010 tokens, $2.50, 0 errors" in priced.stdout
    free = cli(*args, "--thread", "f", "--local-is-free", cwd=tmp_path)
    assert free.returncode == 0, free.stderr
    assert "cost:" not in free.stdout and "thread f: 1 step, 1000010 tokens, 0 errors" in free.stdout  # no cost: $0


def test_a_summarizer_call_whose_estimate_would_cross_max_cost_is_not_made_and_the_steps_stay_unfolded(
        openai_server):
    from reinloop import Memory
    from reinloop.tools import builtins

    # the agent's model is nearly free; the summarizer's reply cap alone is estimated at about $1.02
    prices = {"my-model": {"input": 0.01, "output": 0.01}, "dear-summarizer": {"input": 10.0, "output": 1000.0}}
    steps = [[{"name": "calculator", "args": {"expression": f"{i}+1"}}] for i in range(6)]
    openai_server.responses += [reply(calls=s, model="my-model", prompt=300, out=20) for s in steps]
    openai_server.responses += [reply("6", model="my-model", prompt=300, out=5) for _ in range(3)]
    summarizer = ChatOpenAI(model="dear-summarizer", base_url=openai_server.base_url, api_key="sk-test")
    graph = build_graph("openai:my-model", builtins("calculator"), base_url=openai_server.base_url, prices=prices,
                        limits=Limits(max_cost=0.5), memory=Memory(summary_batch=3, window_steps=2,
                                                                   summarizer=summarizer))
    out = graph.invoke({"task": "count"})
    assert out["status"] == "done" and out["answer"] == "6"
    assert {r["model"] for r in openai_server.requests} == {"my-model"}  # the summarizer was never called
    failed = [e for s in out["scratchpad"] for e in s.get("memory") or [] if e["event"] == "summary_failed"]
    assert failed and all("CallOverBudget" in e["error"] and "dear-summarizer" in e["error"] for e in failed)
    assert out["counters"]["cost_usd"] < 0.5
