"""A run's record: its breaks, the operators' decisions on its calls, and the calls still waiting, in one list.

``reinloop runs show`` (text) and the HTML report (:func:`reinloop.observe.report.render_html`)
both print :func:`record_entries`, so they list the same things, worded the same:

- ``break``: a circuit break (the ``breaks`` table), with the operator's answer when it was resumed,
  ``pending`` while it waits;
- ``approval``: a call an operator approved, edited (the arguments the model gave, then the operator's),
  rejected or answered, or one a remembered ``always`` decided (from the steps' actions);
- ``waiting``: a call waiting for an operator now, with the command that answers it.

Entries come in the order they happened; calls still waiting come last.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..tools.approval import waiting_calls
from ..observe.terminal import safe_json

KINDS = ("break", "approval", "waiting")
"""The kinds of entry a run's record holds."""


@dataclass(frozen=True)
class RecordEntry:
    """One entry of a run's record: its kind, when (ISO time; ``None``: now), the step, one line for people, the facts."""

    kind: str
    at: str | None
    step: int | None
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The entry as a JSON-able dict."""
        return asdict(self)


def record_entries(thread_id: str, state: Mapping[str, Any], breaks: Sequence[Any]) -> list[RecordEntry]:
    """The record of a run from its latest ``state`` and its ``breaks`` rows (:class:`~reinloop.checkpoints.BreakRecord`)."""
    done = sorted([*break_entries(breaks), *approval_entries(state.get("scratchpad") or [])], key=lambda e: e.at or "")
    return [*done, *waiting_entries(thread_id, state)]


def break_entries(breaks: Sequence[Any]) -> Iterator[RecordEntry]:
    """One entry per break, numbered within the thread, with the operator's answer (``pending`` until resumed)."""
    for number, b in enumerate(breaks, 1):
        answer = safe_json(b.resolution) if b.resolution else "pending"
        step = (b.counters or {}).get("steps")
        yield RecordEntry("break", b.created_at, step, f"break #{number} at {(b.created_at or '')[:19]}: {b.reason}: "
                          f"{b.message} -> {answer}",
                          {"reason": b.reason, "message": b.message, "resolution": b.resolution,
                           "resolved_at": b.resolved_at})


def approval_entries(steps: Iterable[Mapping[str, Any]]) -> Iterator[RecordEntry]:
    """One entry per call an operator (or a remembered ``always``) decided on, from the steps' actions."""
    when = None  # a remembered decision has no time of its own: it came after the one before it
    for step in steps:
        for action in step.get("actions") or []:
            record = action.get("approval")
            if not record:
                continue
            at = record.get("at")
            if isinstance(at, (int, float)):
                when = dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat(timespec="milliseconds")
            yield RecordEntry("approval", when, step.get("index"), approval_text(step, action, record),
                              {"tool": action.get("tool"), "args": action.get("args") or {}, **record})


def approval_text(step: Mapping[str, Any], action: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """``operator edited write_file at run 1 step 1: {...} (the model asked {...})`` and the like."""
    kind, tool, args = record.get("action"), action.get("tool"), safe_json(action.get("args") or {})
    who = "operator" if record.get("by") == "operator" else "remembered always"
    where = f"at run {step.get('run', 1)} step {step.get('index')}"
    what = {"approve": "approved", "edit": "edited", "reject": "rejected", "respond": "answered"}.get(str(kind), kind)
    text = f"{who} {what} {tool} {where}: {args}"
    if kind == "edit":
        text += f" (the model asked {safe_json(record.get('original_args') or {})})"
    elif kind == "reject":
        text += f"; the model read: {record.get('message')}"
    elif kind == "respond":
        text += f"; the model read: {action.get('observation')}"
    return text + (" (always, for this thread)" if record.get("always") else "")


def waiting_entries(thread_id: str, state: Mapping[str, Any]) -> Iterator[RecordEntry]:
    """One entry per call waiting for an operator now."""
    for call in waiting_calls(state):
        yield RecordEntry("waiting", None, call.get("step"),
                          f"waiting for approval: {call['id']}: {call['tool']} {safe_json(call['args'])} "
                          f"({call['reason']}); answer with `reinloop approve {thread_id} {call['id']}`", dict(call))


def read_record(db: Any, thread_id: str) -> list[RecordEntry]:
    """The record of thread ``thread_id`` in run database ``db`` (anything a store takes; none for a missing file)."""
    with opened(db) as saver:
        if saver is None:
            return []
        latest = saver.checkpointer.get_tuple({"configurable": {"thread_id": thread_id}})
        state = dict(latest.checkpoint["channel_values"]) if latest else {}
        return record_entries(thread_id, state, saver.runs.breaks(thread_id))


@contextmanager
def opened(db: Any) -> Iterator[Any]:
    """``db`` as an open :class:`~reinloop.checkpoints.Database` (``None`` for a file that does not exist),
    closed after when opened here; a SQLite file is read as it is, read-only when it is."""
    from ..checkpoints import database_for, is_postgres_url, open_database
    from ..checkpoints.sqlitedb import is_read_only

    if isinstance(db, (str, os.PathLike)) and not is_postgres_url(str(db)) and str(db) != ":memory:":
        path = Path(db)
        if not path.exists():
            yield None
            return
        with open_database(path, create=False, read_only=is_read_only(path)) as saver:
            yield saver
        return
    saver, owned = database_for(db)
    try:
        yield saver
    finally:
        if owned:
            saver.close()
