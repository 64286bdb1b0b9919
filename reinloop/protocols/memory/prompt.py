"""Prompt assembly under a token budget: what the model sees at each step.

The prompt is rebuilt from the state at every step, never kept as a growing
message list. Its parts, in order of priority:

1. system rules and the protocol's instructions (tool descriptions in the text
   protocols; native tool calling sends schemas through the API, and those are
   counted too), earlier tasks on the thread, the task, the guard's hints;
2. the running summary (newest lines, up to ``summary_max_tokens``);
3. the ledger: tool results of the steps outside the window, verbatim,
   newest first, up to ``ledger_max_tokens`` (:mod:`.ledger`);
4. recalled long-term memories (best first, same cap as the summary);
5. as many recent steps as fit, newest first, each step whole.

Every part is counted with the active counter (:func:`~reinloop.protocols.memory.tokens.active_counter`)
and the sum never exceeds ``Memory.max_prompt_tokens``: when the fixed parts
alone are too big, the oldest earlier tasks go first, then the middle of the
hints is cut with a marker. The task is never cut: one that leaves the steps
less than ``RESERVED_TOKENS`` is refused before the run (:func:`check_task`,
:class:`~reinloop.errors.TaskTooLargeError`), since a task cut to fit would
take the room of the tool results. The counts are returned per part so each
step records where its tokens went.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ..base import answer_form
from ...errors import SettingError, TaskTooLargeError
from ...state import Step
from .config import Memory
from .ledger import LEDGER_HEADER, newest_lines_within
from .memo import IdentityMemo
from ...checkpoints.memories import Recalled
from .summary import newest_lines, summary_lines
from .tokens import (
    MESSAGE_OVERHEAD,
    TokenCounter,
    active_counter,
    clip_text,
    count_message_tokens,
    count_tokens,
    message_text,
)
from .window import current_steps, fit_window, hidden_duplicates, rolling_cap, unfolded_steps

__all__ = ["Assembly", "assemble", "build_prompt", "check_fixed_parts", "check_task", "current_steps"]


HINT_PREFIX = "[reinloop] "
SUMMARY_HEADER = "Summary of the earlier steps of this task:"
RECALL_HEADER = "Relevant memories from earlier work:"
RESERVED_TOKENS = 200
"""Room the fixed system parts must leave in the budget for the task and the steps."""


@dataclass
class Assembly:
    """An assembled prompt: its messages, the tokens of each part, the steps it shows."""

    messages: list[BaseMessage]
    parts: dict[str, int]
    shown: list[Step]
    events: list[dict[str, Any]] = field(default_factory=list)


def memory_of(ctx: Any) -> Memory:
    """The run's memory settings (defaults for contexts built by hand)."""
    return getattr(ctx, "memory", None) or Memory()


def system_text(ctx: Any, rules: str) -> str:
    """The run's own system prompt, when it gives one, then ``rules`` (how to reply); reinloop adds no persona.

    A sentence of reinloop's own before the rules ("You are a careful assistant that completes the user's
    task step by step ...") turned Qwen2.5-Coder-1.5B's native tool calls into prose: 3 of 20 BFCL items
    right with it, 19 of 20 without it, as with ``create_agent`` (BENCHMARKS.md).
    """
    own = (ctx.system_prompt or "").strip()
    return f"{own}\n\n{rules}" if own else rules


def system_message(ctx: Any) -> SystemMessage:
    """The run's system prompt, if any, plus the protocol's instructions."""
    output = getattr(ctx, "output", None)  # a structured answer: the protocol says its form and schema
    text = system_text(ctx, ctx.protocol.instructions(ctx.tools, **answer_form(output)))
    return shared_message(SystemMessage, text)  # type: ignore[return-value]


@functools.lru_cache(maxsize=32)
def shared_message(kind: type[BaseMessage], content: str) -> BaseMessage:
    """One message object per kind and text: a prompt's system message and task are the same text at every step,
    and as the same object their token count, their part of the prompt's digest and the hash of their text are
    remembered (:data:`STEP_VIEWS`, :data:`~reinloop.protocols.memory.feedback.PIECES`), not made again.
    Messages are never edited in place (a changed one is a ``model_copy``)."""
    return kind(content=content)


def sent_schemas(ctx: Any) -> list[str]:
    """The tool schemas native tool calling sends through the API, as JSON: the run's tools, then the answer tool."""
    output = getattr(ctx, "output", None)  # RunSpec.output: its final_answer tool is bound after the tools
    return [ctx.tools.schemas_json() if len(ctx.tools) else "", output.tool_json if output is not None else ""]


