"""Runs kept in a run database: start, resume, list, show, prune and delete them.

Each public function here is what one CLI command does, and is usable from
Python as it is::

    reinloop run TASK          run(task, db=...)
    reinloop resume THREAD     resume(thread_id, extra_steps=..., hint=..., abort=...)
    reinloop runs list         list_runs(status=...)
    reinloop runs show THREAD  show_run(thread_id)
    reinloop runs prune        prune_runs(keep_last=..., older_than_days=...)
    reinloop runs delete       delete_run(thread_id)

The database is ``db`` if given, else ``$REINLOOP_DB``, else ``./reinloop.db``:
a SQLite file path, or a ``postgresql://`` URL (the same tables and behaviour
on PostgreSQL, for many workers on many machines; see :mod:`reinloop.batch`).
``run`` stores the run's settings (model string, base URL, protocol, tool
names, limits, system prompt; never an API key, and the base URL without its
credentials) beside its checkpoints, so ``resume`` can rebuild the same graph
in a new process; anything passed to ``resume`` overrides what was stored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Command

from .api import EventHandler, new_thread_id, stream_run
from .checkpoints import (
    DEFAULT_TIMEOUT,
    BreakRecord,
    ReinloopSaver,
    RunRecord,
    SqliteCheckpointer,
    is_postgres_url,
    open_saver,
)
from .checkpoints.base import break_interrupts
from .checkpoints.sqlitedb import is_read_only
from .errors import ConfigurationError, NotResumableError, ReinloopError, RunError, ThreadNotFoundError
from .graph import ReinloopGraph, build_graph
from .limits import Limits
from .models import DEFAULT_MAX_OUTPUT_TOKENS, check_output_cap, resolve_model
from .outcome import Outcome
from .protocols import OutputProtocol
from .redact import is_redacted, redact_url
from .memory.config import Memory
from .memory.embeddings import HashEmbeddings
from .retry import RetryPolicy
from .runlog import RunLog
from .tools.catalog import BUILTINS, DEFAULT_TOOLS, ToolSettings, builtins
from .tools.detail import ToolDetail, check_detail
from .tools.docs import Progress
from .tools.files import charge_journaled_writes

DEFAULT_DB = "reinloop.db"
"""The run database when neither ``db`` nor ``$REINLOOP_DB`` is given (in the current directory)."""
DB_VARIABLE = "REINLOOP_DB"
TIMEOUT_VARIABLE = "REINLOOP_DB_TIMEOUT"
BASE_URL_VARIABLE = "OPENAI_BASE_URL"


def db_location(db: str | Path | None = None) -> str:
    """The run database to use: ``db``, else ``$REINLOOP_DB``, else ``./reinloop.db`` (a path or a URL)."""
    return str(db or os.environ.get(DB_VARIABLE) or DEFAULT_DB)


def db_path(db: str | Path | None = None) -> Path:
    """The SQLite run database to use: ``db``, else ``$REINLOOP_DB``, else ``./reinloop.db``."""
    return Path(db_location(db))


def db_timeout() -> float:
    """Seconds to wait for another process's write lock: ``$REINLOOP_DB_TIMEOUT``, else 30."""
    text = os.environ.get(TIMEOUT_VARIABLE)
    try:
        return float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        raise ConfigurationError(f"{TIMEOUT_VARIABLE} must be a number of seconds, got {text!r}") from None


def open_db(db: str | Path | None = None, *, write: bool = False, create: bool = False) -> ReinloopSaver:
    """Open the run database (a SQLite file or a ``postgresql://`` URL); for reading only, a read-only file is fine."""
    location = db_location(db)
    if is_postgres_url(location):
        return open_saver(location, create=create, timeout=db_timeout())
    path = Path(location)
    read_only = not write and path.exists() and is_read_only(path)
    return SqliteCheckpointer.open(path, create=create, read_only=read_only, timeout=db_timeout())


