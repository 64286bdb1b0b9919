"""The run database: where it is, how to open it, and the list of its runs.

Apart from :mod:`reinloop.runs.api` so that ``reinloop runs list`` loads no model
or graph code (:mod:`reinloop.runs.api` re-exports every name here).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AlreadyAnsweredError, ConfigurationError

if TYPE_CHECKING:
    from ..checkpoints import Database, RunRecord

DEFAULT_DB = "reinloop.db"
"""The run database when neither ``db`` nor ``$REINLOOP_DB`` is given (in the current directory)."""
DB_VARIABLE = "REINLOOP_DB"
TIMEOUT_VARIABLE = "REINLOOP_DB_TIMEOUT"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"


def db_location(db: str | Path | None = None) -> str:
    """The run database to use: ``db``, else ``$REINLOOP_DB``, else ``./reinloop.db`` (a path or a URL)."""
    return str(db or os.environ.get(DB_VARIABLE) or DEFAULT_DB)


def db_timeout() -> float:
    """Seconds to wait for another process's write lock: ``$REINLOOP_DB_TIMEOUT``, else 30."""
    from ..checkpoints import DEFAULT_TIMEOUT

    text = os.environ.get(TIMEOUT_VARIABLE)
    try:
        return float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise ConfigurationError(f"{TIMEOUT_VARIABLE} must be a number of seconds, got {text!r}") from None


def open_db(db: str | Path | None = None, *, write: bool = False, create: bool = False) -> Database:
    """Open the run database (a SQLite file or a ``postgresql://`` URL); for reading only, a read-only file is fine."""
    from ..checkpoints import is_postgres_url, open_database  # loaded when a database is opened
    from ..checkpoints.sqlitedb import is_read_only

    location = db_location(db)
    if is_postgres_url(location):
        return open_database(location, create=create, timeout=db_timeout())
    path = Path(location)
    read_only = not write and path.exists() and is_read_only(path)
    return open_database(path, create=create, read_only=read_only, timeout=db_timeout())


def thread_config(thread_id: str) -> dict[str, Any]:
    """The LangGraph config of a thread's root namespace."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


STATUSES = ("running", "waiting", "paused", "interrupted", "abandoned", "done", "broken", "damaged")
"""What ``runs list`` says a run is, and what ``--status`` takes: the same names.

``running``: its process is alive; ``waiting``: calls wait for an operator's approval (``reinloop approve``);
``paused``: a guard broke it and it waits at the break for ``reinloop resume``; ``interrupted``: Ctrl-C or
SIGTERM stopped it, ``abandoned``: its process died mid-run (killed, crashed, its machine lost), and
``reinloop resume`` goes on with either; ``broken``: a guard broke it for good. ``--status broken`` also
lists the paused runs (each was broken by a guard), ``--status paused`` only those. ``damaged``: its row or its
latest state was changed outside reinloop and cannot be read (``RunRecord.damage`` says what).
"""
RESUMABLE = ("interrupted", "abandoned")
"""The statuses of a run whose process stopped mid-run: ``reinloop resume THREAD`` continues it."""
HEARTBEAT_SECONDS = 10.0
"""How often the process that runs a run says so (``runs.heartbeat_at``)."""
STALE_SECONDS = 60.0
"""A run whose heartbeat is older than this is abandoned (on another host, where its pid cannot be checked)."""


def list_runs(db: str | Path | None = None, *, status: str | None = None) -> list[RunRecord]:
    """The stored runs, most recently updated first, each with its :data:`STATUSES` name; ``status`` keeps those.

    A SQLite database that is up to date is read with ``sqlite3`` alone, so ``reinloop runs list`` starts without
    LangGraph, LangChain or sqlite-utils; the saver is opened only to tell a run that waits for approval from one
    that runs (its calls are in its latest state), or to migrate an older database.
    """
    import dataclasses

    from ..checkpoints.postgresdb import is_postgres_url
    from ..checkpoints.records import RunStore
    from ..checkpoints.sqlitedb import plain_reader

    if status is not None and status not in STATUSES:
        raise ConfigurationError(f"unknown run status {status!r}; choose one of: {', '.join(STATUSES)}")
    stored = None
    location = db_location(db)
    if not is_postgres_url(location) and location != ":memory:":
        with plain_reader(location, timeout=db_timeout()) as reader:
            stored = None if reader is None else RunStore(reader).list()  # type: ignore[arg-type]
    if stored is None or any(stored_status(r) == "running" for r in stored):
        return filtered(running_or_waiting(db, stored), status)
    return filtered([dataclasses.replace(r, status=stored_status(r)) for r in stored], status)


def stored_status(record: RunRecord) -> str:
    """A run's :data:`STATUSES` name as its row says it (a run waiting for approval is stored as running)."""
    return "paused" if record.paused else record.status or "running"


