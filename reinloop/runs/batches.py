"""Many tasks at once: ``reinloop batch TASKS.jsonl --concurrency N``, safe on several machines.

A tasks file has one JSON object per line::

    {"task": "What is 6*7?"}
    {"task": "北京天气？", "thread_id": "weather-1", "tools": "get_weather", "limits": {"max_steps": 4}}

(keys: ``task``; optional ``thread_id``, and any key of a
:class:`~reinloop.RunSpec`'s JSON form, which overrides the batch's spec for
that task: ``tools`` (names, a list or a comma-separated string), ``limits``,
``memory``, ``retry``, ``tool_settings`` (mappings of the fields to change),
``model``, ``protocol``, ``tool_detail``, ``max_output_tokens``, ``system_prompt`` ...).
:func:`batch` puts its tasks into
the run database's ``tasks`` table once (the batch is named after the file
and a hash of its content, so starting the same file again, or on another
machine, adds nothing), then runs ``concurrency`` tasks at a time, each in
its own thread (with its own connection on PostgreSQL; sharing one on SQLite),
until no task of the batch is left queued or running.

Every worker process is equal; the database decides who runs what
(:mod:`reinloop.checkpoints.queue`): a task is claimed by exactly one worker
(PostgreSQL: ``FOR UPDATE SKIP LOCKED``; SQLite: ``BEGIN IMMEDIATE``, one
machine), under a lease that a heartbeat thread renews (and a slot itself, at its
next step, when a starved process let the heartbeat fall behind). When a worker dies,
its leases run out and the other workers take its tasks over: a task that has
a checkpoint is *resumed* from it (only the step the dead worker was in runs
again; side-effecting tools are never repeated, thanks to the journal), one
that has none is started. A worker that finds nothing to claim while tasks
are still running elsewhere waits, so it can take over if their worker dies.
A worker that was only slow (stopped, or starved of CPU, past its lease) and
finds its task taken over stops running it at its next step: the thread is
the other worker's now, and two runs writing one thread would mix their states.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from ..tools.bounds import describe_exception
from ..checkpoints import Database, is_postgres_url
from ..errors import ConfigurationError, ReinloopError
from ..models.resolve import resolve_model
from ..tools.approval import waiting_calls
from .outcome import EXIT_BROKEN, EXIT_DONE, EXIT_ERROR, EXIT_WAITING, Outcome
from .api import Given, db_location, open_db, resume_with, run_with, thread_config, with_objects
from .spec import RunSpec, is_object_label, tool_names
from ..tools.catalog import BUILTINS
from ..tools.mcpclient import McpTool

logger = logging.getLogger(__name__)

LINE_KEYS = ("task", "thread_id")
"""The keys of a tasks file's line besides a :class:`~reinloop.RunSpec`'s JSON keys."""


def task_keys() -> tuple[str, ...]:
    """Every key a line of a tasks file may have: ``task``, ``thread_id`` and the run spec's fields."""
    return (*LINE_KEYS, *(f.name for f in dataclasses.fields(RunSpec)))
STATUSES = ("done", "broken", "error")
DEFAULT_LEASE = 60.0
"""Seconds a claimed task stays with its worker without a heartbeat."""


class LeaseLost(ReinloopError):
    """A task this worker was running was taken over by another worker: its lease ran out while this one was slow."""

    def __init__(self, thread_id: str, worker: str) -> None:
        super().__init__(f"task {thread_id} was taken over by another worker: the lease of {worker} ran out while it "
                         "was slow (stopped or starved of CPU); this worker stopped running it, the outcome is theirs")
        self.thread_id = thread_id
        self.worker = worker


class BatchInterrupted(KeyboardInterrupt):
    """A second Ctrl-C: the worker left ``running`` tasks mid-run (their leases let other workers take them over)."""

    def __init__(self, running: int) -> None:
        super().__init__(running)
        self.running = running