def thread_config(thread_id: str) -> dict[str, Any]:
    """The LangGraph config of a thread's root namespace."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _tool_list(
    tools: Sequence[BaseTool | str] | str | None, settings: ToolSettings | None = None, progress: Progress | None = None
) -> list[BaseTool]:
    """Tools as given, or built-in tools by name (a comma-separated string or a list of names)."""
    where = {**(settings or ToolSettings()).as_dict(), "progress": progress}
    if tools is None or isinstance(tools, str):
        return builtins(tools or list(DEFAULT_TOOLS), **where)
    return [builtins([t], **where)[0] if isinstance(t, str) else t for t in tools]


def _graph(
    saver: ReinloopSaver, model: BaseChatModel, tools: list[BaseTool], *, limits: Limits,
    protocol: Any, system_prompt: str | None, retry: RetryPolicy, memory: Memory, tool_detail: ToolDetail = "full",
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
) -> ReinloopGraph:
    """A run's graph on the run database: checkpoints, tool journal, step records and memories in one database."""
    if memory.recall and memory.store is None:
        memory = memory.replace(store=saver)
    return build_graph(
        model, tools, limits=limits, protocol=protocol, system_prompt=system_prompt, checkpointer=saver,
        retry=retry, memory=memory, journal=saver, sinks=[RunLog(saver)], tool_detail=tool_detail,
        max_output_tokens=max_output_tokens,
    )


def memory_from_settings(stored: Mapping[str, Any] | None) -> Memory:
    """A :class:`Memory` from its stored settings (objects stored by type name come back as defaults)."""
    if not stored:
        return Memory()
    plain = {k: v for k, v in stored.items() if k not in ("embeddings", "summarizer", "store")}
    embeddings = HashEmbeddings() if stored.get("embeddings") == "HashEmbeddings" else None
    store = stored.get("store") if isinstance(stored.get("store"), str) and stored.get("store") != "MemoryStore" else None
    summarizer = stored.get("summarizer") if isinstance(stored.get("summarizer"), str) and ":" in str(stored.get("summarizer")) else None
    return Memory(**plain, embeddings=embeddings, store=store, summarizer=summarizer)


def _model_name(model: str | BaseChatModel) -> str:
    return model if isinstance(model, str) else f"<{type(model).__name__} object>"


def stream_stored(graph: ReinloopGraph, payload: Any, thread_id: str, on_event: EventHandler | None) -> Outcome:
    """Run a stored run to its next stop; a failure says that its progress is saved and how to resume."""
    try:
        return stream_run(graph, payload, thread_id, on_event)
    except ReinloopError as exc:
        if not isinstance(exc, RunError):  # bad configuration or storage: the message says what to fix
            raise
        reason = str(exc).split(". The run is saved", 1)[0]
    except Exception as exc:  # a bug in a tool wrapper, a provider error we do not know ...
        reason = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or ['(no message)'])[0]}"
    raise RunError(
        f"run {thread_id} stopped: {reason}; its progress is saved: resume it with `reinloop resume {thread_id}`"
    )


def run(
    task: str,
    *,
    db: str | Path | None = None,
    model: str | BaseChatModel = "openai:gpt-4o-mini",
    tools: Sequence[BaseTool] | str | None = None,
    protocol: str | OutputProtocol = "tool_calling",
    limits: Limits | None = None,
    thread_id: str | None = None,
    base_url: str | None = None,
    system_prompt: str | None = None,
    tool_settings: ToolSettings | None = None,
    retry: RetryPolicy | None = None,
    memory: Memory | None = None,
    on_event: EventHandler | None = None,
    progress: Progress | None = None,
    tool_detail: ToolDetail = "full",
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
) -> Outcome:
    """Run one task with its checkpoints and settings stored in the run database.

    The same file holds the step records (``steps``), the side-effect journal
    (``tool_journal``) and, with recall on, the memories. A break pauses the
    run (``Outcome.paused``); :func:`resume` continues it.
    """
    check_detail(tool_detail)
    check_output_cap(max_output_tokens)
    (tool_settings or ToolSettings()).check_run_database(db_location(db))  # before the run database gets reinloop's tables
    settings = (tool_settings or ToolSettings()).resolved()
    tool_list = _tool_list(tools, settings, progress)
    retry = retry or RetryPolicy()
    # a model that cannot be built fails before any file is made
    chat_model = resolve_model(model, base_url=base_url, timeout=retry.timeout)
    with open_db(db, write=True, create=True) as saver:
        return run_with(
            saver, task, model=model, chat_model=chat_model, tools=tool_list, protocol=protocol, limits=limits,
            thread_id=thread_id, base_url=base_url, system_prompt=system_prompt, tool_settings=settings, retry=retry,
            memory=memory, on_event=on_event, tool_detail=tool_detail, max_output_tokens=max_output_tokens,
        )


