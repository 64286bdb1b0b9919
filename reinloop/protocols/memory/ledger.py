"""The ledger: the run's tool results, verbatim and bounded, that no summary can rewrite.

A summary is a model's paraphrase, and a small model paraphrases wrongly
("2+2 → 4, → 8, → 12" became "2 + 2 equals 8"). The ledger is the other half
of the memory: one line per successful tool call — step, tool, arguments and
the observation, cut to :data:`ENTRY_TOKENS` by keeping the lines that share
most words with the task and the call (:mod:`.gist`) — built from the scratchpad
itself, so nothing a summarizer writes can change it. The prompt shows the
entries of steps that are not in the window (folded, or waiting for their
batch to be folded), newest first, up to ``Memory.ledger_max_tokens``, under
the running summary.

The same entries are what a run keeps of its results when it ends without an
answer: :func:`latest_results` feeds the outcome, the break payload and the
last-step hint.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from ...state import Step
from ...tools.gist import gist, head
from .memo import IdentityMemo
from .tokens import TokenCounter, clip_text, count_tokens
from .window import current_steps

LEDGER_HEADER = "Tool results of earlier steps, verbatim (exact; where the summary disagrees, these are right):"

ENTRY_TOKENS = 100
"""Longest observation of one ledger entry, in tokens (its lines nearest the task kept, else cut in the middle)."""

LATEST_CHARS = 300
"""Longest observation kept per result in an outcome, a break and a hint."""

ARGS_CHARS = 200
"""Longest arguments shown per result, in characters (a call's arguments can be a whole document)."""

LATEST_COUNT = 3
"""Results a run keeps in hand for its last step, its outcome and its break (the newest)."""

REUSED_MARK = "\n(already known: "
"""Where the note on a reused result starts."""


class Result(TypedDict):
    """One successful tool call of a run, as the ledger keeps it."""

    step: int
    tool: str
    args: dict[str, Any]
    observation: str


def call_key(tool: str | None, args: Any) -> str:
    """What identifies a call: its tool and arguments."""
    return json.dumps([tool, args or {}], sort_keys=True, ensure_ascii=False, default=str)


def results(steps: Iterable[Step]) -> list[Result]:
    """The successful calls of ``steps``, oldest first; an identical result only at its newest step.

    A repeated call answered from an earlier result (``reused``) adds nothing new.
    """
    found: dict[str, Result] = {}
    for step in steps:
        for action in step.get("actions") or []:
            if action.get("error") or action.get("observation") is None or action.get("reused"):
                continue
            entry = Result(step=step["index"], tool=str(action.get("tool")), args=dict(action.get("args") or {}),
                           observation=str(action["observation"]))
            key = call_key(entry["tool"], entry["args"]) + entry["observation"]
            found.pop(key, None)  # re-inserted: dict order is then newest position
            found[key] = entry
    return sorted(found.values(), key=lambda r: r["step"])


def newest_results(steps: Sequence[Step], skip: Collection[int] = ()) -> Iterator[tuple[Mapping[str, Any], Result]]:
    """:func:`results` newest first, lazily, each with the action it was read from: a prompt's ledger needs only
    the newest few of a long run. Steps whose ``id`` is in ``skip`` are passed over."""
    seen = CallSet()
    for step in reversed(steps):
        if skip and id(step) in skip:
            continue
        for action in reversed(step.get("actions") or []):
            if action.get("error") or action.get("observation") is None or action.get("reused"):
                continue
            entry = Result(step=step["index"], tool=str(action.get("tool")), args=dict(action.get("args") or {}),
                           observation=str(action["observation"]))
            if entry not in seen:
                seen.add(entry)
                yield action, entry


class CallSet:
    """Calls with their observations, compared as :func:`call_key` does, serialising only on a near match.

    A run's observations are mostly distinct, so (tool, observation) tells
    most calls apart without turning their arguments into JSON.
    """

    def __init__(self) -> None:
        self._args: dict[tuple[str, str], list[Any]] = {}

    def add(self, result: Result) -> None:
        """Remember ``result``."""
        self._args.setdefault((result["tool"], result["observation"]), []).append(result["args"])

    def __contains__(self, result: object) -> bool:
        tool, observation, args = result["tool"], result["observation"], result["args"]  # type: ignore[index]
        earlier = self._args.get((tool, observation))
        return bool(earlier) and call_key(tool, args) in {call_key(tool, a) for a in earlier or []}


def entry_text(result: Result, observation: str) -> str:
    """``step 2: calculator {"expression": "2+2"} -> 4`` (long arguments cut to :data:`ARGS_CHARS`)."""
    args = short(json.dumps(result["args"], ensure_ascii=False), ARGS_CHARS)
    return f"step {result['step']}: {result['tool']} {args} -> {' '.join(observation.split())}"


def focus_of(task: str, result: Result) -> str:
    """What a result is cut towards: the task and the call's arguments."""
    return f"{task} {json.dumps(result['args'], ensure_ascii=False, default=str)}"


def ledger_line(result: Result, counter: TokenCounter, task: str = "") -> str:
    """A result's ledger line, its observation cut to :data:`ENTRY_TOKENS` (the lines nearest ``task`` kept)."""
    return f"- {entry_text(result, entry_observation(result['observation'], focus_of(task, result), counter))}"


@functools.lru_cache(maxsize=256)
def entry_observation(observation: str, focus: str, counter: TokenCounter) -> str:
    """An observation within :data:`ENTRY_TOKENS` (a ledger cuts the same observation at every step: remembered)."""
    return gist(observation, focus, ENTRY_TOKENS, lambda text: count_tokens(text, counter),
                lambda text, limit: clip_text(text, limit, counter))


def window_calls(shown: Sequence[Step]) -> CallSet:
    """The calls the shown steps hold verbatim, with their observations."""
    in_window = CallSet()
    for step in shown:
        for action in step.get("actions") or []:
            in_window.add(Result(step=step["index"], tool=str(action.get("tool")), args=action.get("args") or {},
                                 observation=str(action.get("observation"))))
    return in_window


def newest_lines_within(steps: Sequence[Step], shown: Sequence[Step], max_tokens: float, counter: TokenCounter,
                        task: str = "") -> list[str]:
    """Ledger lines of the unseen results, oldest first: the newest whose counts add up to ``max_tokens``, and one more.

    Only these can be shown (the listing settles the exact fit), so a long
    run's older results are never cut or counted again.
    """
    lines: list[str] = []
    left = max_tokens
    in_window = window_calls(shown)
    # The shown steps' own results are all in the window: passed over unread. An older copy of one of them is
    # still left out, by ``in_window``, as when they were read first and kept it out as already seen.
    for action, result in newest_results(steps, {id(s) for s in shown}):
        if result in in_window:
            continue
        line, tokens = LINES.get((action, counter), (result["step"], task),
                                 lambda: _counted(ledger_line(result, counter, task), counter))
        lines.append(line)
        left -= tokens + 1
        if left < 0:
            break
    return lines[::-1]


def _counted(line: str, counter: TokenCounter) -> tuple[str, int]:
    return line, count_tokens(line, counter)


LINES: IdentityMemo[tuple[str, int]] = IdentityMemo()
"""Each recorded action's ledger line and its tokens, per counter, step and task: the same at every prompt."""


def earlier_result(steps: Sequence[Step], tool: str, args: Any, world_changers: Collection[str]) -> Result | None:
    """The newest successful result of the same call in ``steps``, unless a call of a ``world_changers`` tool ran since.

    The same call is the same tool with the same arguments (:func:`call_key`). Each run's calls are indexed
    once, as its steps are appended (:class:`CallIndex`), so a long run's steps are not walked at every call.
    """
    if not steps:
        return None
    changers = frozenset(world_changers)
    index = INDEXES.get((steps[0],), changers, lambda: CallIndex(changers))
    return index.lookup(steps, call_key(tool, args))


class CallIndex:
    """A run's successful calls by :func:`call_key`, newest kept, and where a world-changing call last ran.

    It reads the steps it has not seen on each lookup; a list whose indexed steps are not the objects it
    indexed (a run rewound to a checkpoint and gone another way) is indexed afresh.
    """

    def __init__(self, world_changers: frozenset[str]) -> None:
        self.world_changers = world_changers
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.seen = 0  # steps indexed
        self.last: Step | None = None  # the last of them (compared by identity)
        self.calls: dict[str, tuple[int, Result]] = {}
        self.changed_at = -1  # position of the newest step with a world-changing call

    def lookup(self, steps: Sequence[Step], key: str) -> Result | None:
        """The newest result of the call ``key`` in ``steps``, unless the world changed at or after its step."""
        with self.lock:
            if self.seen > len(steps) or (self.seen and steps[self.seen - 1] is not self.last):
                self.reset()
            for position in range(self.seen, len(steps)):
                self.add(position, steps[position])
            found = self.calls.get(key)
            if found is None or found[0] <= self.changed_at:
                return None
        return Result(**{**found[1], "args": dict(found[1]["args"])})

    def add(self, position: int, step: Step) -> None:
        self.seen, self.last = position + 1, step
        actions = step.get("actions") or []
        if any(a.get("tool") in self.world_changers and not a.get("problem") for a in actions):
            self.changed_at = position  # the world may have changed since: the call must run again
        for action in actions:
            if not action.get("error") and action.get("observation") is not None and not action.get("reused"):
                tool, args = str(action.get("tool")), action.get("args") or {}
                self.calls[call_key(tool, args)] = (position, Result(step=step["index"], tool=tool, args=dict(args),
                                                                     observation=str(action["observation"])))


INDEXES: IdentityMemo[CallIndex] = IdentityMemo(size=8)
"""The :class:`CallIndex` of the last few runs, by each run's first step and the world-changing tools (an index
holds its run's results: a finished run's are let go after eight more)."""


def reused_observation(result: Result) -> str:
    """What a repeated call of a cacheable tool observes: the earlier result, marked as such, and why."""
    return (f"{result['observation']}{REUSED_MARK}this is the earlier result of the same call at step "
            f"{result['step']}, reused because {result['tool']} is declared cacheable (its result depends only "
            "on its arguments); it was not run again)")


def plain_observation(action: Mapping[str, Any]) -> str:
    """An action's observation without the note a reused result carries."""
    return str(action.get("observation") or "").split(REUSED_MARK)[0]


def in_hand(state: Mapping[str, Any]) -> list[Result]:
    """The current run's latest results: the answer is often among them when the run ends without one."""
    return latest_results(current_steps(state), task=str(state.get("task") or ""))


def latest_results(steps: Sequence[Step], count: int = LATEST_COUNT, task: str = "") -> list[Result]:
    """The newest ``count`` results of ``steps``, observations cut to :data:`LATEST_CHARS` (the lines nearest ``task`` kept)."""
    newest = results(steps)[-count:] if count > 0 else []
    return [Result(step=r["step"], tool=r["tool"], args=r["args"], observation=bounded(r["observation"], focus_of(task, r)))
            for r in newest]


def bounded(observation: str, focus: str, limit: int = LATEST_CHARS) -> str:
    """An observation on one line within ``limit`` characters, keeping its lines nearest ``focus``."""
    return " ".join(gist(observation, focus, limit).split())


def short(text: str, limit: int = LATEST_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    return head(text, limit)


def results_text(results_: Sequence[Result]) -> str:
    """Results as ``step 2: calculator {...} -> 4; step 3: ...``."""
    return "; ".join(entry_text(r, r["observation"]) for r in results_)