@dataclass(frozen=True)
class TaskOutcome:
    """How one task of a batch ended in this worker."""

    thread_id: str
    line: int
    task: str
    status: str
    """``done``, ``broken`` (a guard stopped it; it waits at its break), ``waiting`` (calls wait for approval:
    ``reinloop approve THREAD``) or ``error`` (it stopped on an error)."""
    answer: str | None = None
    break_reason: str | None = None
    error: str | None = None
    steps: int = 0
    tokens: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0
    """Dollars of the task's priced model calls (:mod:`reinloop.models.pricing`)."""
    unpriced_calls: int = 0
    """Model calls of the task whose cost is unknown."""
    attempt: int = 1
    """1 for the first claim; more when this worker took the task over from one that died."""
    resumed: bool = False
    """Continued from the checkpoint another worker left, instead of started."""

    def as_dict(self) -> dict[str, Any]:
        """The outcome as a JSON-able dict."""
        return asdict(self)


@dataclass(frozen=True)
class BatchReport:
    """What :func:`batch` did: this worker's outcomes, and where the whole batch stands."""

    batch: str
    worker: str
    outcomes: list[TaskOutcome]
    tasks: list[dict[str, Any]]
    """Every task row of the batch (all workers'), in file order."""
    seconds: float
    added: int = 0
    """Tasks this call put into the queue (0 when another worker, or an earlier call, had)."""

    @property
    def counts(self) -> dict[str, int]:
        """Tasks of the whole batch per status (done, broken, error; waiting, queued and running if any are)."""
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.tasks:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        return counts

    @property
    def exit_code(self) -> int:
        """0 when every task is done, 3 when some broke, 4 when some wait for approval (and none broke), 1 when
        some stopped on an error."""
        counts = self.counts
        if counts.get("error") or counts.get("queued") or counts.get("running"):
            return EXIT_ERROR
        return EXIT_BROKEN if counts.get("broken") else EXIT_WAITING if counts.get("waiting") else EXIT_DONE

    @property
    def waiting(self) -> list[dict[str, Any]]:
        """The batch's task rows waiting for approval (answer each with ``reinloop approve THREAD``)."""
        return [r for r in self.tasks if r["status"] == "waiting"]

    def summary(self) -> list[dict[str, Any]]:
        """One row per status of the whole batch: tasks, tokens, seconds, dollars (summed over tasks)."""
        rows = []
        for status, n in self.counts.items():
            mine = [r for r in self.tasks if r["status"] == status]
            rows.append({"status": status, "tasks": n, "tokens": sum(r["tokens"] or 0 for r in mine),
                         "seconds": round(sum(r["seconds"] or 0.0 for r in mine), 3),
                         "cost_usd": sum(r.get("cost_usd") or 0.0 for r in mine),
                         "unpriced_calls": sum(r.get("unpriced_calls") or 0 for r in mine)})
        return rows

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-able dict (task rows left out: they are in the database)."""
        return {"batch": self.batch, "worker": self.worker, "added": self.added, "seconds": round(self.seconds, 3),
                "counts": self.counts, "summary": self.summary(), "outcomes": [o.as_dict() for o in self.outcomes]}


# --- reading a tasks file ------------------------------------------------------------------------


def batch_name(path: Path, content: bytes) -> str:
    """The batch a file makes: its name and a hash of its content (the same on every machine)."""
    return f"{path.stem}-{hashlib.sha256(content).hexdigest()[:8]}"


def read_tasks(path: str | os.PathLike[str], *, tools: Sequence[BaseTool] = ()) -> tuple[str, list[dict[str, Any]]]:
    """The batch name and its tasks (``thread_id``, ``line``, ``task``, ``spec``); every line checked first.

    Raises :class:`~reinloop.errors.ConfigurationError` naming the line for
    bad JSON, a missing task, an unknown key, tool, limit, protocol or tool detail, or a
    thread id used twice.
    """
    file = Path(path)
    try:
        content = file.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the tasks file {str(file)!r}: {exc.strerror or exc}") from None
    name = batch_name(file, content)
    tasks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(content.decode("utf-8", errors="replace").splitlines(), start=1):
        if not text.strip():
            continue
        spec = parse_line(file, number, text, {t.name for t in tools})
        thread_id = str(spec.pop("thread_id", None) or f"{name}-{number}")
        if thread_id in seen:
            raise ConfigurationError(f"{file}:{number}: thread_id {thread_id!r} is also the thread of line "
                                     f"{seen[thread_id]}; give each task its own")
        seen[thread_id] = number
        tasks.append({"thread_id": thread_id, "line": number, "task": spec["task"], "spec": spec})
    if not tasks:
        raise ConfigurationError(f"{file} has no tasks; write one JSON object per line, "
                                 "e.g. {\"task\": \"What is 6*7?\"}")
    return name, tasks


def parse_line(file: Path, number: int, text: str, custom_tools: set[str]) -> dict[str, Any]:
    """One line of a tasks file as a checked spec."""
    where = f"{file}:{number}"
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{where}: not a JSON object ({exc.msg}); write one object per line, "
                                 "e.g. {\"task\": \"What is 6*7?\"}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("task"), str) or not spec["task"].strip():
        raise ConfigurationError(f"{where}: each line needs a \"task\" string, e.g. {{\"task\": \"What is 6*7?\"}}")
    valid = task_keys()
    unknown = sorted(set(spec) - set(valid))
    if unknown:
        raise ConfigurationError(f"{where}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(valid)}")
    try:
        names = tool_names(spec["tools"]) if spec.get("tools") is not None else None
        RunSpec().replace(**overrides(spec))  # every value checked before any task runs
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    if names is not None:
        missing = sorted(set(names) - set(BUILTINS) - custom_tools)
        if missing:
            raise ConfigurationError(f"{where}: unknown tool(s) {', '.join(missing)}; available: "
                                     f"{', '.join(sorted(set(BUILTINS) | custom_tools))}")
    return spec


def overrides(line: Mapping[str, Any]) -> dict[str, Any]:
    """A line's changes to the batch's spec: its run spec keys (``None`` values left out)."""
    return {k: v for k, v in line.items() if k not in LINE_KEYS and v is not None}


# --- running ---------------------------------------------------------------------------------------


@dataclass
class Settings:
    """How this worker runs every task: the batch's spec and objects (a task's line changes the spec), the lease."""

    spec: RunSpec
    given: Given
    """The chat model (built once) and any tool objects a task may name."""
    lease: float
    poll: float
    _models: dict[tuple[Any, ...], BaseChatModel] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def spec_for(self, line: Mapping[str, Any]) -> RunSpec:
        """The spec of one task: the batch's, with its line's changes."""
        return self.spec.replace(**overrides(line))

    def given_for(self, spec: RunSpec) -> Given:
        """The objects of one task: the tool objects the batch was given, and its model.

        Built-in tools are not among them: each run builds its own from its own spec's tool settings
        (:func:`~reinloop.runs.api.tool_list`), so one task's ``read_file`` never works in another task's
        sandbox, and a tool's per-run state (``write_file``'s quota) is never shared; tasks share the
        run database only.
        """
        with self._lock:
            model = self._model(spec)
        return Given(model, self.given.tools, self.given.protocol, self.given.fallbacks)

    def _model(self, spec: RunSpec) -> BaseChatModel:
        """The batch's chat model, or one built for a task whose line names another model or endpoint."""
        key = (spec.model, spec.base_url, spec.retry.timeout)
        if key == (self.spec.model, self.spec.base_url, self.spec.retry.timeout) and self.given.model is not None:
            return self.given.model
        if key not in self._models:
            self._models[key] = resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)
        return self._models[key]


