"""OpenTelemetry spans of a run, made from its node events and its model and tool calls.

Switched on by ``RunSpec.telemetry`` (``--otel``); needs ``reinloop[otel]``.
Nothing here is imported, and nothing runs, when it is off.

Each invocation of the graph (a run, or the part of it after a resume) is one
``invoke_agent`` span; each loop step a ``reinloop.step`` span under it; each
model call a ``chat`` span and each tool call an ``execute_tool`` span under
its step. Names and ``gen_ai.*`` attributes follow the OpenTelemetry GenAI
semantic conventions; reinloop's own facts (limits, counters, the guard's
decision, the break reason, approvals, cost) are ``reinloop.*`` attributes.

No node knows about spans. A :class:`RunTrace` is one more event sink
(:mod:`reinloop.observe.events`): an event arrives when its node returns, with the
node's start and duration, so spans are made after the fact with those
times. The model and tool call boundaries come from a call hook
(:class:`CallRecorder`, :mod:`reinloop.observe.callbacks`) that the code making each
call tells directly, not from a LangChain callback handler; its calls are
taken by the event of the node they ran in. A step ends with the guard's event.
A model's request attributes (name, provider, cap, temperature) are read once
a run, and contents are serialised only when they are recorded.

A resumed run continues the trace: every checkpoint of an invocation carries
the W3C ``traceparent`` of the trace's first span and of its own span in its
metadata (:data:`TRACE_KEY`); the next invocation on the thread starts its
span as a child of the first, linked to the previous part. One key, not two:
LangGraph copies every metadata key into each task's config, a few calls per
key and task.

Message texts, tool arguments and results are recorded only with
``RunSpec.telemetry_content`` (``--otel-content``): they may be private.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigurationError, TelemetrySetupError
from .events import ActionRecord, NodeEvent
from ..models.resolve import OUTPUT_CAP_FIELDS
from ..runs.spec import RunSpec

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as exc:  # reinloop runs without the extra; only switching telemetry on needs it
    raise TelemetrySetupError(exc.name or "opentelemetry") from None

TRACE_KEY = "reinloop_trace"
"""Checkpoint metadata key: the ``traceparent`` of the span that began the run's trace, a space, and that of the
invocation that wrote the checkpoint."""
ROOT_KEY, PART_KEY = "reinloop_trace_root", "reinloop_trace_part"
"""The two keys checkpoints written by an earlier reinloop hold them under (still read)."""
SCOPE = "reinloop"
"""The instrumentation scope name of reinloop's spans."""
COUNTERS = ("steps", "llm_calls", "prompt_tokens", "completion_tokens", "errors", "consecutive_errors",
            "same_errors", "repeats", "cost_usd", "elapsed_seconds")
"""Run counters put on the run span, as ``reinloop.counters.<name>``."""


TRACES_EXPORTER_VARIABLE = "OTEL_TRACES_EXPORTER"
"""The standard variable that names the span exporters (``otlp`` unless it says otherwise; ``none``: no export)."""
EXPORT_TIMEOUT = 2.0
"""Seconds one export to the OTLP collector may take, retries included, unless ``OTEL_EXPORTER_OTLP_TIMEOUT`` (or
``..._TRACES_TIMEOUT``) says otherwise: the SDK's 10 s of retries on a collector that is not there delayed exit."""
_TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
_QUIET_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.common.http")
logger = logging.getLogger(__name__)


def tracer_provider(given: Any = None) -> Any:
    """The provider spans go to: ``given``, else the global one the caller set, else reinloop's own (set global).

    Reinloop's own exports in batches to the exporters ``OTEL_TRACES_EXPORTER`` names, as the SDK's own
    configuration reads it (``otlp``, the default: OTLP/HTTP; ``console``: the spans as JSON on stderr;
    ``none``; any exporter an installed package registers); ``OTEL_SDK_DISABLED=true`` exports nothing. The OTLP
    exporter reads ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout, compression), the resource
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, the batch processor ``OTEL_BSP_*``: the SDK's own
    handling. A collector that cannot be reached is said once (a warning of this module's logger) and the
    run's later spans are dropped at once, not retried.
    """
    if given is not None:
        return given
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return trace.get_tracer_provider()
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TelemetrySetupError(exc.name or "opentelemetry.sdk") from None
    provider = TracerProvider()  # flushed at exit (shutdown_on_exit)
    for exporter in span_exporters():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return trace.get_tracer_provider()


