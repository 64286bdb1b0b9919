"""Running tool calls and turning whatever happens into observations.

The executor never raises for a tool's sake: a tool that raises, hangs,
returns nothing, returns something its validator rejects, or returns a
novel-length string still yields a short observation for the model and an
error flag for the guards. For each call it applies the tool's
:class:`~reinloop.tools.options.ToolOptions` over the run's
:class:`~reinloop.Limits`:

- **timeout**: the call runs in a worker thread (:mod:`.pool`) and the
  caller waits until the call's deadline, no longer. The deadline covers
  the whole call, retries and backoff included, and is never later than the
  run's own deadline (``max_seconds``): a call is not started once the run is
  out of time, and a late call is abandoned and reported as
  ``ERROR: ToolTimeout``.
- **retries**: an exception of a type the tool declares transient is
  retried with exponential backoff and jitter (``tenacity``), at most
  ``retries`` times and never past the deadline; any other exception is
  permanent and reported at once.
- **pseudo-success**: an empty or blank result, or one the tool's
  ``validator`` objects to, is an error observation.
- **side effects**: calls of ``side_effects=True`` tools go through the
  journal (:mod:`.journal`): at most once, even across crashes.
- **concurrency**: the calls of one reply run at the same time when every
  one of them is ``parallel_safe``, else one after the other; results always
  come back in the model's order.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    wait_exponential,
    wait_random,
)

from .bounds import clean_text, describe_exception, exception_message
from ..observe.callbacks import CallHook, watched
from ..runs.limits import Limits
from .attempts import first_then_retried
from ..checkpoints.journal import CallKey, ToolJournal, args_hash
from .options import ToolOptions, options_of
from .pool import WorkerPool, WorkersExhausted

logger = logging.getLogger(__name__)

EMPTY_RESULT = "ERROR: the tool returned an empty result; check the arguments or try another tool"
OUT_OF_TIME = "ERROR: ToolTimeout: {tool} was not started: the run is out of time (max_seconds)."

Status = Literal["ok", "error", "timeout", "busy", "unknown", "replayed"]


@dataclass(frozen=True)
class ToolCall:
    """One call to run: the tool, its validated arguments, and where it sits in the reply."""

    tool: BaseTool
    args: dict[str, Any]
    call_id: str = ""
    position: int = 0
    journaled: bool = False
    """Journal the call even if its tool has no side effects (an operator approved it: it runs at most once)."""
    focus: str = ""
    """What the call is for (the task): a result cut to ``Limits.max_observation_chars`` keeps the lines that
    share its words (:func:`truncate`)."""


@dataclass(frozen=True)
class ToolResult:
    """What came of a call: the observation the model reads, and how it went."""

    observation: str
    error: bool
    status: Status
    attempts: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Place:
    """Where the calls of a step sit in a thread: the journal's key prefix."""

    thread_id: str
    run: int
    step: int


