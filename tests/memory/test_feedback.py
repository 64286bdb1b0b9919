"""A failed step's correction reaches the next prompt even when the window cannot show the step."""

from __future__ import annotations

from reinloop import Memory
from reinloop.protocols.memory.feedback import prompt_digest
from reinloop.testing import prompt_text


def test_the_correction_of_a_failed_step_the_window_cannot_show_still_reaches_the_next_prompt(make_graph):
    memory = Memory(max_prompt_tokens=1500, summarize=False)
    task = "2+2? " + "pad " * 860  # leaves the steps room (a task that did not is refused), but not for this one
    graph, model = make_graph(["很长的回答" * 3000, {"final_answer": "4"}], protocol="json", memory=memory)
    out = graph.invoke({"task": task})
    assert out["answer"] == "4"
    second = prompt_text(model.prompts[1])
    assert not any(m.type == "ai" for m in model.prompts[1])  # the step itself was left out
    assert "Your last reply could not be used: no JSON object found" in second
    assert out["scratchpad"][1]["hints"][0].startswith("Your last reply could not be used")


def test_a_huge_unusable_reply_is_replayed_cut_short_beside_its_correction(make_graph):
    memory = Memory(max_prompt_tokens=1500, summarize=False)
    graph, model = make_graph(["word " * 3000, {"final_answer": "4"}], protocol="json", memory=memory)
    out = graph.invoke({"task": "2+2?"})
    assert out["answer"] == "4" and len(out["scratchpad"][0]["raw"]) == 15000  # stored verbatim
    replayed = [m for m in model.prompts[1] if m.type == "ai"]
    assert len(replayed) == 1 and len(replayed[0].content) < 300
    assert replayed[0].content.endswith("[14800 more characters not shown]")
    assert "Your last reply could not be used: no JSON object found" in prompt_text(model.prompts[1])


def test_the_prompt_digest_tells_prompts_apart_by_text_and_by_tool_calls():
    from langchain_core.messages import AIMessage, HumanMessage

    a = [HumanMessage("t"), AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": "1"}])]
    b = [HumanMessage("t"), AIMessage("", tool_calls=[{"name": "calculator", "args": {"expression": "2"}, "id": "1"}])]
    assert prompt_digest(a) != prompt_digest(b) and prompt_digest(a) == prompt_digest(list(a))
