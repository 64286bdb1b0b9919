"""Structured events: one per node transition, to logging, LangGraph's custom stream and sinks.

Every node reports what it did with one call to :func:`emit`. The graph wraps
each node in :func:`observed`, which times it and, when the node returns,
completes the event with where it happened (thread, run, step, LangGraph
superstep, the checkpoint the node started from) and how long it took, then
publishes it to three places:

- the node module's logger (``reinloop.nodes.<node>``): one INFO line, the
  whole event as JSON at DEBUG;
- LangGraph's ``custom`` stream (``graph.stream(..., stream_mode="custom")``),
  which the CLI console reads;
- every sink in ``AgentContext.sinks`` (``build_graph(..., sinks=[...])``),
  e.g. :class:`reinloop.checkpoints.runlog.RunLog`, which keeps them in a ``node_events`` table.

Publishing after the node returns is what makes ``latency_ms`` the node's own
time; a node that raises still publishes one event, with ``error`` set, before
the exception goes on. Memory events (a step evicted from the prompt window, a
summary written, a memory recalled) are attached to the event of the node in
which they happened with :func:`record_memory`, so one transition stays one
event. An event is plain JSON-able data: it crosses process boundaries
(``langgraph dev``) and lands in SQLite as it is.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp

from .location import locate


class ActionRecord(TypedDict, total=False):
    """One tool call as an event reports it."""

    id: str  # the call's id, as the model gave it (or as reinloop made it)
    tool: str
    args: dict[str, Any]
    observation: str | None  # what the model will read (already truncated by the executor)
    error: bool
    problem: str | None  # why validate refused it
    latency_ms: float  # the tool's own time, retries included (execute only)
    status: str  # how the executor judged the call (ok, error, timeout ...), when it says
    attempts: int  # calls made, retries included, when the executor says


class MemoryEvent(TypedDict, total=False):
    """Something the memory did during a node: ``kind``, a human ``summary``, and details."""

    kind: str  # evicted, summarized, recalled, deduplicated ...
    summary: str
    data: dict[str, Any]


class NodeEvent(TypedDict, total=False):
    """What one node transition did: the record behind logs, the console, the ``node_events`` table and reports.

    Only ``node`` and ``summary`` are always present; ``observed`` adds the
    location and timing fields; each node sets the fields that concern it.
    """

    node: str  # decide, parse, validate, execute, memorize or guard
    summary: str  # one human line, the INFO log line
    # where: added by observed() from LangGraph's config
    thread_id: str | None
    run: int  # which task on the thread (a thread may hold several)
    step: int  # the loop iteration, 1-based, as in the scratchpad
    superstep: int | None  # LangGraph's step number (checkpoint metadata "step" of the checkpoint it ran from)
    checkpoint_ns: str
    checkpoint_id: str | None  # the checkpoint the node started from; its writes make the next one
    task_id: str | None  # LangGraph's task id: pending writes are stored under it
    started_at: float  # wall-clock time.time() when the node started
    latency_ms: float  # the node's own time, model and tool calls included
    # what: set by the nodes
    thought: str | None
    actions: list[ActionRecord]
    answer: str | None
    tokens_in: int | None  # prompt tokens of this step's model call (decide)
    tokens_out: int | None  # completion tokens (decide)
    error: str | None  # what failed in this transition: parse error, refusal, tool error, exception
    decision: str | None  # guard: continue, hint, finish or break
    reason: str | None  # guard: the break reason
    message: str | None  # guard: the break message
    hints: list[str]  # guard: hints for the next step
    counters: dict[str, Any] | None  # memorize and guard: the run's counters after this node
    memory: list[MemoryEvent]
    data: dict[str, Any]  # anything else a node reports


StepEvent = NodeEvent
"""Deprecated name of :class:`NodeEvent` (it is one event per node, six per step)."""

EVENT_FIELDS: frozenset[str] = frozenset(NodeEvent.__annotations__)
"""The keys a :class:`NodeEvent` may have; other keyword arguments of :func:`emit` go into ``data``."""

EventSink = Callable[[NodeEvent], None]
"""Receives every published event, e.g. :class:`reinloop.checkpoints.runlog.RunLog`."""


@dataclass
class _NodeRun:
    """The node running in this context: its start, and the events it emitted."""

    node: str
    started: float
    wall: float
    events: list[NodeEvent] = field(default_factory=list)
    memory: list[MemoryEvent] = field(default_factory=list)


_current: contextvars.ContextVar[_NodeRun | None] = contextvars.ContextVar("reinloop_node_run", default=None)


def make_event(node: str, summary: str, **fields: Any) -> NodeEvent:
    """A :class:`NodeEvent`: known fields at the top, the rest under ``data``."""
    event: dict[str, Any] = {"node": node, "summary": summary}
    extra = {k: v for k, v in fields.items() if k not in EVENT_FIELDS and v is not None}
    event.update((k, v) for k, v in fields.items() if k in EVENT_FIELDS)
    if extra:
        event["data"] = {**event.get("data", {}), **extra}
    return event  # type: ignore[return-value]


def emit(runtime: Any, node: str, summary: str, **fields: Any) -> NodeEvent:
    """Report what ``node`` did; published when the node returns (at once outside a graph run).

    ``emit(runtime, "memory", summary, event=KIND, ...)`` inside a node is a
    memory event: it is attached to that node's event, like :func:`record_memory`.
    """
    current = _current.get()
    if node == "memory" and current is not None:
        kind = str(fields.pop("event", fields.pop("kind", "memory")))
        record_memory(kind, summary, **fields)
        return make_event(node, summary, kind=kind, **fields)
    event = make_event(node, summary, **fields)
    if current is not None and current.node == node:
        current.events.append(event)
    else:
        publish(runtime, event)
    return event


def record_memory(kind: str, summary: str, **data: Any) -> MemoryEvent:
    """Note a memory event (evicted, summarized, recalled, deduplicated) on the running node's event."""
    record = MemoryEvent(kind=kind, summary=summary, data=data)
    current = _current.get()
    if current is not None:
        current.memory.append(record)
    logging.getLogger("reinloop.memory").info("%s: %s", kind, summary)
    return record


