"""The running summary: steps that leave the window, folded in by an LLM call.

Seed 002's idea: a batch of steps becomes one or two sentences that keep
every number and conclusion. Each batch adds one line to the summary
(``Steps 4–6: ...``). The summary is bounded by ``Memory.summary_max_tokens``:
when a new line takes it past that, its older lines are merged into one
(``Steps 1–30: ...``, :func:`refold_lines`) and the newest lines, up to half
the bound, stay as they were. So the summary in the state stays small however
long the run (a run database stores each new version of it: unbounded, that
made storage grow with the square of the steps), and the folded steps stay
recallable from the long-term store when recall is on.

The summarizer is called with the tag :data:`SUMMARIZER_TAG`, so callbacks,
tracing and the scripted test model can tell its calls from the agent's.
A failure (an exception, an empty reply) is reported, never raised: the raw
steps stay in the prompt and the fold is retried at the next step.

A summary is not trusted blindly: :func:`check_summary` holds it against the
steps it replaces. A number it states that the steps never held, a short
tool result (``391``, ``北京: 晴, 18℃``) whose numbers it leaves out, a
calculation it pairs with the wrong result ("2 + 2 equals 8"), or a name
written in mid-sentence that the steps never mention makes it disagree; the
batch is then folded as :func:`extractive_line`, the calls and their results
themselves, cut to size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ...tools.bounds import bounded_message, check_value, token_count
from ...observe.callbacks import CallHook, watched
from ...state import Step
from .tokens import MESSAGE_OVERHEAD, TokenCounter, clip_text, count_message_tokens, count_tokens

REFOLD_RULES = (
    "You keep the working memory of an agent that uses tools. The lines below summarize its earlier "
    "steps. Merge them into one or two sentences. Keep every number, name, identifier, result and "
    "conclusion exactly as written; leave out chatter and formatting. Reply with the merged summary only."
)

LABEL = re.compile(r"^Steps? (\d+)(?:–(\d+))?:")
"""The ``Step 4:`` / ``Steps 4–6:`` label a summary line starts with."""

SUMMARIZER_TAG = "reinloop:summarizer"
"""The LangChain tag on every summarizer call."""

SUMMARY_RULES = (
    "You keep the working memory of an agent that uses tools. Summarize the steps below in one "
    "or two sentences. Keep every number, name, identifier, result and conclusion exactly as "
    "written; leave out chatter and formatting. Reply with the summary only."
)

OBSERVATION_CHARS = 4000
"""Longest observation passed to the summarizer (tool output is already truncated before)."""

SHARED_RULES = (
    "[reinloop] Before the next step, write a note for your working memory. Summarize the steps listed "
    "below, whose calls and results are in the messages above, in one or two sentences. Keep every number, "
    "name, identifier, result and conclusion exactly as written; leave out chatter and formatting. Do not "
    "call a tool. Reply with the summary only, as plain text."
)
"""The request that ends a summarizer call sent on the agent's own prompt (:func:`summarize_in_prompt`)."""

RESULT_ABOVE = "(its result is above)"
"""What a call's result reads as in :data:`SHARED_RULES`' list: the prompt above holds it."""


@dataclass(frozen=True)
class Folded:
    """A batch of steps as one summary line, and what the call cost."""

    line: str
    prompt_tokens: int
    completion_tokens: int
    reply: Any = None  # the summarizer's message, which the run prices


CallCheck = Callable[[Any, list[BaseMessage]], None]
"""Called with the model and the prompt before a summarizer call; raises when the call must not be made."""


class SummaryError(Exception):
    """The summarizer failed; the message says how, and ``reply`` holds what it answered, if it answered."""

    def __init__(self, message: str, reply: BaseMessage | None = None) -> None:
        super().__init__(message)
        self.reply = reply


def step_label(steps: Sequence[Step]) -> str:
    """``Step 4`` or ``Steps 4–6``."""
    first, last = steps[0]["index"], steps[-1]["index"]
    return f"Step {first}" if first == last else f"Steps {first}–{last}"