def span_exporters() -> list[Any]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (``otlp`` when unset), each made as the SDK would make it."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [n.strip() for n in (os.environ.get(TRACES_EXPORTER_VARIABLE) or "otlp").split(",") if n.strip()]
    return [exporter for name in names if name.lower() != "none" for exporter in [span_exporter(name)]]


def span_exporter(name: str) -> Any:
    """One exporter by its name: ``otlp`` (and ``otlp_proto_http``) is reinloop's bounded OTLP/HTTP exporter,
    ``console`` the SDK's on stderr, any other name the ``opentelemetry_traces_exporter`` entry point of that name."""
    if name in ("otlp", "otlp_proto_http") and otlp_protocol() != "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise TelemetrySetupError(exc.name or "opentelemetry.exporter.otlp.proto.http") from None
        timeout = None if any(os.environ.get(v) for v in _TIMEOUT_VARIABLES) else EXPORT_TIMEOUT
        return ReachableOnce(OTLPSpanExporter(timeout=timeout))
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout is the run's output (--json's lines)
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group="opentelemetry_traces_exporter")}
    if name == "otlp" and "otlp_proto_grpc" not in found:
        raise ConfigurationError(
            f"the OTLP protocol is {otlp_protocol()!r} (OTEL_EXPORTER_OTLP_PROTOCOL), whose span exporter is not "
            "installed: pip install opentelemetry-exporter-otlp-proto-grpc, or set the protocol to http/protobuf"
        )
    name = "otlp_proto_grpc" if name == "otlp" else name
    if name not in found:
        raise ConfigurationError(
            f"{TRACES_EXPORTER_VARIABLE} names the span exporter {name!r}, which no installed package provides; "
            f"choose among: {', '.join(sorted({'otlp', 'none', *found}))}"
        )
    return found[name].load()()


