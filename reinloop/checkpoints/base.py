"""The contract of a reinloop storage backend, and the logic every backend shares.

A backend is a LangGraph ``BaseCheckpointSaver`` (checkpoints, channel values,
pending writes: everything ``graph.invoke`` / ``get_state`` / resume need)
plus reinloop's own tables from :mod:`reinloop.checkpoints.schema`: ``runs``
(settings and status of each thread), ``breaks`` (every circuit break that
paused a run), ``steps`` (the run log), ``tool_journal`` (side effects),
``memories`` and ``tasks`` (the batch queue). :class:`ReinloopSaver` names
what a backend must provide; :mod:`reinloop.checkpoints.sql` implements it
once in SQL, and :class:`~reinloop.checkpoints.sqlite.SqliteCheckpointer`
and :class:`~reinloop.checkpoints.postgres.PostgresCheckpointer` put that
on a SQLite file and a PostgreSQL database.

Storage grows linearly with the steps of a run because nothing is written
twice:

- a checkpoint row holds ids, metadata and channel *versions*, never values;
- a channel's value is written once per version, only when it changed;
- a list channel that only grew (the scratchpad, whose reducer is
  ``operator.add``) stores just the items appended since its previous
  version (``kind='append'``); every :data:`JUMP`-th version instead stores
  the items since the previous such version, so reading walks about
  ``JUMP + n/JUMP`` rows back to a whole value (one recursive query), and
  values already read are reused;
- a long string (a tool's arguments, an observation) is stored once per
  thread in ``blobs``, and every value or pending write that holds it keeps a
  reference (:mod:`reinloop.checkpoints.blobs`).

Values that are plain data are stored as JSON text, so ``sqlite-utils`` or
Datasette can read a run without Python; anything else (LangGraph's own
objects, exceptions, ``Send``) goes through the saver's serde. A custom serde
(e.g. an encrypting one) is used for every value.

The helpers here are pure functions over plain data, shared by every backend.
"""

from __future__ import annotations

import asyncio
import math
import random
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME

from ..state import BREAK_KIND

JSON = "json"
"""The ``type`` of a value stored as JSON text."""

BlobKey = tuple[str, str, str]
"""``(checkpoint_ns, channel, version)``: one stored channel value of a thread."""


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


def encode(serde: SerializerProtocol, value: Any) -> tuple[str, str | bytes]:
    """``(type, data)`` for storage: JSON text for plain data under the default serde."""
    if type(serde) is JsonPlusSerializer and is_plain(value):
        return JSON, dumps_json(value)
    type_, data = serde.dumps_typed(value)
    return ("serde-json" if type_ == JSON else type_), data


def decode(serde: SerializerProtocol, type_: str, data: str | bytes | None) -> Any:
    """The value stored as ``(type, data)`` by :func:`encode`."""
    if type_ == JSON:
        return orjson.loads(data) if data is not None else None
    return serde.loads_typed(((JSON if type_ == "serde-json" else type_), data))  # type: ignore[arg-type]


def next_version(current: str | int | float | None) -> str:
    """A channel version: a zero-padded counter plus a random tail.

    The counter orders versions; the random tail keeps two branches of a
    forked thread from ever writing the same version of a channel.
    """
    n = 0 if current is None else int(str(current).split(".")[0])
    return f"{n + 1:010d}.{random.getrandbits(32):08x}"


def appended(previous: list[Any] | None, value: Any) -> list[Any] | None:
    """The items ``value`` adds to ``previous``, if it is ``previous`` plus a suffix."""
    if not previous or type(value) is not list or len(value) < len(previous):
        return None
    if value[: len(previous)] != previous:  # identical items compare by identity first: cheap
        return None
    return value[len(previous) :]


JUMP = 32
"""Every JUMP-th append of a list spans back to the previous such version, so a read follows at
most JUMP - 1 single-step links and then jumps: about JUMP + n/JUMP rows for an n-item list, while
each item is stored at most twice."""


class ListHead(NamedTuple):
    """The last stored version of a list channel, and the anchor its next jump points back to."""

    version: str
    items: list[Any]
    anchor: str
    anchor_length: int
    since_anchor: int


def list_row(head: ListHead | None, base: str | None, version: str, value: list[Any]) -> tuple[str, str | None, list[Any], ListHead]:
    """``(kind, base_version, payload, new head)`` for storing a list channel at ``version``."""
    suffix = appended(head.items, value) if head is not None and base is not None and head.version == base else None
    if head is None or suffix is None:
        return "value", None, value, ListHead(version, list(value), version, len(value), 0)
    if head.since_anchor + 1 >= JUMP:
        return "append", head.anchor, value[head.anchor_length :], ListHead(version, list(value), version, len(value), 0)
    return "append", head.version, suffix, head._replace(version=version, items=list(value), since_anchor=head.since_anchor + 1)