def tool_tokens(ctx: Any, counter: TokenCounter) -> int:
    """Tokens of the tool descriptions: schemas sent through the API, or the text in the system prompt."""
    if ctx.protocol.native_tools:
        return sum(count_tokens(part, counter) for part in sent_schemas(ctx))  # made once, counted once per counter
    return count_tokens(ctx.tools.describe(), counter) if len(ctx.tools) else 0


def fixed_system_tokens(ctx: Any, counter: TokenCounter) -> tuple[int, int]:
    """``(system, tools)`` tokens; the system part excludes tool text the text protocols embed."""
    tools = tool_tokens(ctx, counter)
    total = count_message_tokens([system_message(ctx)], counter)
    return (total, tools) if ctx.protocol.native_tools else (total - tools, tools)


def fixed_upper_bound(ctx: Any) -> int:
    """At least the tokens of the system prompt and tools by any counter: their UTF-8 bytes.

    A byte-level BPE token (o200k, cl100k) covers at least one byte, and
    :func:`~reinloop.protocols.memory.tokens.estimate_tokens` prices no piece above its bytes.
    """
    tools = sent_schemas(ctx) if ctx.protocol.native_tools else []
    return len(message_text(system_message(ctx)).encode()) + MESSAGE_OVERHEAD + sum(len(t.encode()) for t in tools)


def check_fixed_parts(ctx: Any) -> None:
    """Refuse a budget that the system prompt and tools alone (nearly) fill."""
    memory = memory_of(ctx)
    if memory.max_prompt_tokens is None or fixed_upper_bound(ctx) + RESERVED_TOKENS <= memory.max_prompt_tokens:
        return  # no exact count needed: building a graph does not load an encoding (~0.2 s, ~75 MB)
    counter = active_counter(memory.encoding)
    system, tools = fixed_system_tokens(ctx, counter)
    if system + tools + RESERVED_TOKENS > memory.max_prompt_tokens:
        raise SettingError(
            "Memory", "max_prompt_tokens", f"={memory.max_prompt_tokens} for the task and the steps; raise "
            f"max_prompt_tokens to at least {system + tools + RESERVED_TOKENS} or use fewer tools", shown=False,
            sentence=f"the system prompt ({system} tokens) and tool descriptions ({tools} tokens, {counter}) leave "
            f"less than {RESERVED_TOKENS} of {{setting}}{{reason}}",
        )


def task_message(task: str) -> HumanMessage:
    """The task as every prompt shows it."""
    return shared_message(HumanMessage, f"Task: {task}")  # type: ignore[return-value]


def check_task(ctx: Any, task: str) -> None:
    """Refuse a task that, with the system prompt and tools, leaves the steps less than ``RESERVED_TOKENS`` of the
    prompt budget (:class:`~reinloop.errors.TaskTooLargeError`: its size, the budget, the budget it needs)."""
    memory = memory_of(ctx)
    if memory.max_prompt_tokens is None:
        return
    if fixed_upper_bound(ctx) + len(task.encode()) + MESSAGE_OVERHEAD + RESERVED_TOKENS <= memory.max_prompt_tokens:
        return  # no exact count needed: a token covers at least one byte
    counter = active_counter(memory.encoding)
    system, tools = fixed_system_tokens(ctx, counter)
    size = count_message_tokens([task_message(task)], counter)
    if system + tools + size + RESERVED_TOKENS > memory.max_prompt_tokens:
        raise TaskTooLargeError(size, system + tools, RESERVED_TOKENS, memory.max_prompt_tokens, str(counter))


def turn_text(turn: Mapping[str, Any]) -> str:
    """One earlier task on the thread: the task, its answer, its summary."""
    answer = turn.get("answer") or f"(none: {turn.get('status')})"
    text = f"- Task: {turn['task']}\n  Answer: {answer}"
    return text + (f"\n  Summary: {turn['summary']}" if turn.get("summary") else "")


def history_message(turns: Sequence[Mapping[str, Any]]) -> HumanMessage | None:
    """Earlier tasks in this conversation and their answers, if any."""
    if not turns:
        return None
    return HumanMessage(content="Earlier tasks in this conversation:\n" + "\n".join(turn_text(t) for t in turns))


def hints_message(hints: Sequence[str]) -> HumanMessage | None:
    """The guard's hints for this step."""
    return HumanMessage(content="\n".join(HINT_PREFIX + h for h in hints)) if hints else None