def otlp_protocol() -> str:
    """The OTLP protocol the standard variables ask for (``http/protobuf`` unless they say ``grpc``)."""
    return (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf").strip()


class ReachableOnce(SpanExporter):
    """An OTLP exporter that tries the collector until it fails once: then it says so, once, and drops the spans
    that follow at once (no retries, no warnings at each batch, no seconds added at exit).

    The exporter's own retry warnings are dropped: this class says what they would.
    """

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.unreachable = False
        for name in _QUIET_LOGGERS:
            logging.getLogger(name).addFilter(_drop)

    @property
    def endpoint(self) -> str:
        """Where the spans go (the exporter's endpoint, from the variables)."""
        return str(getattr(self.exporter, "_endpoint", None) or "the OTLP endpoint")

    def export(self, spans: Any) -> SpanExportResult:
        """Send ``spans``; after one failure, drop them at once."""
        if self.unreachable:
            return SpanExportResult.FAILURE
        result = self.exporter.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.unreachable = True
            logger.warning("reinloop: the OpenTelemetry collector at %s could not be reached; this run's spans are "
                           "dropped (OTEL_EXPORTER_OTLP_ENDPOINT says where it is, OTEL_TRACES_EXPORTER=none stops "
                           "the export)", self.endpoint)
        return result

    def shutdown(self) -> None:
        """Shut the exporter down."""
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is held here: the exporter's own answer."""
        return bool(self.exporter.force_flush(timeout_millis))


def _drop(record: logging.LogRecord) -> bool:
    return False


def traceparent(context: SpanContext) -> str:
    """A span context as a W3C ``traceparent`` header value."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def from_traceparent(value: Any) -> SpanContext | None:
    """The span context a ``traceparent`` value names (``None``: no value, or not one)."""
    parts = value.split("-") if isinstance(value, str) else []
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except (IndexError, ValueError):
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))


def stored_trace(metadata: Mapping[str, Any]) -> tuple[SpanContext | None, SpanContext | None]:
    """The trace's first span and the previous invocation's, from a checkpoint's metadata (``None``: not traced)."""
    value = metadata.get(TRACE_KEY)
    root, part = value.split(" ", 1) if isinstance(value, str) and " " in value else (metadata.get(ROOT_KEY), metadata.get(PART_KEY))
    return from_traceparent(root), from_traceparent(part)


def span_times(event: NodeEvent) -> tuple[int, int]:
    """When an event's node started and returned, in span nanoseconds."""
    start = int((event.get("started_at") or time.time()) * 1e9)
    return start, start + int((event.get("latency_ms") or 0.0) * 1e6)


def calls_by_event(timed: list[tuple[NodeEvent, int, int]], calls: list[Call]) -> list[list[Call]]:
    """``calls`` (by start) shared out to the events of the nodes they ran in (``timed``: each event, its start
    and end); a node that ran twice in the step (execute, after an approval) has each call in its first run that
    had not ended when the call started."""
    shares: list[list[Call]] = [[] for _ in timed]
    for call in calls:
        last = None
        for i, (event, _, end) in enumerate(timed):
            if event["node"] == call.node:
                last = i
                if call.start <= end:
                    break
        if last is not None:
            shares[last].append(call)
    return shares


def counted(actions: Any, flag: str) -> int:
    """How many of an event's action records have ``flag`` set."""
    n = 0
    for action in actions or ():
        if action.get(flag):
            n += 1
    return n


def as_json(value: Any) -> str:
    """``value`` as JSON text for an attribute."""
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(eq=False)
class Call:
    """One model or tool call the recorder was told of: when, in which node, and how it went."""

    kind: str  # "chat" or "tool"
    node: str
    name: str
    start: int
    model: Any = None  # the chat model called (its request attributes: RunTrace.requested)
    inputs: Any = None
    request: Mapping[str, Any] = field(default_factory=dict)  # the call's own keywords (reply cap, temperature)
    call_id: str = ""  # a tool call's id, which tells parallel calls to one tool apart
    output: Any = None
    error: BaseException | None = None
    end: int | None = None


class CallRecorder:
    """A call hook (:class:`reinloop.observe.callbacks.CallHook`) noting each model and tool call; thread-safe: tools run in
    workers."""

    def __init__(self) -> None:
        self.calls: list[Call] = []  # in the order they started
        self.lock = threading.Lock()

    def started(self, kind: str, node: str, name: str, *, model: Any, inputs: Any, request: Mapping[str, Any],
                call_id: str) -> Call:
        """Note a call's start; the call is the token :meth:`ended` is given."""
        with self.lock:
            call = Call(kind, node, name, time.time_ns(), model, inputs, request, call_id)
            self.calls.append(call)
        return call

    def ended(self, token: Call, output: Any = None, error: BaseException | None = None) -> None:
        """Note a call's end: its reply, result or error."""
        token.output, token.error, token.end = output, error, time.time_ns()

    def take(self) -> list[Call]:
        """Every call noted so far, in the order they started, removed from the recorder."""
        with self.lock:
            calls, self.calls = self.calls, []
        return calls


@dataclass(frozen=True)
class Telemetry:
    """A graph's telemetry: where spans go and what they hold; :meth:`begin` traces one invocation."""

    tracer: Any
    spec: RunSpec
    agent: str = "reinloop"

    @classmethod
    def of(cls, spec: RunSpec, provider: Any = None, agent: str = "reinloop") -> Telemetry:
        """The telemetry of ``spec``'s runs, on ``provider`` (see :func:`tracer_provider`)."""
        from .. import __version__

        return cls(tracer_provider(provider).get_tracer(SCOPE, __version__), spec, agent)

    def begin(self, graph: Any, input: Any, config: Any) -> RunTrace:  # noqa: A002
        """Start the span of one invocation: a new trace for a new task, the stored one for a resume."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        root = previous = None
        checkpointed = graph.checkpointer not in (None, False)
        if not isinstance(input, Mapping) and thread and checkpointed:
            saved = graph.checkpointer.get_tuple(config)
            metadata = (saved.metadata if saved else None) or {}
            root, previous = stored_trace(metadata)
        return RunTrace(self, thread, root, previous, checkpointed)


class RunTrace:
    """One invocation's spans: its own, live; its steps' and calls', made from events as they arrive."""

    def __init__(self, telemetry: Telemetry, thread: str | None, root: SpanContext | None,
                 previous: SpanContext | None, checkpointed: bool = True) -> None:
        self.telemetry, self.content, self.checkpointed = telemetry, telemetry.spec.telemetry_content, checkpointed
        self.recorder = CallRecorder()
        spec = telemetry.spec
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": telemetry.agent,
            "gen_ai.request.model": spec.model, "reinloop.resumed": root is not None,
            **{f"reinloop.limits.{k}": v for k, v in spec.limits.as_dict().items() if v is not None},
        }
        if thread:
            attributes["gen_ai.conversation.id"] = str(thread)
        parent = trace.set_span_in_context(NonRecordingSpan(root)) if root is not None else None
        links = [Link(previous, {"reinloop.link": "resumed_from"})] if previous is not None else []
        self.span: Span = telemetry.tracer.start_span(f"invoke_agent {telemetry.agent}", context=parent,
                                                      kind=SpanKind.INTERNAL, attributes=attributes, links=links)
        self.root = traceparent(root or self.span.get_span_context())
        self.under = trace.set_span_in_context(self.span)  # the steps' parent, made once, not once a step
        self.models: dict[int, dict[str, Any]] = {}  # each chat model's request attributes, read once a run
        self.pending: list[NodeEvent] = []  # the open step's events, in order
        self.last: NodeEvent | None = None
        self.usage = [0, 0]

    def config(self, config: Any) -> Any:
        """``config`` with the trace in its checkpoints' metadata; as given without a checkpointer (no checkpoint
        to carry it, and LangGraph copies each metadata key into every task's config). The call recorder goes in
        the context instead (``AgentContext.call_hooks``, :mod:`reinloop.observe.callbacks`)."""
        if not self.checkpointed:
            return config
        config = dict(config or {})
        part = traceparent(self.span.get_span_context())
        config["metadata"] = {**(config.get("metadata") or {}), TRACE_KEY: f"{self.root} {part}"}
        return config

    def follow(self, chunks: Iterator[Any]) -> Iterator[Any]:
        """Pass the invocation's chunks on; end its span when they end."""
        try:
            yield from chunks
        except GeneratorExit:
            self.end()
            raise
        except BaseException as exc:
            self.end(exc)
            raise
        self.end()

    async def afollow(self, chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """:meth:`follow` for ``astream``."""
        try:
            async for chunk in chunks:
                yield chunk
        except GeneratorExit:
            self.end()
            raise
        except BaseException as exc:
            self.end(exc)
            raise
        self.end()

    def on_event(self, event: NodeEvent) -> None:
        """An event sink: the event joins the open step; the guard's event ends the step."""
        if event["node"] != "guard":
            self.pending.append(event)
        elif self.pending:
            self.pending.append(event)
            self.close_step()
        else:  # an operator's answer to a pause, before a new step
            self.span.add_event("reinloop.resume", self.guard_attributes(event), timestamp=span_times(event)[0])
        self.last = event

    def close_step(self, unfinished: bool = False) -> None:
        """Make the open step's spans from its events and the calls noted meanwhile: the step, then its calls.

        Made once the step is over, each span is started with all its attributes (the SDK checks every value
        set under a lock, so one ``attributes=`` costs less than setting them node by node), and the calls
        are taken from the recorder once a step, not once a node.
        """
        pending, self.pending = self.pending, []
        if not pending:
            return
        first, timed = pending[0], [(event, *span_times(event)) for event in pending]
        attributes: dict[str, Any] = {"reinloop.step": int(first.get("step") or 0),
                                      "reinloop.run": int(first.get("run") or 0), "reinloop.first_node": first["node"]}
        for event in pending:
            attributes.update(self.node_attributes(event))
        if unfinished:
            attributes["reinloop.step.unfinished"] = True
        step = self.telemetry.tracer.start_span("reinloop.step", context=self.under, start_time=timed[0][1],
                                                attributes=attributes)
        under = trace.set_span_in_context(step)
        for (event, _, end), calls in zip(timed, calls_by_event(timed, self.recorder.take()), strict=True):
            for call in calls:
                if call.kind == "chat":
                    self.model_span(call, under, str((event.get("data") or {}).get("model") or ""))
            if event["node"] == "execute":
                self.tool_spans(under, event, [c for c in calls if c.kind == "tool"], end)
            elif event["node"] == "approve":
                for decision in (event.get("data") or {}).get("decisions") or []:
                    step.add_event("reinloop.approval", {"gen_ai.tool.call.id": str(decision.get("call_id") or ""),
                                                         "reinloop.approval.id": str(decision.get("id", "")),
                                                         "reinloop.approval.action": str(decision.get("action", ""))},
                                   timestamp=end)
        step.end(end_time=max([end for _, _, end in timed]))

    def node_attributes(self, event: NodeEvent) -> dict[str, Any]:
        """What one node's event puts on its step span (no span event per node: they cost a fifth of telemetry's time)."""
        node = event["node"]
        if node == "decide":
            return self.decided(event)
        if node == "parse" and event.get("error"):
            return {"reinloop.parse_error": True, **({"reinloop.parse_error.message": str(event["error"])} if self.content else {})}
        if node == "validate":
            return {"reinloop.refused_calls": counted(event.get("actions"), "problem")}
        if node == "execute":
            return {"reinloop.tool_errors": counted(event.get("actions"), "error")}
        if node == "guard":
            return self.guard_attributes(event)
        return {}

    def decided(self, event: NodeEvent) -> dict[str, Any]:
        """The decide node's facts for its step: tokens and cost of its model calls (added to the run's usage)."""
        tokens_in, tokens_out = int(event.get("tokens_in") or 0), int(event.get("tokens_out") or 0)
        self.usage = [self.usage[0] + tokens_in, self.usage[1] + tokens_out]
        usd, unpriced = 0.0, 0
        for call in (event.get("data") or {}).get("cost") or ():
            if call.get("usd") is None:
                unpriced += 1
            else:
                usd += call["usd"]
        return {"reinloop.step": int(event.get("step") or 0), "gen_ai.usage.input_tokens": tokens_in,
                "gen_ai.usage.output_tokens": tokens_out, "reinloop.cost_usd": float(usd), "reinloop.unpriced_calls": unpriced}

    def model_span(self, call: Call, parent: Any, model: str) -> None:
        """One ``chat`` span for a model call under ``parent`` (a context), with its request, usage and finish
        reason (``model``: its name when the call did not say it)."""
        message = call.output
        attributes = self.requested(call)
        name = attributes.setdefault("gen_ai.request.model", model)
        if message is not None:
            attributes.update(reply_attributes(message))
        if self.content:
            attributes["gen_ai.input.messages"] = as_json([message_json(m) for m in call.inputs or []])
            if message is not None:
                attributes["gen_ai.output.messages"] = as_json([message_json(message)])
        if call.error is not None:
            attributes["error.type"] = type(call.error).__qualname__
        span = self.telemetry.tracer.start_span(f"chat {name}".strip(), context=parent, kind=SpanKind.CLIENT,
                                                start_time=call.start, attributes=attributes)
        if call.error is not None:
            span.set_status(Status(StatusCode.ERROR, type(call.error).__qualname__))
        span.end(end_time=call.end or call.start)

    def requested(self, call: Call) -> dict[str, Any]:
        """A model call's ``gen_ai.request.*`` attributes (a new dict): its model's, read once a run
        (:func:`model_attributes`), with the call's own reply cap and temperature."""
        known = self.models.get(id(call.model))
        if known is None:
            known = self.models[id(call.model)] = {"gen_ai.operation.name": "chat", **model_attributes(call.model)}
        attributes = dict(known)
        for key, value in call.request.items():
            attribute = REQUEST_KEYS.get(key)
            if attribute is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[attribute] = value
        return attributes

    def tool_spans(self, parent: Any, event: NodeEvent, calls: list[Call], end: int) -> None:
        """One ``execute_tool`` span per call of the step under ``parent`` (a context), timed by its runs
        (none: reused, replayed, refused)."""
        for record in event.get("actions") or []:
            runs = self.runs_of(record, calls)
            for run in runs:
                calls.remove(run)
            started_at = runs[0].start if runs else end
            finished_at = max((r.end or end for r in runs), default=end)
            status = str(record.get("status") or "")
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": str(record.get("tool", "")),
                "gen_ai.tool.type": "function", "gen_ai.tool.call.id": str(record.get("id") or ""),
                "reinloop.tool.status": status, "reinloop.tool.attempts": int(record.get("attempts") or 0),
            }
            if self.content:
                attributes["gen_ai.tool.call.arguments"] = as_json(record.get("args") or {})
                attributes["gen_ai.tool.call.result"] = str(record.get("observation") or "")
            if record.get("error"):
                attributes["error.type"] = status or "error"
            span = self.telemetry.tracer.start_span(f"execute_tool {record.get('tool', '')}", context=parent,
                                                    start_time=started_at, attributes=attributes)
            if record.get("error"):
                span.set_status(Status(StatusCode.ERROR, status or "error"))
            span.end(end_time=finished_at)

    @staticmethod
    def runs_of(record: ActionRecord, calls: list[Call]) -> list[Call]:
        """The tool runs (its attempts) behind one call the event reports: those with its call id; for runs
        without one, the first of its tool's by start (none for a call reused, replayed or refused)."""
        if record.get("status") in ("reused", "rejected", "replayed", "unknown", "busy"):
            return []
        wanted = str(record.get("id") or "")
        runs = [c for c in calls if c.call_id and c.call_id == wanted]
        if runs:
            return runs
        return [c for c in calls if not c.call_id and c.name == record.get("tool")][:max(1, int(record.get("attempts") or 0))]

    def guard_attributes(self, event: NodeEvent) -> dict[str, Any]:
        """The guard's decision, its break reason and the counters it judged."""
        attributes: dict[str, Any] = {"reinloop.guard.decision": str(event.get("decision") or "")}
        if event.get("reason"):
            attributes["reinloop.break_reason"] = str(event["reason"])
        if event.get("hints"):
            attributes["reinloop.hints"] = len(event["hints"] or [])
        return attributes

    def end(self, error: BaseException | None = None) -> None:
        """End the invocation's span (and a step left open: a call waiting for approval, a failure)."""
        last = self.last or {}
        self.close_step(unfinished=True)
        decision = last.get("decision") if last.get("node") == "guard" else None
        status = {"finish": "done", "break": "broken", "pause": "paused"}.get(str(decision), "running")
        if last.get("node") == "execute" and (last.get("data") or {}).get("waiting"):
            status = "waiting_for_approval"
        attributes: dict[str, Any] = {"reinloop.status": "error" if error is not None else status,
                                      "gen_ai.usage.input_tokens": self.usage[0],
                                      "gen_ai.usage.output_tokens": self.usage[1]}
        if last.get("reason"):
            attributes["reinloop.break_reason"] = str(last["reason"])
        counters = last.get("counters") or {}
        attributes.update({f"reinloop.counters.{k}": counters[k] for k in COUNTERS if isinstance(counters.get(k), (int, float))})
        self.span.set_attributes(attributes)
        if error is not None:
            self.span.set_attribute("error.type", type(error).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR, type(error).__qualname__))
        self.span.end()