def run_with(
    saver: ReinloopSaver,
    task: str,
    *,
    model: str | BaseChatModel,
    chat_model: BaseChatModel,
    tools: list[BaseTool],
    protocol: str | OutputProtocol = "tool_calling",
    limits: Limits | None = None,
    thread_id: str | None = None,
    base_url: str | None = None,
    system_prompt: str | None = None,
    tool_settings: ToolSettings | None = None,
    retry: RetryPolicy | None = None,
    memory: Memory | None = None,
    on_event: EventHandler | None = None,
    tool_detail: ToolDetail = "full",
    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
) -> Outcome:
    """:func:`run` on an open run database, with the model already built (``model`` is what gets stored)."""
    retry = retry or RetryPolicy()
    memory = memory or Memory()
    limits = limits or Limits()
    thread_id = thread_id or new_thread_id()
    graph = _graph(saver, chat_model, tools, limits=limits, protocol=protocol, system_prompt=system_prompt,
                   retry=retry, memory=memory, tool_detail=tool_detail, max_output_tokens=max_output_tokens)
    saver.record_settings(
        thread_id,
        {
            "model": _model_name(model),
            "base_url": base_url,
            "protocol": protocol if isinstance(protocol, str) else protocol.name,
            "tools": [t.name for t in tools],
            "limits": limits.as_dict(),
            "system_prompt": system_prompt,
            "options": {"tool_settings": (tool_settings or ToolSettings()).as_dict(), "retry": asdict(retry),
                        "memory": memory.as_dict(), "tool_detail": tool_detail,
                        "max_output_tokens": max_output_tokens},
        },
    )
    return stream_stored(graph, {"task": task}, thread_id, on_event)


def resume(
    thread_id: str,
    *,
    db: str | Path | None = None,
    extra_steps: int = 0,
    extra_seconds: float = 0.0,
    extra_tokens: int = 0,
    extra_cost: float = 0.0,
    hint: str | None = None,
    abort: bool = False,
    model: str | BaseChatModel | None = None,
    base_url: str | None = None,
    protocol: str | OutputProtocol | None = None,
    tools: Sequence[BaseTool] | str | None = None,
    limits: Limits | Mapping[str, Any] | None = None,
    system_prompt: str | None = None,
    on_event: EventHandler | None = None,
    tool_settings: Mapping[str, Any] | None = None,
) -> Outcome:
    """Continue a stored run: answer its pending break, or re-run the step its dead process was in.

    ``extra_*`` raise the limits of a run paused at a break, ``hint`` is shown
    to the model on its next call, ``abort`` ends it as broken. The model,
    protocol, tools and limits stored with the run are reused; those given here
    override them (``limits`` as a :class:`Limits`, or a mapping of the limits
    to change; ``tool_settings`` a mapping of the :class:`ToolSettings` fields to
    change, e.g. ``{"write_quota": 20_000_000}``).
    """
    with open_db(db, write=True) as saver:
        return resume_with(saver, thread_id, extra_steps=extra_steps, extra_seconds=extra_seconds,
                           extra_tokens=extra_tokens, extra_cost=extra_cost, hint=hint, abort=abort, model=model, base_url=base_url,
                           protocol=protocol, tools=tools, limits=limits, system_prompt=system_prompt, on_event=on_event,
                           tool_settings=tool_settings)


