"""The checkpointer both SQL backends share: the same statements on SQLite and PostgreSQL.

:class:`SqlCheckpointer` implements LangGraph's saver contract (``put``,
``put_writes``, ``get_tuple``, ``list``, ``delete_thread``,
``delete_for_runs``, ``copy_thread``, ``prune``) once, with the storage
layout of :mod:`reinloop.checkpoints.base` (change-only values, append
chains for the scratchpad), and nothing else: it is one store of a
:class:`~reinloop.checkpoints.database.Database`, whose connection gives it
transactions (each yields a :class:`Tx`) and whose :class:`Dialect` holds
the few SQL spellings that differ. The SQL is the common subset of the two
databases (``INSERT ... ON CONFLICT``, recursive CTEs, ``VALUES`` lists),
written with SQLite's ``?`` and ``:name`` parameters, which the PostgreSQL
connection rewrites for psycopg.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Self

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import ConfigurationError, StorageError, StoredDataError
from .base import JSON, PROJECTED, BlobKey, ListHead, StoredDataSerializer, ThreadedSaver, decode, dumps_json, encode, list_row, now_iso, reachable
from .blobs import BLOB_MIN_CHARS, JSON_REFS, as_text, externalize, inline, referenced_in, references
from .rows import dict_rows
from .schema import Table, table, thread_tables
from .shapes import check_channel, check_skeleton, is_reinloop_state
from .sqlitedb import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from .database import Database

CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, created_at, type, checkpoint, metadata"

CHAIN_SQL = """
WITH RECURSIVE chain(version, kind, base_version, type, value, length, depth) AS (
    SELECT version, kind, base_version, type, value, length, 0 FROM channel_values
     WHERE thread_id = :thread AND checkpoint_ns = :ns AND channel = :channel AND version = :version
    UNION ALL
    SELECT v.version, v.kind, v.base_version, v.type, v.value, v.length, chain.depth + 1
      FROM channel_values v JOIN chain ON v.version = chain.base_version
     WHERE chain.kind = 'append' AND chain.version <> :stop
       AND v.thread_id = :thread AND v.checkpoint_ns = :ns AND v.channel = :channel
)
SELECT version, kind, type, value, length FROM chain ORDER BY depth
"""
"""A value's row and the rows of its append chain, newest first, stopping at ``:stop`` ('' for never)."""

LIST_CACHE_SIZE = 64

Memo = dict[tuple[str, str, str], dict[str, Any]]
"""Values already read in one call: (thread, ns, channel) -> version -> value (or a :class:`Prefix`)."""


class Tx(Protocol):
    """A transaction's connection: ``sqlite3.Connection``, or the PostgreSQL backend's wrapper."""

    def execute(self, sql: str, params: Any = ...) -> Any: ...

    def executemany(self, sql: str, rows: Any) -> Any: ...


def as_is(data: str | bytes | None) -> Any:
    """A stored value's parameter, unchanged (SQLite keeps JSON as text)."""
    return data


class Dialect(NamedTuple):
    """The SQL spellings that differ between the backends: everything else is the same code."""

    name: str
    metadata_filter: Any
    """``(key, value) -> (sql, params)``: one condition on the checkpoint metadata."""
    now: str
    """An SQL expression for the database's clock, in seconds since the epoch."""
    claim_lock: str = ""
    """Appended to the batch queue's claim query (PostgreSQL: ``FOR UPDATE SKIP LOCKED``)."""
    returning: str = ""
    """Appended to an ``INSERT`` to get the new row's id (PostgreSQL: ``RETURNING id``; SQLite: ``lastrowid``)."""
    value: Callable[[str | bytes | None], Any] = as_is
    """A ``value`` column's parameter (PostgreSQL stores every value as bytes)."""


class Prefix(NamedTuple):
    """An older version of an appended list: the first ``length`` items of a newer one."""

    items: list[Any]
    length: int