REQUEST_KEYS = {**{name: "gen_ai.request.max_tokens" for name in OUTPUT_CAP_FIELDS}, "temperature": "gen_ai.request.temperature"}
"""A model call's keywords that are request attributes, and their names."""


def model_attributes(model: Any) -> dict[str, Any]:
    """A chat model's name, provider, reply cap and temperature as ``gen_ai.*`` attributes, from LangChain's own
    description of it (its ``ls_*`` tracing parameters), through the bindings around it (``bind_tools``)."""
    while hasattr(model, "bound"):
        model = model.bound
    describe = getattr(model, "_get_ls_params", None)
    try:
        params = dict(describe()) if callable(describe) else {}
    except Exception:  # noqa: BLE001 - a model that cannot describe itself is named by the node's event
        params = {}
    attributes: dict[str, Any] = {}
    if params.get("ls_model_name"):
        attributes["gen_ai.request.model"] = str(params["ls_model_name"])
    if params.get("ls_provider"):
        attributes["gen_ai.provider.name"] = attributes["gen_ai.system"] = str(params["ls_provider"])
    for key, attribute in (("ls_max_tokens", "gen_ai.request.max_tokens"), ("ls_temperature", "gen_ai.request.temperature")):
        if isinstance(params.get(key), (int, float)) and not isinstance(params.get(key), bool):
            attributes[attribute] = params[key]
    return attributes