def running_or_waiting(db: str | Path | None, stored: list[RunRecord] | None) -> list[RunRecord]:
    """The runs with their :data:`STATUSES` names, read through the saver: a run waiting for approval is stored as
    running, and only its latest state tells."""
    import dataclasses

    from ..tools.approval import waiting_calls
    from ..checkpoints.records import damaged_record
    from ..errors import StoredDataError

    with open_db(db) as saver:
        records = []
        for record in saver.runs.list() if stored is None else stored:
            shown = stored_status(record)
            if shown == "running":
                try:
                    latest = saver.checkpointer.get_tuple(thread_config(record.thread_id))
                except StoredDataError as exc:  # one damaged run is marked, the others still listed
                    records.append(damaged_record(record.thread_id, exc))
                    continue
                shown = "waiting" if latest and waiting_calls(dict(latest.checkpoint["channel_values"])) else shown
            if shown == "running" and process_gone(record):
                shown = "abandoned"
            records.append(dataclasses.replace(record, status=shown))
    return records


def filtered(records: list[RunRecord], status: str | None) -> list[RunRecord]:
    """``records`` with the :data:`STATUSES` name ``status`` (``broken`` includes the paused ones)."""
    if status is None:
        return records
    return [r for r in records if r.status == status or (status == "broken" and r.status == "paused")]


def process_gone(record: RunRecord) -> bool:
    """True when the process that ran ``record`` is gone: on this host its pid is dead, anywhere its heartbeat stopped.

    A run stored before schema 8, or by a process that records no owner, is never said to be gone.
    """
    from datetime import datetime, timezone

    if record.owner_pid is None:
        return False
    if record.owner_host == socket.gethostname() and not pid_alive(record.owner_pid):
        return True
    try:
        beat = datetime.fromisoformat(record.heartbeat_at or "")
    except ValueError:
        return True
    return (datetime.now(timezone.utc) - beat).total_seconds() > STALE_SECONDS


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` runs on this host (a zombie, dead but not yet reaped, is not alive)."""
    if pid <= 0:  # 0 and below name process groups, never one process
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process
        pass
    except (OSError, OverflowError):  # no such process; a pid no process can have
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def resume_command(thread_id: str, db: str | Path | None = None) -> str:
    """The command that continues a stopped run, ``--db`` included when one was given."""
    import shlex

    return f"reinloop resume {shlex.quote(thread_id)}" + (f" --db {shlex.quote(str(db))}" if db else "")


def process_mark() -> dict[str, Any]:
    """Who claims an answer: this process's id and host."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def gone(by: Mapping[str, Any]) -> bool:
    """Is the process that made a claim gone (on this host, its pid no longer runs)?"""
    pid = by.get("pid")
    return by.get("host") == socket.gethostname() and type(pid) is int and not pid_alive(pid)


@contextmanager
def answer_claim(saver: Any, thread_id: str, decisions: Mapping[str, Any]) -> Iterator[None]:
    """Claim the answer to the calls run ``thread_id`` waits for, then let the block resume it.

    The claim is one insert keyed by the waiting checkpoint: a second process answering the same checkpoint
    gets :class:`~reinloop.errors.AlreadyAnsweredError` and runs nothing; a claim whose process is gone (killed
    before its answer was stored) is taken over. If the block fails before the run moved on, the claim is
    dropped, so the calls can be answered again.
    """
    from ..tools.approval import waiting_calls

    latest = saver.checkpointer.get_tuple(thread_config(thread_id))
    values = dict(latest.checkpoint["channel_values"]) if latest is not None else {}
    waiting = waiting_calls(values)
    unknown = sorted(set(decisions) - {c["id"] for c in waiting})
    if unknown:  # the run moved on since the caller read it (another answer came first)
        raise ConfigurationError(f"no call {', '.join(map(repr, unknown))} waits for approval; waiting: "
                                 f"{', '.join(c['id'] for c in waiting) or '(none)'} (a decision names one waiting "
                                 "call by its id)")
    step, run, answered = waiting[0]["step"], values.get("run", 0), latest.checkpoint["id"] if latest else ""
    by = process_mark()
    first = saver.journal.decide(thread_id, run, step, answered, decisions, by)
    if first is not None:
        earlier = json.loads(first.observation or "{}")
        if not (gone(earlier) and saver.journal.take_over(first, by)):
            raise AlreadyAnsweredError(thread_id, step, earlier)
    try:
        yield
    except BaseException:
        head = saver.checkpointer.get_tuple(thread_config(thread_id))
        if head is not None and head.checkpoint["id"] == answered:  # nothing was stored: the calls still wait
            saver.journal.release(thread_id, run, step, answered, by)
        raise