def left_behind(saver: Database, claimed: Mapping[str, Any]) -> dict[str, Any]:
    """The state a dead worker left for this task: its thread's latest, if it holds this task ({} otherwise)."""
    if claimed["attempts"] < 2:
        return {}
    latest = saver.checkpointer.get_tuple(thread_config(claimed["thread_id"]))
    values = dict(latest.checkpoint["channel_values"]) if latest is not None else {}
    return values if values.get("task") == claimed["task"] else {}


def advance(saver: Database, claimed: Mapping[str, Any], settings: Settings, state: Mapping[str, Any],
            on_event: Callable[[Any], None] | None = None) -> Outcome:
    """Start the task, resume the run a dead worker left (``state``), or read how that run ended."""
    thread_id = claimed["thread_id"]
    if state.get("status") in ("done", "broken") or state.get("decision") == "pause" or waiting_calls(state):
        return Outcome.from_state(thread_id, dict(state))  # it ended before its worker could record that
    spec = settings.spec_for(claimed["spec"])
    given = settings.given_for(spec)
    if state:  # a model string stays the stored one (built again); a model object is given again
        model = {"model": given.model} if is_object_label(spec.model) else {}
        # the task's tools and settings: the stored spec may be missing (the dead worker died before storing it)
        by_name = {t.name: t for t in given.tools if not isinstance(t, McpTool)}
        tools = [by_name.get(n, n) for n in spec.tools] + [t for t in given.tools if isinstance(t, McpTool)]
        return resume_with(saver, thread_id, tools=tools, tool_settings=spec.tool_settings, on_event=on_event, **model)
    return run_with(saver, claimed["task"], spec, given, thread_id=thread_id, on_event=on_event)


