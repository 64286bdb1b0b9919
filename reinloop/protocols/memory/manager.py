"""One step's memory work, before the model is called: dedup, fold, recall, assemble.

The decide node calls :func:`prepare_prompt` and gets back the messages, the
tokens of each part, the memory events, what the summarizer cost, and the
state update (summary and fold cursor). Keeping this here keeps the node small.

Why the summarizer runs in decide, just before the prompt is built, and not in
memorize after a step is recorded: only decide knows what must leave the prompt
(that depends on the budget left after the summary, the recalled memories and
the hints of this step); a run that ends at this step never pays for a summary
it would not use; and the summarizer's tokens land in the same counters update
as the model call, so the guard checks the token budget on both right after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from ...tools.bounds import token_count
from ...state import MemoryCursor, Step
from .config import Memory
from .longterm import recall, remember
from .prompt import SUMMARY_HEADER, Assembly, assemble, listing, memory_of, summary_fits
from ...checkpoints.memories import Recalled
from .summary import (
    Folded,
    SummaryError,
    append_line,
    check_summary,
    extractive_line,
    newest_lines,
    refold_lines,
    shared_request,
    summarize_in_prompt,
    summarize_steps,
    summary_lines,
)
from .tokens import TokenCounter, active_counter, count_message_tokens
from .window import hidden_duplicates, rolling_cap, steps_past_size, steps_to_fold, unfolded_steps


@dataclass
class Prepared:
    """The prompt of a step and what preparing it did."""

    messages: list[BaseMessage]
    parts: dict[str, int]
    events: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0  # spent by the summarizer
    completion_tokens: int = 0
    calls: int = 0
    replies: list[BaseMessage] = field(default_factory=list)  # the summarizer's, to be priced
    aside: list[BaseMessage] = field(default_factory=list)  # the agent's replies put aside as repeats (repeats.py)
    update: dict[str, Any] = field(default_factory=dict)
    counter: str = ""
    digest: str = ""  # the prompt's hash (:func:`~reinloop.protocols.memory.feedback.prompt_digest`), once known


def new_cursor() -> MemoryCursor:
    """No step folded yet."""
    return MemoryCursor(folded=0, failures=0)


def indices(steps: Sequence[Step]) -> list[int]:
    """Step numbers, for events."""
    return [s["index"] for s in steps]


def dedup_events(steps: Sequence[Step], hidden: Mapping[int, int]) -> list[dict[str, Any]]:
    """An event for the steps the newest step just made duplicates."""
    if not steps:
        return []
    newest = steps[-1]["index"]
    repeated = sorted(i for i, by in hidden.items() if by == newest)
    return [{"event": "deduplicated", "steps": repeated, "by": newest}] if repeated else []


def recall_query(state: Mapping[str, Any], steps: Sequence[Step]) -> str:
    """The task and the last thought (or the last calls, when the model gave no thought)."""
    if not steps:
        return state["task"]
    last = steps[-1]
    thought = last.get("thought") or " ".join(
        f"{a.get('tool')} {a.get('args') or {}}" for a in last.get("actions") or []
    )
    return f"{state['task']}\n{thought}".strip()


def recall_for(state: Mapping[str, Any], memory: Memory, thread_id: str, steps: Sequence[Step],
               counter: TokenCounter) -> tuple[list[Recalled], list[dict[str, Any]]]:
    """Recalled memories not already shown in the summary, and the event."""
    if not memory.recall:
        return [], []
    shown = newest_lines(summary_lines(state.get("summary") or ""), memory.summary_max_tokens, counter)
    found, event = recall(memory, thread_id=thread_id, query=recall_query(state, steps), exclude=shown)
    return found, [event] if event else []


class Folding:
    """Folds steps out of the prompt: into the summary, the long-term store, or nowhere."""

    def __init__(self, state: Mapping[str, Any], ctx: Any, thread_id: str, counter: TokenCounter) -> None:
        self.state, self.ctx, self.thread_id, self.counter = state, ctx, thread_id, counter
        self.memory = memory_of(ctx)
        self.summary = state.get("summary") or ""
        self.cursor: MemoryCursor = {**new_cursor(), **(state.get("memory_cursor") or {})}  # type: ignore[typeddict-item]
        self.events: list[dict[str, Any]] = []
        self.prompt_tokens = self.completion_tokens = self.calls = 0
        self.replies: list[BaseMessage] = []

    def fold(self, steps: Sequence[Step], shared: Sequence[BaseMessage] | None = None) -> bool:
        """Fold ``steps`` (oldest first); False when the summarizer failed and they stay raw.

        ``shared`` is the agent's prompt that shows them all (:func:`shared_prompt`): the summary is then
        asked for at its end, else in a prompt of its own.
        """
        folded = self.summarize(steps, shared) if self.memory.summarize else None
        if self.memory.summarize and folded is None:
            return False
        self.events.append({"event": "evicted", "steps": indices(steps), "into": "summary" if folded else "nowhere"})
        if folded is not None:
            self.summary = append_line(self.summary, folded.line)
            self.events.append({"event": "summarized", "steps": indices(steps), "line": folded.line,
                                "tokens_in": folded.prompt_tokens, "tokens_out": folded.completion_tokens})
            self.bound_summary()
        self.cursor = MemoryCursor(folded=steps[-1]["index"], failures=0)
        if self.memory.recall:
            self.events.append(remember(self.memory, thread_id=self.thread_id, run=self.state.get("run", 0),
                                        task=self.state["task"], steps=steps, line=folded.line if folded else None))
        return True

    def bound_summary(self) -> None:
        """Past its bound, merge the summary's older lines into one; the newest, up to half the bound, stay."""
        limit = self.memory.summary_max_tokens
        lines = summary_lines(self.summary)
        if summary_fits(lines, limit, self.counter):
            return
        room = limit - count_message_tokens([listing(SUMMARY_HEADER, [])], self.counter)
        keep = newest_lines(lines, room / 2, self.counter)
        old = lines[: len(lines) - len(keep)]
        try:  # the merged line takes the other half (less its line break)
            merged = refold_lines(self.model, self.state["task"], old, self.counter, max(1, room // 2 - 1),
                                  self.memory.max_prompt_tokens, getattr(self.ctx, "call_hooks", ()), self.check)
        except SummaryError as exc:  # the lines stay; the next fold tries again
            self.events.append({"event": "summary_refold_failed", "lines": len(old), "error": str(exc)})
            return
        self.calls += 1
        self.replies.append(merged.reply)
        self.prompt_tokens += merged.prompt_tokens
        self.completion_tokens += merged.completion_tokens
        self.summary = "\n".join([merged.line, *keep])
        self.events.append({"event": "summary_refolded", "lines": len(old), "line": merged.line,
                            "tokens_in": merged.prompt_tokens, "tokens_out": merged.completion_tokens})

    @property
    def check(self) -> Any:
        """Called before each summarizer call; raises when it must not be made (a cost budget it would cross)."""
        return getattr(self.ctx, "check_summary_call", None)

    @property
    def model(self) -> Any:
        """The summarizer: its own model, or the run's."""
        return self.memory.summarizer if self.memory.summarizer is not None else self.ctx.model

    def summarize(self, steps: Sequence[Step], shared: Sequence[BaseMessage] | None = None) -> Folded | None:
        """The summary of ``steps`` and its cost, or ``None`` after a failure (reported).

        A summary asked for at the end of the agent's prompt that fails (the model called a tool) is
        asked for again in the summarizer's own prompt, at once.
        """
        try:
            if shared is not None:
                try:
                    return self.counted(summarize_in_prompt(self.ctx.llm, shared, steps, self.counter,
                                                               getattr(self.ctx, "call_hooks", ()), self.check), steps)
                except SummaryError as exc:
                    self.count_failed(exc)
                    self.events.append({"event": "summary_unshared", "steps": indices(steps), "error": str(exc)})
            folded = summarize_steps(self.model, self.state["task"], steps, self.counter, self.memory.max_prompt_tokens,
                                     getattr(self.ctx, "call_hooks", ()), self.check)
        except SummaryError as exc:
            self.count_failed(exc)
            self.cursor = {**self.cursor, "failures": self.cursor["failures"] + 1}
            self.events.append({"event": "summary_failed", "steps": indices(steps), "error": str(exc),
                                "failures": self.cursor["failures"]})
            return None
        return self.counted(folded, steps)

    def counted(self, folded: Folded, steps: Sequence[Step]) -> Folded:
        """``folded`` :meth:`checked`, its call counted."""
        self.calls += 1
        self.replies.append(folded.reply)
        self.prompt_tokens += folded.prompt_tokens
        self.completion_tokens += folded.completion_tokens
        return self.checked(folded, steps)

    def count_failed(self, exc: SummaryError) -> None:
        """Count (and so price) a summarizer call that answered, but with no usable text."""
        if exc.reply is None:
            return
        usage = getattr(exc.reply, "usage_metadata", None) or {}
        self.calls += 1
        self.replies.append(exc.reply)
        self.prompt_tokens += token_count(usage.get("input_tokens")) or 0  # bounded, like a summary's own usage
        self.completion_tokens += token_count(usage.get("output_tokens")) or 0

    def checked(self, folded: Folded, steps: Sequence[Step]) -> Folded:
        """``folded``, or the steps' own calls and results when the summary disagrees with them (reported)."""
        text = folded.line.split(": ", 1)[-1]
        problems = check_summary(text, self.state["task"], steps)
        if not problems:
            return folded
        line = extractive_line(steps, self.counter, self.memory.summary_max_tokens)
        self.events.append({"event": "summary_rejected", "steps": indices(steps), "line": folded.line,
                            "problems": problems})
        return dataclasses.replace(folded, line=line)


def shared_prompt(state: Mapping[str, Any], ctx: Any, first: Assembly, visible: Sequence[Step], summary: str,
                  window: int | None, to_fold: Sequence[Step], counter: TokenCounter) -> list[BaseMessage] | None:
    """The agent's last prompt with this step added, if the summary of ``to_fold`` can be asked for at its end.

    Between folds each prompt extends the last one (:mod:`.window`), so this one is read from a provider's
    cache but for the new step. It is used when the summarizer is the run's model on native tool calling
    (the request then goes with the same tools: a cached prefix starts with them), the prompt shows every
    step to fold, and it fits the budget with the request.
    """
    memory = memory_of(ctx)
    if memory.summarizer is not None or not ctx.protocol.native_tools or getattr(ctx, "llm", None) is None:
        return None
    wanted = {s["index"] for s in to_fold}
    grown = first if wanted <= {s["index"] for s in first.shown} else assemble(  # batches: one step more than the cap
        state, ctx, steps=visible, summary=summary, window_steps=None if window is None else window + 1, counter=counter)
    if not wanted <= {s["index"] for s in grown.shown}:
        return None
    size = grown.parts["total"] + count_message_tokens([shared_request(to_fold)], counter)
    return grown.messages if memory.max_prompt_tokens is None or size <= memory.max_prompt_tokens else None


def prepare_prompt(state: Mapping[str, Any], ctx: Any, thread_id: str = "") -> Prepared:
    """The prompt for the next model call, folding what no longer fits.

    Order: hide duplicates; fit the window without recall; fold what did not
    fit (so a step that just left the prompt is already recallable); recall;
    assemble the final prompt.
    """
    memory = memory_of(ctx)
    counter = active_counter(memory.encoding)
    steps = unfolded_steps(state)
    hidden = hidden_duplicates(steps) if memory.dedup else {}
    visible = [s for s in steps if s["index"] not in hidden]
    folding = Folding(state, ctx, thread_id, counter)
    # between folds each prompt extends the last (cacheable, see .window); a fold comes by size or by batch
    batch = memory.summary_batch
    window = rolling_cap(memory.window_steps, batch)
    first = assemble(state, ctx, steps=visible, summary=folding.summary, window_steps=window, counter=counter)
    to_fold = steps_to_fold(visible, len(first.shown), batch, memory.window_steps) or (
        steps_past_size(first.shown, first.parts["steps"], memory.fold_tokens, memory.window_steps)
        if batch is None else [])
    if to_fold:
        shared = (shared_prompt(state, ctx, first, visible, folding.summary, window, to_fold, counter)
                  if memory.summarize else None)
        if folding.fold(to_fold, shared):
            visible = [s for s in visible if s["index"] > to_fold[-1]["index"]]
        else:
            window = None  # a failed fold keeps the raw steps, as many as the budget allows
    recalled, recall_events = recall_for({**state, "summary": folding.summary}, memory, thread_id, steps, counter)
    result = first  # nothing folded or recalled: the first assembly is the prompt (one per step, mostly)
    if to_fold or recalled:
        result = assemble(state, ctx, steps=visible, summary=folding.summary, recalled=recalled,
                          window_steps=window, counter=counter)
    events = dedup_events(steps, hidden) + folding.events + recall_events + result.events
    # Only what changed: a channel written anew is stored anew, at every step.
    update: dict[str, Any] = {}
    if folding.summary != (state.get("summary") or ""):
        update["summary"] = folding.summary
    if folding.cursor != state.get("memory_cursor"):
        update["memory_cursor"] = folding.cursor
    return Prepared(
        messages=result.messages, parts=result.parts, events=events, prompt_tokens=folding.prompt_tokens,
        completion_tokens=folding.completion_tokens, calls=folding.calls, counter=counter.name, update=update,
        replies=folding.replies,
    )
