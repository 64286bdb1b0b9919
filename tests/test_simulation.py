"""The simulated flaky model follows its plan, makes seeded mistakes, and answers only from its prompt."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from reinloop.models.simulation import Plan, PlanStep, SimulatedModel, summarize

PLAN = Plan(steps=(PlanStep("get_weather", {"city": "北京"}), PlanStep("calculator", {"expression": "18*2"})),
            answer="36", facts=("北京: 晴, 18℃", "36"))
TASK = "北京气温的两倍是多少？"


def call(name, args, id_):
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": id_, "type": "tool_call"}])


def test_follows_the_plan_from_what_the_prompt_shows():
    model = SimulatedModel(plans={TASK: PLAN}).bind_tools([])
    model.kwargs["tools"] = [{"type": "function", "function": {"name": "x", "parameters": {}}}]
    first = model.invoke([HumanMessage(content=TASK)])
    assert first.tool_calls[0]["name"] == "get_weather"
    prompt = [HumanMessage(content=TASK), call("get_weather", {"city": "北京"}, "a"),
              ToolMessage(content="北京: 晴, 18℃", tool_call_id="a")]
    assert model.invoke(prompt).tool_calls[0]["args"] == {"expression": "18*2"}
    prompt += [call("calculator", {"expression": "18*2"}, "b"), ToolMessage(content="36", tool_call_id="b")]
    assert model.invoke(prompt).content == "36"


def test_answers_wrongly_when_a_needed_fact_is_not_in_the_prompt():
    model = SimulatedModel(plans={TASK: PLAN})
    prompt = [HumanMessage(content=TASK), AIMessage(content='{"tool": "calculator", "args": {"expression": "18*2"}}'),
              HumanMessage(content="Observation: 36")]
    assert "no longer have the facts" in model.invoke(prompt).content


def test_cannot_act_without_the_task_in_the_prompt():
    assert "cannot see the task" in SimulatedModel(plans={TASK: PLAN}).invoke([HumanMessage(content="hi")]).content


def test_faults_are_seeded_and_reproducible():
    def faults(seed):
        model = SimulatedModel(plans={TASK: PLAN}, fault_rate=0.5, seed=seed)
        for _ in range(30):
            model.invoke([HumanMessage(content=TASK)])
        return [r.fault for r in model.records]

    assert faults(7) == faults(7)
    assert faults(7) != faults(8)
    assert {f for f in faults(7) if f} <= {"malformed", "bad_args", "unknown_tool"}  # nothing to repeat or ignore yet


def test_summaries_keep_numbers_and_mark_done_calls():
    request = "Task: t\n\nStep 1:\n  called get_weather {\"city\": \"北京\"} -> 北京: 晴, 18℃\nStep 2:\n  called calculator {\"expression\": \"x\"} -> ERROR: bad"
    text = summarize(request)
    assert 'done get_weather {"city": "北京"} ok: 北京: 晴, 18℃' in text
    assert 'done calculator {"expression": "x"} failed' in text


def test_the_summary_tells_the_model_what_is_done():
    model = SimulatedModel(plans={TASK: PLAN})
    prompt = [SystemMessage(content="rules"), HumanMessage(content=TASK),
              HumanMessage(content='Summary: done get_weather {"city": "北京"} ok: 北京: 晴, 18℃')]
    assert '"calculator"' in model.invoke(prompt).content


def test_a_failed_call_in_the_summary_does_not_hide_the_successful_one_after_it():
    model = SimulatedModel(plans={TASK: PLAN})
    summary = summarize("Step 1:\n  called get_weather {} -> ERROR: city is required\n"
                        "Step 2:\n  called get_weather {\"city\": \"北京\"} -> 北京: 晴, 18℃")
    prompt = [SystemMessage(content="rules"), HumanMessage(content=TASK), HumanMessage(content=f"Summary: {summary}")]
    assert '"calculator"' in model.invoke(prompt).content