def render_step_text(step: Step, *, results: bool = True) -> str:
    """A step as plain text, whatever the protocol: thought, calls and observations, answer.

    With ``results=False`` each result reads :data:`RESULT_ABOVE` (the prompt it ends already shows it).
    """
    lines = [f"Step {step['index']}:"]
    if step.get("thought"):
        lines.append(f"  thought: {step['thought']}")
    for action in step.get("actions") or []:
        args = json.dumps(action.get("args") or {}, ensure_ascii=False)
        observation = str(action.get("observation") or action.get("problem") or "")[:OBSERVATION_CHARS]
        lines.append(f"  called {action.get('tool')} {args} -> {observation if results else RESULT_ABOVE}")
    if step.get("parse_error"):
        lines.append(f"  unusable reply: {step['parse_error']}")
    if step.get("answer") is not None:
        lines.append(f"  final answer: {step['answer']}")
    return "\n".join(lines)


def summarizer_prompt(
    task: str, steps: Sequence[Step], max_tokens: int | None = None, counter: TokenCounter | None = None
) -> list[BaseMessage]:
    """The messages that ask for a batch's summary, cut in the middle to fit ``max_tokens``."""
    system = SystemMessage(content=SUMMARY_RULES)
    text = f"Task: {task}\n\n" + "\n".join(render_step_text(s) for s in steps)
    if max_tokens is not None and counter is not None:
        room = max_tokens - count_message_tokens([system], counter) - MESSAGE_OVERHEAD
        text = clip_text(text, max(0, room), counter)
    return [system, HumanMessage(content=text)]


def summarize_steps(
    model: Any, task: str, steps: Sequence[Step], counter: TokenCounter, max_tokens: int | None = None,
    hooks: Sequence[CallHook] = (), check: CallCheck | None = None,
) -> Folded:
    """Ask ``model`` for one summary line of ``steps``; raises :class:`SummaryError`."""
    prompt = summarizer_prompt(task, steps, max_tokens, counter)
    text, prompt_tokens, completion_tokens, reply = ask(model, prompt, counter, hooks, check)
    return Folded(line=f"{step_label(steps)}: {text}", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  reply=reply)


def shared_request(steps: Sequence[Step]) -> HumanMessage:
    """The message that turns the agent's prompt into a summarizer call: the rules, then the steps without results."""
    return HumanMessage(content=SHARED_RULES + "\n\n" + "\n".join(render_step_text(s, results=False) for s in steps))


def summarize_in_prompt(llm: Any, prompt: Sequence[BaseMessage], steps: Sequence[Step], counter: TokenCounter,
                        hooks: Sequence[CallHook] = (), check: CallCheck | None = None) -> Folded:
    """Ask for the summary of ``steps`` at the end of the agent's own ``prompt``, sent through ``llm`` (its tools bound).

    The call then repeats the agent's last prompt, tools and all, and only
    its request is new: a provider's prompt cache serves the rest, where a
    prompt of its own would be read fresh. Raises :class:`SummaryError`.
    """
    text, prompt_tokens, completion_tokens, reply = ask(llm, [*prompt, shared_request(steps)], counter, hooks, check)
    return Folded(line=f"{step_label(steps)}: {text}", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  reply=reply)


def with_results(messages: Sequence[BaseMessage]) -> str:
    """The last message's text, each :data:`RESULT_ABOVE` replaced by the result the prompt holds for that call.

    For models that read a summarizer's request literally (the scripted and
    simulated ones): the request of :func:`summarize_in_prompt` then reads as
    the one :func:`summarizer_prompt` writes.
    """
    found: dict[str, str] = {}
    calls: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call.get("id") or ""] = f"{call['name']} {json.dumps(call.get('args') or {}, ensure_ascii=False)}"
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            found[calls[message.tool_call_id]] = str(message.content)[:OBSERVATION_CHARS]
    text = str(messages[-1].content) if messages else ""

    def result(match: re.Match[str]) -> str:
        return f"called {match.group(1)} -> {found.get(match.group(1), RESULT_ABOVE)}"

    return re.sub(r"called (.+?) -> " + re.escape(RESULT_ABOVE), result, text)


