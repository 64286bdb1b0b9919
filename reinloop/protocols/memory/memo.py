"""What a prompt computes from a recorded step, remembered by the step's identity.

A step never changes once recorded (the scratchpad is append-only, and no
node edits a step or an action in place), yet every prompt used to render each
step of its window, count its tokens and cut its ledger line again: at 200
steps that was a fifth of the loop's own CPU. :class:`IdentityMemo` keeps
such values keyed by the objects they were made from, compared with ``is``, so
an equal-looking step of another run or a step restored from a checkpoint (a
new object) is computed afresh, never served a stale value.

It holds the objects it keys on (so their ids cannot be reused while an entry
lives) and forgets the oldest entries past ``size``: a run's window and
ledger are a few dozen steps, and a finished run's steps are let go soon.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """Values of ``compute()`` remembered per tuple of objects, matched by identity (plus hashable extras)."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._found: dict[tuple[int, ...], tuple[tuple[object, ...], T]] = {}
        self._lock = threading.Lock()  # batch runs share the memo across threads

    def get(self, objects: tuple[object, ...], extra: Hashable, compute: Callable[[], T]) -> T:
        """The value remembered for ``objects`` (the same objects, not equal ones) and ``extra``, else ``compute()``'s."""
        key = (*map(id, objects), hash(extra))
        hit = self._found.get(key)
        # Equal ids are the same objects: the entry holds its objects alive, and the caller holds these, and
        # two objects alive at once never share an id. Only ``extra``, keyed by its hash, is compared.
        if hit is not None and hit[0][-1] == extra:
            return hit[1]
        value = compute()
        with self._lock:
            self._found[key] = ((*objects, extra), value)
            while len(self._found) > self.size:
                del self._found[next(iter(self._found))]  # the oldest entry
        return value

    def __len__(self) -> int:
        return len(self._found)

    def clear(self) -> None:
        """Forget everything (tests; a process that wants its memory back)."""
        with self._lock:
            self._found.clear()