def reply_attributes(message: Any) -> dict[str, Any]:
    """A model reply's ``gen_ai.response.*`` and ``gen_ai.usage.*`` attributes."""
    usage = getattr(message, "usage_metadata", None) or {}
    meta = getattr(message, "response_metadata", None) or {}
    attributes: dict[str, Any] = {}
    for key, name in (("input_tokens", "gen_ai.usage.input_tokens"), ("output_tokens", "gen_ai.usage.output_tokens")):
        if isinstance(usage.get(key), int):
            attributes[name] = usage[key]
    reason = meta.get("finish_reason") or meta.get("stop_reason")
    if reason:
        attributes["gen_ai.response.finish_reasons"] = [str(reason)]
    if meta.get("model_name"):
        attributes["gen_ai.response.model"] = str(meta["model_name"])
    if getattr(message, "id", None):
        attributes["gen_ai.response.id"] = str(message.id)
    return attributes


ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def message_json(message: Any) -> dict[str, Any]:
    """A LangChain message in the GenAI conventions' message shape: a role and its parts."""
    content = getattr(message, "content", message)
    parts: list[dict[str, Any]] = [{"type": "text", "content": content if isinstance(content, str) else as_json(content)}]
    for call in getattr(message, "tool_calls", None) or []:
        parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")})
    return {"role": ROLES.get(str(getattr(message, "type", "")), str(getattr(message, "type", "user"))), "parts": parts}
