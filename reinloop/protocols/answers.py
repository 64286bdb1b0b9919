"""What a final answer must be, and the opt-in rules a run may add.

A model's final answer is checked like any other output (the seeds' first
distrust), but only on evidence from the run, never on word lists:

- **reinloop's own words are not an answer.** A reply that repeats one of
  reinloop's fixed messages to the model word for word (its correction, its
  wrap-up request, its next-step question: :data:`ECHO_MARKERS`) is a parse
  error: small models echo the newest message. Nothing else about an answer's
  wording is refused: "the task still needs sign-off from QA" is an answer.

:class:`AnswerRules` holds the rules a caller chooses, each its own switch,
all off by default (:mod:`reinloop.protocols.profiles` names the set tuned for small
local models):

- ``min_tool_calls``: an answer that comes before this many successful tool
  calls is refused ("call a tool first").
- ``wrap_up``: when a run is about to break because it is stuck (the same
  action, the same error, errors in a row, or the step limit) and it has tool
  results, the model gets one more call, with no tools, showing the task and
  every result, asking for the final answer (LangChain's old
  ``early_stopping_method="generate"``). An answer ends the run ``done`` and
  the outcome marks it as a wrap-up answer (``wrapped_up``): it was given
  without tools by a run that was stuck, so it may be wrong, and every view
  of the run says so. At most one wrap-up per break.
- ``ask_next_step``: every prompt ends with a short question asking which
  tool gives what the task still needs (:data:`NEXT_STEP_CUE`).
- ``vary_repeats``: a reply that repeats a call or a reply that failed in
  this run is asked for again with sampling (:mod:`reinloop.protocols.repeats`).
- ``text_calls``: under native tool calling, an answer that is nothing but a
  whole JSON call of a known tool without side effects runs as that call; the
  model is told and the action records it (``from_text``). Such an answer
  calling a tool *with* side effects runs nothing and is sent back: call it
  through the API, or answer in words. Off, an answer is an answer, whatever
  it looks like.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import SettingError
from ..runs.settings import replace_known

# The rules are data a RunSpec holds, and ``reinloop --help`` reads the spec: the checks import the
# parsing helpers (which bring LangChain) when they run, not when this module is imported.

WRAP_UP_REASONS = ("repeated_action", "same_errors", "consecutive_errors", "max_steps")
"""Breaks that mean the run is stuck or out of steps, not out of money or time: a wrap-up may answer them."""

ECHO_MARKERS = (
    "[reinloop]",
    "Your last reply could not be used",
    "could not be used; this is attempt",
    "Reply with exactly one of these forms",
    "call a tool through the tool-calling API (e.g.",
    "reply with the final answer as plain text, a sentence or two",
    "Reply again, following the required format exactly",
    "Tool results of earlier steps, verbatim",
    "Give the final answer to the task now, from these results",
    "Which tool gives what the task still needs? Call that one now.",
)
"""reinloop's own marker texts, word for word: an answer that repeats one is an echo of our message, not an
answer. Only fixed texts that reinloop alone writes, never a phrase a person could write in an answer."""

NEXT_STEP_CUE = ("Which tool gives what the task still needs? Call that one now. If the results above "
                 "already hold the whole answer, give the final answer instead.")
"""The question ``AnswerRules.ask_next_step`` ends each prompt with."""

def wrap_up_note(reason: str | None) -> str:
    """The mark every view of a run puts beside a wrap-up answer (``reason``: the break it replaced), else ``""``."""
    if not reason:
        return ""
    return (f" [wrap-up answer: given without tools after the run got stuck ({reason}); it may be wrong, "
            "check it]")


RETIRED_RULES = ("grounded_numbers", "calculation_tool")
"""Rules tuned on the development tasks' words that did not help out of sample and were removed: a stored
run or a batch line that names one is read with a warning, and the rule is off."""


@dataclass(frozen=True, kw_only=True)
class AnswerRules:
    """The opt-in rules for answers and stuck runs, each its own switch (see the module); all off by default."""

    min_tool_calls: int = 0
    """Successful tool calls the run must have made before an answer is accepted (0: none needed)."""
    wrap_up: bool = False
    """At a stuck break with results in hand, ask once more, without tools, for the final answer
    (one model call beyond the limit that tripped); the answer is marked as a wrap-up answer."""
    ask_next_step: bool = False
    """End every prompt with a question about the task's next step (:data:`NEXT_STEP_CUE`)."""
    vary_repeats: bool = False
    """Ask again, sampling with a fixed seed, when a reply repeats a call or a reply that failed in this run
    (:mod:`reinloop.protocols.repeats`): a greedy small model otherwise writes its refused reply again."""
    text_calls: bool = False
    """Under native tool calling, run an answer that is only a whole JSON call of a known tool without side
    effects as that call (told to the model, recorded as ``from_text``); off: an answer is an answer."""

    def __post_init__(self) -> None:
        if isinstance(self.min_tool_calls, bool) or not isinstance(self.min_tool_calls, int) or self.min_tool_calls < 0:
            raise SettingError("AnswerRules", "min_tool_calls", "must be a whole number >= 0", value=self.min_tool_calls)
        for name in ("wrap_up", "ask_next_step", "vary_repeats", "text_calls"):
            if not isinstance(getattr(self, name), bool):
                raise SettingError("AnswerRules", name, "must be True or False", value=getattr(self, name))

    def replace(self, **changes: Any) -> AnswerRules:
        """A copy with some rules changed (unknown names are refused; a retired rule is off, with a warning)."""
        retired = sorted(set(changes) & set(RETIRED_RULES))
        if retired:
            warnings.warn(f"answer rule(s) {', '.join(retired)} were removed (they did not help out of sample) and "
                          "are off; see reinloop.profiles", DeprecationWarning, stacklevel=2)
            changes = {k: v for k, v in changes.items() if k not in RETIRED_RULES}
        return replace_known(self, changes, unknown="answer rule(s)", valid="answer rules")

    def as_dict(self) -> dict[str, Any]:
        """The rules as a JSON-able dict."""
        return dataclasses.asdict(self)