def upsert(spec: Table, columns: Sequence[str], *, replace: bool = True, source: str | None = None) -> str:
    """``INSERT`` into ``spec`` that replaces (or keeps) a row with the same primary key."""
    names = ", ".join(columns)
    rows = source or f"VALUES ({', '.join('?' * len(columns))})"
    updates = [c for c in columns if c not in spec.pk]
    if replace and updates:
        action = f"({', '.join(spec.pk)}) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in updates)
    else:
        action = "DO NOTHING"
    return f"INSERT INTO {spec.name} ({names}) {rows} ON CONFLICT {action}"


def insert_sql(name: str, columns: Sequence[str]) -> str:
    """``INSERT INTO name (columns) VALUES (?, ...)``."""
    return f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def match(columns: Sequence[str]) -> str:
    """``a = ? AND b = ?``: a row picked by these columns."""
    return " AND ".join(f"{c} = ?" for c in columns)


VALUE_COLUMNS = ("thread_id", "checkpoint_ns", "channel", "version", "kind", "base_version", "length", "type", "value")
CHECKPOINT_INSERT = upsert(table("checkpoints"), (
    "thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "created_at", "source", "step", "run_id",
    "type", "checkpoint", "metadata"))
VALUE_INSERT = upsert(table("channel_values"), VALUE_COLUMNS)
WRITE_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path", "idx", "channel", "type", "value")
WRITE_REPLACE = upsert(table("checkpoint_writes"), WRITE_COLUMNS)
WRITE_KEEP = upsert(table("checkpoint_writes"), WRITE_COLUMNS, replace=False)
BLOB_INSERT = upsert(table("blobs"), ("thread_id", "hash", "chars", "value", "created_at"), replace=False)
BATCH = 500
"""Hashes per ``IN (...)`` list (SQLite allows 32,766 parameters per statement)."""
BLOB_CHANNEL = "\x00blobs"
"""The channel name under which a :data:`Memo` keeps the blob texts of a thread it read (hash -> text)."""


def blob_rows(tx: Tx, columns: str, thread_id: str, hashes: list[str]) -> list[Any]:
    """``columns`` of the thread's blobs with these hashes, :data:`BATCH` hashes per query."""
    rows: list[Any] = []
    for start in range(0, len(hashes), BATCH):
        chunk = hashes[start:start + BATCH]
        rows += tx.execute(f"SELECT {columns} FROM blobs WHERE thread_id = ? AND hash IN ({', '.join('?' * len(chunk))})",
                           (thread_id, *chunk)).fetchall()
    return rows


def store_blobs(tx: Tx, dialect: Dialect, thread_id: str, blobs: Mapping[str, str]) -> None:
    """Write the texts of ``blobs`` (hash -> text) the thread does not have yet."""
    if not blobs:
        return
    have = {r[0] for r in blob_rows(tx, "hash", thread_id, list(blobs))}
    now = now_iso()
    rows = [(thread_id, h, len(text), dialect.value(text), now) for h, text in blobs.items() if h not in have]
    if rows:
        tx.executemany(BLOB_INSERT, rows)


def read_blobs(tx: Tx, location: str, thread_id: str, hashes: set[str], known: dict[str, str] | None = None) -> dict[str, str]:
    """The texts of the blobs ``hashes`` of a thread, added to ``known`` (whose hashes are not read again)."""
    known = {} if known is None else known
    for h, text in blob_rows(tx, "hash, value", thread_id, [h for h in hashes if h not in known]):
        known[h] = as_text(text)
    missing = sorted(hashes - known.keys())
    if missing:
        raise StorageError(
            f"{location}: thread {thread_id!r} refers to {len(missing)} stored text(s) that are missing from "
            f"the blobs table (first: {missing[0]}); the database was edited or damaged"
        )
    return known


