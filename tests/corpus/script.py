"""A scenario as each protocol's scripted replies, run on the default path, and checked.

:func:`replies` writes the model's turns the way a correct model answers in each protocol: native tool
calls (all of a turn's calls in one reply) and a plain-text answer; one JSON object per call and
``{"final_answer": ...}``; ReAct's ``Thought``/``Action``/``Args`` lines and ``Final Answer:``. The text
protocols call one tool at a time (their instructions say so), so a parallel turn becomes one reply per call.

:func:`problems` lists every way a finished run differs from what the model asked for: an empty list is a
pass. Each problem names the check it failed, so a failing scenario says which node overruled the model.
"""

from __future__ import annotations

import json
from typing import Any

from reinloop import build_graph
from reinloop.errors import ScriptExhaustedError
from reinloop.testing import ScriptedChatModel, prompt_text, tool_call

from . import tools as corpus_tools
from .scenarios import Call, Scenario

PROTOCOLS = ("tool_calling", "json", "react")


def turns_of(s: Scenario, protocol: str) -> list[tuple[Call, ...] | str]:
    """The model's replies in order: a tuple of calls per reply, then the answer (a str)."""
    if protocol == "tool_calling":
        return [*s.turns, s.answer]
    return [*((c,) for turn in s.turns for c in turn), s.answer]


def reply(turn: tuple[Call, ...] | str, protocol: str) -> Any:
    """One scripted reply in ``protocol``'s form."""
    if isinstance(turn, str):
        return {"tool_calling": turn,
                "json": {"thought": "I have what the task asked for.", "final_answer": turn},
                "react": f"Thought: I have what the task asked for.\nFinal Answer: {turn}"}[protocol]
    if protocol == "tool_calling":
        return [tool_call(c.tool, c.args) for c in turn]
    (c,) = turn
    if protocol == "json":
        return {"thought": f"I use {c.tool}.", "tool": c.tool, "args": c.args}
    return f"Thought: I use {c.tool}.\nAction: {c.tool}\nArgs: {json.dumps(c.args, ensure_ascii=False)}"


def replies(s: Scenario, protocol: str) -> list[Any]:
    """The scenario's whole script in ``protocol``."""
    return [reply(t, protocol) for t in turns_of(s, protocol)]