_CALL_OBJECT = re.compile(r"^\s*(?:```[a-zA-Z]*\s*)?(?:<tool_call>\s*)?\{")


def written_call(text: str, tool_names: Iterable[str]) -> dict[str, Any] | None:
    """The whole JSON call of a known tool that ``text`` is, and nothing else (``{"tool": name, "args": {...}}``),
    else None.

    ``text`` must be one strict JSON object naming a known tool (``name``/``tool`` plus ``arguments``/``args``),
    optionally fenced or in ``<tool_call>`` tags, with nothing after it: prose around a JSON object makes it an
    answer that shows a call, not a call."""
    from ..tools.registry import loose

    if not _CALL_OBJECT.match(text):
        return None
    start = text.find("{")
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or text[end:].strip(" \t\r\n`").removesuffix("</tool_call>").strip(" \t\r\n`"):
        return None
    names = {loose(n): n for n in tool_names}
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or loose(name) not in names:
        return None
    args = value.get("arguments", value.get("args", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return {"tool": names[loose(name)], "args": args}


def call_shaped(text: str, tool_names: Iterable[str]) -> str | None:
    """The known tool that ``text`` begins to call as a JSON object (``{"name": "db_insert", ...``, whole or not,
    optionally fenced), else None: what ``text_calls`` reads as a call written as text."""
    from ..tools.registry import loose

    if not _CALL_OBJECT.match(text):
        return None
    named = re.search(r'"(?:name|tool)"\s*:\s*"([^"]+)"', text[text.find("{"):text.find("{") + 400])
    names = {loose(n): n for n in tool_names}
    return names.get(loose(named.group(1))) if named else None


def echo_problem(answer: str) -> str | None:
    """Why ``answer`` is no answer when it repeats one of reinloop's own marker texts (:data:`ECHO_MARKERS`),
    else None."""
    lowered = answer.lower()
    marker = next((m for m in ECHO_MARKERS if m.lower() in lowered), None)
    if marker is None:
        return None
    return (f"your answer repeats reinloop's message to you ({marker!r}) instead of answering the task; "
            "give the answer to the task itself, from the tool results")


def too_few_calls_problem(made: int, needed: int) -> str:
    """Why an answer that came before ``needed`` successful tool calls is refused."""
    calls = "call" if needed == 1 else "calls"
    return (f"an answer needs at least {needed} successful tool {calls} first, and this run has made {made}; "
            "call the tool that gives what the task asks for, then answer from its result")
