"""parse: turn the model's raw reply into actions, a final answer, or a parse error.

The protocol does the reading and never raises; this node only routes, and
applies the rules that need more than the reply. It reads the model's intent
and never overrules it: every call of a reply is kept (the validate node caps
their number), and text is a call only where text is the call format.

- :func:`~reinloop.protocols.base.read_safely` is the last line, around the
  protocol and the rules below alike: whatever the reply, the result is
  actions, an answer or a parse error, so a stored reply can never make a
  resume crash again;
- a reply the token cap cut off (its finish reason says so) is never the
  answer, and what the cut damaged is never used (a cut JSON call "repaired"
  would run with cut arguments): it is a parse error that asks for a shorter
  reply, unless, in a text protocol, the reply *begins* with whole JSON calls:
  those run, and the model is told that the rest was cut and not used;
- in a text protocol, a reply that lists several JSON objects one after
  another is read as all of its calls (a thought object before them gives
  the thought), as native tool calling reads parallel calls;
- in a text protocol, plain prose right after a tool result can be the final
  answer (:mod:`reinloop.protocols.prose` says when);
- under native tool calling, text is the answer, whatever it looks like ("show
  me the delete_user call as JSON" is answered with JSON); only
  ``AnswerRules.text_calls`` runs an answer that is nothing but a whole call
  of a tool without side effects, and then says so.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langgraph.runtime import Runtime

from .context import AgentContext
from ..observe.events import emit
from ..protocols.memory.window import current_steps
from ..protocols.base import OutputProtocol, action_id, error_pending, parse_reply, read_safely
from ..protocols.answers import call_shaped, echo_problem, too_few_calls_problem, written_call
from ..protocols.memory.ledger import results
from ..protocols.json_protocol import interpret
from ..protocols.prose import call_like, prose_answer
from ..protocols.structured import read_structured
from ..tools.options import options_of
from ..state import AgentState, Pending, PendingView


def truncation_problem(reason: str, cap: int | None, used: int | None = None, *, thought: bool = True) -> str:
    """The parse error of a reply the token cap cut off: the cap is the one asked for, or the reply's own length
    when the endpoint cut it shorter (a server may cap replies below what a request asks). ``thought``: the
    protocol's reply has a thought to keep short (the text protocols; native tool calling has none)."""
    cap = min(cap, used) if cap and used and used > 0 else cap or (used if used and used > 0 else None)
    asked = f"; replies may be at most {cap} tokens" if cap else ""
    short = ", with a thought of one sentence" if thought else ""
    return (
        f"your reply reached the output token limit and was cut off (finish reason {reason!r}{asked}), so none "
        f"of it was used. Write much less: one tool call or the final answer{short}"
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
"""At most this many JSON objects of one reply are read as its calls."""


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


def listed_calls(text: str) -> Pending | None:
    """Every call of a reply that lists JSON objects one after another, when there are several objects and each
    is a call or a bare thought (the thought joins the pending's thought); else None."""
    objects = listed_objects(text)
    if len(objects) < 2:
        return None
    thoughts, actions = [], []
    for obj in objects:
        read = interpret(obj, len(actions) + 1)
        if read.get("actions") and not read.get("parse_error"):
            actions += read["actions"]
            thoughts.append(read.get("thought") or "")
        elif set(obj) <= {"thought", "reasoning"}:
            thoughts.append(str(obj.get("thought") or obj.get("reasoning") or ""))
        else:
            return None  # an answer beside calls, or an unreadable object: the protocol's own reading stands
    if not actions:
        return None
    return Pending(thought=" ".join(dict.fromkeys(t for t in thoughts if t)).strip(), actions=actions, answer=None,
                   parse_error=None)


def told(pending: Pending, repair: str) -> Pending:
    """``pending`` with ``repair`` recorded on each of its calls (told to the model beside each result)."""
    return {**pending, "actions": [{**a, "repairs": [*(a.get("repairs") or []), repair]}
                                   for a in pending.get("actions") or []]}


def whole_calls_of_cut_reply(reply: Any, protocol: OutputProtocol, tools: Any) -> Pending | None:
    """In a text protocol, the whole calls a cut-off reply begins with (the part the cut did not reach), told as
    such; else None. Never when one of them would change the world: a reply cut short is no decision to act."""
    if protocol.native_tools:
        return None
    text = reply.get("text") or ""
    pending = listed_calls(text)
    if pending is None:
        head = whole_first_object(text)
        if head is None:
            return None
        pending = parse_reply(protocol, {**reply, "text": head, "truncated": False})
    if not pending.get("actions") or pending.get("parse_error"):
        return None
    named = [tools.get(tools.resolve(a.get("tool") or "") or "") for a in pending["actions"]]
    if any(tool is not None and options_of(tool).side_effects for tool in named):
        return None
    calls = len(pending["actions"])
    return told(pending, f"your reply was cut off at the output token limit after {calls} whole "
                         f"call{'s' if calls > 1 else ''}; {'they' if calls > 1 else 'it'} ran, the rest was not used")


def distinct_calls(pending: Pending) -> Pending:
    """``pending`` with a call that its reply repeats word for word (same tool, same arguments) kept once, and
    the model told on the call that stays; a reply without such repeats is returned as it is."""
    actions = pending.get("actions") or []
    keys = [json.dumps([a.get("tool"), a.get("args"), a.get("raw_args")], sort_keys=True, default=str) for a in actions]
    if len(set(keys)) == len(keys):
        return pending
    kept: dict[str, Any] = {}
    for key, action in zip(keys, actions):
        if key not in kept:
            times = keys.count(key)
            note = [f"your reply made this same call {times} times; it ran once"] if times > 1 else []
            kept[key] = {**action, "repairs": [*(action.get("repairs") or []), *note]} if note else action
    return {**pending, "actions": list(kept.values())}


def wrap_up_reading(pending: Pending, text: str, tools: list[str]) -> Pending:
    """A wrap-up reply read: no call may run, and plain prose with nothing call-like is the answer."""
    if pending.get("actions"):
        return error_pending("the wrap-up asked for the final answer, and tools were no longer available; "
                             "the reply made a tool call instead", pending.get("thought") or "")
    if pending.get("parse_error") and text.strip() and not call_like(text, tools):
        return Pending(thought="", actions=[], answer=text.strip(), parse_error=None, prose=True)
    return pending


def text_call(state: AgentState, ctx: AgentContext, answer: str) -> Pending | None:
    """Under ``AnswerRules.text_calls`` and native tool calling, an answer that is nothing but a whole call of a
    tool without side effects, as that call (recorded ``from_text`` and told); of a tool with side effects, a parse
    error that says it did not run and how to run it; else None."""
    if not ctx.answers.text_calls:
        return None
    call = written_call(answer, ctx.tools.names())
    if state.get("wrap_up") and (call or call_shaped(answer, ctx.tools.names())):  # tools are gone: no answer either
        return error_pending("the wrap-up asked for the final answer in words, and tools were no longer available; "
                             "the reply wrote a tool call as text instead")
    tool = ctx.tools.get(call["tool"] if call is not None else call_shaped(answer, ctx.tools.names()) or "")
    if tool is None:
        return None
    if options_of(tool).side_effects:  # never run from text, nor taken for the answer a small model did not mean
        return error_pending(f"your reply is only a call of {tool.name} written as text; {tool.name} changes the "
                             "world, so a call written as text is never run: call it through the tool-calling API "
                             "to run it, or answer in words (AnswerRules.text_calls)")
    if call is None:  # cut or damaged: no call to run, and no answer either
        return error_pending(f"your reply is a call of {tool.name} written as text, and not a whole JSON call; call "
                             "it through the tool-calling API, or answer in words (AnswerRules.text_calls)")
    action = {"id": action_id(1, call["tool"], call["args"]), "tool": call["tool"], "args": call["args"],
              "from_text": True}
    pending = Pending(thought="", actions=[action], answer=None, parse_error=None)  # type: ignore[list-item]
    return told(pending, "your reply wrote this call as text instead of through the tool-calling API; it ran "
                         "as a call (AnswerRules.text_calls)")


def check_answer(state: AgentState, ctx: AgentContext, protocol: OutputProtocol, pending: Pending) -> Pending:
    """``pending`` with its answer checked: an echo of reinloop's own marker text is no answer, and the run's
    ``min_tool_calls`` holds; under ``text_calls`` a whole call written as the answer runs instead."""
    answer = pending.get("answer")
    if answer is None or pending.get("parse_error"):
        return pending
    if protocol.native_tools and (call := text_call(state, ctx, answer)) is not None:
        return call
    if problem := echo_problem(answer):
        return error_pending(problem, pending.get("thought") or "")
    return check_rules(state, ctx, pending)


def check_rules(state: AgentState, ctx: AgentContext, pending: Pending) -> Pending:
    """``pending`` with its answer checked by the run's own rules (``min_tool_calls``)."""
    done = results(current_steps(state))
    if len(done) < ctx.answers.min_tool_calls:
        return error_pending(too_few_calls_problem(len(done), ctx.answers.min_tool_calls), pending.get("thought") or "")
    return pending


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


def read_calls(state: AgentState, ctx: AgentContext, protocol: OutputProtocol) -> Pending:
    """The reply as ``protocol`` reads it, or, in a text protocol, every call it lists (:func:`listed_calls`)."""
    reply = state.get("reply") or {}
    if not protocol.native_tools and not reply.get("truncated") and (listed := listed_calls(reply.get("text") or "")):
        return listed
    return parse_reply(protocol, reply)


def read_text(state: AgentState, ctx: AgentContext, protocol: OutputProtocol) -> Pending:
    """The reply parsed by ``protocol``, with the cut-off, listed-calls and plain-prose rules applied."""
    reply = state.get("reply") or {}
    pending = distinct_calls(read_calls(state, ctx, protocol))
    if state.get("wrap_up") and not reply.get("truncated"):
        return wrap_up_reading(pending, reply.get("text") or "", ctx.tools.names())
    if reply.get("truncated"):
        whole = whole_calls_of_cut_reply(reply, protocol, ctx.tools)
        if whole is not None:
            return distinct_calls(whole)
        return error_pending(truncation_problem(str(reply.get("finish_reason")), ctx.max_output_tokens,
                                                reply.get("completion_tokens"), thought=not protocol.native_tools),
                             pending.get("thought") or "")
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
    emit(
        runtime,
        "parse",
        summary,
        thought=pending.get("thought") or None,
        actions=[{"tool": a.get("tool"), "args": a.get("args") or {}} for a in pending.get("actions") or []],
        answer=pending.get("answer"),
        error=pending.get("parse_error"),
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