def observation_text(result: Any) -> str:
    """A tool's return value as the text the model will read (what cannot be made text raises)."""
    if isinstance(result, ToolMessage):
        result = result.content
    if result is None:
        return ""  # a tool that returns nothing has not succeeded
    if isinstance(result, str):
        return clean_text(result)  # lone surrogates could not be stored
    try:
        return clean_text(json.dumps(result, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return clean_text(str(result))


def truncate(text: str, limit: int, focus: str = "") -> str:
    """Cut ``text`` to ``limit`` characters with a marker saying how much was cut.

    With ``focus`` (the task), a result of several lines keeps its opening and then the lines that share the
    most words with the focus, its Markdown headings first, in their order (:func:`focused_lines`): a search
    result of five pages cut at its head lost the pages after the second, and with them the one the task
    asked about. Otherwise (one long line, or no word of the focus in the rest) it keeps the head."""
    if len(text) <= limit:
        return text
    if focus and (kept := focused_lines(text, limit, focus)) is not None:
        shown = sum(len(line) + 1 for line in kept if line != GAP)  # each kept line and its newline
        return "\n".join([*kept, f"[... cut {len(text) - shown} of {len(text)} characters: kept the opening and "
                                  "the lines with the task's words]"])
    cut = len(text) - limit
    return f"{text[:limit]}\n[... truncated {cut} of {len(text)} characters]"


GAP = "…"
"""The line that stands for lines a focused cut left out."""
_HEADING_LINE = re.compile(r"^#{1,6}[ \t]")
FOCUS_SCAN = 200_000
"""Characters of a long result a focused cut weighs line by line (the rest is cut): a 50 MB result costs no
more than 200 KB."""


def focused_lines(text: str, limit: int, focus: str) -> list[str] | None:
    """The lines a focused cut keeps, in order, with :data:`GAP` where lines were left out; None for a head cut.
    A line shares the words, numbers and Chinese character pairs of :func:`reinloop.tools.gist.terms`.

    The opening takes up to 40% of ``limit``; then the headings; then the lines by how many focus words they
    and the heading above them hold (ties: the earlier), each with what it belongs to (the heading above it, and for an indented line the
    line it is indented under, such as a search hit's path above its snippet); then the lines after the
    opening, in order, while they fit."""
    from .gist import terms as terms_of  # the ledger's measure of what a line shares with the task

    scanned = len(text) > FOCUS_SCAN
    lines = text[:FOCUS_SCAN].split("\n")[:-1] if scanned else text.split("\n")  # not a line cut in two
    wanted = terms_of(focus)
    if len(lines) < 3 or not wanted:
        return None
    keep: set[int] = set()
    used = 0

    def take(indices: list[int]) -> None:
        nonlocal used
        new = [i for i in dict.fromkeys(indices) if i not in keep]
        cost = sum(len(lines[i]) + 3 for i in new)  # each line, its newline and perhaps a gap before it
        if new and used + cost <= limit:
            keep.update(new)
            used += cost

    for i, line in enumerate(lines):
        if used + len(line) + 1 > 0.4 * limit:
            break
        keep.add(i)
        used += len(line) + 1
    rest = range(len(keep), len(lines))
    scores = {i: len(terms_of(lines[i]) & wanted) for i in rest}
    if not any(scores.values()):
        return None
    headings = [i for i in rest if _HEADING_LINE.match(lines[i])]
    for i in headings:
        take([i])
    def weight(i: int) -> int:  # its own words, and those of the heading it is under ("# Chengdu" above it)
        above = [h for h in headings if h < i][-1:]
        return scores[i] + sum(scores[h] for h in above)

    for i in sorted((i for i in rest if scores[i] and i not in headings), key=lambda i: (-weight(i), i)):
        take([*_owners(lines, i, headings), i])
    for i in rest:
        take([i])
    shown: list[str] = []
    for i in sorted(keep):
        if shown and i - 1 not in keep:
            shown.append(GAP)
        shown.append(lines[i])
    if max(keep) < len(lines) - 1 or scanned:
        shown.append(GAP)
    return shown


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _owners(lines: list[str], i: int, headings: list[int]) -> list[int]:
    """The lines ``lines[i]`` belongs to: the nearest heading above it, and the lines it is indented under."""
    owners = [h for h in headings if h < i][-1:]
    depth = _indent(lines[i])
    for j in range(i - 1, -1, -1):
        if depth == 0:
            break
        if lines[j].strip() and _indent(lines[j]) < depth:
            owners.append(j)
            depth = _indent(lines[j])
    return owners


def error_observation(exc: BaseException) -> str:
    """``ERROR: <Type>: <message>`` for an exception raised by a tool (even one whose ``str()`` fails)."""
    message = exception_message(exc) or "(no message)"
    return f"ERROR: {type(exc).__name__}: {message[:500]}"


def judge(tool: BaseTool, result: Any, options: ToolOptions, max_chars: int, focus: str = "") -> tuple[str, bool]:
    """``(observation, is_error)`` for a value the tool returned: pseudo-successes are errors (``focus``: what
    a cut keeps, :func:`truncate`)."""
    try:
        text = observation_text(result)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a deep list, a hostile __str__ ...: the tool failed
        return f"ERROR: {tool.name} returned a {type(result).__name__} that cannot be turned into text ({describe_exception(exc)})", True
    if not text.strip():
        return EMPTY_RESULT, True
    if options.validator is not None:
        try:
            problem = options.validator(text)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken validator must not pass a bad result as good
            problem = f"its validator raised {describe_exception(exc)}"
        if problem:
            return f"ERROR: the result of {tool.name} looks wrong: {problem}. The result was: {text[:200]!r}", True
    return truncate(text, max_chars, focus), False


def unknown_outcome(tool: str, entry_started: float) -> str:
    """The observation of a side-effecting call that was cut off by a crash."""
    when = datetime.fromtimestamp(entry_started, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"ERROR: the outcome of this {tool} call is unknown: it started at {when}, but the run "
        f"stopped (crash or kill) before its result was recorded. It was not run again because "
        f"{tool} has side effects. Check whether it took effect before calling it again."
    )


def timeout_observation(tool: str, seconds: float, options: ToolOptions, run_clock: bool = False) -> str:
    """The observation of a call abandoned at its deadline (``run_clock``: the run's time limit set it)."""
    text = f"ERROR: ToolTimeout: {tool} did not finish within {round(seconds, 2):g} s and was abandoned."
    if run_clock:
        text = text[:-1] + ": the run's time limit (max_seconds) ran out."
    if options.side_effects:
        return text + " It has side effects and may still complete, so its outcome is unknown: check before calling it again."
    return text + " Try again with simpler arguments, use another tool, or answer with what you know."


def _stop(attempts: int, deadline: float | None) -> Any:
    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= attempts:
            return True
        # Never start a sleep that would end past the deadline: the caller stops waiting there.
        return deadline is not None and time.monotonic() + state.upcoming_sleep >= deadline

    return stop


@dataclass
class _Started:
    call: ToolCall
    options: ToolOptions
    future: Future[ToolResult]
    deadline: float | None
    seconds: float
    """How long the call was given."""
    run_clock: bool
    """The run's deadline came before the call's own timeout."""
    began: float = field(default_factory=time.monotonic)


class ToolExecutor:
    """Runs the calls of a step under the run's limits, a worker pool and a journal.

    ``deadline`` (``time.monotonic()``) is when the run runs out of time: no
    call starts after it, and no call is waited for past it.
    """

    def __init__(
        self, limits: Limits | None = None, pool: WorkerPool | None = None, journal: ToolJournal | None = None,
        deadline: float | None = None, hooks: Sequence[CallHook] = (),
    ) -> None:
        self.limits = limits if limits is not None else Limits()
        self.hooks = hooks  # told of each tool run (telemetry's call recorder): reinloop.callbacks
        # Without a pool given (``run_tool``, one-off executors) workers end with their call: kept
        # workers belong to a long-lived pool, such as the graph's.
        self.pool = pool if pool is not None else WorkerPool(self.limits.tool_workers, idle_seconds=0)
        self.journal = journal
        self.deadline = deadline

    def run(self, calls: Sequence[ToolCall], place: Place | None = None) -> list[ToolResult]:
        """Run ``calls`` (concurrently when all are parallel-safe); results in the same order."""
        if len(calls) > 1 and all(options_of(c.tool).parallel_safe for c in calls):
            started = [self._start(c, place) for c in calls]
            return [self._collect(s) for s in started]
        return [self._collect(self._start(c, place)) for c in calls]

    def run_one(self, tool: BaseTool, args: dict[str, Any]) -> ToolResult:
        """Run a single call (never journaled: it belongs to no thread)."""
        return self._collect(self._start(ToolCall(tool, args), None))

    def _start(self, call: ToolCall, place: Place | None) -> _Started | ToolResult:
        options = options_of(call.tool)
        key = self._key(call, place) if options.side_effects or call.journaled else None
        if key is not None:
            assert self.journal is not None
            entry = self.journal.get(key)
            if entry is not None and entry.finished:
                return ToolResult(entry.observation or "", entry.error, "replayed")
            if entry is not None:
                return ToolResult(unknown_outcome(call.tool.name, entry.started_at), True, "unknown")
        if self.deadline is not None and self.deadline <= time.monotonic():
            return ToolResult(OUT_OF_TIME.format(tool=call.tool.name), True, "timeout")
        if key is not None:
            assert self.journal is not None
            if not self.journal.begin(key, call.args):  # another process recorded it first: it runs the call
                raced = self.journal.get(key)
                if raced is not None and raced.finished:
                    return ToolResult(raced.observation or "", raced.error, "replayed")
                return ToolResult(unknown_outcome(call.tool.name, raced.started_at if raced else time.time()), True,
                                  "unknown")
        timeout = options.effective_timeout(self.limits.tool_timeout)
        retries = options.effective_retries(self.limits.tool_retries)
        try:
            future, deadline = self.pool.submit(
                lambda deadline: self._attempt(call, options, retries, deadline, key),
                timeout=timeout,
                name=call.tool.name,
                deadline=self.deadline,
            )
        except WorkersExhausted as exc:
            result = ToolResult(error_observation(exc) + " Answer with what you know, or try again later.", True, "busy")
            self._record(key, result)
            return result
        run_clock = deadline is not None and deadline == self.deadline
        seconds = (timeout or 0.0) if not run_clock or deadline is None else max(0.0, deadline - time.monotonic())
        return _Started(call, options, future, deadline, seconds, run_clock)

    def _attempt(self, call: ToolCall, options: ToolOptions, retries: int, deadline: float | None, key: CallKey | None) -> ToolResult:
        began, attempts = time.monotonic(), 0
        hooks = self.hooks

        def once() -> Any:
            nonlocal attempts
            attempts += 1
            if not hooks:  # telemetry off: the call as it always was, nothing around it
                return call.tool.invoke(call.args)
            return watched(hooks, "tool", call.tool.name, lambda: call.tool.invoke(call.args), inputs=call.args,
                           call_id=call.call_id)

        def retrying() -> Retrying:
            return Retrying(
                stop=_stop(retries + 1, deadline),
                wait=wait_exponential(multiplier=options.backoff, max=30) + wait_random(0, options.backoff),
                retry=retry_if_exception_type(options.transient),
                reraise=True,
            )

        try:
            value = first_then_retried(once, retrying)
        except KeyboardInterrupt:  # Ctrl-C stops the run; nothing else a tool raises does
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit(3) from a tool must not pass for a guard's exit code
            observation = error_observation(exc)
            if attempts > 1:
                observation += f" (gave up after {attempts} attempts)"
            result = ToolResult(observation, True, "error", attempts, time.monotonic() - began)
        else:
            text, error = judge(call.tool, value, options, self.limits.max_observation_chars, call.focus)
            result = ToolResult(text, error, "error" if error else "ok", attempts, time.monotonic() - began)
        self._record(key, result)  # also after a timeout: the journal learns how it really ended
        return result

    def _collect(self, started: _Started | ToolResult) -> ToolResult:
        if isinstance(started, ToolResult):
            return started
        remaining = None if started.deadline is None else max(0.0, started.deadline - time.monotonic())
        try:
            return started.future.result(timeout=remaining)
        except FutureTimeout:
            observation = timeout_observation(started.call.tool.name, started.seconds, started.options, started.run_clock)
            stats = self.pool.stats()
            logger.warning("tool %s abandoned at its deadline (%.3g s); %d of %d tool workers are held by overdue calls",
                           started.call.tool.name, started.seconds, stats["overdue"], stats["size"])
            return ToolResult(observation, True, "timeout", 0, time.monotonic() - started.began)

    def _key(self, call: ToolCall, place: Place | None) -> CallKey | None:
        if self.journal is None or place is None or not place.thread_id:
            return None  # without a thread there is nothing to resume, hence nothing to guard
        return CallKey(place.thread_id, place.run, place.step, call.position, call.call_id, call.tool.name, args_hash(call.args))

    def _record(self, key: CallKey | None, result: ToolResult) -> None:
        if key is not None and self.journal is not None:
            self.journal.finish(key, result.observation, result.error)


def run_tool(tool: BaseTool, args: dict[str, Any], limits: Limits | None = None) -> ToolResult:
    """Run one tool call with its options and ``limits``; never raises for the tool's sake."""
    return ToolExecutor(limits).run_one(tool, args)
