"""The ledger and the summary check: tool results stay verbatim; a summary that disagrees with them is replaced."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from reinloop import Limits, Memory, build_graph
from reinloop.protocols.memory import active_counter
from reinloop.protocols.memory.ledger import LEDGER_HEADER
from reinloop.protocols.memory.summary import check_summary
from reinloop.testing import ScriptedChatModel, answer_from_prompt, prompt_text, tool_call
from reinloop.tools import builtins

from .conftest import read_page, reads

CHAIN = ["2+2", "4*2", "8+4", "12*3", "36-1", "35+356"]
RESULTS = ["4", "8", "12", "36", "35", "391"]


def calc_run(summary_reply, *, window_steps: int = 3, final=None, memory: Memory | None = None):
    """Six chained calculator steps, then a final reply; the summarizer answers ``summary_reply``."""
    replies = [[tool_call("calculator", {"expression": e})] for e in CHAIN]
    replies.append(final or "done")
    model = ScriptedChatModel(replies=replies, summary_reply=summary_reply)
    memory = memory or Memory(summary_batch=3, window_steps=window_steps)
    graph = build_graph(model, builtins("calculator"), memory=memory, limits=Limits(max_steps=10))
    return graph.invoke({"task": "What is 2+2, then times 2, then plus 4, then times 3, minus 1, plus 356?"}), model


def events(out, kind: str) -> list[dict]:
    return [e for s in out["scratchpad"] for e in s["memory"] if e["event"] == kind]


def test_a_summary_that_pairs_2_plus_2_with_8_is_replaced_by_the_steps_own_results():
    out, model = calc_run("2 + 2 equals 8, and then the total was 36.")
    (rejected,) = events(out, "summary_rejected")
    assert rejected["steps"] == [1, 2, 3] and rejected["line"] == "Steps 1–3: 2 + 2 equals 8, and then the total was 36."
    assert "it pairs 2+2 with 8, but calculator gave 4" in rejected["problems"]
    assert out["summary"] == ('Steps 1–3: calculator {"expression": "2+2"} -> 4; calculator {"expression": "4*2"} -> 8; '
                              'calculator {"expression": "8+4"} -> 12')
    assert "equals 8" not in prompt_text(model.prompts[-1])


def test_a_summary_that_loses_a_result_is_replaced():
    out, _ = calc_run("2+2 gave 4, then 8.", memory=Memory(window_steps=1, summary_batch=3))
    (rejected,) = events(out, "summary_rejected")
    assert rejected["problems"] == ["it leaves out 12 from step 3's calculator"]
    assert "-> 12" in out["summary"]


def test_a_summary_that_loses_the_result_391_disagrees():
    steps = [{"index": 4, "actions": [{"tool": "calculator", "args": {"expression": "17*23"}, "observation": "391",
                                       "error": False}]}]
    assert check_summary("The product of 17 and 23 was computed.", "What is 17*23?", steps) == [
        "it leaves out 391 from step 4's calculator"]


def test_a_summary_that_invents_a_number_is_replaced():
    problems = check_summary("2+2 is 5.", "add", [{"index": 1, "actions": [
        {"tool": "calculator", "args": {"expression": "2+2"}, "observation": "4", "error": False}]}])
    assert "it states 5, which no step holds" in problems and "it leaves out 4 from step 1's calculator" in problems


def test_a_summary_that_names_another_city_is_replaced():
    steps = [{"index": 1, "actions": [{"tool": "get_weather", "args": {"city": "Beijing"},
                                       "observation": "Beijing: sunny, 18℃", "error": False}]}]
    assert check_summary("The weather in Shanghai is sunny, 18℃.", "weather?", steps) == [
        "it names Shanghai, which no step mentions"]
    assert check_summary("The weather in Beijing is sunny, 18℃.", "weather?", steps) == []


def test_a_summary_that_agrees_with_the_results_is_kept():
    out, _ = calc_run("2+2 is 4, times 2 is 8, plus 4 is 12.")
    assert events(out, "summary_rejected") == []
    assert out["summary"].startswith("Steps 1–3: 2+2 is 4, times 2 is 8, plus 4 is 12.")


def test_a_long_document_need_not_keep_every_number():
    out, _ = run_pages_with("Pages read; The vault code is 4711.")
    assert events(out, "summary_rejected") == []


def run_pages_with(summary_reply):
    model = ScriptedChatModel(replies=[*reads(range(1, 8)), "done"], summary_reply=summary_reply)
    graph = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3), limits=Limits(max_steps=10))
    return graph.invoke({"task": "Find the vault code in the report."}), model


def test_the_ledger_shows_the_results_the_window_no_longer_holds_verbatim():
    answer = answer_from_prompt(r'"2\+2"\} -> (\d+)', "2+2 was {0}")
    out, model = calc_run("2 + 2 equals 8.", final=answer)
    assert out["answer"] == "2+2 was 4"
    last = prompt_text(model.prompts[-1])
    ledger = last.split(LEDGER_HEADER, 1)[1]
    for expression, result in zip(CHAIN[:3], RESULTS[:3], strict=True):
        assert f'calculator {{"expression": "{expression}"}} -> {result}' in ledger
    assert '"36-1"} -> 35' not in ledger  # step 5 is in the window: shown once, not twice


def test_the_ledger_stays_within_its_cap_and_the_prompt_budget():
    replies = [*reads(range(1, 16)), "done"]
    model = ScriptedChatModel(replies=replies)
    memory = Memory(summary_batch=3, window_steps=2, ledger_max_tokens=150, max_prompt_tokens=2000)
    out = build_graph(model, [read_page], memory=memory, limits=Limits(max_steps=20)).invoke({"task": "read"})
    for step in out["scratchpad"]:
        assert step["prompt_parts"]["ledger"] <= 150
        assert step["prompt_parts"]["total"] <= 2000
    assert out["scratchpad"][-1]["prompt_parts"]["ledger"] > 0
    counter = active_counter()
    assert all(counter.count(line) <= 150 for line in prompt_text(model.prompts[-1]).splitlines() if line.startswith("- step"))


def test_no_ledger_when_it_is_switched_off():
    out, model = calc_run("2+2 is 4, times 2 is 8, plus 4 is 12.", memory=Memory(summary_batch=3, window_steps=3, ledger_max_tokens=None))
    assert LEDGER_HEADER not in prompt_text(model.prompts[-1])
    assert out["scratchpad"][-1]["prompt_parts"]["ledger"] == 0


@pytest.mark.parametrize("window_steps", [2, 3, 4])
def test_after_a_fold_the_window_keeps_window_steps_steps(window_steps):
    model = ScriptedChatModel(replies=[*reads(range(1, 12)), "done"])
    out = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=window_steps),
                      limits=Limits(max_steps=15)).invoke({"task": "read"})
    folds = [s["index"] for s in out["scratchpad"] for e in s["memory"] if e["event"] == "summarized"]
    assert len(folds) >= 2
    for index in folds:
        results = [m for m in model.prompts[index - 1] if isinstance(m, ToolMessage)]
        assert len(results) == window_steps  # not one: the batch came from the steps that had left


def test_a_result_with_a_document_for_arguments_is_shown_cut():
    from reinloop.protocols.memory.ledger import ARGS_CHARS, LATEST_CHARS, Result, entry_text

    result = Result(step=1, tool="file_note", args={"text": "x" * 5000}, observation="filed")
    assert len(entry_text(result, "filed")) < ARGS_CHARS + LATEST_CHARS


def old_ledger(steps, shown, cap, counter):
    """The ledger as it was built before it read only the newest results: every line cut, then dropped from the front."""
    from reinloop.protocols.memory.ledger import ledger_line, results, window_calls
    from reinloop.protocols.memory.prompt import listing
    from reinloop.protocols.memory.tokens import count_message_tokens

    in_window = window_calls(shown)
    lines = [ledger_line(r, counter) for r in results(steps) if r not in in_window]
    while lines and count_message_tokens([listing(LEDGER_HEADER, lines)], counter) > cap:
        lines = lines[1:]
    return lines


@pytest.mark.parametrize("cap", [60, 150, 400, 2000])
def test_a_long_runs_ledger_holds_what_cutting_and_counting_every_result_would(cap):
    from reinloop.protocols.memory.ledger import LEDGER_HEADER as HEADER, newest_lines_within
    from reinloop.protocols.memory.prompt import fit_listing

    words = ["总额 391 元", "lorem ipsum", "2+2 -> 4", "page", "🙂", "x" * 300]
    steps = [{"index": i, "run": 1, "actions": [
        {"tool": "read_page", "args": {"page": i % 7}, "observation": " ".join(words[(i * k) % 6] for k in range(i % 40 + 1)),
         "error": i % 11 == 0},
        {"tool": "read_page", "args": {"page": 1}, "observation": "the same page again"}]} for i in range(1, 120)]
    counter = active_counter()
    for shown_from in (117, 110, 60):
        shown = steps[shown_from:]
        message, _ = fit_listing(HEADER, newest_lines_within(steps, shown, cap, counter), cap, counter)
        expected = old_ledger(steps, shown, cap, counter)
        assert (message.content.split("\n")[1:] if message else []) == expected


def walked_earlier_result(steps, tool, args, world_changers):
    """The definition the call index must agree with: walk the steps newest first."""
    for step in reversed(steps):
        actions = step.get("actions") or []
        if any(a.get("tool") in world_changers and not a.get("problem") for a in actions):
            return None
        for a in reversed(actions):
            if (a.get("tool") == tool and (a.get("args") or {}) == args and not a.get("error")
                    and a.get("observation") is not None and not a.get("reused")):
                return {"step": step["index"], "tool": tool, "args": dict(args), "observation": str(a["observation"])}
    return None


def test_the_call_index_gives_what_walking_the_steps_gives_as_a_run_grows_and_after_a_rewind():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from reinloop.protocols.memory.ledger import earlier_result

    action = st.fixed_dictionaries({
        "tool": st.sampled_from(["read", "write", "calc"]), "args": st.sampled_from([{}, {"n": 1}, {"n": 2}]),
        "observation": st.sampled_from(["a", "b", None]), "error": st.booleans(),
        "problem": st.sampled_from([None, None, "bad"])})

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.lists(action, max_size=3), min_size=1, max_size=12), st.integers(0, 11))
    def agree(pads, rewind_to):
        steps = [{"index": i + 1, "actions": a} for i, a in enumerate(pads)]
        queries = [(t, a) for t in ("read", "write", "calc") for a in ({}, {"n": 1}, {"n": 2})]
        for end in range(1, len(steps) + 1):  # the run grows a step at a time
            for tool, args in queries:
                assert earlier_result(steps[:end], tool, args, {"write"}) == walked_earlier_result(steps[:end], tool, args, {"write"})
        forked = steps[:min(rewind_to, len(steps))] + [{"index": 99, "actions": [{"tool": "read", "args": {}, "observation": "new"}]}]
        for tool, args in queries:  # a rewound run that went another way is indexed afresh
            assert earlier_result(forked, tool, args, {"write"}) == walked_earlier_result(forked, tool, args, {"write"})

    agree()
