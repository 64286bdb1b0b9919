"""A bounded set of daemon threads for tool calls, where a hung call keeps its slot.

Python cannot kill a thread, so a tool that hangs (a socket without a
timeout, a runaway loop in C) can only be *abandoned*: the caller stops
waiting at the deadline, reports a timeout to the model and moves on, while
the thread lives on until the tool returns. Two rules keep that safe:

- the threads are daemons, so a hung tool never blocks the process from
  exiting (``concurrent.futures.ThreadPoolExecutor`` joins its workers at
  exit, which would);
- at most ``size`` calls run at once, and an abandoned call keeps its slot
  until it really returns. A new call waits for a slot while some running
  call can still finish in time; when every slot is held by an overdue call,
  it fails at once with :class:`WorkersExhausted` instead of queueing behind
  work that may never end. Threads therefore never pile up without bound.

Each call gets a fresh thread (about 0.1 ms to start) carrying a copy of the
caller's context variables, so LangGraph's ``get_config()`` works inside a
tool.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

DEFAULT_WORKERS = 8
"""Tool calls that may run at once in one graph."""


class WorkersExhausted(RuntimeError):
    """Every worker slot is held by a call that is past its deadline."""


class WorkerPool:
    """Runs tool calls in daemon threads, at most ``size`` at once."""

    def __init__(self, size: int = DEFAULT_WORKERS) -> None:
        if type(size) is not int or size < 1:
            raise ValueError(f"a worker pool needs at least 1 worker, got {size!r}")
        self.size = size
        self._cond = threading.Condition()
        self._deadlines: dict[int, float | None] = {}  # running job -> monotonic deadline
        self._ids = itertools.count()

    def submit(self, fn: Callable[[float | None], Any], *, timeout: float | None, name: str = "tool") -> tuple[Future[Any], float | None]:
        """Start ``fn(deadline)`` in a worker; returns its future and its deadline (``time.monotonic()``)."""
        job, deadline = self._acquire(timeout)
        future: Future[Any] = Future()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                future.set_result(context.run(fn, deadline))
            except BaseException as exc:  # delivered to the caller, who decides
                future.set_exception(exc)
            finally:
                self._release(job)

        threading.Thread(target=work, name=f"reinloop-{name}-{job}", daemon=True).start()
        return future, deadline

    def stats(self) -> dict[str, int]:
        """``running`` calls and how many of them are ``overdue`` (abandoned, still going)."""
        with self._cond:
            now = time.monotonic()
            overdue = sum(1 for d in self._deadlines.values() if d is not None and d <= now)
            return {"size": self.size, "running": len(self._deadlines), "overdue": overdue}

    def _acquire(self, timeout: float | None) -> tuple[int, float | None]:
        with self._cond:
            while len(self._deadlines) >= self.size:
                now = time.monotonic()
                live = [d for d in self._deadlines.values() if d is None or d > now]
                if not live:
                    raise WorkersExhausted(
                        f"all {self.size} tool workers are still busy with calls that timed out "
                        "earlier; new calls are refused until one of them returns"
                    )
                finite = [d - now for d in live if d is not None]
                # Wake when a slot frees, or when the next running call turns overdue.
                self._cond.wait(min(finite) if len(finite) == len(live) else None)
            job = next(self._ids)
            deadline = None if timeout is None else time.monotonic() + timeout
            self._deadlines[job] = deadline
            return job, deadline

    def _release(self, job: int) -> None:
        with self._cond:
            self._deadlines.pop(job, None)
            self._cond.notify_all()