def resume_with(
    saver: ReinloopSaver,
    thread_id: str,
    *,
    extra_steps: int = 0,
    extra_seconds: float = 0.0,
    extra_tokens: int = 0,
    extra_cost: float = 0.0,
    hint: str | None = None,
    abort: bool = False,
    model: str | BaseChatModel | None = None,
    base_url: str | None = None,
    protocol: str | OutputProtocol | None = None,
    tools: Sequence[BaseTool] | str | None = None,
    limits: Limits | Mapping[str, Any] | None = None,
    system_prompt: str | None = None,
    on_event: EventHandler | None = None,
    tool_settings: Mapping[str, Any] | None = None,
) -> Outcome:
    """:func:`resume` on an open run database."""
    values = _latest_state(saver, thread_id)
    answer = _resume_payload(thread_id, values, extra_steps, extra_seconds, extra_tokens, hint, abort, extra_cost)
    graph = _rebuild(saver, thread_id, model, base_url, protocol, tools, limits, system_prompt, tool_settings,
                     state=values)
    # a node may have finished (its writes saved) just before the process died: then `next` is empty, but
    # the step still has its task, and invoking resumes after it
    state = graph.get_state(thread_config(thread_id))
    if answer is None and not state.next and not state.tasks:
        raise NotResumableError(f"run {thread_id!r} has nothing left to run (status {values.get('status')!r})")
    return stream_stored(graph, answer, thread_id, on_event)


def _latest_state(saver: ReinloopSaver, thread_id: str) -> dict[str, Any]:
    latest = saver.get_tuple(thread_config(thread_id))
    if latest is None:
        raise ThreadNotFoundError(
            f"no run with thread id {thread_id!r} in {saver.location}; `reinloop runs list` shows the stored runs"
        )
    return dict(latest.checkpoint["channel_values"])


def _resume_payload(
    thread_id: str, values: Mapping[str, Any], extra_steps: int, extra_seconds: float, extra_tokens: int,
    hint: str | None, abort: bool, extra_cost: float = 0.0,
) -> Command | None:
    """What to invoke the graph with: the operator's answer to a break, or None after a crash."""
    status = values.get("status")
    new_task = f"start a new task on it with `reinloop run TASK --thread {thread_id}`"
    if status == "done":
        raise NotResumableError(f"run {thread_id!r} is finished (answer: {values.get('answer')!r}); {new_task}")
    if values.get("decision") == "pause":
        if abort:
            return Command(resume={"action": "abort"})
        answer = {"action": "continue", "extra_steps": extra_steps, "extra_seconds": extra_seconds,
                  "extra_tokens": extra_tokens, "extra_cost": extra_cost}
        return Command(resume={**answer, **({"hint": hint} if hint else {})})
    if status == "broken":
        raise NotResumableError(
            f"run {thread_id!r} ended broken ({values.get('break_reason')}: {values.get('break_message')}) and is "
            f"not waiting at a break; {new_task}"
        )
    if abort or hint or extra_steps or extra_seconds or extra_tokens or extra_cost:
        raise ConfigurationError(
            f"run {thread_id!r} is not paused at a break (it was cut off while running), so --abort, --hint and "
            "--extra-* do not apply; resume it without them"
        )
    return None


def calls_of(state: Mapping[str, Any]) -> dict[tuple[int, str], Mapping[str, Any]]:
    """(step, call id) -> the whole arguments of each call of the state's current run, the pending step's included."""
    run_number = state.get("run", 0)
    calls = {(s.get("index"), a.get("id")): a.get("args") or {} for s in state.get("scratchpad") or []
             if s.get("run", 0) == run_number for a in s.get("actions") or []}
    pending_step = (state.get("counters") or {}).get("steps", 0) + 1
    calls.update({(pending_step, a.get("id")): a.get("args") or {} for a in (state.get("pending") or {}).get("actions") or []})
    return calls