def run_task(saver: Database, claimed: Mapping[str, Any], settings: Settings,
             on_event: Callable[[Any], None] | None = None) -> TaskOutcome:
    """Run a claimed task to its next stop: start it, or resume the checkpoint a dead worker left.

    ``on_event`` sees every step event; it raises :class:`LeaseLost` to stop a task this worker lost.
    """
    began = time.monotonic()
    base = {"thread_id": claimed["thread_id"], "line": claimed["line"], "task": claimed["task"],
            "attempt": claimed["attempts"]}
    state: Mapping[str, Any] = {}
    try:
        state = left_behind(saver, claimed)
        outcome = advance(saver, claimed, settings, state, on_event)
    except ReinloopError as exc:
        return TaskOutcome(**base, status="error", error=str(exc), seconds=time.monotonic() - began, resumed=bool(state))
    except Exception as exc:  # noqa: BLE001 - one task's failure is its outcome; the worker goes on with the others
        logger.exception("task %s failed", claimed["thread_id"])
        return TaskOutcome(**base, status="error", error=describe_exception(exc), seconds=time.monotonic() - began,
                           resumed=bool(state))
    if outcome.status not in ("done", "broken", "waiting"):  # only a thread written by two workers at once ends mid-run
        return TaskOutcome(**base, status="error", seconds=time.monotonic() - began, resumed=bool(state),
                           error=f"the run ended without an outcome (status {outcome.status!r}); resume it with "
                                 f"`reinloop resume {claimed['thread_id']}`")
    c = outcome.counters
    return TaskOutcome(
        **base, status=outcome.status, answer=outcome.answer,
        break_reason=outcome.break_reason, steps=int(c.get("steps", 0)),
        tokens=int(c.get("prompt_tokens", 0)) + int(c.get("completion_tokens", 0)),
        seconds=time.monotonic() - began, resumed=bool(state),
        cost_usd=outcome.cost_usd, unpriced_calls=outcome.unpriced_calls,
    )


