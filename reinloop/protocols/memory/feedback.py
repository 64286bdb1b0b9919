"""Every prompt moves the model on: a failed step's correction reaches it, and no prompt repeats the last.

A greedy model (temperature 0) given the same prompt twice gives the same
reply twice. :func:`prepare_step` wraps :func:`~reinloop.protocols.memory.manager.prepare_prompt`
with two checks, each of which adds a line to the step's hints and assembles
again (under the same token budget):

- the last step failed and its correction (or its calls' errors) is not in the
  prompt (the window or the budget left it out): it is added;
- the prompt is the same as the one sent before (``state["prompt_digest"]``),
  which dedup or a sliding window over identical steps can cause: a line says
  so and asks for something different.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ...state import Step
from .manager import Prepared, prepare_prompt
from .memo import IdentityMemo
from .tokens import message_text
from .window import current_steps

SAME_PROMPT = (
    "Step {step}: this prompt is the same as the one your last reply answered, and that reply did not finish "
    "the task. Reply differently this time."
)


def prompt_digest(messages: Sequence[BaseMessage]) -> str:
    """A hash of what a prompt says (texts and tool calls), to tell two prompts apart.

    It hashes the JSON of ``[[type, text, tool calls], ...]``; each message's piece is made once (a recorded
    step's messages are the same objects at every prompt, :data:`~reinloop.protocols.memory.prompt.STEP_VIEWS`), and the
    pieces joined as ``json.dumps`` joins a list, so the digest is the one earlier versions stored.
    """
    pieces = [PIECES.get((m,), None, lambda m=m: message_piece(m)) for m in messages]
    return hashlib.sha256(f"[{', '.join(pieces)}]".encode()).hexdigest()[:32]


def message_piece(message: BaseMessage) -> str:
    """One message's part of :func:`prompt_digest`'s JSON."""
    return json.dumps([message.type, message_text(message), getattr(message, "tool_calls", None) or []],
                      ensure_ascii=False, default=str)


PIECES: IdentityMemo[str] = IdentityMemo()
"""Each message's :func:`message_piece`, by identity."""


def corrections(step: Step) -> list[str]:
    """What the model must read after ``step``: its correction, or its failed calls' errors."""
    if not step.get("error"):
        return []
    if step.get("parse_error"):
        return [step.get("feedback") or f"Your last reply could not be used: {step['parse_error']}."]
    return [str(a.get("observation")) for a in step.get("actions") or [] if a.get("error")]


def missing_correction(state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> str | None:
    """The last step's correction, as a hint, when the prompt does not carry it."""
    steps = current_steps(state)
    wanted = corrections(steps[-1]) if steps else []
    if not wanted:
        return None
    shown = "\n".join(message_text(m) for m in messages)
    if all(text in shown for text in wanted):
        return None
    if steps[-1].get("parse_error"):
        return wanted[0]
    calls = [a for a in steps[-1].get("actions") or [] if a.get("error")]
    return "Your last step failed: " + "; ".join(f"{a.get('tool')}: {a.get('observation')}" for a in calls)


def merged(first: Prepared, second: Prepared) -> Prepared:
    """``second``, with what preparing ``first`` did (folds, summarizer calls) kept."""
    second.events = [*first.events, *second.events]
    second.prompt_tokens += first.prompt_tokens
    second.completion_tokens += first.completion_tokens
    second.calls += first.calls
    return second


def again(state: Mapping[str, Any], ctx: Any, thread_id: str, prepared: Prepared, notes: list[str]) -> Prepared:
    """The prompt assembled again with ``notes`` added to the hints."""
    view = {**state, **prepared.update, "hints": [*(state.get("hints") or []), *notes]}
    return merged(prepared, prepare_prompt(view, ctx, thread_id))


def prepare_step(state: Mapping[str, Any], ctx: Any, thread_id: str = "") -> tuple[Prepared, list[str]]:
    """The step's prompt (see the module docstring) and the hints it shows."""
    hints = list(state.get("hints") or [])
    prepared = prepare_prompt(state, ctx, thread_id)
    missing = missing_correction(state, prepared.messages)
    if missing:
        prepared = again(state, ctx, thread_id, prepared, [missing])
        hints.append(missing)
    digest = prompt_digest(prepared.messages)
    if state.get("prompt_digest") and digest == state["prompt_digest"]:
        note = SAME_PROMPT.format(step=state["counters"]["steps"] + 1)
        prepared = again({**state, "hints": hints}, ctx, thread_id, prepared, [note])
        hints.append(note)
        digest = prompt_digest(prepared.messages)
    prepared.digest = digest
    return prepared, hints