def publish(runtime: Any, event: NodeEvent) -> None:
    """Send a finished event to the node's logger, the custom stream and the context's sinks."""
    logger = logging.getLogger(f"reinloop.nodes.{event['node']}")
    logger.info("%s: %s", event["node"], event["summary"])
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s event: %s", event["node"], json.dumps(event, ensure_ascii=False, default=str))
    writer = getattr(runtime, "stream_writer", None)
    if writer is not None:
        writer(event)
    for sink in getattr(getattr(runtime, "context", None), "sinks", ()) or ():
        sink(event)


def finish(run: _NodeRun, base: dict[str, Any], error: BaseException | None = None) -> list[NodeEvent]:
    """The node's events completed with location and timing, plus an error event if it raised."""
    events = run.events
    if error is not None:
        message = " ".join(str(error).split())[:500] or "(no message)"
        text = f"{type(error).__name__}: {message}"
        events = [*events, make_event(run.node, f"raised {text}", error=text)]
    elif not events:
        events = [make_event(run.node, "done")]
    latency = round((time.perf_counter() - run.started) * 1000, 3)
    done = []
    for event in events:
        head = {"node": event["node"], "summary": event["summary"]}
        full: dict[str, Any] = {**head, **base, "started_at": run.wall, "latency_ms": latency, **event}
        if run.memory:
            full["memory"] = [*full.get("memory", []), *run.memory]
        done.append(full)
    return done  # type: ignore[return-value]


def observed(node: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a node ``(state, runtime)``: time it, then publish its events, completed."""

    # Not functools.wraps: LangGraph reads the wrapper's own signature to know
    # what to inject (runtime and config), and wraps() would point it at the node's.
    def run(state: Any, runtime: Any, config: RunnableConfig) -> Any:
        current = _NodeRun(node=node.__name__, started=time.perf_counter(), wall=time.time())
        token = _current.set(current)
        try:
            update = node(state, runtime)
        except GraphBubbleUp:  # interrupt() and friends are control flow, not failures
            raise
        except Exception as exc:
            for event in finish(current, locate(state, config).event_fields(), exc):
                publish(runtime, event)
            raise
        finally:
            _current.reset(token)
        for event in finish(current, locate(state, config, update).event_fields()):
            publish(runtime, event)
        return update

    run.__name__ = run.__qualname__ = node.__name__
    run.__doc__ = node.__doc__
    run.__module__ = node.__module__
    return run


def protocol_switches(by_node: dict[str, Any]) -> list[dict[str, Any]]:
    """A step's moves to another protocol under ``auto``: tools refused (decide), calls written as text or unreadable
    replies (memorize), in that order."""
    found = (((by_node.get(node) or {}).get("data") or {}).get("protocol_switch") for node in ("decide", "memorize"))
    return [switch for switch in found if switch]