def with_costs(rows: list[dict[str, Any]], counters: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Task rows with the cost of their runs, from the runs' counters (whichever worker ran them)."""
    return [{**r, "cost_usd": float((counters.get(r["thread_id"]) or {}).get("cost_usd") or 0.0),
             "unpriced_calls": int((counters.get(r["thread_id"]) or {}).get("unpriced_calls") or 0)} for r in rows]


class Worker:
    """One process's share of a batch: ``concurrency`` slots claiming tasks, and a heartbeat."""

    def __init__(self, db: str | Path | None, name: str, settings: Settings,
                 on_outcome: Callable[[TaskOutcome, dict[str, int]], None] | None) -> None:
        self.db, self.name, self.settings, self.on_outcome = db, name, settings, on_outcome
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.held: set[str] = set()
        self.renewed: dict[str, float] = {}  # task -> monotonic time before its lease was last set (claim or renew)
        self.lost: set[str] = set()  # tasks still running here that another worker took over
        self.outcomes: list[TaskOutcome] = []
        self.lock = threading.Lock()
        self.reporting = threading.Lock()  # counts read and reported in one order: the last report is the latest
        self.finished = threading.Condition(self.lock)  # an idle slot wakes when another slot ends a task
        self.stop = threading.Event()  # claim no more tasks
        self.done = threading.Event()  # no task of this worker runs any more: the heartbeat ends
        # SQLite: the slots share one connection (its lock queues them; separate connections would contend
        # for the file's write lock with sleeps). PostgreSQL: a connection per slot, so they run side by side.
        self.shared = None if is_postgres_url(db_location(db)) else open_db(db, write=True)

    def connection(self) -> AbstractContextManager[Database]:
        """The run database a slot or the heartbeat uses."""
        return nullcontext(self.shared) if self.shared is not None else open_db(self.db, write=True)

    def close(self) -> None:
        """Close the shared connection, if any."""
        if self.shared is not None:
            self.shared.close()

    def slot(self) -> None:
        """Claim, run and record tasks until none of the batch is queued or running."""
        with self.connection() as saver:
            while not self.stop.is_set():
                before = time.monotonic()
                claimed = saver.queue.claim(self.name, self.id, self.settings.lease)
                if claimed is None:
                    counts = saver.queue.counts(self.name)
                    if not counts.get("queued") and not counts.get("running"):
                        return
                    with self.finished:  # running elsewhere: take it over if its worker dies
                        if not self.stop.is_set():
                            self.finished.wait(self.settings.poll)
                    continue
                thread_id = claimed["thread_id"]
                with self.lock:
                    self.held.add(thread_id)
                    self.renewed[thread_id] = before
                try:
                    self.record(saver, run_task(saver, claimed, self.settings,
                                                lambda _event, t=thread_id: self.keep_lease(saver, t)))
                finally:
                    with self.finished:
                        self.held.discard(thread_id)
                        self.renewed.pop(thread_id, None)
                        self.lost.discard(thread_id)
                        self.finished.notify_all()

    def keep_lease(self, saver: Database, thread_id: str) -> None:
        """Before a task's next step: stop it if it was taken over; renew its lease here if the heartbeat is late.

        The heartbeat renews every lease/3 seconds; a lease not renewed for half of it means a starved
        process, in which this slot (which is making progress) renews its own lease, and learns whether
        another worker took the task over meanwhile (then it raises :class:`LeaseLost`).
        """
        with self.lock:
            lost = thread_id in self.lost
            overdue = time.monotonic() - self.renewed.get(thread_id, 0.0) > self.settings.lease / 2
        if not lost and overdue:
            lost = thread_id not in self.renew(saver, [thread_id])
        if lost:
            raise LeaseLost(thread_id, self.id)

    def renew(self, saver: Database, held: list[str]) -> set[str]:
        """Renew the leases of ``held``; the ones kept. Those taken over are marked lost for their slots."""
        before = time.monotonic()
        kept = saver.queue.renew(self.id, self.settings.lease, held)
        with self.lock:
            for thread_id in held:
                if thread_id not in self.held:
                    continue  # finished meanwhile: not renewed because it is done, not because it was lost
                if thread_id in kept:
                    self.renewed[thread_id] = max(self.renewed.get(thread_id, 0.0), before)
                else:
                    self.lost.add(thread_id)
        return kept

    def record(self, saver: Database, outcome: TaskOutcome) -> None:
        """Write the task's end to the queue, unless another worker took it over meanwhile."""
        fields = {"status": outcome.status, "answer": outcome.answer, "break_reason": outcome.break_reason,
                  "error": outcome.error, "steps": outcome.steps, "tokens": outcome.tokens, "seconds": outcome.seconds}
        if not saver.queue.finish(outcome.thread_id, self.id, fields):
            logger.warning("task %s was taken over by another worker (the lease of %s ran out while it was slow); "
                           "its outcome is theirs", outcome.thread_id, self.id)
            return
        with self.lock:
            self.outcomes.append(outcome)
        if self.on_outcome is not None:
            with self.reporting:  # read after every finish committed before it, reported in the same order
                self.on_outcome(outcome, saver.queue.counts(self.name))

    def run(self, concurrency: int) -> None:
        """Run ``concurrency`` slots until the batch is finished.

        Ctrl-C stops claiming and waits for the running tasks; a second Ctrl-C leaves them (the slots
        are daemon threads) to the other workers, which take them over when their leases run out.
        """
        errors: list[BaseException] = []
        left = [concurrency]
        ended = threading.Event()

        def slot() -> None:
            try:
                self.slot()
            except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
                errors.append(exc)
                self.stop.set()
            finally:
                with self.lock:
                    left[0] -= 1
                    if not left[0]:
                        ended.set()

        for i in range(concurrency):
            threading.Thread(target=slot, name=f"reinloop-batch-{i}", daemon=True).start()
        # wait on an event, not Thread.join: a join cut short by Ctrl-C can mark a live thread as ended (Python 3.11)
        try:
            while not ended.wait(0.5):
                pass
        except KeyboardInterrupt:
            self.stop.set()
            with self.finished:
                self.finished.notify_all()
                running = len(self.held)
            logger.warning("interrupted: claiming no more tasks; waiting for the %d running one(s) to finish "
                           "(Ctrl-C again leaves them to other workers once their lease runs out)", running)
            try:
                while not ended.wait(0.5):
                    pass
            except KeyboardInterrupt:
                with self.lock:
                    raise BatchInterrupted(len(self.held)) from None
            raise
        if errors:
            raise errors[0]

    def heartbeat(self) -> None:
        """Renew the leases of the tasks this worker runs, three times per lease.

        A task found taken over is stopped by its slot at its next step (:meth:`keep_lease`), which says so.
        """
        with self.connection() as saver:
            while not self.done.wait(self.settings.lease / 3):
                with self.lock:
                    held = list(self.held)
                try:
                    self.renew(saver, held)
                except ReinloopError as exc:  # the next beat may get through; the runs go on meanwhile
                    logger.warning("could not renew the leases of %s: %s", self.id, exc)


def batch(
    tasks: str | os.PathLike[str],
    spec: RunSpec | None = None,
    *,
    concurrency: int = 4,
    db: str | Path | None = None,
    lease: float = DEFAULT_LEASE,
    poll: float | None = None,
    on_outcome: Callable[[TaskOutcome, dict[str, int]], None] | None = None,
    on_start: Callable[[str, int, int, str, int], None] | None = None,
    **changes: Any,
) -> BatchReport:
    """Run the tasks of a JSONL file, ``concurrency`` at a time, with any number of workers on one database.

    Every task runs as ``spec`` says (with ``changes``, see :meth:`RunSpec.replace`;
    ``model=`` and ``tools=`` may be objects), changed by its own line's spec keys.
    ``lease`` is how long a dead worker's task waits before another worker
    takes it over; ``on_start(batch, tasks, added, worker, concurrency)`` is
    called once the tasks are queued, ``on_outcome(outcome, counts)`` for each
    task this worker finishes, with the whole batch's counts. Returns when no
    task of the batch is left queued or running.
    """
    if concurrency < 1:
        raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
    if lease <= 0:
        raise ConfigurationError(f"lease must be a positive number of seconds, got {lease}")
    spec, given = with_objects(spec, changes)
    spec.tool_settings.check_run_database(db_location(db))
    spec = spec.replace(tool_settings=spec.tool_settings.resolved())
    name, specs = read_tasks(tasks, tools=given.tools)
    chat_model = given.model or resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)
    settings = Settings(spec, Given(chat_model, given.tools, given.protocol, given.fallbacks), lease,
                        poll if poll is not None else min(1.0, lease / 10))
    began = time.monotonic()
    with open_db(db, write=True, create=True) as saver:
        added = saver.queue.enqueue(name, specs)
    worker = Worker(db, name, settings, on_outcome)
    if on_start is not None:
        on_start(name, len(specs), added, worker.id, concurrency)
    beat = threading.Thread(target=worker.heartbeat, name="reinloop-heartbeat", daemon=True)
    beat.start()
    try:
        worker.run(concurrency)
    finally:
        worker.stop.set()
        worker.done.set()
        beat.join(timeout=5)
        worker.close()
    with open_db(db) as saver:
        rows = with_costs(saver.queue.tasks(name), {r.thread_id: r.counters or {} for r in saver.runs.list()})
    return BatchReport(name, worker.id, worker.outcomes, rows, time.monotonic() - began, added)