def next_step_message(ctx: Any) -> HumanMessage | None:
    """The question about the task's next step that ends every prompt, when the run's answer rules ask for it."""
    from ..answers import NEXT_STEP_CUE

    rules = getattr(ctx, "answers", None)
    return HumanMessage(content=NEXT_STEP_CUE) if rules is not None and rules.ask_next_step else None


def listing(header: str, lines: Sequence[str]) -> HumanMessage:
    """A message of a header and lines."""
    return HumanMessage(content=header + "\n" + "\n".join(lines))


def fit_listing(
    header: str, lines: list[str], max_tokens: float, counter: TokenCounter, *, drop_first: bool = True
) -> tuple[HumanMessage | None, int]:
    """The message with as many of ``lines`` as fit, and its tokens.

    Lines are dropped from the front (oldest summary lines) or, with
    ``drop_first=False``, from the back (least similar memories). The
    number kept is first guessed from the lines' own counts (remembered by
    the counter), then settled on the whole message's exact count, so a
    long listing costs a few counts, not one per dropped line.
    """
    kept = kept_lines(header, lines, max_tokens, counter, drop_first)
    fits: tuple[HumanMessage | None, int] = (None, 0)
    while 0 < kept <= len(lines):
        message = listing(header, lines[len(lines) - kept:] if drop_first else lines[:kept])
        tokens = count_message_tokens([message], counter)
        if tokens > max_tokens:
            if fits[0] is not None:
                return fits
            kept -= 1
        else:
            fits = (message, tokens)
            kept += 1
    return fits


def kept_lines(header: str, lines: Sequence[str], max_tokens: float, counter: TokenCounter, drop_first: bool) -> int:
    """How many of ``lines`` fit ``max_tokens``, by the sum of their counts (a line break is a token)."""
    left = max_tokens - count_message_tokens([listing(header, [])], counter)
    kept = 0
    for line in reversed(lines) if drop_first else lines:
        left -= count_tokens(line, counter) + 1
        if left < 0:
            break
        kept += 1
    return max(kept, 1) if lines else 0


def summary_fits(lines: list[str], max_tokens: float, counter: TokenCounter) -> bool:
    """True when the prompt shows every line of a summary within ``max_tokens`` (its own bound)."""
    return not lines or count_message_tokens([listing(SUMMARY_HEADER, lines)], counter) <= max_tokens


class Budget:
    """Tokens left in the prompt, spent part by part."""

    def __init__(self, total: int | None) -> None:
        self.left: float = math.inf if total is None else total
        self.parts: dict[str, int] = {}

    def spend(self, part: str, tokens: int) -> None:
        """Account ``tokens`` to ``part``."""
        self.parts[part] = self.parts.get(part, 0) + tokens
        self.left -= tokens


def clip_message(text: str, max_tokens: float, counter: TokenCounter) -> HumanMessage:
    """A user message of ``text``, cut to fit ``max_tokens`` (message overhead included)."""
    return HumanMessage(content=clip_text(text, max(0, int(max_tokens) - MESSAGE_OVERHEAD), counter))


def fixed_messages(
    state: Mapping[str, Any], ctx: Any, counter: TokenCounter, budget: Budget
) -> tuple[list[BaseMessage], list[BaseMessage], list[dict[str, Any]]]:
    """The messages every prompt has (head and trailing hints), cut to the budget if needed."""
    if not current_steps(state):  # the run's first prompt: refused before the model is called (a graph invoked
        check_task(ctx, str(state["task"]))  # without run()'s own check)
    system, tools = fixed_system_tokens(ctx, counter)
    budget.spend("system", system)
    budget.spend("tools", tools)
    task = task_message(state["task"])
    hints = [m for m in [hints_message(state.get("hints") or []), next_step_message(ctx)] if m is not None]
    need = count_message_tokens([task, *hints], counter)
    events: list[dict[str, Any]] = []
    turns = list(state.get("history") or [])
    while turns and count_message_tokens([history_message(turns)], counter) + need > budget.left:  # type: ignore[list-item]
        turns = turns[1:]  # the oldest earlier task goes first
    if len(turns) < len(state.get("history") or []):
        events.append({"event": "clipped", "part": "history", "dropped": len(state.get("history") or []) - len(turns)})
    if need > budget.left:  # the task and hints alone overflow: cut the hints' middle, never the task
        room = budget.left - count_message_tokens([task], counter)
        if room < 0:  # a budget lowered on resume
            raise TaskTooLargeError(count_message_tokens([task], counter), system + tools, 0,
                                    memory_of(ctx).max_prompt_tokens, str(counter))
        if hints:
            cap = min(room, budget.left / 4)
            hints = [clip_message("\n".join(str(h.content) for h in hints), cap, counter)] if cap > MESSAGE_OVERHEAD else []
            events.append({"event": "clipped", "part": "hints"})
    head: list[BaseMessage] = [system_message(ctx)]
    if (earlier := history_message(turns)) is not None:
        head.append(earlier)
        budget.spend("history", count_message_tokens([earlier], counter))
    head.append(task)
    budget.spend("task", count_message_tokens([task], counter))
    budget.spend("hints", count_message_tokens(hints, counter))
    return head, hints, events