def _rebuild(
    saver: ReinloopSaver, thread_id: str, model: Any, base_url: str | None, protocol: Any, tools: Any,
    limits: Limits | Mapping[str, Any] | None, system_prompt: str | None,
    tool_changes: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
) -> ReinloopGraph:
    """The run's graph from its stored settings, with the given overrides."""
    record = saver.get_run(thread_id)
    model = model or (record.model if record else None)
    if not model or (isinstance(model, str) and model.startswith("<")):
        raise ConfigurationError(
            f"run {thread_id!r} was started with a model object ({model or 'unknown'}), which cannot be stored; "
            "pass the model to resume it (--model, or model= in Python)"
        )
    stored_tools = (record.tools if record else None) or list(DEFAULT_TOOLS)
    if tools is None:
        unknown = sorted(set(stored_tools) - set(BUILTINS))
        if unknown:
            raise ConfigurationError(
                f"run {thread_id!r} used tools that are not built in ({', '.join(unknown)}); resume it from Python "
                "with resume(..., tools=[...])"
            )
        tools = stored_tools
    base = Limits(**record.limits) if record and record.limits else Limits()
    final = limits if isinstance(limits, Limits) else base.replace(**(limits or {}))
    options = (record.options if record else None) or {}
    retry = RetryPolicy(**options["retry"]) if options.get("retry") else RetryPolicy()
    unknown = sorted(set(tool_changes or {}) - set(ToolSettings().as_dict()))
    if unknown:
        raise ConfigurationError(f"unknown tool setting(s) {', '.join(unknown)}; valid: {', '.join(ToolSettings().as_dict())}")
    settings = ToolSettings(**{**(options.get("tool_settings") or {}), **(tool_changes or {})})
    settings.check_run_database(saver.location)
    tool_list = _tool_list(tools, settings)
    # the write quota is per run: what the run's earlier processes wrote is in its journal (earlier tasks
    # of the same thread were other runs)
    run_number = (state or {}).get("run")
    charge_journaled_writes(tool_list, [r for r in saver.journal_rows(thread_id) if run_number is None or r.get("run") == run_number],
                            calls_of(state or {}))
    return _graph(
        saver,
        resolve_model(model, base_url=resume_endpoint(thread_id, base_url, record.base_url if record else None),
                      timeout=retry.timeout),
        tool_list,
        limits=final,
        protocol=protocol or (record.protocol if record and record.protocol else "tool_calling"),
        system_prompt=system_prompt or (record.system_prompt if record else None),
        retry=retry,
        memory=memory_from_settings(options.get("memory")),
        tool_detail=options.get("tool_detail") or "full",
        # runs stored before the option existed ran uncapped
        max_output_tokens=options.get("max_output_tokens") if "max_output_tokens" in options else None,
    )


def resume_endpoint(thread_id: str, given: str | None, stored: str | None) -> str | None:
    """The endpoint a run resumes with: ``given``, else the stored one, whose credentials are never stored.

    A stored endpoint that had credentials is taken from ``$OPENAI_BASE_URL``
    when that is the same endpoint; otherwise the operator must pass it again.
    """
    if given or not is_redacted(stored):
        return given or stored
    from_env = os.environ.get(BASE_URL_VARIABLE)
    if from_env and redact_url(from_env) == stored:
        return from_env
    raise ConfigurationError(
        f"run {thread_id!r} used the endpoint {stored}, whose credentials reinloop never stores; pass the endpoint "
        f"again with --base-url (base_url= in Python), or set {BASE_URL_VARIABLE} to it"
    )


