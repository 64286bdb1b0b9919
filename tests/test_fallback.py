"""Model fallback chains (reinloop.fallback): the real langchain-openai client against two or three local servers.

Every test counts the requests each server received: the primary, then its fallbacks.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import ConfigurationError, Limits, ModelCallError, RunSpec, build_graph
from reinloop.errors import RunStoppedError
from reinloop.models.fallback import split_endpoint
from reinloop.models.retry import RetryPolicy
from reinloop.runs.outcome import Outcome
from reinloop.runs.api import resume, run
from reinloop.tools import builtins

from .openai_server import LLAMA_CPP_TOO_LONG, PLAUSIBLE, OpenAIServer, Raw, completion

FAST = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02, timeout=2.0)
CALC = {"name": "calculator", "args": {"expression": "6*7"}}


def error(status: int, **fields: str) -> Raw:
    """An OpenAI error response: ``{"error": {"message": ..., "code": ..., "param": ...}}``."""
    return Raw(status, json.dumps({"error": {"message": "refused", "type": "invalid_request_error", **fields}}))


def chain(*servers: OpenAIServer, protocol: str = "tool_calling", retry: RetryPolicy = FAST, **kwargs):
    """A graph on ``primary-model`` at the first server, falling back to ``fallback-1``, ``fallback-2`` ... at the others."""
    refs = [f"openai:fallback-{i}@{s.base_url}" for i, s in enumerate(servers[1:], 1)]
    return build_graph("openai:primary-model", builtins("calculator"), base_url=servers[0].base_url,
                       fallback_models=refs, protocol=protocol, retry=retry, **kwargs)


@pytest.fixture
def fallback_server():
    with OpenAIServer() as server:
        yield server


TRIGGERS = {
    "429_exhausted": ([error(429), error(429)], "retries_exhausted", 2),
    "500_exhausted": ([error(500), error(500)], "retries_exhausted", 2),
    "context_length": ([error(400, code="context_length_exceeded", param="messages")], "context_length", 1),
    "context_length_llama_cpp": ([Raw(400, json.dumps(LLAMA_CPP_TOO_LONG))], "context_length", 1),
    "refusal": ([completion(refusal="I can't help with that.")], "refusal", 1),
    "content_filter": ([completion("", finish_reason="content_filter")], "refusal", 1),
    "tools_unsupported": ([error(400, param="tools")], "tools_unsupported", 1),
}


@pytest.mark.parametrize("trigger", TRIGGERS, ids=list(TRIGGERS))
def test_each_trigger_moves_the_run_to_the_fallback_model(openai_server, fallback_server, trigger):
    failures, reason, primary_calls = TRIGGERS[trigger]
    openai_server.responses += failures
    fallback_server.responses.append(completion("42", model="fallback-1"))
    out = chain(openai_server, fallback_server).invoke({"task": "6*7"})
    assert out["answer"] == "42"
    assert (len(openai_server.requests), len(fallback_server.requests)) == (primary_calls, 1)
    step = out["scratchpad"][0]
    assert step["model"] == "fallback-1" and step["protocol"] == "tool_calling"
    assert [(f["from_model"], f["to_model"], f["reason"]) for f in step["fallbacks"]] == [
        ("primary-model", "fallback-1", reason)]
    assert out["model_index"] == 1


def test_a_timeout_that_outlasts_its_retries_moves_to_the_fallback(openai_server, fallback_server):
    openai_server.responses += [Raw(200, json.dumps(completion("late")), delay=1.0)] * 2
    fallback_server.responses.append(completion("42"))
    retry = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02, timeout=0.2)
    out = chain(openai_server, fallback_server, retry=retry).invoke({"task": "6*7"})
    assert out["answer"] == "42" and len(openai_server.requests) == 2
    assert out["scratchpad"][0]["fallbacks"][0]["reason"] == "retries_exhausted"


def test_a_failure_another_model_cannot_mend_stands(openai_server, fallback_server):
    openai_server.responses.append(error(401))
    with pytest.raises(ModelCallError) as caught:
        chain(openai_server, fallback_server).invoke({"task": "6*7"})
    assert caught.value.status_code == 401 and fallback_server.requests == []


def test_retries_stopped_by_the_runs_time_limit_do_not_move_on_and_a_resume_stays_on_the_model(
        openai_server, fallback_server):
    slow_down = Raw(429, error(429).body, headers={"Retry-After": "100"})  # a wait past the 5 s the run has left
    openai_server.responses += [slow_down, completion("42", model="primary-model")]
    fallback_server.responses.append(completion("from the fallback"))
    graph = chain(openai_server, fallback_server, limits=Limits(max_seconds=5), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ModelCallError) as caught:
        graph.invoke({"task": "6*7"}, config)
    assert (caught.value.stopped_by, caught.value.next_wait) == ("deadline", 100.0)
    assert (len(openai_server.requests), fallback_server.requests) == (1, [])  # the clock is the run's, not the model's
    out = graph.invoke(None, config)  # the failed step again, on the same model
    assert out["answer"] == "42" and out["model_index"] == 0 and fallback_server.requests == []


def test_auto_tries_json_on_the_same_model_before_a_fallback(openai_server, fallback_server):
    openai_server.responses += [error(400, param="tools"), completion('{"final_answer": "42"}')]
    out = chain(openai_server, fallback_server, protocol="auto").invoke({"task": "6*7"})
    assert out["answer"] == "42" and fallback_server.requests == []
    assert "tools" not in openai_server.requests[1]
    step = out["scratchpad"][0]
    assert step["model"] == "primary-model" and step["protocol"] == "json" and "fallbacks" not in step



def test_the_console_and_the_html_report_show_auto_moving_to_json_on_the_same_model(openai_server, tmp_path):
    from reinloop import visualize
    from reinloop.observe.console import PlainConsole

    openai_server.responses += [error(400, param="tools"), completion('{"final_answer": "42"}', model="primary-model", **PLAUSIBLE)]
    db = str(tmp_path / "runs.db")
    printed = io.StringIO()
    spec = RunSpec(model="openai:primary-model", base_url=openai_server.base_url, tools=("calculator",), protocol="auto")
    outcome = run("6*7", spec, db=db, thread_id="t", on_event=PlainConsole(spec.limits, printed).handle)
    assert outcome.answer == "42"
    lines = printed.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[1:]] == ["  protocol", "  cost", "  answer", "  guard"]
    assert lines[2] == "  cost:        priced at $0: local model not in the price table"  # a local $0 is said
    assert lines[1] == ("  protocol:    tool_calling -> json (tools_unsupported): model endpoint "
                        f"{openai_server.base_url} answered HTTP 400: the request was rejected: check the model name, "
                        "the protocol (try --protocol json) and the paramete…")
    page = visualize(thread_id="t", db=db, format="html")
    row = re.search(r'<tr class="[^"]*" data-step="1">.*?</tr>', page, re.S).group()
    assert re.findall(r'<div class="hint">(protocol switch: .*?): model endpoint ([^ ]+) answered HTTP 400', row) == [
        ("protocol switch: tool_calling &rarr; json (tools_unsupported)", openai_server.base_url)]
    assert "model fallback" not in row


def shown_switches(openai_server: Any, tmp_path: Any, replies: list[Any]) -> tuple[Outcome, list[str], list[str]]:
    """A run under ``auto`` on ``replies``: its outcome, the console's ``protocol:`` lines, the report's switch lines."""
    from reinloop import visualize
    from reinloop.observe.console import PlainConsole

    openai_server.responses += replies
    db, printed = str(tmp_path / "runs.db"), io.StringIO()
    spec = RunSpec(model="openai:primary-model", base_url=openai_server.base_url, tools=("calculator",), protocol="auto")
    outcome = run("6*7", spec, db=db, thread_id="t", on_event=PlainConsole(spec.limits, printed).handle)
    lines = [line for line in printed.getvalue().splitlines() if line.startswith("  protocol:")]
    page = visualize(thread_id="t", db=db, format="html")
    return outcome, lines, re.findall(r'<div class="hint">(protocol switch: [^<]*)</div>', page)


def test_auto_never_moves_to_json_on_text_that_looks_like_a_call_and_shows_no_switch(openai_server, tmp_path):
    text = '{"tool": "calculator", "args": {"expression": "6*7"}}'
    outcome, lines, shown = shown_switches(openai_server, tmp_path, [completion(text)])
    assert outcome.answer == text  # under native tool calling, text is the answer
    assert lines == [] and shown == []


def test_the_console_and_the_html_report_show_auto_moving_on_after_unreadable_replies(openai_server, tmp_path):
    empty = completion("")  # under tool calling the one reply that cannot be read: neither a call nor an answer
    outcome, lines, shown = shown_switches(openai_server, tmp_path, [empty, empty, completion('{"final_answer": "42"}')])
    assert outcome.answer == "42"
    assert [line.split(": ", 1)[1].split(":")[0] for line in lines] == ["   tool_calling -> json (unreadable_replies)"]
    assert [line.split(":")[1] for line in shown] == [" tool_calling &rarr; json (unreadable_replies)"]
    assert len(lines) == len(shown) == 1  # the step after which it moved, and no other


def test_a_fallback_starts_with_the_runs_protocol_afresh(openai_server, fallback_server):
    openai_server.responses += [error(400, param="tools"), error(500), error(500)]  # JSON on the primary fails too
    fallback_server.responses += [completion(tool_calls=[CALC]), completion("42")]
    out = chain(openai_server, fallback_server, protocol="auto").invoke({"task": "6*7"})
    assert out["answer"] == "42" and "tools" in fallback_server.requests[0]
    assert [s["protocol"] for s in out["scratchpad"]] == ["tool_calling", "tool_calling"]


def test_a_chain_of_three_moves_on_twice_in_one_step(openai_server, fallback_server):
    with OpenAIServer() as third:
        openai_server.responses += [error(500), error(500)]
        fallback_server.responses.append(error(400, code="context_length_exceeded"))
        third.responses.append(completion("42", model="fallback-2"))
        out = chain(openai_server, fallback_server, third).invoke({"task": "6*7"})
    step = out["scratchpad"][0]
    assert out["answer"] == "42" and step["model"] == "fallback-2" and out["model_index"] == 2
    assert [(f["from_model"], f["reason"]) for f in step["fallbacks"]] == [
        ("primary-model", "retries_exhausted"), ("fallback-1", "context_length")]


def test_the_run_stays_on_the_fallback_and_a_new_task_starts_on_the_primary(openai_server, fallback_server):
    openai_server.responses += [error(429), error(429), completion("primary again")]
    fallback_server.responses += [completion(tool_calls=[CALC]), completion("42")]
    graph = chain(openai_server, fallback_server, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"task": "6*7"}, config)["answer"] == "42"
    assert (len(openai_server.requests), len(fallback_server.requests)) == (2, 2)  # step 2 went to the fallback
    out = graph.invoke({"task": "again"}, config)
    assert out["answer"] == "primary again" and out["model_index"] == 0


def test_when_the_last_model_fails_too_the_run_stops_resumable(openai_server, fallback_server, tmp_path):
    db = str(tmp_path / "runs.db")
    spec = RunSpec(model="openai:primary-model", base_url=openai_server.base_url, tools=("calculator",),
                   fallback_models=(f"openai:fallback-1@{fallback_server.base_url}",), retry=FAST)
    openai_server.responses += [error(503), error(503)]
    fallback_server.responses += [completion(tool_calls=[CALC]), error(503), error(503)]
    with pytest.raises(RunStoppedError, match="HTTP 503"):
        run("6*7", spec, db=db, thread_id="t")
    fallback_server.responses.append(completion("42"))
    out = resume("t", db=db)  # on the model it was on: the primary is not asked again
    assert out.answer == "42"
    assert (len(openai_server.requests), len(fallback_server.requests)) == (2, 4)


def test_counters_and_cost_are_kept_per_model(openai_server, fallback_server, tmp_path):
    prices = {"primary-model": {"input": 1.0, "output": 2.0}, "fallback-1": {"input": 10.0, "output": 20.0}}
    openai_server.responses += [completion(tool_calls=[CALC], model="primary-model", **PLAUSIBLE), error(500), error(500)]
    fallback_server.responses.append(completion("42", model="fallback-1", **PLAUSIBLE))
    out = run("6*7", db=str(tmp_path / "runs.db"), model="openai:primary-model", base_url=openai_server.base_url,
              tools=["calculator"], fallback_models=[f"openai:fallback-1@{fallback_server.base_url}"], retry=FAST,
              prices=prices, local_is_free=False)
    models = out.counters["models"]
    assert {name: m["calls"] for name, m in models.items()} == {"primary-model": 1, "fallback-1": 1}
    assert models["primary-model"]["usd"] == pytest.approx((960 * 1.0 + 40 * 2.0) / 1e6)
    assert models["fallback-1"]["usd"] == pytest.approx((960 * 10.0 + 40 * 20.0) / 1e6)
    assert out.cost_usd == pytest.approx(models["primary-model"]["usd"] + models["fallback-1"]["usd"])


def test_a_refused_reply_is_priced_and_counted(openai_server, fallback_server):
    openai_server.responses.append(completion(refusal="no", model="primary-model", **PLAUSIBLE))
    fallback_server.responses.append(completion("42", model="fallback-1"))
    out = chain(openai_server, fallback_server, prices={"primary-model": {"input": 1.0, "output": 1.0}},
                local_is_free=False).invoke({"task": "6*7"})
    assert out["counters"]["llm_calls"] == 2
    assert out["counters"]["models"]["primary-model"]["usd"] == pytest.approx(1000 / 1e6)
    refused, answered = out["counters"]["models"]["primary-model"], out["counters"]["models"]["fallback-1"]
    assert refused["input_tokens"] > 0 and refused["output_tokens"] > 0
    # the refusal's tokens count as the answer's do
    assert out["counters"]["prompt_tokens"] == refused["input_tokens"] + answered["input_tokens"]
    assert out["counters"]["completion_tokens"] == refused["output_tokens"] + answered["output_tokens"]


def test_a_model_object_can_be_a_fallback(openai_server):
    from reinloop.testing import ScriptedChatModel

    openai_server.responses += [error(500), error(500)]
    scripted = ScriptedChatModel(replies=["42"])
    graph = build_graph("openai:primary-model", builtins("calculator"), base_url=openai_server.base_url,
                        fallback_models=[scripted], retry=FAST)
    assert graph.reinloop_context.spec.fallback_models == ("<ScriptedChatModel object>",)
    out = graph.invoke({"task": "6*7"})
    assert out["answer"] == "42" and out["scratchpad"][0]["model"] == "ScriptedChatModel"


def test_a_fallback_names_its_endpoint_after_an_at():
    assert split_endpoint("openai:gpt-4o-mini@http://127.0.0.1:8080/v1") == ("openai:gpt-4o-mini", "http://127.0.0.1:8080/v1")
    assert split_endpoint("vertex:claude@20240620") == ("vertex:claude@20240620", None)  # an @ in the model name
    assert split_endpoint("openai:m@https://u:p@host/v1") == ("openai:m", "https://u:p@host/v1")
    with pytest.raises(ConfigurationError, match="names no model; write MODEL or MODEL@BASE_URL"):
        RunSpec(fallback_models=["@http://127.0.0.1/v1"])


def test_a_fallbacks_credentials_are_never_stored_and_a_resume_asks_for_them(openai_server, tmp_path):
    db = str(tmp_path / "runs.db")
    openai_server.responses += [completion(tool_calls=[CALC]), Raw(401, "{}")]
    with pytest.raises(RunStoppedError):
        run("6*7", db=db, thread_id="t", model="openai:m", base_url=openai_server.base_url, tools=["calculator"],
            fallback_models=["openai:f@http://user:secret@127.0.0.1:9/v1"], retry=FAST)
    assert "secret" not in (tmp_path / "runs.db").read_bytes().decode("latin-1")
    with pytest.raises(ConfigurationError, match="pass the fallback again with --fallback-model MODEL@URL"):
        resume("t", db=db)


def test_the_cli_takes_fallback_models_and_prints_each_switch(openai_server, fallback_server, tmp_path):
    openai_server.responses += [error(429), error(429)]
    fallback_server.responses.append(completion("42", model="fallback-1"))
    third = "openai:fallback-2@http://127.0.0.1:9/v1"  # never reached
    proc = subprocess.run(
        [sys.executable, "-m", "reinloop", "run", "6*7", "--model", "openai:primary-model", "--base-url",
         openai_server.base_url, "--fallback-model", f"openai:fallback-1@{fallback_server.base_url}",
         "--fallback-model", third, "--model-retries", "1", "--retry-base-delay", "0.01", "--tools", "calculator",
         "--db", str(tmp_path / "runs.db"), "--thread", "cli"],
        capture_output=True, text=True, timeout=600,  # a loaded 2-core machine has taken minutes
    )
    assert proc.returncode == 0, proc.stderr
    assert "fallback:    primary-model -> fallback-1 (retries_exhausted)" in proc.stdout
    assert "answer:      42" in proc.stdout
    stored = RunSpec.from_json(json.dumps(json.loads(subprocess.run(
        [sys.executable, "-m", "reinloop", "runs", "show", "cli", "--db", str(tmp_path / "runs.db"), "--json"],
        capture_output=True, text=True, timeout=600).stdout)["spec"]))
    assert stored.fallback_models == (f"openai:fallback-1@{fallback_server.base_url}", third)


def test_a_fallback_model_is_offered_the_structured_answers_tool_and_its_answer_is_validated(
        openai_server, fallback_server):
    from pydantic import BaseModel

    from reinloop.protocols.output import ANSWER_TOOL

    class Total(BaseModel):
        value: int

    openai_server.responses += [error(500), error(500)]
    fallback_server.responses.append(completion(tool_calls=[{"name": ANSWER_TOOL, "args": {"value": 42}}]))
    out = chain(openai_server, fallback_server, output=Total).invoke({"task": "6*7"})
    offered = {t["function"]["name"] for t in fallback_server.requests[0]["tools"]}
    assert {"calculator", ANSWER_TOOL} <= offered
    assert out["output"] == Total(value=42) and out["model_index"] == 1



def test_the_console_and_the_html_report_show_both_moves_of_one_step_in_order(openai_server, fallback_server, tmp_path):
    from reinloop import visualize
    from reinloop.observe.console import PlainConsole

    db = str(tmp_path / "runs.db")
    printed = io.StringIO()
    with OpenAIServer() as third:
        openai_server.responses += [error(500), error(500)]
        fallback_server.responses.append(error(400, code="context_length_exceeded"))
        third.responses.append(completion("42", model="fallback-2", **PLAUSIBLE))
        spec = RunSpec(model="openai:primary-model", base_url=openai_server.base_url, tools=("calculator",), retry=FAST,
                       fallback_models=(f"openai:fallback-1@{fallback_server.base_url}", f"openai:fallback-2@{third.base_url}"))
        outcome = run("6*7", spec, db=db, thread_id="t", on_event=PlainConsole(spec.limits, printed).handle)
    assert outcome.answer == "42" and outcome.counters["steps"] == 1
    lines = printed.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[1:]] == ["  fallback", "  fallback", "  cost", "  answer", "  guard"]
    assert lines[3] == "  cost:        priced at $0: local model not in the price table"  # fallback-2's reply
    assert lines[1].startswith("  fallback:    primary-model -> fallback-1 (retries_exhausted): model endpoint "
                               f"{openai_server.base_url} answered HTTP 500")
    assert lines[2].startswith("  fallback:    fallback-1 -> fallback-2 (context_length): model endpoint "
                               f"{fallback_server.base_url} answered HTTP 400")
    page = visualize(thread_id="t", db=db, format="html")
    row = re.search(r'<tr class="[^"]*" data-step="1">.*?</tr>', page, re.S).group()
    assert re.findall(r"model fallback: (\S+) &rarr; (\S+) \((\w+)\): model endpoint ([^ ]+) answered", row) == [
        ("primary-model", "fallback-1", "retries_exhausted", openai_server.base_url),
        ("fallback-1", "fallback-2", "context_length", fallback_server.base_url)]
