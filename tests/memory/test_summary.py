"""Summaries: steps that leave the window are folded in batches; facts survive; failures do not break runs."""

from __future__ import annotations

import pytest

from reinloop import Limits, Memory, build_graph
from reinloop.protocols.memory import SUMMARIZER_TAG
from langgraph.checkpoint.memory import InMemorySaver

from reinloop.protocols.memory import active_counter
from reinloop.protocols.memory.prompt import summary_fits
from langchain_core.messages import AIMessage, ToolMessage

from reinloop.models.caching import MIN_PREFIX, CachingChatModel, cached_length
from reinloop.protocols.memory.summary import (
    REFOLD_RULES,
    RESULT_ABOVE,
    SHARED_RULES,
    SUMMARY_RULES,
    shared_request,
    summarizer_prompt,
    with_results,
)
from reinloop.testing import ScriptedChatModel, answer_from_prompt, facts_summary, prompt_text, tool_call

from .conftest import FACT, page_text, read_page, reads

ANSWER_FORMATS = {
    "tool_calling": "The code is {0}",
    "json": '{{"final_answer": "The code is {0}"}}',
    "react": "Thought: found it\nFinal Answer: The code is {0}",
}


def run_pages(memory: Memory, protocol: str = "tool_calling", summarizer: ScriptedChatModel | None = None,
              pages: int = 11):
    """Read ``pages`` pages, then answer the vault code from the prompt alone (step ``pages + 1``)."""
    replies = reads(range(1, pages + 1), protocol)
    replies.append(answer_from_prompt(r"vault code is (\d+)", ANSWER_FORMATS[protocol],
                                      default=ANSWER_FORMATS[protocol].format("unknown")))
    model = ScriptedChatModel(replies=replies)
    if summarizer is not None:
        memory = memory.replace(summarizer=summarizer)
    graph = build_graph(model, [read_page], protocol=protocol, memory=memory, limits=Limits(max_steps=pages + 2))
    return graph.invoke({"task": "Find the vault code in the report."}), model


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_a_fact_from_step_2_is_answerable_at_step_12_through_the_summary(protocol):
    out, model = run_pages(Memory(summary_batch=3, window_steps=3), protocol)
    assert out["status"] == "done" and out["counters"]["steps"] == 12
    assert out["answer"] == "The code is 4711"
    last = prompt_text(model.prompts[-1])
    assert page_text(2) not in last  # step 2 itself left the window long ago ...
    assert "Steps 1–3: " in last and FACT in last  # ... its fact came back through the summary


def test_without_summaries_the_fact_is_forgotten():
    out, model = run_pages(Memory(window_steps=3, summarize=False, summary_batch=1))  # a window sliding by one step
    assert out["answer"] == "The code is unknown"
    assert model.summary_prompts == [] and out["summary"] == ""
    evicted = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "evicted"]
    assert [e["steps"] for e in evicted] == [[i] for i in range(1, 9)]
    assert all(e["into"] == "nowhere" for e in evicted)


def test_summaries_are_batched_one_call_per_batch():
    out, model = run_pages(Memory(window_steps=3, summary_batch=3))
    summarized = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summarized"]
    assert [e["steps"] for e in summarized] == [[1, 2, 3], [4, 5, 6]]  # steps 7-8 wait for a third
    assert len(model.summary_prompts) == 2
    assert out["memory_cursor"] == {"folded": 6, "failures": 0}
    assert out["summary"].splitlines()[0].startswith("Steps 1–3: ")


def test_the_summarizer_prompt_asks_to_keep_every_number():
    prompt = summarizer_prompt("find the code", [{"index": 2, "thought": "", "actions": [
        {"tool": "read_page", "args": {"page": 2}, "observation": FACT}]}])
    assert "one or two sentences" in prompt[0].content and "Keep every number" in prompt[0].content
    assert 'called read_page {"page": 2} -> The vault code is 4711.' in prompt[1].content


def test_summarizer_tokens_are_counted_against_the_run():
    out, model = run_pages(Memory(summary_batch=3, window_steps=3))
    calls = len(model.prompts) + len(model.summary_prompts)  # every call reports 10 prompt + 5 completion
    assert out["counters"]["llm_calls"] == calls == 14
    assert out["counters"]["prompt_tokens"] == 10 * calls
    assert out["counters"]["completion_tokens"] == 5 * calls
    summarized = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summarized"]
    assert all(e["tokens_in"] == 10 and e["tokens_out"] == 5 for e in summarized)


