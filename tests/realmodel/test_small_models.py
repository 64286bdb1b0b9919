"""reinloop against real small models: answers, cut replies, models that never call a tool.

Few and fast on purpose (a couple of minutes on 2 cores); the numbers live in
``python -m benchmarks.eval --real qwen0.5b``.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.eval.real import REQUEST_TIMEOUT
from benchmarks.realserver import Server
from reinloop import ModelCallError, build_graph
from reinloop.runs.limits import Limits
from reinloop.models.resolve import resolve_model
from reinloop.tools import builtins

pytestmark = pytest.mark.realmodel

TASK = "What is 17*23? Use the calculator."
# the wall clock is off: a busy CI machine is slow; steps bound every run, the request timeout a hung server
LIMITS = Limits(max_steps=5, max_seconds=None)


def client(server: Server, **settings: Any) -> Any:
    return resolve_model("openai:local", base_url=server.base_url, temperature=0, timeout=REQUEST_TIMEOUT, **settings)


def run(server: Server, protocol: str, **settings: Any) -> dict[str, Any]:
    graph = build_graph(client(server, **settings), builtins("calculator"), protocol=protocol, limits=LIMITS)
    return graph.invoke({"task": TASK})


def calls(out: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(a["tool"], a["observation"]) for step in out["scratchpad"] for a in step["actions"]]


@pytest.mark.xfail(strict=True, reason="issue 15, measured on 979f9da and on main c7ffcbc (after i-loopfix): Qwen "
                   "repeats its calculator call and the loop breaks on repeated_action instead of answering; "
                   "remove this mark when the run answers 391")
def test_qwen_answers_a_calculator_question_through_the_json_protocol(qwen_server):
    out = run(qwen_server, "json")
    assert out["status"] == "done", out.get("break_message")
    assert "391" in out["answer"]
    assert ("calculator", "391") in calls(out)  # the answer came from the tool, not from memory


@pytest.mark.parametrize("protocol", ["tool_calling", "json"])  # tool_calling failed on 979f9da, passes since i-loopfix
def test_a_reply_cut_by_max_tokens_is_never_taken_as_the_answer(qwen_server, protocol):
    before = qwen_server.stats()["finish_reasons"]
    out = run(qwen_server, protocol, max_tokens=6)  # far too few for a call or a sentence
    after = qwen_server.stats()["finish_reasons"]
    cut = {reason: n - before.get(reason, 0) for reason, n in after.items() if n - before.get(reason, 0)}
    assert set(cut) == {"length"}, cut  # every reply of this run was cut, so none is an answer
    assert out["status"] != "done", f"a cut reply became the answer: {out['answer']!r}"


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react", "auto"])
def test_a_model_that_never_calls_a_tool_ends_its_run_within_the_limits(smol_server, protocol):
    out = run(smol_server, protocol)
    assert out["status"] in ("done", "broken")
    assert out["counters"]["steps"] <= LIMITS.max_steps
    if out["status"] == "done":
        assert out["answer"].strip()  # an answer, not an empty reply
    else:
        assert out["break_reason"] and out["break_message"]


WRAP_UP = [  # a wrap-up request of the eval's E-0 (tool calling), as the run sent it
    {"role": "system", "content": "You are a careful assistant. Use the tools; use the calculator for every "
                                  "calculation.\n\nReply with the final answer as plain text: a sentence or two."},
    {"role": "user", "content": "Task: 先在手册里查杭州的面积，然后计时等待片刻，再把“朋友”翻译成英文，最后计算面积的两倍。"
                                "回答：面积，以及两倍的结果。"},
    {"role": "user", "content": "Results of the tools called for this task, verbatim:\n- step 1: search_docs "
                                "{\"query\": \"杭州\", \"limit\": 5} -> - docs/city_hangzhou.md — 杭州 Hangzhou … "
                                "杭州（Hangzhou）位于浙江。The city government publishes these figures every spring in "
                                "its statistical yearbook; the numbers below are the ones used throughout this "
                                "handbook. 本手册中的数字均以年鉴为准，引用时请注明年份。Transport, education and "
                                "healthcare statistics are covered in separate chapters. … - 面积 (area): 16850 平方公里 "
                                "(km²) …\n- step 3: calculator {\"expression\": \"16850 * 2\"} -> 33700"},
    {"role": "user", "content": "Give the final answer to the task now, from these results. Tools are no longer "
                                "available: do not call or mention one. If the results do not hold the whole answer, "
                                "give the best answer they support."},
]


def test_a_greedy_reply_does_not_depend_on_the_request_before_it(qwen_server):
    """The same request, asked after a request sharing most of its prefix, gets the same reply. Before the
    server reused the prefix cache in whole chunks, Qwen answered this one two ways, by what came before."""
    model = client(qwen_server, max_tokens=40)
    first = model.invoke(WRAP_UP).content
    other = [*WRAP_UP[:-1], {"role": "user", "content": "Now write the final answer: for each thing the task asks "
                                                        "for, its value from the results above."}]
    model.invoke(other)
    assert model.invoke(WRAP_UP).content == first


def test_a_run_of_qwen_with_its_re_asks_replays_identically_from_the_run_database(qwen_server, run_db):
    """A recorded real-model run as a regression test: Qwen under the small-model rules (whose re-asks put
    replies aside), stored in the run database, then replayed from it with no model at all."""
    from benchmarks.eval.contestants import SMALL_MODEL_RULES
    from reinloop.runs.replay import replay
    from reinloop.runs.api import run as stored_run

    outcome = stored_run(TASK, model=client(qwen_server), tools=["calculator"], protocol="json", limits=LIMITS,
                         answers=SMALL_MODEL_RULES, thread_id="qwen-17x23")
    report = replay("qwen-17x23", run_db)
    assert report.identical, report.divergence
    assert report.model_calls == outcome.counters["llm_calls"]  # every call the run made, re-asks included
    assert report.outcome["answer"] == outcome.answer and report.outcome["status"] == outcome.status


def test_a_prompt_longer_than_the_models_context_is_said_to_be_too_large(smol_server):
    """The server answers as llama.cpp's does (400, ``exceed_context_size_error``): the run says what to lower."""
    graph = build_graph(client(smol_server), builtins("calculator"), protocol="json", limits=LIMITS)
    with pytest.raises(ModelCallError) as caught:
        graph.invoke({"task": "Add these numbers: " + " ".join(str(n) for n in range(1000, 2500))})
    assert caught.value.context_exceeded and caught.value.status_code == 400
    assert "the prompt is too large: lower --max-prompt-tokens" in str(caught.value)


def test_the_context_window_served_is_the_one_asked_for_and_a_longer_request_is_refused_as_llama_cpp_does(
        small_context_server):
    import httpx

    words = " ".join(["apple"] * 700)  # about 700 tokens: fits 4,096, not 512
    reply = httpx.post(f"{small_context_server.base_url}/chat/completions", timeout=60,
                       json={"model": "local", "messages": [{"role": "user", "content": words}]})
    error = reply.json()["error"]
    assert (reply.status_code, error["type"], error["n_ctx"]) == (400, "exceed_context_size_error", 512)
    short = httpx.post(f"{small_context_server.base_url}/chat/completions", timeout=60,
                       json={"model": "local", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
    assert short.status_code == 200