def merged_label(lines: Sequence[str]) -> str:
    """``Steps 1–30`` for lines from ``Steps 1–3: ...`` to ``Steps 28–30: ...`` (``Earlier steps`` if unlabelled)."""
    first, last = LABEL.match(lines[0]), LABEL.match(lines[-1])
    if first is None or last is None:
        return "Earlier steps"
    start, end = first.group(1), last.group(2) or last.group(1)
    return f"Step {start}" if start == end else f"Steps {start}–{end}"


def refold_lines(model: Any, task: str, lines: Sequence[str], counter: TokenCounter, max_tokens: int,
                 budget: int | None = None, hooks: Sequence[CallHook] = (), check: CallCheck | None = None) -> Folded:
    """Merge summary ``lines`` into one line of at most ``max_tokens``, in a prompt cut to ``budget``;
    raises :class:`SummaryError`."""
    system = SystemMessage(content=REFOLD_RULES)
    text = f"Task: {task}\n\n" + "\n".join(lines)
    if budget is not None:  # a long task would take the prompt past the run's budget
        text = clip_text(text, max(0, budget - count_message_tokens([system], counter) - MESSAGE_OVERHEAD), counter)
    prompt = [system, HumanMessage(content=text)]
    text, prompt_tokens, completion_tokens, reply = ask(model, prompt, counter, hooks, check)
    label = f"{merged_label(lines)}: "
    line = label + clip_text(text, max(1, max_tokens - count_tokens(label, counter)), counter)
    return Folded(line=line, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, reply=reply)