def test_summarizer_spending_can_trip_the_token_budget():
    replies = reads(range(1, 12))
    model = ScriptedChatModel(replies=replies)
    graph = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3),
                        limits=Limits(max_steps=20, token_budget=7 * 15 + 1))
    out = graph.invoke({"task": "read"})
    assert out["break_reason"] == "token_budget" and len(model.prompts) == 7  # 7 calls + 1 summary = 120 tokens


def test_a_failing_summarizer_does_not_break_the_run_and_keeps_the_raw_steps():
    down = ScriptedChatModel(summary_reply=ConnectionError("summarizer endpoint down"))
    out, model = run_pages(Memory(summary_batch=3, window_steps=3), summarizer=down)
    assert out["status"] == "done" and out["answer"] == "The code is 4711"  # step 2 was never dropped
    failed = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summary_failed"]
    assert len(failed) == 6 and failed[0]["steps"] == [1, 2, 3]
    assert "ConnectionError: summarizer endpoint down" in failed[0]["error"]
    assert out["memory_cursor"] == {"folded": 0, "failures": 6} and out["summary"] == ""
    assert page_text(2) in prompt_text(model.prompts[-1])  # the raw step stayed in the prompt


def test_a_summarizer_failure_is_retried_at_the_next_step():
    attempts = []

    def flaky(messages):
        attempts.append(len(messages))
        if len(attempts) == 1:
            raise TimeoutError("slow")
        return "pages read; The vault code is 4711."

    out, model = run_pages(Memory(summary_batch=3, window_steps=3), summarizer=ScriptedChatModel(summary_reply=flaky))
    events = [(s["index"], e["event"]) for s in out["scratchpad"] for e in s["memory"]
              if e["event"] in ("summary_failed", "summarized")]
    assert events[:2] == [(7, "summary_failed"), (8, "summarized")]
    assert out["summary"].startswith("Steps 1–4: pages read")  # the retry folds the step that left meanwhile
    assert out["answer"] == "The code is 4711"


def test_an_empty_summary_counts_as_a_failure():
    out, _ = run_pages(Memory(summary_batch=3, window_steps=3), summarizer=ScriptedChatModel(summary_reply="   "))
    failed = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summary_failed"]
    assert failed and failed[0]["error"] == "the summarizer replied with no text"


def test_the_summarizer_is_the_runs_model_by_default_and_tagged():
    seen = []

    class Recording(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(list(run_manager.tags or []))
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = Recording(replies=[*reads(range(1, 7)), "done"])
    build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3)).invoke({"task": "read"})
    assert [SUMMARIZER_TAG in tags for tags in seen] == [False] * 6 + [True, False]


def test_a_summary_past_its_bound_is_merged_into_one_line_and_stays_within_it():
    out, model = run_pages(Memory(summary_batch=3, window_steps=3, summary_max_tokens=40), pages=14)  # steps 1-9 are folded
    lines = out["summary"].splitlines()
    assert lines[0].startswith("Steps 1–6: ") and lines[1].startswith("Steps 7–9: ") and len(lines) == 2
    assert summary_fits(lines, 40, active_counter("o200k_base"))
    merged = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summary_refolded"]
    assert merged and merged[-1]["line"].startswith("Steps 1–6: ")
    assert len(model.summary_prompts) == 3 + len(merged)  # three batches of steps, and the merges
    last = prompt_text(model.prompts[-1])
    assert "Steps 1–6: " in last and "Steps 7–9: " in last  # the whole summary fits its share of the prompt


def test_a_fact_in_old_summary_lines_survives_their_merge():
    def summarizer(messages):
        if messages[0].content == REFOLD_RULES:  # a merge: keep the fact, as a real model is asked to
            return answer_from_prompt(r"vault code is (\d+)", "The vault code is {0}.", "nothing of note")(messages)
        return facts_summary(messages)

    out, model = run_pages(Memory(summary_batch=3, window_steps=3, summary_max_tokens=80), pages=20,
                           summarizer=ScriptedChatModel(summary_reply=summarizer))
    assert any(e["event"] == "summary_refolded" for s in out["scratchpad"] for e in s["memory"])
    assert out["summary"].splitlines()[0].endswith(": The vault code is 4711.")
    assert out["answer"] == "The code is 4711"


