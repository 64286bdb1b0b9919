"""reinloop's tables, defined once as data, applied as numbered migrations.

Each :class:`Migration` lists the tables (and indexes) it adds. A backend
turns these specs into its own DDL: :mod:`reinloop.checkpoints.sqlitedb` with
sqlite-utils, :mod:`reinloop.checkpoints.postgresdb` with PostgreSQL's types
(a test checks that both backends' tables match these specs). A database records the
migrations it has applied (table ``migrations``); opening it applies the
missing ones, in order, in one transaction each.

To add a table (per-step records, a tool journal, memories ...) or a column
to an existing table, append a ``Migration`` with the next number to
:data:`MIGRATIONS`; never edit an applied one. :func:`table` and
:func:`tables` give the latest shape of each table: its columns from every
migration.

Column types are logical: ``text``, ``integer``, ``float``, ``json`` (JSON
text, readable with ``json_extract``) and ``value`` (a serialised value whose
format is named in a sibling ``type`` column: JSON text when the value is
plain data, LangGraph's serde bytes otherwise) and ``blob`` (raw bytes, e.g.
an embedding).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import StorageError

ColumnType = Literal["text", "integer", "float", "json", "value", "blob"]


@dataclass(frozen=True)
class Column:
    """One column: name, logical type, and whether it may be NULL."""

    name: str
    type: ColumnType = "text"
    not_null: bool = False
    default: str | int | None = None


@dataclass(frozen=True)
class Table:
    """One table: columns, primary key, secondary indexes, and what a row is."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    pk: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    per_thread: bool = True
    """Rows belong to their ``thread_id``: deleting or copying a thread deletes or copies them."""

    def column(self, name: str) -> Column:
        """The spec of one column."""
        return next(c for c in self.columns if c.name == name)

    @property
    def identity(self) -> str | None:
        """The column numbered by the database (a single integer primary key), if any."""
        if len(self.pk) == 1 and self.column(self.pk[0]).type == "integer":
            return self.pk[0]
        return None


@dataclass(frozen=True)
class Migration:
    """A numbered schema change: the tables it creates, the columns it adds, the tables it renames."""

    version: int
    name: str
    tables: tuple[Table, ...] = field(default_factory=tuple)
    columns: tuple[tuple[str, Column], ...] = field(default_factory=tuple)
    """``(table name, column)``: added with ``ALTER TABLE ... ADD COLUMN`` (nullable, no default)."""
    renames: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """``(old name, new name)``: the table keeps its rows and columns; its indexes are named after the new name."""


def _key(*names: str) -> tuple[Column, ...]:
    return tuple(Column(n, "text", not_null=True, default="" if n == "checkpoint_ns" else None) for n in names)


CHECKPOINTS = Table(
    "checkpoints",
    "One row per LangGraph checkpoint: ids, metadata as JSON, channel versions; no channel values.",
    columns=(
        *_key("thread_id", "checkpoint_ns", "checkpoint_id"),
        Column("parent_checkpoint_id"),
        Column("created_at"),
        Column("source"),
        Column("step", "integer"),
        Column("run_id"),
        Column("type", "text", not_null=True),
        Column("checkpoint", "value"),
        Column("metadata", "json"),
    ),
    pk=("thread_id", "checkpoint_ns", "checkpoint_id"),
    indexes=(("run_id",),),
)

CHANNEL_VALUES = Table(
    "channel_values",
    "A channel's value at one version, stored once when it changes. kind 'value' is the whole "
    "value; kind 'append' holds only the items appended to the list at base_version; kind "
    "'empty' marks a channel without a value.",
    columns=(
        *_key("thread_id", "checkpoint_ns", "channel", "version"),
        Column("kind", "text", not_null=True),
        Column("base_version"),
        Column("length", "integer"),
        Column("type", "text", not_null=True),
        Column("value", "value"),
    ),
    pk=("thread_id", "checkpoint_ns", "channel", "version"),
)