def ask(model: Any, prompt: list[BaseMessage], counter: TokenCounter,
        hooks: Sequence[CallHook] = (), check: CallCheck | None = None) -> tuple[str, int, int, BaseMessage]:
    """The summarizer's reply to ``prompt`` as one line of text, its prompt and completion tokens, the message
    (``hooks``: told of the call, :mod:`reinloop.observe.callbacks`; ``check``: raises when the call must not be
    made, e.g. it would take the run past its cost budget, and then no call is made)."""
    try:
        if check is not None:
            check(model, prompt)
        config: Any = {"tags": [SUMMARIZER_TAG], "run_name": "reinloop-summarizer"}
        reply = watched(hooks, "chat", "", lambda: model.invoke(prompt, config=config), model=model, inputs=prompt)
    except Exception as exc:  # any provider error: the caller keeps the raw steps and retries
        raise SummaryError(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(reply, BaseMessage):
        raise SummaryError("the summarizer replied with no text")
    unreadable = None if isinstance(reply.content, str) else check_value(reply.content)[1]
    if unreadable is not None:
        raise SummaryError(f"the summarizer's reply cannot be read: {unreadable}", reply)
    text, calls, invalid = bounded_message(reply)  # no lone surrogate reaches the stored summary
    text = " ".join(text.split())
    if calls or invalid:
        raise SummaryError(f"the summarizer called {len(calls) + len(invalid)} tool(s) instead of writing text", reply)
    if not text:
        raise SummaryError("the summarizer replied with no text", reply)
    usage = getattr(reply, "usage_metadata", None) or {}
    return (text, token_count(usage.get("input_tokens")) or count_message_tokens(prompt, counter),
            token_count(usage.get("output_tokens")) or count_tokens(text, counter), reply)


def summary_lines(summary: str) -> list[str]:
    """The lines of a running summary."""
    return [line for line in summary.splitlines() if line.strip()]


def append_line(summary: str, line: str) -> str:
    """The running summary with one more line."""
    return f"{summary}\n{line}" if summary else line


def newest_lines(lines: Sequence[str], max_tokens: float, counter: TokenCounter) -> list[str]:
    """The newest lines that fit ``max_tokens``, oldest first."""
    kept: list[str] = []
    left = max_tokens
    for line in reversed(lines):
        tokens = count_tokens(line, counter) + 1  # the line break
        if tokens > left:
            break
        kept.append(line)
        left -= tokens
    return kept[::-1]


SHORT_RESULT_CHARS = 100
"""A result this short is an answer, not a document: a summary must keep all its numbers."""

EXTRACT_TOKENS = 60
"""Longest result of one call in an extractive summary line, in tokens."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}\b)")
"""A thousands separator (``1,000``): a comma between a digit and three digits. Written comma first, so the
regex engine jumps from comma to comma instead of testing a look-behind at every character (a fold's check
reads the folded steps' whole text: 0.27 ms of 12 KB without commas, 5 µs now)."""
_NAME = re.compile(r"[A-Z](?<=\b[A-Z])(?<![.!?:;\n]\s[A-Z])(?<![.!?:;\n][A-Z])(?<!^[A-Z])[a-z]+(?:[A-Z][a-z]+)*\b")
"""A capitalised word not at the start of a sentence: ``\\b[A-Z][a-z]+...`` preceded by no ``.!?:;`` or line
break (with or without a space) and not the text's first word. The capital comes first and the look-behinds
after it, so the engine skips to capitals instead of testing three look-behinds at every character."""


def numbers_in(text: str) -> set[str]:
    """The numbers ``text`` states, normalised (``12.0`` is ``12``, ``1,000`` is ``1000``)."""
    flat = _THOUSANDS.sub("", text)
    return {n[:-2] if n.endswith(".0") else n for n in _NUMBER.findall(flat)}


def names_in(text: str) -> set[str]:
    """Capitalised words written in mid-sentence (``Beijing`` in "the weather in Beijing")."""
    return {m.group() for m in _NAME.finditer(" ".join(text.split()))}


def wrong_pairings(text: str, steps: Sequence[Step]) -> list[str]:
    """Calculations the summary pairs with another result than the tool gave ("2 + 2 equals 8")."""
    compact = re.sub(r"\s+", "", text)
    problems = []
    for step in steps:
        for action in step.get("actions") or []:
            values = [v for v in (action.get("args") or {}).values() if isinstance(v, str) and v.strip()]
            if action.get("error") or len(values) != 1:
                continue
            expression = re.sub(r"\s+", "", values[0])
            pattern = re.escape(expression) + r"(?:=|==|equals|is|->|→|gives|makes)(-?\d+(?:\.\d+)?)"
            for match in re.finditer(pattern, compact):
                if numbers_in(match.group(1)) != numbers_in(str(action.get("observation"))):
                    problems.append(f"it pairs {values[0]} with {match.group(1)}, but {action.get('tool')} "
                                    f"gave {action.get('observation')}")
    return problems


def check_summary(text: str, task: str, steps: Sequence[Step]) -> list[str]:
    """How a summary disagrees with the steps it replaces; ``[]`` when it agrees."""
    source = f"{task}\n" + "\n".join(render_step_text(s) for s in steps)
    problems = [f"it states {n}, which no step holds" for n in sorted(numbers_in(text) - numbers_in(source))]
    known = source.lower()
    problems += [f"it names {n}, which no step mentions" for n in sorted(names_in(text)) if n.lower() not in known]
    stated = numbers_in(text)
    for step in steps:
        for action in step.get("actions") or []:
            result = str(action.get("observation") or "")
            if action.get("error") or len(result) > SHORT_RESULT_CHARS:
                continue
            lost = sorted(numbers_in(result) - stated)
            if lost:
                problems.append(f"it leaves out {', '.join(lost)} from step {step['index']}'s {action.get('tool')}")
    return problems + wrong_pairings(text, steps)


def extractive_line(steps: Sequence[Step], counter: TokenCounter, max_tokens: int) -> str:
    """The steps' calls and results themselves, as one summary line of at most ``max_tokens``."""
    parts = []
    for step in steps:
        for action in step.get("actions") or []:
            args = json.dumps(action.get("args") or {}, ensure_ascii=False)
            result = " ".join(str(action.get("observation") or action.get("problem") or "").split())
            result = clip_text(result, EXTRACT_TOKENS, counter)
            parts.append(f"{action.get('tool')} {args} {'failed: ' if action.get('error') else '-> '}{result}")
        if step.get("answer") is not None:
            parts.append(f"answered {' '.join(str(step['answer']).split())}")
    line = f"{step_label(steps)}: " + ("; ".join(parts) or "no tool results")
    return clip_text(line, max_tokens, counter)