def reachable(live: Iterable[BlobKey], bases: Mapping[BlobKey, str | None]) -> set[BlobKey]:
    """The stored values that ``live`` versions need: themselves and their append chains."""
    keep: set[BlobKey] = set()
    stack = list(live)
    while stack:
        key = stack.pop()
        if key in keep or key not in bases:
            continue
        keep.add(key)
        if (base := bases[key]) is not None:
            stack.append((key[0], key[1], base))
    return keep


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
"""What :meth:`ReinloopSaver.record_settings` stores: how to rebuild the run's graph."""


class ReinloopSaver(BaseCheckpointSaver[str]):
    """What a reinloop backend provides: a LangGraph saver plus the ``runs`` and ``breaks`` tables.

    The async methods run the sync ones in a worker thread.
    """

    location: str
    """Where the data lives (a file path, a DSN without password), for messages."""

    def get_next_version(self, current: str | None, channel: None = None) -> str:  # type: ignore[override]
        """See :func:`next_version`."""
        return next_version(current)

    @abstractmethod
    def record_settings(self, thread_id: str, settings: Mapping[str, Any]) -> None:
        """Store how a run was started (keys of :data:`RUN_SETTINGS`; never an API key)."""

    @abstractmethod
    def get_run(self, thread_id: str) -> RunRecord | None:
        """The ``runs`` row of a thread, or None."""

    @abstractmethod
    def list_runs(self, *, status: str | None = None) -> list[RunRecord]:
        """Every run, most recently updated first, optionally only those with ``status``."""

    @abstractmethod
    def list_breaks(self, thread_id: str) -> list[BreakRecord]:
        """The circuit breaks of a thread, oldest first."""

    @abstractmethod
    def stale_threads(self, older_than_days: float | None) -> list[str]:
        """Threads not updated for ``older_than_days`` days (all threads for None)."""

    @abstractmethod
    def count_checkpoints(self, thread_id: str | None = None) -> int:
        """How many checkpoints are stored (for one thread, or all)."""

    @abstractmethod
    def compact(self) -> None:
        """Give the space of deleted rows back (SQLite: ``VACUUM``)."""

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows of one read-only SQL statement, as dicts."""

    @abstractmethod
    def storage_bytes(self) -> int | None:
        """The space the run database takes (SQLite: the file and its WAL), if known."""

    # -- the seam of the run log, the side-effect journal and the memory store --------------------
    # (reinloop.runlog.RunLog, reinloop.tools.ToolJournal and reinloop.memory.MemoryStore take a saver)

    @abstractmethod
    def append_step(self, row: Mapping[str, Any]) -> None:
        """Append one ``steps`` row."""

    @abstractmethod
    def read_steps(self, thread_id: str) -> list[dict[str, Any]]:
        """The ``steps`` rows of a thread, oldest first."""

    @abstractmethod
    def journal_begin(self, row: Mapping[str, Any]) -> None:
        """Record a side-effecting call's intent, committed before this returns."""

    @abstractmethod
    def journal_finish(self, key: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """Record a journaled call's result."""

    @abstractmethod
    def journal_get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The journal row with this key, or None."""

    @abstractmethod
    def journal_rows(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Every journal row (of one thread), oldest first."""

    @abstractmethod
    def memory_add(self, row: Mapping[str, Any]) -> int:
        """Store a memory row (replacing one of the same folded steps); its id."""

    @abstractmethod
    def memory_count(self, scope: str | None = None) -> int:
        """Memories in ``scope`` (all when None)."""

    @abstractmethod
    def memory_rows(self, scope: str | None = None, model: str | None = None, *, vectors: bool = True) -> list[dict[str, Any]]:
        """Memory rows of a scope (and embedding model), oldest first."""

    # -- the batch queue (reinloop.batches) ---------------------------------------------------------

    @abstractmethod
    def enqueue(self, batch: str, tasks: Sequence[Mapping[str, Any]]) -> int:
        """Add a batch's tasks once; how many were new."""

    @abstractmethod
    def claim(self, batch: str, worker: str, lease: float) -> dict[str, Any] | None:
        """Take the next claimable task of ``batch`` for ``lease`` seconds, or None."""

    @abstractmethod
    def renew(self, worker: str, lease: float, thread_ids: Iterable[str]) -> set[str]:
        """Extend ``worker``'s leases; the tasks it still holds."""

    @abstractmethod
    def finish(self, thread_id: str, worker: str, result: Mapping[str, Any]) -> bool:
        """Record how a task ended; False if ``worker`` no longer held it."""

    @abstractmethod
    def release(self, thread_id: str, worker: str) -> None:
        """Put a held task back in the queue."""

    @abstractmethod
    def batch_counts(self, batch: str) -> dict[str, int]:
        """Tasks of ``batch`` per status."""

    @abstractmethod
    def batch_tasks(self, batch: str) -> list[dict[str, Any]]:
        """Every task row of ``batch``, in file order."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""

    def __enter__(self) -> ReinloopSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- async: the sync methods in a worker thread ---------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        items = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest", keep_last: int = 1) -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy, keep_last=keep_last))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest", keep_last: int = 1) -> None:  # type: ignore[override]
        """Keep the latest ``keep_last`` checkpoints per namespace of each thread (``"delete"``: none)."""
        raise NotImplementedError
