"""What a prompt computes from a recorded step is remembered by the step's identity, never by its looks."""

from __future__ import annotations

import copy

from reinloop.protocols.memory import active_counter
from reinloop.protocols.memory.memo import IdentityMemo
from reinloop.protocols.memory.prompt import STEP_VIEWS, step_view
from reinloop.protocols import get_protocol


def test_the_memo_serves_the_same_objects_and_computes_afresh_for_an_equal_copy():
    memo: IdentityMemo[int] = IdentityMemo()
    step = {"index": 1, "raw": "a"}
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert memo.get((step,), None, compute) == 1
    assert memo.get((step,), None, compute) == 1  # the same object: remembered
    assert memo.get((copy.deepcopy(step),), None, compute) == 2  # equal, restored from a checkpoint: afresh
    assert memo.get((step,), "other task", compute) == 3  # another extra is another value


def test_the_memo_forgets_its_oldest_entries_past_its_size():
    memo: IdentityMemo[int] = IdentityMemo(size=2)
    steps = [{"index": i} for i in range(3)]
    for i, step in enumerate(steps):
        memo.get((step,), None, lambda i=i: i)
    assert len(memo) == 2
    assert memo.get((steps[0],), None, lambda: -1) == -1  # forgotten: computed again
    assert memo.get((steps[2],), None, lambda: -1) == 2


def test_a_step_is_rendered_once_per_protocol_and_each_protocol_gets_its_own_messages():
    counter = active_counter()
    step = {"index": 1, "run": 1, "raw": "", "thought": "", "parse_error": None,
            "actions": [{"id": "c1", "tool": "calculator", "args": {"expression": "2+2"}, "observation": "4"}]}
    native, json_ = get_protocol("tool_calling"), get_protocol("json")
    first = step_view(step, native, counter)
    assert step_view(step, native, counter) is first
    other = step_view(step, json_, counter)
    assert other is not first and other[0][0].content != first[0][0].content  # JSON replays the call as text
    assert first[1] > 0 and len(STEP_VIEWS) >= 2


def test_the_prompt_digest_made_from_remembered_pieces_is_the_digest_of_the_whole_prompts_json():
    import hashlib
    import json

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from reinloop.protocols.memory.feedback import prompt_digest
    from reinloop.protocols.memory.tokens import message_text

    messages = [HumanMessage(content="Task: 杭州的面积"), AIMessage(content="", tool_calls=[
        {"name": "search", "args": {"q": "杭州", "n": [1, 2]}, "id": "c1"}]), ToolMessage(content="16850", tool_call_id="c1")]
    whole = [[m.type, message_text(m), getattr(m, "tool_calls", None) or []] for m in messages]
    expected = hashlib.sha256(json.dumps(whole, ensure_ascii=False, default=str).encode()).hexdigest()[:32]
    assert prompt_digest(messages) == prompt_digest(messages) == expected  # remembered, and as stored before
    assert prompt_digest(messages[:2]) != expected


def test_the_system_message_and_the_task_are_one_object_at_every_step_so_their_counts_are_remembered():
    from reinloop import build_graph
    from reinloop.testing import ScriptedChatModel, tool_call
    from reinloop.tools import builtins

    model = ScriptedChatModel(replies=[[tool_call("calculator", {"expression": f"{i}+1"})] for i in range(3)] + ["done"])
    build_graph(model, builtins("calculator")).invoke({"task": "add one three times"})
    first, *later = model.prompts
    assert len(later) == 3
    for prompt in later:
        assert prompt[0] is first[0] and prompt[1] is first[1]  # the system message and the task, made once
    assert first[0].type == "system" and first[1].content == "Task: add one three times"
