"""The window: whole steps, newest first, deduplicated, never over the token budget."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from reinloop import Limits, build_graph
from reinloop.errors import TaskTooLargeError
from reinloop.protocols.memory import Memory, active_counter, prepare_prompt
from reinloop.protocols.memory.summary import SHARED_RULES
from reinloop.protocols.memory.tokens import count_message_tokens, count_tool_schemas
from reinloop.protocols.memory.window import fit_window, hidden_duplicates, steps_to_fold
from reinloop.state import Action, Step
from reinloop.testing import ScriptedChatModel, tool_call

from .conftest import read_page

TEXT = st.text(
    alphabet=st.sampled_from(list("abcdefghij klmnopqrstuvwxyz0123456789.,:;{}\"'-\n") + list("杭州天气温度北京上海查询结果，。、")),
    max_size=2500,
)


def make_step(index: int, protocol: str, observations: list[str]) -> Step:
    """A finished step in the shape memorize records, with one call per observation."""
    actions = [Action(id=f"call_{index}_{j}", tool="read_page", args={"page": index}, observation=obs, error=False)
               for j, obs in enumerate(observations)]
    raw = {
        "json": json.dumps({"thought": f"page {index}", "tool": "read_page", "args": {"page": index}}),
        "react": f'Thought: page {index}\nAction: read_page\nArgs: {{"page": {index}}}',
    }.get(protocol, "")
    return Step(index=index, run=1, thought=f"page {index}", raw=raw, actions=actions, answer=None,
                parse_error=None, error=False, prompt_tokens=0, completion_tokens=0, hints=[])


def context(protocol: str, memory: Memory):
    graph = build_graph(ScriptedChatModel(), [read_page], protocol=protocol, memory=memory)
    return graph.reinloop_context


def state_of(steps: list[Step], task: str = "read the report", **extra) -> dict:
    return {"task": task, "run": 1, "scratchpad": steps, "summary": "", "memory_cursor": {"folded": 0, "failures": 0},
            "hints": [], "history": [], **extra}


def check_pairing(messages: list[BaseMessage]) -> None:
    """Every tool call is followed by exactly its results; no result without its call."""
    i = 0
    while i < len(messages):
        message = messages[i]
        assert not isinstance(message, ToolMessage), f"orphan tool result at {i}"
        if isinstance(message, AIMessage) and message.tool_calls:
            results = messages[i + 1 : i + 1 + len(message.tool_calls)]
            assert [r.tool_call_id for r in results if isinstance(r, ToolMessage)] == [c["id"] for c in message.tool_calls]
            i += len(message.tool_calls)
        i += 1


def total_sent(messages: list[BaseMessage], protocol: str) -> int:
    counter = active_counter()
    schemas = count_tool_schemas([convert_to_openai_tool(read_page)], counter) if protocol == "tool_calling" else 0
    return count_message_tokens(messages, counter) + schemas


@st.composite
def scenarios(draw):
    protocol = draw(st.sampled_from(["tool_calling", "json", "react"]))
    count = draw(st.integers(0, 9))
    calls = (lambda: draw(st.integers(1, 3))) if protocol == "tool_calling" else (lambda: 1)
    steps = [make_step(i, protocol, [draw(TEXT) for _ in range(calls())]) for i in range(1, count + 1)]
    memory = Memory(
        max_prompt_tokens=draw(st.integers(450, 5000)),
        window_steps=draw(st.one_of(st.none(), st.integers(1, 5))),
        summarize=draw(st.booleans()),
        summary_batch=draw(st.one_of(st.none(), st.integers(1, 4))),
        fold_tokens=draw(st.one_of(st.none(), st.integers(1, 3000))),
        summary_max_tokens=draw(st.integers(1, 800)),
    )
    extra = {
        "task": draw(st.sampled_from(["read the report", "读报告" * 3000, "x " * 9000])),
        "hints": draw(st.lists(TEXT, max_size=2)),
        "history": [{"task": t, "answer": "ok", "status": "done"} for t in draw(st.lists(TEXT, max_size=3))],
        "summary": "\n".join(draw(st.lists(TEXT.filter(lambda t: t.strip() and "\n" not in t), max_size=4))),
    }
    return protocol, steps, memory, extra


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_prompt_never_exceeds_the_budget_and_never_splits_a_step(scenario):
    protocol, steps, memory, extra = scenario
    ctx = context(protocol, memory)
    try:
        prepared = prepare_prompt(state_of(steps, **extra), ctx)
    except TaskTooLargeError as refused:  # a task the budget cannot hold whole is refused, never cut
        assert refused.needed > memory.max_prompt_tokens == refused.budget
        return
    sent = total_sent(prepared.messages, protocol)
    assert sent == prepared.parts["total"]  # the recorded parts are what is sent
    assert sent <= memory.max_prompt_tokens
    check_pairing(prepared.messages)
    for prompt in ctx.model.summary_prompts:  # asked at the end of the agent's prompt, it went with the tools
        shared = str(prompt[-1].content).startswith(SHARED_RULES)
        assert total_sent(prompt, protocol if shared else "json") <= memory.max_prompt_tokens


def test_a_step_that_does_not_fit_whole_is_left_out_whole():
    steps = [make_step(i, "tool_calling", ["杭州 22℃ " * 40, "北京 18℃ " * 40]) for i in range(1, 4)]
    probe = context("tool_calling", Memory(summarize=False, window_steps=None, max_prompt_tokens=None))
    full = prepare_prompt(state_of(steps[:1]), probe).parts
    one_step = full["steps"]
    budget = full["total"] + one_step // 2  # room for one and a half steps
    ctx = context("tool_calling", Memory(summarize=False, window_steps=None, max_prompt_tokens=budget))
    prepared = prepare_prompt(state_of(steps), ctx)
    calls = [c["id"] for m in prepared.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in prepared.messages if isinstance(m, ToolMessage)]
    assert calls == results == ["call_3_0", "call_3_1"]  # only the newest step, both calls with their results


def test_window_steps_bounds_the_steps_shown():
    steps = [make_step(i, "json", [f"page {i} says {i * 7}"]) for i in range(1, 7)]
    ctx = context("json", Memory(summarize=False, window_steps=2, summary_batch=3))
    text = "\n".join(str(m.content) for m in prepare_prompt(state_of(steps), ctx).messages)
    assert "Observation: page 6 says 42" in text and "Observation: page 5 says 35" in text
    assert "Observation: page 4 says 28" not in text  # out of the window ...
    assert 'read_page {"page": 4} -> page 4 says 28' in text  # ... its result stays in the ledger


def test_fit_window_keeps_the_newest_contiguous_steps():
    steps = [make_step(i, "json", ["x"]) for i in range(1, 6)]
    cost = {1: 10, 2: 10, 3: 50, 4: 10, 5: 10}
    shown = fit_window(steps, lambda s: cost[s["index"]], budget=40, window_steps=None)
    assert [s["index"] for s in shown] == [4, 5]  # step 3 does not fit, so 1 and 2 are not shown either


def test_folding_waits_for_a_batch_and_never_takes_a_shown_step():
    visible = [make_step(i, "json", ["x"]) for i in range(1, 7)]
    assert [s["index"] for s in steps_to_fold(visible[:4], shown=3, batch=3)] == []  # step 1 waits for two more
    assert [s["index"] for s in steps_to_fold(visible, shown=3, batch=3)] == [1, 2, 3]  # the window keeps 4-6
    assert [s["index"] for s in steps_to_fold(visible[:4], shown=3, batch=1)] == [1]
    assert [s["index"] for s in steps_to_fold(visible[:4], shown=4, batch=3)] == []
    assert [s["index"] for s in steps_to_fold(visible[:4], shown=0, batch=2)] == [1, 2, 3, 4]  # nothing fits


def test_an_identical_action_and_observation_is_shown_once_at_its_newest_position():
    weather = make_step(1, "tool_calling", ["杭州: 多云, 22℃"])
    other = make_step(2, "tool_calling", ["北京: 晴, 18℃"])
    again = {**make_step(3, "tool_calling", ["杭州: 多云, 22℃"]), "actions": [
        {**weather["actions"][0], "id": "call_3_0"}]}
    assert hidden_duplicates([weather, other, again]) == {1: 3}
    ctx = context("tool_calling", Memory())
    prepared = prepare_prompt(state_of([weather, other, again]), ctx)
    ids = [m.tool_call_id for m in prepared.messages if isinstance(m, ToolMessage)]
    assert ids == ["call_2_0", "call_3_0"]  # the repeat refreshed its position; the old copy is gone
    assert prepared.events == [{"event": "deduplicated", "steps": [1], "by": 3}]


def test_a_duplicate_is_the_same_tool_arguments_and_observation_whatever_the_arguments_order():
    def step(index: int, args: dict, observation: object) -> Step:
        action = Action(id=f"call_{index}", tool="search", args=args, observation=observation, error=False)  # type: ignore[typeddict-item]
        return {**make_step(index, "tool_calling", []), "actions": [action]}

    assert hidden_duplicates([step(1, {"q": "杭州", "n": 2}, "2 hits"), step(2, {"n": 2, "q": "杭州"}, "2 hits")]) == {1: 2}
    assert hidden_duplicates([step(1, {"q": "a"}, "2 hits"), step(2, {"q": "a"}, "3 hits")]) == {}
    assert hidden_duplicates([step(1, {"q": "a"}, None), step(2, {"q": "a"}, "null")]) == {}
    assert hidden_duplicates([step(1, {"q": "a"}, "1"), step(2, {"q": "a"}, 1)]) == {}
    assert hidden_duplicates([step(1, {"q": "a"}, [1]), step(2, {"q": "a"}, [1])]) == {1: 2}


def test_dedup_can_be_switched_off():
    steps = [make_step(1, "json", ["same"]), {**make_step(2, "json", ["same"]), "actions": make_step(1, "json", ["same"])["actions"]}]
    ctx = context("json", dataclasses.replace(Memory(), dedup=False))
    assert prepare_prompt(state_of(steps), ctx).parts["steps"] > prepare_prompt(state_of(steps), context("json", Memory())).parts["steps"]


def test_a_final_answer_is_never_hidden_as_a_duplicate():
    first = {**make_step(1, "json", []), "answer": "42", "actions": []}
    second = {**make_step(2, "json", []), "answer": "42", "actions": []}
    assert hidden_duplicates([first, second]) == {}


def test_a_full_rolling_window_folds_a_batch_back_down_to_window_steps():
    visible = [make_step(i, "json", ["x"]) for i in range(1, 7)]
    assert [s["index"] for s in steps_to_fold(visible[:5], shown=5, batch=3, keep=3)] == []  # still growing
    assert [s["index"] for s in steps_to_fold(visible, shown=5, batch=3, keep=3)] == [1, 2, 3]  # 4-6 stay
    assert [s["index"] for s in steps_to_fold(visible, shown=2, batch=3, keep=3)] == [1, 2, 3, 4]  # budget: 5-6 fit
    assert [s["index"] for s in steps_to_fold(visible[:4], shown=3, batch=1, keep=3)] == [1]  # batch 1 slides


def test_between_folds_each_prompt_extends_the_previous_one():
    model = ScriptedChatModel(replies=[*[[tool_call("read_page", {"page": p})] for p in range(1, 15)], "done"])
    out = build_graph(model, [read_page], memory=Memory(window_steps=3, summary_batch=3),
                      limits=Limits(max_steps=20)).invoke({"task": "read"})
    folds = {s["index"] for s in out["scratchpad"] for e in s["memory"] if e["event"] == "evicted"}
    assert folds == {7, 10, 13}  # window 3, grows to 5, then the oldest 3 are folded at once
    text = [[(m.type, str(m.content), getattr(m, "tool_calls", None)) for m in p] for p in model.prompts]
    for step in range(2, len(text) + 1):
        before, now = text[step - 2], text[step - 1]
        assert (now[: len(before)] == before) == (step not in folds), step  # a fold alone rewrites the prompt
