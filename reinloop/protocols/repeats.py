"""A reply that repeats an earlier one of the run, asked for again: with sampling, or without the tool.

At temperature 0 a small model given nearly the same prompt writes nearly the
same reply: after a refusal, a correction or a "you already did this" hint,
Qwen2.5-Coder-0.5B wrote its last reply again word for word, three times, and
the run broke on ``same_errors`` or ``repeated_action``. A longer correction
does not move it; sampling does. With ``AnswerRules(vary_repeats=True)``, a
reply whose call (tool and arguments) or text is one that already failed in
this run is put aside and the model is asked again with the same prompt, at
:data:`VARY_TEMPERATURE` and a seed fixed by the step and the attempt (so a
run stays reproducible on a server that honours ``seed``), at most
:data:`VARY_TRIES` times. The first reply that differs is kept; if none does,
the last one goes on and the guard deals with the repeat as before.

A reply that repeats a call of a ``cacheable`` tool whose result the run
already has (:func:`known_repeat`) is asked for once more, greedily, in a
fresh prompt: the system message with that tool withheld (left out of the
listing in JSON and ReAct, of the bound tools under native calling), the
task, the run's results verbatim (as a wrap-up shows them) and the next-step
question, with none of the model's own replies. Its result is known and will
not change (the same call would be answered from it, :mod:`reinloop.nodes.execute`).
A repeat of any other tool is not one: its result may have changed (a job's
status, a sensor), so the call goes on and runs.
Qwen2.5-Coder-0.5B searched ``杭州`` three times with the city's figures in
front of it; with the tool only withheld, it searched again, copying its own
earlier reply. If the re-ask repeats too, it goes on and the guard deals
with it as before.

A reply whose every call repeats one the loop refused before it ran (an
argument that fails the tool's schema, a calculator call the answer rules
refuse: :func:`refused_repeat`) is asked for once more the same way, with
that tool withheld and the refusal quoted: it would be refused again.
Qwen2.5-Coder-0.5B sent ``db_insert`` a copy of its schema four times, with
sampling in between, until ``same_errors`` broke the run.

The replies put aside are counted (calls, tokens, cost) like any other call,
and each leaves a ``resampled`` or ``withheld`` memory event on the step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.messages import BaseMessage

from .memory.ledger import earlier_result
from .memory.window import current_steps
from .base import OutputProtocol, parse_reply
from ..state import Action, AgentState, Reply

VARY_TEMPERATURE = 0.8
"""The temperature of a repeat's second ask: enough for a 0.5B model to leave its rut."""
VARY_TRIES = 2
"""Asks, beyond the first, for a reply that is not a repeat."""


def _squeezed(text: str) -> str:
    return " ".join(str(text).split()).lower()


def _call_key(tool: str, args: Any) -> str:
    from ..tools.registry import loose

    return "call:" + loose(str(tool)) + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def action_keys(actions: Iterable[Action]) -> set[str]:
    """One key per call: the tool's loose name and its arguments."""
    return {_call_key(a.get("asked_tool") or a.get("tool") or "", a.get("args") or {}) for a in actions}


def seen_keys(state: AgentState) -> set[str]:
    """The failed calls, and the texts of the failed replies, of the run so far.

    Only failures: a repeat of a call that worked gets the guard's "already known" hint with its result,
    which a small model answers from; sampling there sent Qwen from ``17*23`` to ``391*23`` and on.
    """
    keys: set[str] = set()
    for step in current_steps(state):
        failed = [a for a in step.get("actions") or [] if a.get("error") or a.get("problem")]
        keys |= action_keys(failed)
        if step.get("raw") and (step.get("parse_error") or (failed and len(failed) == len(step.get("actions") or []))):
            keys.add("text:" + _squeezed(step["raw"]))
    return keys


def reply_keys(protocol: OutputProtocol, reply: Reply) -> set[str]:
    """The keys of a new reply: what the protocol reads as its calls, and its text."""
    pending = parse_reply(protocol, reply)
    keys = action_keys(pending.get("actions") or [])
    if reply.get("text"):
        keys.add("text:" + _squeezed(reply["text"]))
    return keys


def vary_repeat(
    message: BaseMessage,
    *,
    state: AgentState,
    protocol: OutputProtocol,
    read: Callable[[BaseMessage], Reply],
    ask_again: Callable[[dict[str, Any]], BaseMessage],
    step: int,
) -> tuple[BaseMessage, list[BaseMessage], bool]:
    """``(kept, put_aside, still_a_repeat)``: ``message``, or the first re-ask that repeats nothing of the run.

    ``read`` turns a model message into a :class:`Reply`; ``ask_again(options)`` calls the model with the
    same prompt and these call options (temperature, seed).
    """
    seen = seen_keys(state)
    aside: list[BaseMessage] = []
    repeat = bool(seen) and bool(reply_keys(protocol, read(message)) & seen)
    while repeat and len(aside) < VARY_TRIES:
        aside.append(message)
        message = ask_again({"temperature": VARY_TEMPERATURE, "seed": step * 100 + len(aside)})
        repeat = bool(reply_keys(protocol, read(message)) & seen)
    return message, aside, repeat


def known_repeat(state: AgentState, protocol: OutputProtocol, reply: Reply, tools: Any) -> str | None:
    """The tool of ``reply``'s one call when that call repeats a call of a cacheable tool whose result the run
    has, else None.

    ``tools`` is the run's :class:`~reinloop.tools.registry.ToolRegistry` (names as written are resolved
    the way validate resolves them). Only a tool declared ``cacheable`` is one: any other tool's repeat is a
    new reading (a job's status after a wait), or does something.
    """
    from ..tools.options import options_of

    actions = parse_reply(protocol, reply).get("actions") or []
    if len(actions) != 1 or len(tools) < 2:
        return None
    name = tools.resolve(str(actions[0].get("tool") or ""))
    changers = {t.name for t in tools if options_of(t).side_effects}
    if name is None or not options_of(tools.get(name)).cacheable:
        return None
    known = earlier_result(current_steps(state), name, actions[0].get("args") or {}, changers)
    return name if known is not None else None


def refused_repeat(state: AgentState, protocol: OutputProtocol, reply: Reply, tools: Any) -> tuple[str, str] | None:
    """``(tool, the refusal)`` when every call of ``reply`` is one the run refused before it ran (same tool,
    same arguments, ``problem`` set), with no call succeeding since; else None. The check that refused it
    depends on the task, the arguments and the results, so it would refuse it again."""
    actions = parse_reply(protocol, reply).get("actions") or []
    if not actions or len(tools) < 2:
        return None
    wanted = {_call_key(tools.resolve(str(a.get("tool") or "")) or "", a.get("args") or {}) for a in actions}
    refused: dict[str, tuple[str, str]] = {}
    for step in reversed(current_steps(state)):
        done = step.get("actions") or []
        for action in done:
            if action.get("problem") and action.get("tool"):
                refused.setdefault(_call_key(action["tool"], action.get("args") or {}),
                                   (action["tool"], str(action["problem"])))
        if any(not a.get("error") and not a.get("problem") for a in done):
            break  # a result came since: what was refused then may pass now
    if not wanted <= set(refused):
        return None
    return refused[min(wanted)]
