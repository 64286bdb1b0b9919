"""``SqliteCheckpointer``: reinloop's storage backend on one SQLite file, through sqlite-utils.

The layout and its reasons are in :mod:`reinloop.checkpoints.base`; the
tables are defined in :mod:`reinloop.checkpoints.schema` and can be read with
plain SQL::

    sqlite-utils tables reinloop.db --counts
    sqlite-utils query reinloop.db "select thread_id, status, steps, break_reason from runs"

One connection is shared by the threads LangGraph writes from, behind a
lock. Reads run in one transaction so they see a single moment of the file;
writes take the write lock first (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import sqlite_utils
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

from ..errors import ConfigurationError, StorageError
from .base import (
    PROJECTED,
    BlobKey,
    ListHead,
    ReinloopSaver,
    decode,
    encode,
    list_row,
    reachable,
)
from .schema import thread_tables
from .sqlite_runs import SqliteRunTables
from .sqlitedb import DEFAULT_TIMEOUT, connect, migrate, storage_errors

CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, created_at, type, checkpoint, metadata"

CHAIN_SQL = """
WITH RECURSIVE chain(version, kind, base_version, type, value, length, depth) AS (
    SELECT version, kind, base_version, type, value, length, 0 FROM channel_values
     WHERE thread_id = :thread AND checkpoint_ns = :ns AND channel = :channel AND version = :version
    UNION ALL
    SELECT v.version, v.kind, v.base_version, v.type, v.value, v.length, chain.depth + 1
      FROM channel_values v JOIN chain ON v.version = chain.base_version
     WHERE chain.kind = 'append' AND chain.version IS NOT :stop
       AND v.thread_id = :thread AND v.checkpoint_ns = :ns AND v.channel = :channel
)
SELECT version, kind, type, value, length FROM chain ORDER BY depth
"""
"""A value's row and the rows of its append chain, newest first, stopping at ``:stop``."""

LIST_CACHE_SIZE = 64

Memo = dict[tuple[str, str, str], dict[str, Any]]
"""Values already read in one call: (thread, ns, channel) -> version -> value (or a :class:`Prefix`)."""


class Prefix(NamedTuple):
    """An older version of an appended list: the first ``length`` items of a newer one."""

    items: list[Any]
    length: int