def expected_calls(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The calls the tools must run, in order, with the arguments they run with (the model's, over the tool's
    own defaults for what it left out): every call of the model but the ones that must be refused."""
    return [(c.tool, {**corpus_tools.defaults(c.tool), **c.args}) for turn in s.turns for c in turn if c.refused is None]


def run_scenario(s: Scenario, protocol: str, script: list[Any] | None = None,
                 **changes: Any) -> tuple[dict[str, Any], ScriptedChatModel]:
    """Run ``s`` on the default path (``build_graph`` with only the protocol, and ``changes``)."""
    corpus_tools.reset()
    model = ScriptedChatModel(replies=script if script is not None else replies(s, protocol))
    graph = build_graph(model, [corpus_tools.TOOLS[n] for n in s.tools], protocol=protocol, **changes)
    state: dict[str, Any] = {}
    try:
        for state in graph.stream({"task": s.task}, stream_mode="values"):
            pass
    except ScriptExhaustedError as exc:  # the loop wanted more than the model said: keep the state it reached
        return {**state, "exhausted": str(exc)}, model
    return state, model


ALTERED = ("ignored_args", "reused", "asked_tool", "bound_figures", "scaled_figures", "from_answer", "from_text", "repairs",
           "raw_args")
"""Action keys that say the loop changed, dropped or answered a call instead of running it as asked."""


def step_problems(i: int, step: dict[str, Any], turn: tuple[Call, ...] | str, next_prompt: str | None) -> list[str]:
    """How step ``i`` differs from the reply ``turn`` the model gave (``next_prompt``: the model's next prompt)."""
    found = []
    if step.get("parse_error"):
        found.append(f"step {i}: parse refused the reply: {step['parse_error']}")
    actions = step.get("actions") or []
    if isinstance(turn, str):
        if actions:
            found.append(f"step {i}: the answer was run as calls {[(a.get('tool'), a.get('args')) for a in actions]}")
        return found
    asked = [(c.tool, c.args) for c in turn]
    made = [(a.get("tool"), a.get("args")) for a in actions]
    if made != asked:
        found.append(f"step {i}: the step holds calls {made}, the model asked for {asked}")
    for a, c in zip(actions, turn):
        altered = {k: a[k] for k in ALTERED if k in a}
        if altered:
            found.append(f"step {i}: {c.tool} was altered: {altered}")
        if c.refused is None and a.get("problem"):
            found.append(f"step {i}: {c.tool} {json.dumps(c.args, ensure_ascii=False)} was refused: {a['problem']}")
        if c.refused is not None:
            found += refusal_problems(i, a, c, next_prompt)
    return found


def refusal_problems(i: int, action: dict[str, Any], c: Call, next_prompt: str | None) -> list[str]:
    """How a call that must be refused (a value outside the enum) was not refused as it must be."""
    problem = action.get("problem")
    if not problem:
        return [f"step {i}: {c.tool} with {c.refused!r} outside its enum was not refused "
                f"(observation: {action.get('observation')!r}, ignored_args: {action.get('ignored_args')})"]
    if c.refused not in problem:
        return [f"step {i}: the refusal of {c.tool} does not quote {c.refused!r}: {problem}"]
    if next_prompt is not None and c.refused not in next_prompt:
        return [f"step {i}: the model's next prompt does not show the refusal of {c.refused!r}"]
    return []


def problems(s: Scenario, protocol: str, out: dict[str, Any], model: ScriptedChatModel,
             extra_asks: int = 0) -> list[str]:
    """Every way the run differs from the model's calls and answer (``[]``: it ran them exactly, refused only what
    was outside an enum, and accepted the answer). ``extra_asks``: model calls the run may make beyond the script
    (a profile that asks again)."""
    return run_problems(s, protocol, out, corpus_tools.LOG, [prompt_text(p) for p in model.prompts], model.calls,
                        extra_asks)


def run_problems(s: Scenario, protocol: str, out: dict[str, Any], ran: list[tuple[str, dict[str, Any]]],
                 prompts: list[str], asks: int, extra_asks: int = 0) -> list[str]:
    """:func:`problems` from what the run left: its state ``out``, the calls the tools ran, the text of every
    prompt the model was sent and how many times it was asked (from a scripted model or a scripted server)."""
    found = []
    asked = expected_calls(s)
    if ran != asked:
        found.append(f"the tools ran {ran}, the model asked for {asked}")
    turns = turns_of(s, protocol)
    steps = out.get("scratchpad") or []
    for i, (step, turn) in enumerate(zip(steps, turns), 1):
        found += step_problems(i, step, turn, prompts[i] if i < len(prompts) else None)
    if len(steps) != len(turns):
        found.append(f"the run took {len(steps)} steps for the model's {len(turns)} replies")
    if asks != len(turns) + extra_asks:
        found.append(f"the model was asked {asks} times for its {len(turns)} replies"
                     + (f" (and {extra_asks} asks again)" if extra_asks else ""))
    if out.get("exhausted"):
        found.append(f"the loop asked the model again after its last reply: {out['exhausted']}")
    elif out.get("status") != "done":
        found.append(f"the run ended {out.get('status')} ({out.get('break_reason')}: {out.get('break_message')})")
    if out.get("answer") != s.answer:
        found.append(f"the answer is {out.get('answer')!r}, the model answered {s.answer!r}")
    observations = "\n".join(str(a.get("observation") or "") for st in steps for a in st.get("actions") or [])
    found += [f"no tool result says {text!r}" for text in s.observed if text not in observations]
    return found
