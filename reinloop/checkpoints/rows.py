"""The run-row helpers: what a ``runs`` or ``breaks`` row holds, and how a state or a write becomes one.

Apart from :mod:`.base` (the checkpoint layout, on LangGraph's saver contract)
so that reading the run list (``reinloop runs list``) loads no LangGraph or
LangChain; :mod:`.base` re-exports every name here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

import orjson

from ..state import BREAK_KIND


def dict_rows(cursor: Any) -> list[dict[str, Any]]:
    """A cursor's rows as dicts (rows first: in PostgreSQL's pipeline mode the description comes with them)."""
    rows = cursor.fetchall()
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in rows]


def now_iso() -> str:
    """The current UTC time, ISO 8601, as every reinloop table stores it."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def is_plain(value: Any) -> bool:
    """True when ``value`` survives a JSON round trip unchanged."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(is_plain(v) for v in value)
    if kind is dict:
        return all(type(k) is str and is_plain(v) for k, v in value.items())
    return False


def dumps_json(value: Any) -> str:
    """Compact JSON text, non-ASCII kept readable."""
    return orjson.dumps(value).decode()


PROJECTED = ("task", "status", "answer", "break_reason", "break_message", "counters", "decision")
"""The state keys mirrored into the ``runs`` table."""


def run_summary(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``runs`` columns that mirror a reinloop state, or None for another graph's state."""
    if "task" not in values or not isinstance(values.get("counters"), dict):
        return None
    counters = values["counters"]
    return {
        "task": str(values["task"]),
        "status": values.get("status") or "running",
        "paused": int(values.get("decision") == "pause"),
        "answer": values.get("answer"),
        "break_reason": values.get("break_reason"),
        "break_message": values.get("break_message"),
        "steps": counters.get("steps"),
        "counters": dumps_json(counters) if is_plain(counters) else None,
    }


def break_interrupts(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """``(interrupt_id, payload)`` of every reinloop circuit break among ``writes``."""
    from langgraph.checkpoint.serde.types import INTERRUPT  # here: only writers call this, and they have LangGraph

    found = []
    for channel, value in writes:
        if channel != INTERRUPT:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            payload = getattr(item, "value", None)
            if isinstance(payload, dict) and payload.get("kind") == BREAK_KIND:
                found.append((str(getattr(item, "id", "")), payload))
    return found


def resume_value(writes: Sequence[tuple[str, Any]]) -> Any:
    """The operator's answer among a task's ``writes`` (LangGraph's resume write), if any."""
    from langgraph.checkpoint.serde.types import RESUME

    for channel, value in writes:
        if channel == RESUME:
            return value[-1] if isinstance(value, list) and value else value
    return None


@dataclass(frozen=True)
class RunRecord:
    """A row of the ``runs`` table."""

    thread_id: str
    task: str | None
    status: str | None
    paused: bool
    answer: str | None
    break_reason: str | None
    break_message: str | None
    steps: int | None
    counters: dict[str, Any]
    checkpoint_id: str | None
    model: str | None
    base_url: str | None
    protocol: str | None
    tools: list[str] | None
    limits: dict[str, Any] | None
    system_prompt: str | None
    created_at: str | None
    updated_at: str | None
    options: dict[str, Any] | None = None
    """How a run stored before schema 6 was made, beside the columns above (tool settings, retry, memory)."""
    spec: dict[str, Any] | None = None
    """The run's :class:`~reinloop.RunSpec` in its JSON form (schema 6 on; ``None`` for older runs).
    ``model`` ... ``system_prompt`` above are copies of its fields, for SQL readers."""
    owner_host: str | None = None
    """The host of the process that runs it, or ran it last (schema 8 on)."""
    owner_pid: int | None = None
    """That process's id on ``owner_host``."""
    heartbeat_at: str | None = None
    """When that process last said it was alive (every few seconds while the run runs)."""
    damage: str | None = None
    """What of the run cannot be read (a :class:`~reinloop.errors.StoredDataError`'s field and problem), its
    status then ``"damaged"``; ``None`` for a run that can."""

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-able dict."""
        return asdict(self)


@dataclass(frozen=True)
class BreakRecord:
    """A row of the ``breaks`` table."""

    id: int
    thread_id: str
    checkpoint_id: str
    reason: str | None
    message: str | None
    counters: dict[str, Any]
    limits: dict[str, Any]
    created_at: str | None
    resolution: dict[str, Any] | None
    resolved_at: str | None

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-able dict."""
        return asdict(self)


RUN_SETTINGS = ("model", "base_url", "protocol", "tools", "limits", "system_prompt", "options", "spec")
"""What :meth:`~reinloop.checkpoints.records.RunStore.record_settings` stores: how to rebuild the run's graph."""