class SqliteCheckpointer(SqliteRunTables, ReinloopSaver):
    """A LangGraph checkpointer on SQLite that stores each change once and records runs and breaks.

    Create it with :meth:`open`; the constructor takes an open ``sqlite3``
    connection (made with ``check_same_thread=False`` if LangGraph will use it
    from its worker threads).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        location: str = ":memory:",
        serde: SerializerProtocol | None = None,
        read_only: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        create: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        conn.isolation_level = None  # transactions are explicit: BEGIN for reads, BEGIN IMMEDIATE for writes
        self.conn = conn
        self.db = sqlite_utils.Database(conn, execute_plugins=False)
        self.location = location
        self.read_only = read_only
        self.timeout = timeout
        self.lock = threading.RLock()
        # last written/read version of each list channel, for append-only storage
        self._lists: OrderedDict[tuple[str, str, str], ListHead] = OrderedDict()
        # channel versions of the last checkpoint of each (thread, ns), to find a parent's versions
        self._heads: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        with self.lock, storage_errors(location, timeout):
            migrate(self.db, location, read_only=read_only, create=create)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        read_only: bool = False,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        serde: SerializerProtocol | None = None,
    ) -> SqliteCheckpointer:
        """Open (or create) the run database at ``path``; ``":memory:"`` for a throwaway one.

        ``create=False`` refuses a missing file; ``read_only=True`` never writes.
        Raises :class:`~reinloop.errors.StorageError` for a file that cannot be used.
        """
        conn = connect(path, timeout=timeout, read_only=read_only, create=create)
        try:
            return cls(conn, location=str(path), serde=serde, read_only=read_only, timeout=timeout, create=create)
        except BaseException:
            conn.close()
            raise

    from_path = open

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self.conn.close()

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise StorageError(f"{self.location} was opened read-only; open it without read_only to change it")
        with self.lock, storage_errors(self.location, self.timeout):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

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
            rows, lists = [], {}
            for channel, version in new_versions.items():
                row, head = self._value_row(thread_id, ns, channel, str(version), values, parent.get(channel))
                rows.append(row)
                if head is not None:
                    lists[(thread_id, ns, channel)] = head
            with self._write() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO channel_values (thread_id, checkpoint_ns, channel, version, kind, "
                    "base_version, length, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                conn.execute(
                    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                    "created_at, source, step, run_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (thread_id, ns, checkpoint["id"], conf.get("checkpoint_id"), checkpoint.get("ts"),
                     md.get("source"), md.get("step"), md.get("run_id"), *encode(self.serde, skeleton),
                     json.dumps(md, ensure_ascii=False, default=str)),
                )
                if ns == "" and any(k in new_versions for k in PROJECTED):
                    self._project(conn, thread_id, checkpoint["id"], values)
            self._remember(lists)
            self._heads[(thread_id, ns)] = (checkpoint["id"], dict(checkpoint["channel_versions"]))
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def _parent_versions(self, thread_id: str, ns: str, parent_id: str | None) -> dict[str, Any]:
        if parent_id is None:
            return {}
        head = self._heads.get((thread_id, ns))
        if head is not None and head[0] == parent_id:
            return head[1]
        with self._read() as conn:
            row = conn.execute(
                "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (thread_id, ns, parent_id),
            ).fetchone()
        return dict(decode(self.serde, *row).get("channel_versions") or {}) if row else {}

    def _value_row(
        self, thread_id: str, ns: str, channel: str, version: str, values: Mapping[str, Any], base: Any
    ) -> tuple[tuple[Any, ...], ListHead | None]:
        """The ``channel_values`` row for one changed channel, and the list head to remember."""
        if channel not in values:
            return (thread_id, ns, channel, version, "empty", None, None, "empty", None), None
        value = values[channel]
        if type(value) is not list:
            return (thread_id, ns, channel, version, "value", None, None, *encode(self.serde, value)), None
        head = self._lists.get((thread_id, ns, channel))
        kind, base_version, payload, new_head = list_row(head, None if base is None else str(base), version, value)
        row = (thread_id, ns, channel, version, kind, base_version, len(value), *encode(self.serde, payload))
        return row, new_head

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
        verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
        rows = [
            (*key, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, *encode(self.serde, value))
            for idx, (channel, value) in enumerate(writes)
        ]
        with self._write() as conn:
            conn.executemany(
                f"INSERT OR {verb} INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
                "task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._record_breaks(conn, key, writes)

    # -- reading -----------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config``, or the thread's latest."""
        conf = config["configurable"]
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        with self._read() as conn:
            if checkpoint_id := get_checkpoint_id(config):
                row = conn.execute(
                    f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ?",
                    (thread_id, ns, checkpoint_id),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                ).fetchone()
            return self._tuple(conn, row, {}) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config``, the metadata ``filter`` and ``before``, newest first."""
        where, params = search_where(config, filter, before)
        sql = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints {where} ORDER BY checkpoint_id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as conn:
            rows = conn.execute(sql, params).fetchall()
        memo: Memo = {}
        for row in rows:
            with self._read() as conn:
                item = self._tuple(conn, row, memo)
            yield item

    def _tuple(self, conn: sqlite3.Connection, row: Sequence[Any], memo: Memo) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, created_at, type_, data, metadata = row
        skeleton = decode(self.serde, type_, data)
        versions = skeleton.get("channel_versions") or {}
        checkpoint = {
            **skeleton,
            "id": checkpoint_id,
            "ts": created_at,
            "channel_values": self._values(conn, thread_id, ns, versions, memo),
        }
        writes = conn.execute(
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
            metadata=json.loads(metadata) if metadata else {},
            parent_config=ref(parent_id) if parent_id else None,
            pending_writes=[(w[0], w[1], decode(self.serde, w[2], w[3])) for w in writes],
        )

    def _values(
        self, conn: sqlite3.Connection, thread_id: str, ns: str, versions: Mapping[str, Any], memo: Memo
    ) -> dict[str, Any]:
        """The channel values at ``versions``; append chains are followed, ``memo`` reused."""
        if not versions:
            return {}
        pairs = [(ch, str(v)) for ch, v in versions.items()]
        placeholders = ", ".join("(?, ?)" for _ in pairs)
        rows = conn.execute(  # one index lookup per channel (a row-value IN would scan the thread)
            f"WITH k(channel, version) AS (VALUES {placeholders}) SELECT v.channel, v.version, v.kind, v.type, v.value "
            "FROM k JOIN channel_values v ON v.thread_id = ? AND v.checkpoint_ns = ? AND v.channel = k.channel "
            "AND v.version = k.version",
            (*[x for pair in pairs for x in pair], thread_id, ns),
        ).fetchall()
        values: dict[str, Any] = {}
        for channel, version, kind, type_, data in rows:
            if kind == "empty":
                continue
            known = memo.setdefault((thread_id, ns, channel), {})
            if version not in known:
                known[version] = (
                    decode(self.serde, type_, data) if kind == "value" else self._chain(conn, (thread_id, ns, channel), version, known)
                )
            value = known[version]
            if isinstance(value, Prefix):
                value = known[version] = value.items[: value.length]
            if type(value) is list:
                value = list(value)  # callers may mutate what they get; what we remember must not change
                self._remember({(thread_id, ns, channel): ListHead(version, list(value), version, len(value), 0)})
            values[channel] = value
        return values

    def _chain(self, conn: sqlite3.Connection, key: tuple[str, str, str], version: str, known: dict[str, Any]) -> list[Any]:
        """Rebuild an appended list: walk back to a whole value (or one already known), then append."""
        thread_id, ns, channel = key
        cached = self._lists.get(key)
        if cached is not None:
            known.setdefault(cached.version, cached.items)
        stop = max(known, default=None)
        rows = conn.execute(
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
                start = decode(self.serde, type_, data)
                break
            suffixes.append(decode(self.serde, type_, data))
        if start is None:
            raise StorageError(
                f"{self.location}: the stored value of channel {channel!r} at version {version} of thread "
                f"{thread_id!r} is incomplete (its append chain is broken); the database was edited or damaged"
            )
        value = list(start)
        for suffix in reversed(suffixes):
            value.extend(suffix)
        for v, _, _, _, length in rows:  # older versions on this chain are prefixes of this value
            if length is not None:
                known.setdefault(v, Prefix(value, length))
        return value

    # -- deleting, copying, pruning ------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete everything stored for a thread: checkpoints, values, writes, its run and breaks."""
        with self._write() as conn:
            for table in thread_tables():
                conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))
            self._forget(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given LangGraph run ids."""
        if not run_ids:
            return
        marks = ", ".join("?" * len(run_ids))
        with self._write() as conn:
            doomed = conn.execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE run_id IN ({marks})",
                list(run_ids),
            ).fetchall()
            conn.executemany(
                "DELETE FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", doomed
            )
            conn.execute(f"DELETE FROM checkpoints WHERE run_id IN ({marks})", list(run_ids))
            for thread_id in {d[0] for d in doomed}:
                self._collect_garbage(conn, thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, values, writes, run row and breaks to another thread id."""
        src, dst = str(source_thread_id), str(target_thread_id)
        with self._write() as conn:
            for table in thread_tables():
                columns = [c for c in self.db[table].columns_dict if c not in ("thread_id", "id")]  # type: ignore[union-attr]
                names = ", ".join(columns)
                conn.execute(
                    f"INSERT OR REPLACE INTO {table} (thread_id, {names}) SELECT ?, {names} FROM {table} WHERE thread_id = ?",
                    (dst, src),
                )
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
            with self._write() as conn:
                conn.execute(
                    "DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_id NOT IN ("
                    " SELECT k.checkpoint_id FROM checkpoints k WHERE k.thread_id = :t"
                    " AND k.checkpoint_ns = checkpoints.checkpoint_ns ORDER BY k.checkpoint_id DESC LIMIT :n)",
                    {"t": thread_id, "n": keep_last},
                )
                conn.execute(
                    "DELETE FROM checkpoint_writes WHERE thread_id = :t AND NOT EXISTS (SELECT 1 FROM checkpoints c"
                    " WHERE c.thread_id = :t AND c.checkpoint_ns = checkpoint_writes.checkpoint_ns"
                    " AND c.checkpoint_id = checkpoint_writes.checkpoint_id)",
                    {"t": thread_id},
                )
                self._collect_garbage(conn, thread_id)

    def _collect_garbage(self, conn: sqlite3.Connection, thread_id: str) -> None:
        """Delete the channel values no remaining checkpoint of the thread needs."""
        live: list[BlobKey] = []
        for ns, type_, data in conn.execute(
            "SELECT checkpoint_ns, type, checkpoint FROM checkpoints WHERE thread_id = ?", (thread_id,)
        ):
            versions = decode(self.serde, type_, data).get("channel_versions") or {}
            live.extend((ns, ch, str(v)) for ch, v in versions.items())
        bases: dict[BlobKey, str | None] = {
            (ns, ch, v): base
            for ns, ch, v, base in conn.execute(
                "SELECT checkpoint_ns, channel, version, base_version FROM channel_values WHERE thread_id = ?",
                (thread_id,),
            )
        }
        keep = reachable(live, bases)
        conn.executemany(
            "DELETE FROM channel_values WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
            [(thread_id, *key) for key in bases if key not in keep],
        )
        self._forget(thread_id)

def search_where(
    config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None  # noqa: A002
) -> tuple[str, list[Any]]:
    """The WHERE clause of :meth:`SqliteCheckpointer.list`."""
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
        wheres.append("json_extract(metadata, ?) IS ?" if value is None else "json_extract(metadata, ?) = ?")
        params.append(f'$."{key}"')
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, (dict, list)):
            value = json.dumps(value, separators=(",", ":"))
        params.append(value)
    if before is not None:
        wheres.append("checkpoint_id < ?")
        params.append(get_checkpoint_id(before))
    return ("WHERE " + " AND ".join(wheres) if wheres else ""), params