def test_an_unchanged_summary_is_not_written_again():
    saver = InMemorySaver()
    graph = build_graph(ScriptedChatModel(replies=[*reads(range(1, 12)), "done"]), [read_page],
                        memory=Memory(summary_batch=3, window_steps=3), checkpointer=saver, limits=Limits(max_steps=13))
    config = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"task": "Find the vault code in the report."}, config)
    added = [s for s in out["scratchpad"] if any(e["event"] == "summarized" for e in s["memory"])]
    versions = {t.checkpoint["channel_versions"].get("summary") for t in saver.list(config)} - {None}
    assert len(added) == 2 and len(versions) == 1 + 2  # set when the run starts, then once per line added


def test_the_summarizer_prompt_also_fits_the_budget():
    from langchain_core.tools import tool

    from reinloop.protocols.memory import active_counter, count_message_tokens

    @tool
    def dump(part: int) -> str:
        """A long log."""
        return f"part {part}: " + "日志行 error=0 ok " * 400

    replies = [[{"name": "dump", "args": {"part": i}, "id": f"c{i}", "type": "tool_call"}] for i in range(1, 7)]
    model = ScriptedChatModel(replies=[*replies, "done"])
    memory = Memory(summary_batch=3, window_steps=3, max_prompt_tokens=2500)
    out = build_graph(model, [dump], memory=memory, limits=Limits(max_steps=10, max_observation_chars=6000)).invoke({"task": "t"})
    assert out["status"] == "done" and model.summary_prompts
    for prompt in model.summary_prompts:
        assert count_message_tokens(prompt, active_counter()) <= 2500
    steps = [{"index": i, "actions": [{"tool": "dump", "args": {}, "observation": "日志行 " * 900}]} for i in (1, 2, 3)]
    clipped = summarizer_prompt("t", steps, max_tokens=1000, counter=active_counter())
    assert count_message_tokens(clipped, active_counter()) <= 1000
    assert "cut to fit the prompt budget" in clipped[1].content and clipped[1].content.startswith("Task: t")