CHECKPOINT_WRITES = Table(
    "checkpoint_writes",
    "What each task wrote on top of a checkpoint (LangGraph's pending writes).",
    columns=(
        *_key("thread_id", "checkpoint_ns", "checkpoint_id", "task_id"),
        Column("task_path", "text", not_null=True, default=""),
        Column("idx", "integer", not_null=True),
        Column("channel", "text", not_null=True),
        Column("type", "text", not_null=True),
        Column("value", "value"),
    ),
    pk=("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
)

RUNS = Table(
    "runs",
    "One row per thread: how the run was started (model, protocol, tools, limits; never an API "
    "key) and where it stands, kept current from its latest checkpoint.",
    columns=(
        Column("thread_id", "text", not_null=True),
        Column("task"),
        Column("status"),
        Column("paused", "integer", default=0),
        Column("answer"),
        Column("break_reason"),
        Column("break_message"),
        Column("steps", "integer"),
        Column("counters", "json"),
        Column("checkpoint_id"),
        Column("model"),
        Column("base_url"),
        Column("protocol"),
        Column("tools", "json"),
        Column("limits", "json"),
        Column("system_prompt"),
        Column("options", "json"),
        Column("created_at"),
        Column("updated_at"),
    ),
    pk=("thread_id",),
    indexes=(("status",), ("updated_at",)),
)

BREAKS = Table(
    "breaks",
    "One row per circuit break that paused a run: reason, message, counters at the break, and "
    "how the operator resolved it.",
    columns=(
        Column("id", "integer", not_null=True),
        *_key("thread_id", "checkpoint_ns", "checkpoint_id", "interrupt_id"),
        Column("reason"),
        Column("message"),
        Column("counters", "json"),
        Column("limits", "json"),
        Column("created_at"),
        Column("resolution", "json"),
        Column("resolved_at"),
    ),
    pk=("id",),
    indexes=(("thread_id",),),
    unique=(("thread_id", "checkpoint_ns", "checkpoint_id", "interrupt_id"),),
)

STEPS = Table(
    "steps",
    "One row per node transition (reinloop.observe.events.NodeEvent): where it happened, what it did, "
    "tokens, latency, errors, guard decisions and memory events, as JSON columns. Renamed "
    "node_events by migration 7 (a step is six of these rows).",
    columns=(
        Column("id", "integer", not_null=True),
        Column("thread_id"),
        Column("run", "integer"),
        Column("step", "integer"),
        Column("node", "text", not_null=True),
        Column("superstep", "integer"),
        Column("checkpoint_ns"),
        Column("checkpoint_id"),
        Column("task_id"),
        Column("started_at", "float"),
        Column("latency_ms", "float"),
        Column("summary"),
        Column("thought"),
        Column("actions", "json"),
        Column("answer"),
        Column("tokens_in", "integer"),
        Column("tokens_out", "integer"),
        Column("error"),
        Column("decision"),
        Column("reason"),
        Column("message"),
        Column("hints", "json"),
        Column("counters", "json"),
        Column("memory", "json"),
        Column("data", "json"),
    ),
    pk=("id",),
    indexes=(("thread_id", "run", "step"),),
)

TOOL_JOURNAL = Table(
    "tool_journal",
    "Side-effecting tool calls: the intent is written before the call, the result after, so a "
    "resumed run never runs a call twice (at most once across crashes).",
    columns=(
        Column("thread_id", "text", not_null=True),
        Column("run", "integer", not_null=True),
        Column("step", "integer", not_null=True),
        Column("position", "integer", not_null=True),
        Column("call_id", "text", not_null=True),
        Column("tool", "text", not_null=True),
        Column("args_hash", "text", not_null=True),
        Column("args", "json"),
        Column("started_at", "float", not_null=True),
        Column("finished_at", "float"),
        Column("observation"),
        Column("error", "integer"),
    ),
    pk=("thread_id", "run", "step", "position", "call_id", "tool", "args_hash"),
    indexes=(("thread_id", "started_at"),),
)

MEMORIES = Table(
    "memories",
    "Long-term memories: folded steps with their embedding, per thread or shared by a user key.",
    columns=(
        Column("id", "integer", not_null=True),
        Column("scope", "text", not_null=True),
        Column("thread_id"),
        Column("run", "integer"),
        Column("first_step", "integer"),
        Column("last_step", "integer"),
        Column("task"),
        Column("text", "text", not_null=True),
        Column("model", "text", not_null=True),
        Column("dim", "integer", not_null=True),
        Column("embedding", "blob", not_null=True),
        Column("created_at", "float"),
    ),
    pk=("id",),
    indexes=(("scope", "model"), ("scope", "thread_id", "run", "first_step", "last_step")),
)

TASKS = Table(
    "tasks",
    "The batch queue: one row per task of a batch (reinloop.batches). A worker claims a queued task, or one "
    "whose lease ran out, and keeps its lease fresh while it runs it; times are seconds since the epoch "
    "on the database's clock, so the workers' clocks never have to agree.",
    columns=(
        Column("thread_id", "text", not_null=True),
        Column("batch", "text", not_null=True),
        Column("line", "integer", not_null=True),
        Column("task", "text", not_null=True),
        Column("spec", "json"),
        Column("status", "text", not_null=True, default="queued"),
        Column("worker"),
        Column("attempts", "integer", not_null=True, default=0),
        Column("lease_until", "float"),
        Column("claimed_at", "float"),
        Column("finished_at", "float"),
        Column("steps", "integer"),
        Column("tokens", "integer"),
        Column("seconds", "float"),
        Column("answer"),
        Column("break_reason"),
        Column("error"),
        Column("created_at"),
    ),
    pk=("thread_id",),
    indexes=(("batch", "status", "line"),),
    per_thread=False,  # a queue entry, not the run's data: deleting a run leaves the batch's record
)

BLOBS = Table(
    "blobs",
    "Long strings of a thread (model replies, tool arguments, observations), stored once, keyed by the "
    "sha256 of their UTF-8 text: channel values and writes of type 'json-refs' and the tool journal "
    "point at them (reinloop.checkpoints.blobs).",
    columns=(
        Column("thread_id", "text", not_null=True),
        Column("hash", "text", not_null=True),
        Column("chars", "integer", not_null=True),
        Column("value", "value", not_null=True),
        Column("created_at"),
    ),
    pk=("thread_id", "hash"),
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "checkpoints, channel values and writes", (CHECKPOINTS, CHANNEL_VALUES, CHECKPOINT_WRITES)),
    Migration(2, "runs and breaks", (RUNS, BREAKS)),
    Migration(3, "step records, tool journal and memories", (STEPS, TOOL_JOURNAL, MEMORIES)),
    Migration(4, "the batch task queue", (TASKS,)),
    Migration(5, "long strings stored once", (BLOBS,), columns=(("tool_journal", Column("observation_hash")),)),
    Migration(6, "the run spec of each run", (), columns=(("runs", Column("spec", "json")),)),
    Migration(7, "steps renamed node_events: one row per node transition", renames=(("steps", "node_events"),)),
    Migration(8, "the process that runs each run: its host, pid and heartbeat", columns=(
        ("runs", Column("owner_host")), ("runs", Column("owner_pid", "integer")), ("runs", Column("heartbeat_at")),
    )),
)
"""Every schema change, in order. Append only."""