class SqlCheckpointer(ThreadedSaver):
    """LangGraph's checkpointer on a run database: stores each change once (see :mod:`reinloop.checkpoints.base`).

    It is ``db.checkpointer`` of a :class:`~reinloop.checkpoints.database.Database`;
    :func:`~reinloop.checkpoints.open_saver` (or ``SqliteCheckpointer.open``)
    gives one whose ``close()`` closes its database.
    """

    @staticmethod
    def opener(location: str | os.PathLike[str], **options: Any) -> Database:
        """How :meth:`open` opens a database: a path or a URL (subclasses: only their own kind)."""
        from . import open_database

        return open_database(location, **options)

    def __init__(self, db: Database, *, serde: SerializerProtocol | None = None) -> None:
        # a stored value is data: by default only plain data and LangGraph's own types are read back
        super().__init__(serde=serde or StoredDataSerializer())
        self.db = db
        """The run database this checkpointer writes to; its other stores are ``db.runs``, ``db.events`` ..."""
        self.lock = db.lock
        # last written/read version of each list channel, for append-only storage
        self._lists: OrderedDict[tuple[str, str, str], ListHead] = OrderedDict()
        # channel versions of the last checkpoint of each (thread, ns), to find a parent's versions
        self._heads: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str],
        *,
        read_only: bool = False,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        serde: SerializerProtocol | None = None,
    ) -> Self:
        """The checkpointer of the run database at ``location``; closing it closes the database.

        ``create=False`` refuses a database without reinloop's tables; ``read_only=True`` never writes.
        Raises :class:`~reinloop.errors.StorageError` with one line for a database that cannot be used.
        """
        db = cls.opener(location, read_only=read_only, create=create, timeout=timeout, serde=serde)
        return db.checkpointer  # type: ignore[return-value]

    @property
    def location(self) -> str:
        """Where the data lives (a file path, a URL without its password), for messages."""
        return self.db.location

    def close(self) -> None:
        """Close the database this checkpointer belongs to."""
        self.db.close()

    def __enter__(self) -> SqlCheckpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> AbstractContextManager[Tx]:
        return self.db.read()

    def _write(self) -> AbstractContextManager[Tx]:
        return self.db.write()

    def _blob(self, data: str | bytes | None) -> Any:
        return self.db.dialect.value(data)

    def _forget(self, thread_id: str) -> None:
        """Drop cached values of a thread whose rows were deleted or rewritten."""
        for key in [k for k in self._lists if k[0] == thread_id]:
            del self._lists[key]
        for key in [k for k in self._heads if k[0] == thread_id]:
            del self._heads[key]

    # -- put ---------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: its row, and a value row for each channel that changed."""
        conf = config["configurable"]
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        values = checkpoint["channel_values"]
        skeleton = {k: v for k, v in checkpoint.items() if k not in ("channel_values", "id", "ts")}
        md = get_serializable_checkpoint_metadata(config, metadata)
        with self.lock:
            parent = self._parent_versions(thread_id, ns, conf.get("checkpoint_id"))
            rows, lists, blobs = [], {}, {}
            for channel, version in new_versions.items():
                row, head = self._value_row(thread_id, ns, channel, str(version), values, parent.get(channel), blobs)
                rows.append(row)
                if head is not None:
                    lists[(thread_id, ns, channel)] = head
            type_, data = encode(self.serde, skeleton)
            with self._write() as tx:
                self._store_blobs(tx, thread_id, blobs)
                if rows:
                    tx.executemany(VALUE_INSERT, rows)
                tx.execute(CHECKPOINT_INSERT, (
                    thread_id, ns, checkpoint["id"], conf.get("checkpoint_id"), checkpoint.get("ts"), md.get("source"),
                    md.get("step"), md.get("run_id"), type_, self._blob(data),
                    json.dumps(md, ensure_ascii=False, default=str)))
                if ns == "" and any(k in new_versions for k in PROJECTED):
                    self.db.runs.mirror(tx, thread_id, checkpoint["id"], values)
            self._remember(lists)
            self._heads[(thread_id, ns)] = (checkpoint["id"], dict(checkpoint["channel_versions"]))
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def _parent_versions(self, thread_id: str, ns: str, parent_id: str | None) -> dict[str, Any]:
        if parent_id is None:
            return {}
        head = self._heads.get((thread_id, ns))
        if head is not None and head[0] == parent_id:
            return head[1]
        with self._read() as tx:
            row = tx.execute(
                "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (thread_id, ns, parent_id),
            ).fetchone()
        return dict(decode(self.serde, *row).get("channel_versions") or {}) if row else {}

    def _value_row(
        self, thread_id: str, ns: str, channel: str, version: str, values: Mapping[str, Any], base: Any,
        blobs: dict[str, str],
    ) -> tuple[tuple[Any, ...], ListHead | None]:
        """The ``channel_values`` row for one changed channel, and the list head to remember."""
        if channel not in values:
            return (thread_id, ns, channel, version, "empty", None, None, "empty", None), None
        value = values[channel]
        if type(value) is not list:
            type_, data = self._encode(value, blobs)
            return (thread_id, ns, channel, version, "value", None, None, type_, data), None
        head = self._lists.get((thread_id, ns, channel))
        kind, base_version, payload, new_head = list_row(head, None if base is None else str(base), version, value)
        type_, data = self._encode(payload, blobs)
        return (thread_id, ns, channel, version, kind, base_version, len(value), type_, data), new_head

    # -- long strings, stored once (reinloop.checkpoints.blobs) ------------------------------

    def _encode(self, value: Any, blobs: dict[str, str]) -> tuple[str, Any]:
        """``(type, data)`` of a value to store; its long strings become references, their texts go to ``blobs``."""
        type_, data = encode(self.serde, value)
        if type_ == JSON and len(data) >= BLOB_MIN_CHARS:  # a shorter text cannot hold a long string
            found: dict[str, str] = {}
            slim = externalize(value, found)
            if found:
                blobs.update(found)
                type_, data = JSON_REFS, dumps_json(slim)
        return type_, self._blob(data)

    def _store_blobs(self, tx: Tx, thread_id: str, blobs: Mapping[str, str]) -> None:
        store_blobs(tx, self.db.dialect, thread_id, blobs)

    def _decode(self, tx: Tx, thread_id: str, type_: str, data: Any, memo: Memo | None = None) -> Any:
        """A stored value, its references to blobs replaced by their texts."""
        if type_ != JSON_REFS:
            return decode(self.serde, type_, data)
        try:
            text = as_text(data)
            return orjson.loads(inline(text, self._texts(tx, thread_id, references(text), memo)))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoredDataError("", f"it is not JSON with references to blobs ({type(exc).__name__}: {exc})") from None

    def _texts(self, tx: Tx, thread_id: str, hashes: set[str], memo: Memo | None) -> dict[str, str]:
        """The texts of the blobs ``hashes`` of a thread (those already in ``memo`` are not read again)."""
        known = {} if memo is None else memo.setdefault((thread_id, "", BLOB_CHANNEL), {})
        return read_blobs(tx, self.location, thread_id, hashes, known)

    def _remember(self, lists: Mapping[tuple[str, str, str], ListHead]) -> None:
        for key, item in lists.items():
            self._lists[key] = item
            self._lists.move_to_end(key)
        while len(self._lists) > LIST_CACHE_SIZE:
            self._lists.popitem(last=False)

    # -- put_writes --------------------------------------------------------------------------

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's writes; a circuit break or an operator's answer also goes to ``breaks``."""
        conf = config["configurable"]
        key = (str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), str(conf["checkpoint_id"]))
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)
        rows, blobs = [], {}
        for idx, (channel, value) in enumerate(writes):
            type_, data = self._encode(value, blobs)
            rows.append((*key, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, type_, data))
        with self._write() as tx:
            self._store_blobs(tx, key[0], blobs)
            if rows:
                tx.executemany(WRITE_REPLACE if replace else WRITE_KEEP, rows)
            self.db.runs.record_breaks(tx, key, writes)

    # -- reading -----------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config``, or the thread's latest."""
        conf = config["configurable"]
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        with self._read() as tx:
            if checkpoint_id := get_checkpoint_id(config):
                row = tx.execute(
                    f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    (thread_id, ns, checkpoint_id),
                ).fetchone()
            else:
                row = tx.execute(
                    f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                ).fetchone()
            return self._tuple(tx, row, {}) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config``, the metadata ``filter`` and ``before``, newest first."""
        where, params = self._search_where(config, filter, before)
        sql = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints {where} ORDER BY checkpoint_id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as tx:
            rows = tx.execute(sql, params).fetchall()
        memo: Memo = {}
        for row in rows:
            with self._read() as tx:
                item = self._tuple(tx, row, memo)
            yield item

    def _search_where(
        self, config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None  # noqa: A002
    ) -> tuple[str, list[Any]]:
        """The WHERE clause of :meth:`list`."""
        wheres: list[str] = []
        params: list[Any] = []
        if config is not None:
            conf = config["configurable"]
            wheres.append("thread_id = ?")
            params.append(str(conf["thread_id"]))
            if conf.get("checkpoint_ns") is not None:
                wheres.append("checkpoint_ns = ?")
                params.append(conf["checkpoint_ns"])
            if checkpoint_id := get_checkpoint_id(config):
                wheres.append("checkpoint_id = ?")
                params.append(checkpoint_id)
        for key, value in (filter or {}).items():
            sql, values = self.db.dialect.metadata_filter(key, value)
            wheres.append(sql)
            params.extend(values)
        if before is not None:
            wheres.append("checkpoint_id < ?")
            params.append(get_checkpoint_id(before))
        return ("WHERE " + " AND ".join(wheres) if wheres else ""), params

    def _tuple(self, tx: Tx, row: Sequence[Any], memo: Memo) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, created_at, type_, data, metadata = row
        try:
            skeleton = decode(self.serde, type_, data)
            versions = skeleton.get("channel_versions") if isinstance(skeleton, dict) else None
            if not isinstance(versions, dict) or not all(isinstance(v, (str, int, float)) for v in versions.values()):
                raise StoredDataError("", "it is not a checkpoint with channel versions")
            check_skeleton(skeleton)
            metadata = (json.loads(metadata) if isinstance(metadata, str) else dict(metadata)) if metadata else {}
            if not isinstance(metadata, dict):
                raise StoredDataError("", f"its metadata is a {type(metadata).__name__}, not an object")
        except (StoredDataError, ValueError, TypeError) as exc:
            error = exc if isinstance(exc, StoredDataError) else StoredDataError("", f"its metadata is not JSON ({exc})")
            raise error.at(f"checkpoints row {checkpoint_id}", thread_id=thread_id) from None
        checkpoint = {
            **skeleton,
            "id": checkpoint_id,
            "ts": created_at,
            "channel_values": self._values(tx, thread_id, ns, versions, memo),
        }
        state = is_reinloop_state(versions)  # its channels are checked against reinloop.state (checkpoints.shapes)
        writes = tx.execute(
            "SELECT task_id, channel, type, value, task_path, idx FROM checkpoint_writes "
            "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (thread_id, ns, checkpoint_id),
        ).fetchall()
        writes.sort(key=lambda w: writes_sort_key(w[4], w[0], w[5]))

        def ref(cid: str) -> RunnableConfig:
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}

        return CheckpointTuple(
            config=ref(checkpoint_id),
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=metadata,
            parent_config=ref(parent_id) if parent_id else None,
            pending_writes=[(w[0], w[1], self._write_value(tx, thread_id, w, memo, state)) for w in writes],
        )

    def _write_value(self, tx: Tx, thread_id: str, write: Sequence[Any], memo: Memo, state: bool) -> Any:
        """The value of one pending write (of a reinloop ``state``: checked), or a :class:`StoredDataError`."""
        try:
            value = self._decode(tx, thread_id, write[2], write[3], memo)
            if state:
                check_channel(write[1], value)
            return value
        except StoredDataError as exc:
            raise exc.at(f"checkpoint_writes.value of channel {write[1]!r}", thread_id=thread_id) from None

    def _values(self, tx: Tx, thread_id: str, ns: str, versions: Mapping[str, Any], memo: Memo) -> dict[str, Any]:
        """The channel values at ``versions``; append chains are followed, ``memo`` reused."""
        if not versions:
            return {}
        pairs = [(ch, str(v)) for ch, v in versions.items()]
        placeholders = ", ".join("(?, ?)" for _ in pairs)
        rows = tx.execute(  # one index lookup per channel (a row-value IN would scan the thread)
            f"WITH k(channel, version) AS (VALUES {placeholders}) SELECT v.channel, v.version, v.kind, v.type, v.value "
            "FROM k JOIN channel_values v ON v.thread_id = ? AND v.checkpoint_ns = ? AND v.channel = k.channel "
            "AND v.version = k.version",
            (*[x for pair in pairs for x in pair], thread_id, ns),
        ).fetchall()
        values: dict[str, Any] = {}
        state = is_reinloop_state(versions)
        missing = set(versions) - {row[0] for row in rows}
        if missing:
            channel = min(missing)
            raise StoredDataError(f"channel_values.value of channel {channel!r}", f"its version {versions[channel]} "
                                  "is not stored", thread_id=thread_id)
        for channel, version, kind, type_, data in rows:
            if kind == "empty":
                continue
            known = memo.setdefault((thread_id, ns, channel), {})
            if version not in known:
                try:
                    known[version] = (
                        self._decode(tx, thread_id, type_, data, memo) if kind == "value"
                        else self._chain(tx, (thread_id, ns, channel), version, known, memo)
                    )
                    if state:  # a value is checked once, as it is first read
                        check_channel(channel, known[version])
                except StoredDataError as exc:
                    raise exc.at(f"channel_values.value of channel {channel!r}", thread_id=thread_id) from None
            value = known[version]
            if isinstance(value, Prefix):
                value = known[version] = value.items[: value.length]
            if type(value) is list:
                value = list(value)  # callers may mutate what they get; what we remember must not change
                self._remember({(thread_id, ns, channel): ListHead(version, list(value), version, len(value), 0)})
            values[channel] = value
        return values

    def _chain(self, tx: Tx, key: tuple[str, str, str], version: str, known: dict[str, Any], memo: Memo) -> list[Any]:
        """Rebuild an appended list: walk back to a whole value (or one already known), then append."""
        thread_id, ns, channel = key
        cached = self._lists.get(key)
        if cached is not None:
            known.setdefault(cached.version, cached.items)
        stop = max(known, default="")
        rows = tx.execute(
            CHAIN_SQL, {"thread": thread_id, "ns": ns, "channel": channel, "version": version, "stop": stop}
        ).fetchall()
        suffixes: list[list[Any]] = []
        start: list[Any] | None = None
        for v, kind, type_, data, _ in rows:
            if v in known:
                start = known[v]
                start = start.items[: start.length] if isinstance(start, Prefix) else start
                break
            if kind == "value":
                start = self._decode(tx, thread_id, type_, data, memo)
                break
            suffixes.append(self._decode(tx, thread_id, type_, data, memo))
            if type(suffixes[-1]) is not list:
                raise StoredDataError("", f"an appended part (version {v}) is a {type(suffixes[-1]).__name__}, not a list")
        if start is None:
            raise StorageError(
                f"{self.location}: the stored value of channel {channel!r} at version {version} of thread "
                f"{thread_id!r} is incomplete (its append chain is broken); the database was edited or damaged"
            )
        if not isinstance(start, list):
            raise StoredDataError("", f"the list an append chain starts from is a {type(start).__name__}")
        value = list(start)
        for suffix in reversed(suffixes):
            value.extend(suffix)
        for v, _, _, _, length in rows:  # older versions on this chain are prefixes of this value
            if length is not None and (type(length) is not int or not 0 <= length <= len(value)):
                raise StoredDataError("", f"the length of version {v} is {length!r}, not a count of its {len(value)} items")
            if length is not None:
                known.setdefault(v, Prefix(value, length))
        return value

    # -- deleting, copying, pruning ------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete everything stored for a thread: checkpoints, values, writes, its run, breaks, steps, journal."""
        with self._write() as tx:
            for name in thread_tables():
                tx.execute(f"DELETE FROM {name} WHERE thread_id = ?", (str(thread_id),))
            self._forget(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given LangGraph run ids."""
        if not run_ids:
            return
        marks = ", ".join("?" * len(run_ids))
        with self._write() as tx:
            doomed = tx.execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE run_id IN ({marks})",
                list(run_ids),
            ).fetchall()
            if doomed:
                tx.executemany(
                    "DELETE FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    [tuple(d) for d in doomed],
                )
            tx.execute(f"DELETE FROM checkpoints WHERE run_id IN ({marks})", list(run_ids))
            for thread_id in {d[0] for d in doomed}:
                self._collect_garbage(tx, thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, values, writes, run row, breaks, steps and journal to another thread id."""
        src, dst = str(source_thread_id), str(target_thread_id)
        with self._write() as tx:
            for name in thread_tables():
                spec = table(name)
                columns = [c.name for c in spec.columns if c.name not in ("thread_id", spec.identity)]
                names = ", ".join(columns)
                sql = upsert(spec, ["thread_id", *columns], replace=spec.identity is None,
                             source=f"SELECT ?, {names} FROM {name} WHERE thread_id = ?")
                tx.execute(sql, (dst, src))
            self._forget(dst)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest", keep_last: int = 1) -> None:
        """Keep the latest ``keep_last`` checkpoints per namespace of each thread; ``"delete"`` removes all.

        The run's step history survives a prune: it is in the state of the kept checkpoints.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ConfigurationError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        if strategy == "keep_latest" and keep_last < 1:
            raise ConfigurationError(f"keep_last must be at least 1, got {keep_last}; use strategy='delete' to drop all")
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self._write() as tx:
                tx.execute(
                    "DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_id NOT IN ("
                    " SELECT k.checkpoint_id FROM checkpoints k WHERE k.thread_id = :t"
                    " AND k.checkpoint_ns = checkpoints.checkpoint_ns ORDER BY k.checkpoint_id DESC LIMIT :n)",
                    {"t": thread_id, "n": keep_last},
                )
                tx.execute(
                    "DELETE FROM checkpoint_writes WHERE thread_id = :t AND NOT EXISTS (SELECT 1 FROM checkpoints c"
                    " WHERE c.thread_id = :t AND c.checkpoint_ns = checkpoint_writes.checkpoint_ns"
                    " AND c.checkpoint_id = checkpoint_writes.checkpoint_id)",
                    {"t": thread_id},
                )
                self._collect_garbage(tx, thread_id)

    def _collect_garbage(self, tx: Tx, thread_id: str) -> None:
        """Delete the channel values no remaining checkpoint of the thread needs."""
        live: list[BlobKey] = []
        for ns, type_, data in tx.execute(
            "SELECT checkpoint_ns, type, checkpoint FROM checkpoints WHERE thread_id = ?", (thread_id,)
        ).fetchall():
            versions = decode(self.serde, type_, data).get("channel_versions") or {}
            live.extend((ns, ch, str(v)) for ch, v in versions.items())
        bases: dict[BlobKey, str | None] = {
            (ns, ch, v): base
            for ns, ch, v, base in tx.execute(
                "SELECT checkpoint_ns, channel, version, base_version FROM channel_values WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        }
        keep = reachable(live, bases)
        doomed = [(thread_id, *key) for key in bases if key not in keep]
        if doomed:
            tx.executemany(
                "DELETE FROM channel_values WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
                doomed,
            )
        self._collect_blobs(tx, thread_id)
        self._forget(thread_id)

    def _collect_blobs(self, tx: Tx, thread_id: str) -> None:
        """Delete the blobs of a thread that no stored value, write or journal row refers to any more."""
        texts = [r[0] for name in ("channel_values", "checkpoint_writes") for r in tx.execute(
            f"SELECT value FROM {name} WHERE thread_id = ? AND type = ?", (thread_id, JSON_REFS)).fetchall()]
        live = referenced_in(texts) | {r[0] for r in tx.execute(
            "SELECT observation_hash FROM tool_journal WHERE thread_id = ? AND observation_hash IS NOT NULL", (thread_id,)
        ).fetchall()}
        stored = {r[0] for r in tx.execute("SELECT hash FROM blobs WHERE thread_id = ?", (thread_id,)).fetchall()}
        doomed = [(thread_id, h) for h in stored - live]
        if doomed:
            tx.executemany("DELETE FROM blobs WHERE thread_id = ? AND hash = ?", doomed)
