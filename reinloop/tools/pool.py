"""A bounded set of daemon threads for tool calls, where a hung call keeps its slot.

Python cannot kill a thread, so a tool that hangs (a socket without a
timeout, a runaway loop in C) can only be *abandoned*: the caller stops
waiting at the deadline, reports a timeout to the model and moves on, while
the thread lives on until the tool returns. Three rules keep that safe:

- the threads are daemons, so a hung tool never blocks the process from
  exiting (``concurrent.futures.ThreadPoolExecutor`` joins its workers at
  exit, which would);
- at most ``size`` calls run at once, and an abandoned call keeps its slot
  until it really returns. A new call waits for a slot while some running
  call can still finish in time (or is less than :data:`GRACE_SECONDS` past
  its deadline, time for a tool that stops itself to return), but never past
  its own deadline; when every slot is held by a call overdue beyond that,
  it fails at once with :class:`WorkersExhausted` instead of queueing behind
  work that may never end. Threads therefore never pile up without bound, and :meth:`stats`
  counts the overdue ones;
- every call knows its deadline (:func:`call_deadline`), so a tool that can
  stop itself (``sql_query`` kills its query process, ``wait`` wakes up)
  gives its slot back at the deadline instead of holding it.

Workers are kept between calls (starting a thread per call was 28% of a
step's CPU) and end after ``idle_seconds`` without work (:data:`IDLE_SECONDS`;
``0`` for one-off pools such as ``run_tool``'s), so a pool that is dropped
leaves no threads behind. Each call runs in a copy of the caller's
context variables, so LangGraph's ``get_config()`` works inside a tool.
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

DEFAULT_WORKERS = 8
"""Tool calls that may run at once in one graph (``Limits.tool_workers``)."""
IDLE_SECONDS = 30.0
"""A worker without work for this long ends (a busy pool keeps its threads)."""
GRACE_SECONDS = 1.0
"""How long after its deadline a call may take to give its worker back before it counts as hung
(``sql_query`` kills its query process 0.5 s after it). New calls wait for such a slot."""

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("reinloop_call_deadline", default=None)


def call_deadline() -> float | None:
    """The ``time.monotonic()`` deadline of the tool call running here, or ``None`` (no deadline, or no call)."""
    return _DEADLINE.get()


def seconds_left(cap: float | None = None) -> float | None:
    """Seconds before this call's deadline (at least 0) or ``cap``, whichever is less; ``None``: unbounded."""
    deadline = call_deadline()
    bounds = [b for b in (cap, None if deadline is None else max(0.0, deadline - time.monotonic())) if b is not None]
    return min(bounds) if bounds else None


class WorkersExhausted(RuntimeError):
    """No worker slot came free: every one is held by a call past its deadline, or none freed in time."""


_Job = tuple[Callable[[], Any], "Future[Any]", str, int]


class WorkerPool:
    """Runs tool calls in daemon threads, at most ``size`` at once."""

    def __init__(self, size: int = DEFAULT_WORKERS, *, idle_seconds: float = IDLE_SECONDS) -> None:
        if type(size) is not int or size < 1:
            raise ValueError(f"a worker pool needs at least 1 worker, got {size!r}")
        self.size = size
        self.idle_seconds = idle_seconds
        """How long a worker waits for its next call before it ends (0: it ends when no call is waiting)."""
        self._cond = threading.Condition()
        self._deadlines: dict[int, float | None] = {}  # running job -> monotonic deadline
        self._ids = itertools.count()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._idle = 0  # workers waiting for a job that no submit has claimed yet
        self._threads = 0

    def submit(
        self, fn: Callable[[float | None], Any], *, timeout: float | None, name: str = "tool", deadline: float | None = None
    ) -> tuple[Future[Any], float | None]:
        """Start ``fn(deadline)`` in a worker; returns its future and its deadline (``time.monotonic()``).

        The deadline is ``timeout`` seconds from now, or the given ``deadline`` if
        that is sooner (the run's clock). Raises :class:`WorkersExhausted` if no
        slot frees before it.
        """
        if timeout is not None:
            own = time.monotonic() + timeout
            deadline = own if deadline is None else min(own, deadline)
        job = self._acquire(deadline)
        future: Future[Any] = Future()
        context = contextvars.copy_context()
        context.run(_DEADLINE.set, deadline)
        self._dispatch((lambda: context.run(fn, deadline), future, f"reinloop-{name}-{job}", job))
        return future, deadline

    def stats(self) -> dict[str, int]:
        """``running`` calls, how many of them are ``overdue`` (abandoned, still going), and live ``threads``."""
        with self._cond:
            now = time.monotonic()
            overdue = sum(1 for d in self._deadlines.values() if d is not None and d <= now)
            return {"size": self.size, "running": len(self._deadlines), "overdue": overdue, "threads": self._threads}

    def _acquire(self, deadline: float | None) -> int:
        with self._cond:
            while len(self._deadlines) >= self.size:
                now = time.monotonic()
                ends = [None if d is None else d + GRACE_SECONDS for d in self._deadlines.values()]
                live = [e for e in ends if e is None or e > now]  # calls that may still give their slot back
                if not live:
                    raise WorkersExhausted(
                        f"all {self.size} tool workers are still busy with calls that timed out "
                        "earlier; new calls are refused until one of them returns."
                    )
                if deadline is not None and deadline <= now:
                    raise WorkersExhausted(
                        f"all {self.size} tool workers stayed busy until this call's deadline; it was not started."
                    )
                # Wake when a slot frees, when the next running call is past its grace, or at our deadline.
                wakes = [d - now for d in [*live, deadline] if d is not None]
                self._cond.wait(min(wakes) if wakes else None)
            job = next(self._ids)
            self._deadlines[job] = deadline
            return job

    def _dispatch(self, job: _Job) -> None:
        with self._cond:
            start = self._idle == 0
            if start:
                self._threads += 1
            else:
                self._idle -= 1  # claimed: that worker will take this job
        if start:
            try:
                threading.Thread(target=self._serve, name=job[2], daemon=True).start()
            except RuntimeError as exc:  # "can't start new thread": the process is at its limit
                with self._cond:
                    self._threads -= 1
                    self._deadlines.pop(job[3], None)
                    self._cond.notify_all()
                raise WorkersExhausted(f"no tool worker could be started ({exc})") from None
        self._jobs.put(job)

    def _serve(self) -> None:
        """A worker: run jobs until none comes for :attr:`idle_seconds`."""
        me = threading.current_thread()
        while True:
            try:
                work, future, name, job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._cond:
                    if self._idle > 0:  # nobody claimed an idle worker: one of us may go
                        self._idle -= 1
                        self._threads -= 1
                        return
                work, future, name, job = self._jobs.get()  # every idle worker is claimed: a job is on its way
            me.name = name
            try:
                value, error = work(), None
            except BaseException as exc:  # delivered to the caller, who decides
                value, error = None, exc
            # Free the slot and offer this thread before the caller learns the result, so that
            # its next call finds both (else it would start a thread while this one is ending).
            with self._cond:
                self._deadlines.pop(job, None)
                self._idle += 1
                self._cond.notify_all()
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(error)