def ledger_message(
    state: Mapping[str, Any], shown: Sequence[Step], memory: Memory, counter: TokenCounter, budget: Budget
) -> HumanMessage | None:
    """The ledger of the run's results the window does not show, newest first, up to its cap (spent)."""
    if memory.ledger_max_tokens is None:
        return None
    cap = min(memory.ledger_max_tokens, budget.left)
    lines = newest_lines_within(current_steps(state), shown, cap, counter, str(state.get("task") or ""))
    message, tokens = fit_listing(LEDGER_HEADER, lines, cap, counter)
    budget.spend("ledger", tokens)
    return message


def assemble(
    state: Mapping[str, Any],
    ctx: Any,
    *,
    steps: Sequence[Step],
    summary: str = "",
    recalled: Sequence[Recalled] = (),
    window_steps: int | None = None,
    counter: TokenCounter | None = None,
) -> Assembly:
    """The prompt for ``steps`` (the candidates, oldest first) under the run's budget."""
    memory = memory_of(ctx)
    counter = counter or active_counter(memory.encoding)
    budget = Budget(memory.max_prompt_tokens)
    head, tail, events = fixed_messages(state, ctx, counter, budget)
    cap = min(memory.summary_max_tokens, budget.left)
    shown_lines = newest_lines(summary_lines(summary), cap, counter)
    summary_message, tokens = fit_listing(SUMMARY_HEADER, shown_lines, cap, counter)
    if summary_message is not None:
        head.append(summary_message)
        budget.spend("summary", tokens)
    memories = [f"- {r.text}" for r in sorted(recalled, key=lambda r: -r.score)]
    message, tokens = fit_listing(RECALL_HEADER, memories, min(memory.summary_max_tokens, budget.left), counter,
                                  drop_first=False)
    if message is not None:
        head.append(message)
        budget.spend("recall", tokens)
    rendered = {s["index"]: step_view(s, ctx.protocol, counter) for s in steps}
    costs = {i: view[1] for i, view in rendered.items()}
    shown = fit_window(steps, lambda s: costs[s["index"]], budget.left, window_steps)
    body = [m for s in shown for m in rendered[s["index"]][0]]
    budget.spend("steps", sum(costs[s["index"]] for s in shown))
    ledger = ledger_message(state, shown, memory, counter, budget)
    if ledger is not None:  # shown beside the summary; paid from what the window left
        head.insert(head.index(summary_message) + 1 if summary_message in head else len(head), ledger)
    parts = {name: budget.parts.get(name, 0)
             for name in ("system", "tools", "history", "task", "summary", "ledger", "recall", "steps", "hints")}
    parts["total"] = sum(parts.values())
    return Assembly(messages=[*head, *body, *tail], parts=parts, shown=shown, events=events)


STEP_VIEWS: IdentityMemo[tuple[list[BaseMessage], int]] = IdentityMemo()
"""Each recorded step's messages and their tokens, per protocol and counter: the same at every prompt."""


def step_view(step: Step, protocol: Any, counter: TokenCounter) -> tuple[list[BaseMessage], int]:
    """The messages that replay ``step`` in ``protocol`` and their tokens by ``counter`` (rendered once)."""
    def view() -> tuple[list[BaseMessage], int]:
        messages = protocol.render_step(step)
        return messages, count_message_tokens(messages, counter)

    return STEP_VIEWS.get((step, protocol, counter), None, view)


def build_prompt(state: Mapping[str, Any], ctx: Any) -> list[BaseMessage]:
    """The messages the model would get now, from the state alone (no summarizer call)."""
    steps = unfolded_steps(state)
    hidden = hidden_duplicates(steps) if memory_of(ctx).dedup else {}
    visible = [s for s in steps if s["index"] not in hidden]
    memory = memory_of(ctx)
    return assemble(state, ctx, steps=visible, summary=state.get("summary") or "",
                    window_steps=rolling_cap(memory.window_steps, memory.summary_batch)).messages
