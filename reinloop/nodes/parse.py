"""parse: turn the model's raw reply into actions, a final answer, or a parse error.

The protocol does the reading and never raises; this node only routes, and
applies the rules that need more than the reply:

- :func:`~reinloop.protocols.base.read_safely` is the last line, around the
  protocol and the rules below alike: whatever the reply, the result is
  actions, an answer or a parse error, so a stored reply can never make a
  resume crash again;
- a reply the token cap cut off (its finish reason says so) is never the
  answer, and what the cut damaged is never used (a cut JSON call "repaired"
  would run with cut arguments): it is a parse error that asks for a shorter
  reply, unless, in a text protocol that reads JSON, the reply *begins* with a whole JSON call
  (small models write the same call again and again until the cap stops
  them): that first call is whole, so it runs;
- in a text protocol, plain prose right after a tool result can be the final
  answer (:mod:`reinloop.protocols.prose` says when);
- a reply that lists calls one after another, as JSON objects in its text, is
  read for its first call that is not one the run already made successfully
  (:func:`first_new_call`), cut off or not and in every protocol: Qwen2.5-Coder-0.5B
  writes the calls it has made again, then the next one
  (``read_file {...}`` then ``calculator {"expression": "3*12.5"}``), and
  reading only its first object ran the old call again and lost the new one.
  Native tool calls are read the same way (:func:`past_made_calls`): a reply whose
  calls start with one already made keeps only its first new call (the rest of
  such a list was every other tool, with example arguments).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..memory.window import current_steps
from ..protocols.base import OutputProtocol, action_id, answer_form, error_pending, parse_reply, read_safely
from ..answers import (asked_figure_problem, calculation_problem, echo_problem, equation_problem, grounding_problem, task_echo_problem, too_few_calls_problem,
                       tool_talk_problem, written_calculation, written_call)
from ..memory.ledger import Result, results
from ..memory.wrapup import REQUEST
from ..protocols.json_protocol import JsonProtocol, interpret
from ..repeats import action_keys
from ..protocols.prose import call_like, prose_answer
from ..protocols.structured import read_structured
from ..state import AgentState, Pending, PendingView
from ..tools.registry import single_field


def truncation_problem(reason: str, cap: int | None) -> str:
    """The parse error of a reply the token cap cut off."""
    asked = f"; replies may be at most {cap} tokens" if cap else ""
    return (
        f"your reply reached the output token limit and was cut off (finish reason {reason!r}{asked}), so none "
        f"of it was used. Write much less: one tool call or the final answer, with a thought of one sentence"
    )


def whole_first_object(text: str) -> str | None:
    """The first JSON object of ``text`` when it is whole (strict JSON, nothing repaired), else None."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return text[start:end] if isinstance(value, dict) else None


LISTED_CALLS = 20
"""At most this many JSON objects of one reply are read for a new call."""