def run_limits(thread_id: str, db: str | Path | None = None) -> Limits:
    """The limits a stored run runs under now: its settings raised by the operator's extensions so far."""
    with open_db(db) as saver:
        values = _latest_state(saver, thread_id)
        record = saver.get_run(thread_id)
    limits = Limits(**record.limits) if record and record.limits else Limits()
    ext = values.get("extensions") or {}
    raised = {
        "max_steps": limits.max_steps and limits.max_steps + int(ext.get("steps", 0)),
        "max_seconds": limits.max_seconds and limits.max_seconds + float(ext.get("seconds", 0.0)),
        "token_budget": limits.token_budget and limits.token_budget + int(ext.get("tokens", 0)),
        "max_cost": limits.max_cost and limits.max_cost + float(ext.get("cost", 0.0)),
    }
    return limits.replace(**raised)


def list_runs(db: str | Path | None = None, *, status: str | None = None) -> list[RunRecord]:
    """The stored runs, most recently updated first; ``status`` keeps only running, done or broken ones."""
    with open_db(db) as saver:
        return saver.list_runs(status=status)


@dataclass(frozen=True)
class RunDetail:
    """Everything stored about one run: its record, latest state, steps and breaks."""

    thread_id: str
    run: RunRecord | None
    state: dict[str, Any]
    breaks: list[BreakRecord]
    pending_break: dict[str, Any] | None

    @property
    def steps(self) -> list[dict[str, Any]]:
        """Every recorded step on the thread, oldest first."""
        return list(self.state.get("scratchpad") or [])

    def as_dict(self) -> dict[str, Any]:
        """The detail as a JSON-able dict (the state's plain values, steps included)."""
        data = asdict(self)
        data["state"] = {k: v for k, v in self.state.items() if not k.startswith(("__", "branch:"))}
        return data


def show_run(thread_id: str, db: str | Path | None = None) -> RunDetail:
    """The stored record, latest state, steps and breaks of one run."""
    with open_db(db) as saver:
        latest = saver.get_tuple(thread_config(thread_id))
        record = saver.get_run(thread_id)
        if latest is None and record is None:
            _latest_state(saver, thread_id)  # raises ThreadNotFoundError
        state = dict(latest.checkpoint["channel_values"]) if latest else {}
        found = break_interrupts([(w[1], w[2]) for w in (latest.pending_writes or [])]) if latest else []
        return RunDetail(thread_id, record, state, saver.list_breaks(thread_id), found[-1][1] if found else None)


@dataclass(frozen=True)
class PruneReport:
    """What :func:`prune_runs` did."""

    threads: int
    checkpoints_before: int
    checkpoints_after: int
    bytes_before: int | None
    bytes_after: int | None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-able dict."""
        return asdict(self)


def prune_runs(
    db: str | Path | None = None, *, keep_last: int = 1, older_than_days: float | None = None, vacuum: bool = False
) -> PruneReport:
    """Keep the latest ``keep_last`` checkpoints of each run (not updated for ``older_than_days`` days).

    Every step of a pruned run stays readable (it is in the kept state); only
    the history of intermediate checkpoints goes. ``vacuum`` then shrinks the file
    (PostgreSQL: ``VACUUM FULL`` of reinloop's tables).
    """
    if keep_last < 1:
        raise ConfigurationError(f"--keep-last must be at least 1, got {keep_last}; use `reinloop runs delete` to drop a run")
    with open_db(db, write=True) as saver:
        threads = saver.stale_threads(older_than_days)
        before, size = saver.count_checkpoints(), saver.storage_bytes()
        saver.prune(threads, keep_last=keep_last)
        if vacuum:
            saver.compact()
        return PruneReport(len(threads), before, saver.count_checkpoints(), size, saver.storage_bytes())


def delete_run(thread_id: str, db: str | Path | None = None) -> None:
    """Delete everything stored for one run: checkpoints, steps, settings and breaks."""
    with open_db(db, write=True) as saver:
        if saver.get_run(thread_id) is None:
            _latest_state(saver, thread_id)  # raises ThreadNotFoundError
        saver.delete_thread(thread_id)