MIGRATIONS_TABLE = "migrations"
"""Where a database records the migrations it has applied (version, name, applied_at)."""


def thread_tables() -> list[str]:
    """Every table whose rows belong to a thread: what deleting or copying a thread touches."""
    return [t.name for t in LATEST.values() if t.per_thread and any(c.name == "thread_id" for c in t.columns)]


def latest_version() -> int:
    """The schema version this reinloop writes."""
    return max(m.version for m in MIGRATIONS)


def _latest() -> dict[str, Table]:
    """Every table in its latest shape (the columns later migrations added included), in migration order."""
    shapes: dict[str, Table] = {}
    for migration in MIGRATIONS:
        for t in migration.tables:
            shapes[t.name] = t
        for name, column in migration.columns:
            shapes[name] = replace(shapes[name], columns=(*shapes[name].columns, column))
        for old, new in migration.renames:
            shapes = {(new if k == old else k): (replace(t, name=new) if k == old else t) for k, t in shapes.items()}
    return shapes


LATEST = _latest()

NODE_EVENTS = LATEST["node_events"]
"""The ``node_events`` table in its latest shape: :data:`STEPS`, renamed."""


def table(name: str) -> Table:
    """The spec of one of reinloop's tables, in its latest shape."""
    return LATEST[name]


def tables() -> list[Table]:
    """Every table of the latest schema, in migration order."""
    return list(LATEST.values())


MIGRATIONS_SPEC = Table(
    MIGRATIONS_TABLE,
    "The migrations this database has applied.",
    columns=(Column("version", "integer"), Column("name"), Column("applied_at")),
    pk=("version",),
    per_thread=False,
)


def refuse_newer_schema(applied: set[int], location: str) -> None:
    """Refuse a database migrated by a newer reinloop (before anything is written to it)."""
    if applied and max(applied) > latest_version():
        raise StorageError(
            f"{location} has schema version {max(applied)}, newer than this reinloop knows "
            f"({latest_version()}); upgrade reinloop to use it"
        )


def missing_migrations(applied: set[int], location: str, *, read_only: bool) -> list[Migration]:
    """The migrations a database still needs; a read-only one that needs any is refused."""
    missing = [m for m in MIGRATIONS if m.version not in applied]
    if missing and read_only:
        raise StorageError(
            f"{location} is opened read-only but needs schema migrations "
            f"{', '.join(str(m.version) for m in missing)}; open it writable once (e.g. reinloop runs list)"
        )
    return missing