def fold_step(out) -> tuple[int, list[int]]:
    """The first step whose prompt folded, and the steps it folded."""
    return next((s["index"], e["steps"]) for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summarized")


@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_a_fact_from_step_2_is_answerable_at_step_12_after_a_fold_by_size(protocol):
    out, model = run_pages(Memory(fold_tokens=1000), protocol)  # the default rule, a smaller size
    assert out["answer"] == "The code is 4711"
    step, folded = fold_step(out)
    assert folded == list(range(1, step - 3))  # all but the newest window_steps (3) steps, at once
    last = prompt_text(model.prompts[-1])
    assert page_text(2) not in last and FACT in last


def test_folding_by_size_lets_the_window_grow_until_its_steps_pass_fold_tokens():
    out, _ = run_pages(Memory(fold_tokens=1000))
    step, _ = fold_step(out)
    parts = [s["prompt_parts"]["steps"] for s in out["scratchpad"]]
    assert parts[: step - 1] == sorted(parts[: step - 1]) and parts[step - 2] <= 1000  # each prompt extended the last
    assert parts[step - 1] < parts[step - 2]  # the fold cut the window back
    assert len([s for s in out["scratchpad"] if any(e["event"] == "summarized" for e in s["memory"])]) == 1


def test_the_summary_is_asked_for_at_the_end_of_the_agents_last_prompt():
    out, model = run_pages(Memory(fold_tokens=1000))
    step, folded = fold_step(out)
    asked, before = model.summary_prompts[0], model.prompts[step - 2]  # the agent's prompt at the step before
    assert asked[: len(before)] == before  # the same messages, then the new step, then the request
    assert asked[-1].content.startswith(SHARED_RULES) and f"-> {RESULT_ABOVE}" in asked[-1].content
    assert all(f"Step {i}:" in asked[-1].content for i in folded)
    assert FACT in out["summary"]  # the scripted summarizer read step 2's result in the prompt above


def test_through_a_prompt_cache_the_summarizer_reads_the_agents_last_prompt_from_it():
    replies = reads(range(1, 12))
    replies.append(answer_from_prompt(r"vault code is (\d+)", "The code is {0}"))
    inner = ScriptedChatModel(replies=replies, usage=None)
    model = CachingChatModel(inner=inner)
    graph = build_graph(model, [read_page], memory=Memory(fold_tokens=1500), limits=Limits(max_steps=13))
    out = graph.invoke({"task": "Find the vault code in the report."})
    step, _ = fold_step(out)
    agent, summary = model.calls[step - 2], model.calls[step - 1]  # the summarizer's call came just before step's
    assert agent[0] >= MIN_PREFIX and summary[1] == cached_length(agent[0], summary[0]) > 0
    assert out["answer"] == "The code is 4711"


def test_a_summary_asked_in_the_agents_prompt_that_calls_a_tool_is_asked_again_in_its_own_prompt():
    def summarizer(messages):
        if str(messages[-1].content).startswith(SHARED_RULES):
            return [tool_call("read_page", {"page": 1})]  # a model that would rather go on working
        return facts_summary(messages)

    replies = reads(range(1, 12))
    replies.append(answer_from_prompt(r"vault code is (\d+)", "The code is {0}"))
    model = ScriptedChatModel(replies=replies, summary_reply=summarizer)
    out = build_graph(model, [read_page], memory=Memory(fold_tokens=1000), limits=Limits(max_steps=13)).invoke(
        {"task": "Find the vault code in the report."})
    events = [e for s in out["scratchpad"] for e in s["memory"] if e["event"] in ("summary_unshared", "summarized")]
    assert [e["event"] for e in events[:2]] == ["summary_unshared", "summarized"]
    assert events[0]["error"] == "the summarizer called 1 tool(s) instead of writing text"
    assert model.summary_prompts[1][0].content == SUMMARY_RULES and out["answer"] == "The code is 4711"
    calls = len(model.prompts) + len(model.summary_prompts)  # the refused summary is counted (and priced) too
    assert out["counters"]["llm_calls"] == calls and out["counters"]["prompt_tokens"] == 10 * calls


def test_a_text_protocol_asks_for_the_summary_in_its_own_prompt():
    _, model = run_pages(Memory(fold_tokens=1000), "json")
    assert model.summary_prompts and all(p[0].content == SUMMARY_RULES for p in model.summary_prompts)


def test_a_separate_summarizer_gets_its_own_prompt():
    summarizer = ScriptedChatModel()
    run_pages(Memory(fold_tokens=1000), summarizer=summarizer)
    assert summarizer.summary_prompts and summarizer.summary_prompts[0][0].content == SUMMARY_RULES


def test_with_results_fills_in_each_result_from_the_prompt():
    step = {"index": 4, "thought": "", "actions": [{"tool": "read_page", "args": {"page": 4}, "observation": "x"}]}
    prompt = [AIMessage(content="", tool_calls=[tool_call("read_page", {"page": 4}, id="c4")]),
              ToolMessage(content="Page 4 says 28.", tool_call_id="c4"), shared_request([step])]
    assert 'Step 4:\n  called read_page {"page": 4} -> Page 4 says 28.' in with_results(prompt)
    assert with_results(prompt[2:]).endswith(f"-> {RESULT_ABOVE}")  # a result the prompt lacks stays a marker


def test_a_summarys_numbers_and_names_are_read_as_the_look_behind_first_patterns_read_them():
    import random
    import re

    from reinloop.protocols.memory.summary import names_in, numbers_in

    # the patterns as first written (a look-behind tested at every character); the module's are reordered for speed
    thousands = re.compile(r"(?<=\d),(?=\d{3}\b)")
    name = re.compile(r"(?<![.!?:;\n]\s)(?<![.!?:;\n])(?<!^)\b[A-Z][a-z]+(?:[A-Z][a-z]+)*\b")
    number = re.compile(r"\d+(?:\.\d+)?")
    assert numbers_in("paid 1,000 and 2,50 then 3,4567 or 12.0") == {"1000", "2", "50", "3", "4567", "12"}
    assert names_in("Today we went to Beijing. Then Paris; Rome and NewYork\nLondon") == {
        "Beijing", "Paris", "NewYork", "London"}  # not a sentence's first word (Today, Then, Rome after ';')
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice("1203,.4 x\nAbZaBé!?:;_١") for _ in range(rng.randint(0, 30)))
        flat = thousands.sub("", text)
        assert numbers_in(text) == {n[:-2] if n.endswith(".0") else n for n in number.findall(flat)}, text
        assert names_in(text) == {m.group() for m in name.finditer(" ".join(text.split()))}, text
