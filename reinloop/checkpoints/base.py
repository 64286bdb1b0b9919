"""The storage logic every backend shares: how checkpoints are laid out, and the run-row helpers.

A run database (:class:`~reinloop.checkpoints.database.Database`) hands out
one store per job over one connection: the checkpointer
(:class:`~reinloop.checkpoints.sql.SqlCheckpointer`, LangGraph's
``BaseCheckpointSaver`` contract and nothing else), ``runs`` and ``breaks``
(:class:`~reinloop.checkpoints.records.RunStore`), node events
(:class:`~reinloop.checkpoints.runlog.RunLog`), the tool journal
(:class:`~reinloop.checkpoints.journal.ToolJournal`), memories
(:class:`~reinloop.checkpoints.memories.MemoryStore`) and the batch queue
(:class:`~reinloop.checkpoints.queue.TaskQueue`). SQLite and PostgreSQL
differ only in their :class:`~reinloop.checkpoints.sql.Dialect` and
connection.

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

The helpers here are pure functions over plain data, shared by every backend, and
:class:`ThreadedSaver`, whose async methods run the sync ones in a worker thread. The run-row helpers
(:class:`RunRecord`, :func:`run_summary` ...) are in :mod:`.rows`, which loads no LangGraph.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
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
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..errors import StoredDataError

from .rows import (  # noqa: F401 - re-exported: the run-row helpers live apart so `runs list` needs no LangGraph
    PROJECTED,
    RUN_SETTINGS,
    BreakRecord,
    RunRecord,
    break_interrupts,
    dumps_json,
    is_plain,
    now_iso,
    resume_value,
    run_summary,
)

JSON = "json"
"""The ``type`` of a value stored as JSON text."""

BlobKey = tuple[str, str, str]
"""``(checkpoint_ns, channel, version)``: one stored channel value of a thread."""


READABLE_TYPES: tuple[tuple[str, ...], ...] = ()
"""The Python types a stored value may name beyond LangGraph's own safe list (``SAFE_MSGPACK_TYPES``: its
``Interrupt``, ``Send`` and ``Command``, LangChain's messages, dates, UUIDs ...): none, since reinloop's state is
plain data. A graph compiled on the checkpointer adds its state schema's types (LangGraph's ``with_allowlist``)."""

_blocked = threading.local()


def _note_blocked(event: SerdeEvent) -> None:
    if event["kind"].endswith("_blocked") and getattr(_blocked, "names", None) is not None:
        _blocked.names.append(".".join(filter(None, (event["module"], event["name"], event.get("method")))))


register_serde_event_listener(_note_blocked)
# LangGraph also logs each blocked type once; reinloop's reader raises a StoredDataError naming it instead
logging.getLogger("langgraph.checkpoint.serde.jsonplus").addFilter(
    lambda record: not str(record.msg).startswith("Blocked deserialization"))


class StoredDataSerializer(JsonPlusSerializer):
    """LangGraph's serializer, reading only an allow-list of types: a stored value never names code to run.

    LangGraph's default reader imports and calls whatever module and name a stored msgpack value gives
    (``os.system`` included); this one reads LangGraph's safe types and :data:`READABLE_TYPES`, and
    refuses any other with a :class:`~reinloop.errors.StoredDataError` naming the type.
    """

    def __init__(self, allowed: Iterable[tuple[str, ...]] = READABLE_TYPES) -> None:
        super().__init__(allowed_msgpack_modules=tuple(allowed) or None)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """The stored value; a type outside the allow-list is refused, never imported."""
        _blocked.names = []
        try:
            value = super().loads_typed(data)
            if _blocked.names:
                raise StoredDataError("", f"it names the Python object {_blocked.names[0]}, which reinloop never "
                                      "loads from a run database (only plain data and LangGraph's own types)")
            return value
        finally:
            _blocked.names = None


def plain_serde(serde: SerializerProtocol) -> bool:
    """True for the serializers whose plain values reinloop stores as JSON text (LangGraph's default, reinloop's)."""
    return type(serde) in (JsonPlusSerializer, StoredDataSerializer)


def encode(serde: SerializerProtocol, value: Any) -> tuple[str, str | bytes]:
    """``(type, data)`` for storage: JSON text for plain data under the default serde."""
    if plain_serde(serde) and is_plain(value):
        return JSON, dumps_json(value)
    type_, data = serde.dumps_typed(value)
    return ("serde-json" if type_ == JSON else type_), data


def decode(serde: SerializerProtocol, type_: str, data: str | bytes | None) -> Any:
    """The value stored as ``(type, data)`` by :func:`encode`; one that cannot be read is a :class:`StoredDataError`."""
    try:
        if type_ == JSON:
            return orjson.loads(data) if data is not None else None
        return serde.loads_typed(((JSON if type_ == "serde-json" else type_), data))  # type: ignore[arg-type]
    except StoredDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the bytes make a reader raise, the value is not reinloop's
        problem = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise StoredDataError("", f"it is not a {type_!r} value reinloop wrote ({type(exc).__name__}: {problem})") from None


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


class ThreadedSaver(BaseCheckpointSaver[str]):
    """A LangGraph saver whose async methods run its sync ones in a worker thread."""

    def get_next_version(self, current: str | None, channel: None = None) -> str:  # type: ignore[override]
        """See :func:`next_version`."""
        return next_version(current)

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