def listed_objects(text: str) -> list[dict[str, Any]]:
    """The whole JSON objects ``text`` lists one after another (after an optional fence), up to a cut or prose."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while len(found) < LISTED_CALLS:
        start = text.find("{", at)
        if start < 0 or text[at:start].strip(" \t\r\n,`json"):
            break
        try:
            value, at = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            break
        if isinstance(value, dict):
            found.append(value)
    return found


def made_calls(state: AgentState) -> set[str]:
    """The keys (:func:`~reinloop.repeats.action_keys`) of the calls this run made successfully."""
    return action_keys(a for step in current_steps(state) for a in step.get("actions") or []
                       if not a.get("error") and not a.get("problem") and a.get("observation") is not None)


def past_made_calls(state: AgentState, pending: Pending) -> Pending:
    """``pending`` with only its first new call when its calls start with one the run already made; a reply
    of fresh parallel calls, or of repeats only, is kept whole."""
    actions = pending.get("actions") or []
    made = made_calls(state) if len(actions) > 1 else set()
    if not made or not action_keys(actions[:1]) <= made:
        return pending
    new = next((a for a in actions if not action_keys([a]) <= made), None)
    return pending if new is None else {**pending, "actions": [new]}


def first_new_call(state: AgentState, text: str) -> Pending | None:
    """The first call listed in ``text`` that the run has not made successfully, when the list starts with
    such repeats or has more than one call; else None (a lone call is read as the protocol reads it)."""
    made = made_calls(state)
    calls = [p for p in map(interpret, listed_objects(text)) if p.get("actions") and not p.get("parse_error")]
    if len(calls) < 2 and not (calls and action_keys(calls[0]["actions"]) <= made):
        return None
    return next((p for p in calls if not action_keys(p["actions"]) <= made), None)


def whole_call_of_cut_reply(reply: Any, protocol: OutputProtocol, state: AgentState) -> Pending | None:
    """The call a cut-off reply gives: its first new listed call (any protocol), else, in a text protocol,
    its first call when the cut came after it; else None."""
    text = reply.get("text") or ""
    if (new := first_new_call(state, text)) is not None:
        return new
    if protocol.native_tools:
        return None
    head = whole_first_object(text)
    if head is None:
        return None
    pending = parse_reply(protocol, {**reply, "text": head, "truncated": False})
    return pending if pending.get("actions") and not pending.get("parse_error") else None


WRITTEN_CALLS = JsonProtocol()
"""Reads a call a model wrote as text under native tool calling (:func:`check_answer`)."""


def wrap_up_reading(pending: Pending, text: str, tools: list[str]) -> Pending:
    """A wrap-up reply read: no call may run, and plain prose with nothing call-like is the answer."""
    if pending.get("actions"):
        return error_pending("the wrap-up asked for the final answer, and tools were no longer available; "
                             "the reply made a tool call instead", pending.get("thought") or "")
    if pending.get("parse_error") and text.strip() and not call_like(text, tools):
        return Pending(thought="", actions=[], answer=text.strip(), parse_error=None, prose=True)
    return pending


def our_messages(state: AgentState, ctx: AgentContext, protocol: OutputProtocol) -> list[str]:
    """What reinloop itself told the model (format, example, corrections, hints): an answer quoting it is an echo."""
    steps = current_steps(state)
    last = steps[-1] if steps else {}
    form = answer_form(ctx.output)
    return [protocol.instructions(ctx.tools, **form), protocol.example(ctx.tools, **form),
            protocol.repair_message(""), protocol.correction("", 2, ctx.tools, **form), *((state.get("reply") or {}).get("hints") or []),
            str(last.get("feedback") or ""), REQUEST]


def check_answer(state: AgentState, ctx: AgentContext, protocol: OutputProtocol, pending: Pending) -> Pending:
    """``pending`` with its answer checked by the rules of :mod:`reinloop.answers` (a call or an echo is no
    answer; ``min_tool_calls`` and ``grounded_numbers`` when the run asks for them)."""
    answer = pending.get("answer")
    if answer is None or pending.get("parse_error"):
        return pending
    thought = pending.get("thought") or ""
    call, call_shaped = written_call(answer, ctx.tools.names())
    if call is not None and protocol.native_tools and not state.get("wrap_up"):
        return first_new_call(state, answer) or parse_reply(WRITTEN_CALLS, {"text": json.dumps(call, ensure_ascii=False)})
    if call_shaped:
        return error_pending("the answer is a tool call written out as text, not an answer"
                             + ("; call tools through the tool-calling API" if protocol.native_tools else ""), thought)
    if problem := echo_problem(answer, our_messages(state, ctx, protocol)):
        return error_pending(problem, thought)
    return check_rules(state, ctx, pending)


def check_rules(state: AgentState, ctx: AgentContext, pending: Pending) -> Pending:
    """``pending`` with its answer checked by the run's own rules: ``min_tool_calls``, ``grounded_numbers``,
    ``calculation_tool``."""
    answer, thought = pending.get("answer") or "", pending.get("thought") or ""
    rules = ctx.answers
    done = results(current_steps(state))
    if len(done) < rules.min_tool_calls:
        return error_pending(too_few_calls_problem(len(done), rules.min_tool_calls), thought)
    task, observed = str(state.get("task") or ""), [r["observation"] for r in done]
    if (run := calculation_call(state, ctx, pending, task, done)) is not None:
        return run
    if rules.grounded_numbers:
        if problem := grounding_problem(answer, [task, *observed]) or equation_problem(answer):
            return error_pending(problem, thought)
        if problem := (tool_talk_problem(answer, ctx.tools.names(), observed)
                       or task_echo_problem(answer, task, observed) or asked_figure_problem(answer, task, observed)):
            return error_pending(problem, thought)
    if (tool := rules.calculation_tool) is not None:
        computed = [r["observation"] for r in done if r["tool"] == tool]
        if problem := calculation_problem(answer, task, tool, computed):
            return error_pending(problem, thought)
    return pending


def calculation_call(state: AgentState, ctx: AgentContext, pending: Pending, task: str,
                     done: list[Result]) -> Pending | None:
    """Under ``calculation_tool``, an answer the rules would refuse that states its own calculation, as a call
    of the calculator with that expression (:func:`~reinloop.answers.written_calculation`), else None.
    ``done``: the run's results, as :func:`check_rules` read them. Not in a wrap-up (it has no tools) nor for a
    structured answer."""
    tool_name = ctx.answers.calculation_tool
    tool = ctx.tools.get(tool_name) if tool_name is not None else None
    answer = pending.get("answer")
    if tool is None or state.get("wrap_up") or pending.get("output") is not None or not isinstance(answer, str):
        return None
    field = single_field(tool)
    observed = [r["observation"] for r in done]
    expression = written_calculation(answer, task, observed) if field is not None else None
    if expression is None:
        return None
    computed = [r["observation"] for r in done if r["tool"] == tool_name]
    refused = (calculation_problem(answer, task, tool_name, computed)
               or (ctx.answers.grounded_numbers and (grounding_problem(answer, [task, *observed])
                                                     or equation_problem(answer))))
    if not refused:
        return None
    call = {"id": action_id(0, tool_name, {field: expression}), "tool": tool_name, "args": {field: expression},
            "from_answer": answer}
    return Pending(thought=pending.get("thought") or "", actions=[call], answer=None, parse_error=None)  # type: ignore[typeddict-item]


def read_reply(state: AgentState, ctx: AgentContext, protocol: OutputProtocol) -> Pending:
    """The reply parsed by ``protocol``, with the cut-off, plain-prose and answer rules applied.

    A structured answer (``RunSpec.output``) is read and validated instead of the text-answer checks
    (a JSON object is what it must be): only the run's own rules apply to it. A wrap-up's answer too:
    a stuck run never ends with an answer that was not validated."""
    pending = read_text(state, ctx, protocol)
    schema = getattr(ctx, "output", None)
    if schema is None:
        return check_answer(state, ctx, protocol, pending)
    pending = read_structured(protocol, state.get("reply") or {}, pending, schema)
    return check_rules(state, ctx, pending) if pending.get("output") is not None else pending


def read_text(state: AgentState, ctx: AgentContext, protocol: OutputProtocol) -> Pending:
    """The reply parsed by ``protocol``, with the cut-off and plain-prose rules applied."""
    reply = state.get("reply") or {}
    pending = past_made_calls(state, parse_reply(protocol, reply))
    if state.get("wrap_up") and not reply.get("truncated"):
        return wrap_up_reading(pending, reply.get("text") or "", ctx.tools.names())
    if reply.get("truncated"):
        whole = whole_call_of_cut_reply(reply, protocol, state)
        if whole is not None:
            return whole
        return error_pending(truncation_problem(str(reply.get("finish_reason")), ctx.max_output_tokens),
                             pending.get("thought") or "")
    if pending.get("actions") and not protocol.native_tools and (new := first_new_call(state, reply.get("text") or "")):
        return new
    if pending.get("parse_error") and not protocol.native_tools:
        steps = current_steps(state)
        last = (steps[-1].get("actions") or []) if steps else []
        answer = prose_answer(reply.get("text") or "", ctx.tools.names(), last)
        if answer is not None:
            return Pending(thought="", actions=[], answer=answer, parse_error=None, prose=True)
    return pending


def parse(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Parse the current reply with the run's protocol."""
    protocol, _ = runtime.context.active(state)
    pending = read_safely(lambda: read_reply(state, runtime.context, protocol))  # the rules, too, never raise
    if pending.get("parse_error"):
        summary = f"parse error: {pending['parse_error']}"
    elif pending.get("answer") is not None:
        summary = "final answer" + (" (plain text after a tool result)" if pending.get("prose") else "")
        summary += " (structured, valid)" if pending.get("output") is not None else ""
    else:
        summary = "actions: " + ", ".join(a["tool"] for a in pending["actions"])
        if (state.get("reply") or {}).get("truncated"):
            summary += " (the reply was cut off after this whole call; the rest was not used)"
    update: dict[str, Any] = {"pending": pending}
    if pending.get("fallback"):
        summary += f"; the model answers in {pending['fallback']}: switching protocols"
        update["protocol"] = pending["fallback"]
    emit(
        runtime,
        "parse",
        summary,
        thought=pending.get("thought") or None,
        actions=[{"tool": a.get("tool"), "args": a.get("args") or {}} for a in pending.get("actions") or []],
        answer=pending.get("answer"),
        error=pending.get("parse_error"),
        fallback=pending.get("fallback"),
    )
    return update


def route_after_parse(state: PendingView) -> Literal["actions", "answer", "error"]:
    """Actions go to validation; answers and parse errors are recorded as they are."""
    pending = state.get("pending") or {}
    if pending.get("parse_error"):
        return "error"
    if pending.get("actions"):
        return "actions"
    return "answer"
