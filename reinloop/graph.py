"""The loop as an explicit LangGraph: six nodes and an approval gate, four routers, one screen.

    START → decide → parse ─┬─ actions → validate ─┬─ run → execute ─┬─ done ─┐
                            │                      └─ refused ───────┼────────┤
                            ├─ answer ───────────────────────────────┼──────→ memorize → guard
                            └─ error ────────────────────────────────┼──────→ ┘           │
                                              approve → execute ←────┘ approve (waits for an operator)
    guard: continue / hint → decide;  finish / break → END;  pause → guard (waits for an operator)

``build_graph`` returns a :class:`ReinloopGraph`: a plain ``CompiledStateGraph``
whose runtime context (model, tools, protocol, limits) is bound at build time,
so callers use LangGraph's own ``invoke``/``stream``/``get_state``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.graph import Graph
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command, Interrupt

from .checkpoints import Database
from .nodes.context import AgentContext
from .observe.drawing import LoopDrawing
from .errors import SettingError
from .observe.events import EventSink, observed
from .models.fallback import ChainModel, chain_models
from .protocols.memory.longterm import resolve_memory
from .protocols.memory.prompt import check_fixed_parts
from .models.resolve import prepare_model, resolve_model
from .tools.approval import APPROVAL_KIND, check_names, read_decisions
from .nodes import (
    approve,
    decide,
    execute,
    guard,
    memorize,
    parse,
    route_after_decide,
    route_after_execute,
    route_after_guard,
    route_after_parse,
    route_after_validate,
    validate,
)
from .nodes.guard import read_resume
from .protocols.output import ANSWER_TOOL, AnswerSchema
from .protocols import OutputProtocol, get_protocol
from .models.pricing import Pricing
from .runs.spec import GROUPS, RunSpec, object_label, protocol_change
from .state import BREAK_KIND, AgentState, InputState
from .tools.catalog import BUILTINS
from .checkpoints.journal import ToolJournal
from .tools.pool import WorkerPool
from .tools.registry import ToolRegistry


class ReinloopGraph(CompiledStateGraph):  # type: ignore[type-arg]
    """A compiled reinloop loop: LangGraph's compiled graph with its context bound."""

    def __init__(self, *, reinloop_context: AgentContext, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reinloop_context = reinloop_context

    def _run_options(self, context: Any, durability: Any) -> dict[str, Any]:
        ctx = context if context is not None else self.reinloop_context
        if isinstance(ctx, Mapping):
            # JSON callers (LangGraph's API server, ``langgraph dev``) send a dict, often the run's
            # configurable mirrored: it can only change the bound context's plain fields.
            plain = {k: v for k, v in ctx.items() if k in ("system_prompt",) and isinstance(v, str)}
            ctx = dataclasses.replace(self.reinloop_context, **plain)
        if isinstance(ctx, AgentContext):
            ctx = dataclasses.replace(ctx, invoked_at=time.time())
        if durability is None and self.checkpointer not in (None, False):
            durability = "sync"  # a hard kill under "async" loses progress
        return {"context": ctx, "durability": durability}

    def _answers_a_break(self, input: Any, config: Any) -> bool:  # noqa: A002
        """True for a resume command on a checkpointed thread (its answer is checked before it is stored)."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        return isinstance(input, Command) and input.resume is not None and self.checkpointer not in (None, False) and bool(thread)

    def _traced(self, input: Any, config: Any, options: dict[str, Any]) -> Any:  # noqa: A002
        """The invocation's trace when telemetry is on (its sink added to ``options``' context), else ``None``."""
        ctx = options["context"]
        telemetry = getattr(ctx, "telemetry", None)
        if telemetry is None:
            return None
        run = telemetry.begin(self, input, config)
        options["context"] = dataclasses.replace(ctx, sinks=(*ctx.sinks, run.on_event),
                                                 call_hooks=(*ctx.call_hooks, run.recorder))
        return run

    def _record_spec(self, input: Any, config: Any) -> None:  # noqa: A002
        """Store the run's spec with a new task on a reinloop checkpointer's thread that has none yet (a
        graph built in Python: ``reinloop runs show`` and ``resume`` read how it was made, not defaults)."""
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        runs = getattr(getattr(self.checkpointer, "db", None), "runs", None)
        spec = getattr(self.reinloop_context, "spec", None)
        if not thread or runs is None or spec is None or not isinstance(input, Mapping) or "task" not in input:
            return
        record = runs.get(str(thread))
        if record is None or (record.spec is None and record.model is None):
            runs.record_spec(str(thread), spec)

    def stream(self, input: Any, config: Any = None, *, context: Any = None, durability: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """LangGraph's ``stream``, with the bound context and durable checkpoints by default (traced with telemetry on)."""
        self._record_spec(input, config)
        if self._answers_a_break(input, config):
            check_answer(input.resume, self.get_state(config).interrupts, self.reinloop_context)
        options = self._run_options(context, durability)
        run = self._traced(input, config, options)
        if run is None:
            return super().stream(input, config, **options, **kwargs)
        return run.follow(super().stream(input, run.config(config), **options, **kwargs))

    async def astream(self, input: Any, config: Any = None, *, context: Any = None, durability: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        """LangGraph's ``astream``, with the bound context and durable checkpoints by default (traced with telemetry on)."""
        self._record_spec(input, config)
        if self._answers_a_break(input, config):
            check_answer(input.resume, (await self.aget_state(config)).interrupts, self.reinloop_context)
        options = self._run_options(context, durability)
        run = self._traced(input, config, options)
        chunks = super().astream(input, config if run is None else run.config(config), **options, **kwargs)
        async for chunk in chunks if run is None else run.afollow(chunks):
            yield chunk

    def with_output(self, result: Any) -> Any:
        """``result`` with its structured answer as the model instance (``RunSpec.output``; the state keeps JSON)."""
        schema = self.reinloop_context.output
        if schema is None or not isinstance(result, dict) or not isinstance(result.get("output"), dict):
            return result
        return {**result, "output": schema.instance(result["output"])}

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        """LangGraph's ``invoke``; the structured answer (``output``) comes back as the model instance."""
        return self.with_output(super().invoke(*args, **kwargs))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        """LangGraph's ``ainvoke``; the structured answer (``output``) comes back as the model instance."""
        return self.with_output(await super().ainvoke(*args, **kwargs))

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> LoopDrawing:
        """LangGraph's drawable graph, with every route name on its edge; ``draw_ascii`` and ``draw_png`` work on it."""
        drawn = label_edges(super().get_graph(config, xray=xray))
        return LoopDrawing(nodes=drawn.nodes, edges=drawn.edges)


def check_answer(resume: Any, pending: Sequence[Interrupt], context: AgentContext) -> None:
    """Refuse a malformed answer to a pending break or approval (an edit the tool's schema refuses)
    before LangGraph stores it."""
    for item in pending:
        kind = item.value.get("kind") if isinstance(item.value, dict) else None
        answer = resume.get(item.id, resume) if isinstance(resume, dict) else resume
        if kind == BREAK_KIND:
            read_resume(answer)
        elif kind == APPROVAL_KIND:
            read_decisions(answer, item.value.get("calls") or [], context.tools.validate_args)


class Untraced(RunnableLambda):
    """A router as an edge LangGraph calls without tracing it, as ``create_agent``'s edges are.

    A plain function would be wrapped in a traced runnable that opens a child run per call; this one
    calls the router and nothing else (LangGraph's own untraced wrapper is private). It stays a
    ``RunnableLambda`` so LangGraph still reads the router's annotation: each router reads only its channel.
    """

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        return self.func(input)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:  # noqa: A002
        return self.func(input)


ROUTES: dict[str, tuple[Any, dict[str, str]]] = {
    "decide": (route_after_decide, {"reply": "parse", "not_called": "guard"}),
    "parse": (route_after_parse, {"actions": "validate", "answer": "memorize", "error": "memorize"}),
    "validate": (route_after_validate, {"run": "execute", "refused": "memorize"}),
    "execute": (route_after_execute, {"done": "memorize", "approve": "approve"}),
    "guard": (
        route_after_guard,
        {"continue": "decide", "hint": "decide", "finish": END, "break": END, "pause": "guard"},
    ),
}
"""The conditional edges: source node -> (router, path map of route -> target)."""


def wire(builder: StateGraph) -> StateGraph:  # type: ignore[type-arg]
    """Add the six nodes, the approval gate and their edges to ``builder``."""
    for node in (decide, parse, validate, execute, approve, memorize, guard):
        builder.add_node(node.__name__, observed(node))  # timed; its event published when it returns
    builder.add_edge(START, "decide")
    builder.add_edge("approve", "execute")
    builder.add_edge("memorize", "guard")
    for source, (router, path_map) in ROUTES.items():
        # untraced, as create_agent's edges: a plain function would open a traced child run per call
        builder.add_conditional_edges(source, Untraced(router), path_map)
    return builder


def label_edges(graph: Graph) -> Graph:
    """Label each conditional edge with every route that takes it ("continue / hint")."""
    for i, edge in enumerate(graph.edges):
        if edge.source in ROUTES:
            routes = [r for r, target in ROUTES[edge.source][1].items() if target == edge.target]
            graph.edges[i] = edge._replace(data=" / ".join(routes) or edge.data)
    return graph


def telemetry_for(spec: RunSpec, provider: Any, agent: str) -> Any:
    """The runs' telemetry when ``spec.telemetry`` is on (OpenTelemetry is imported then only), else ``None``."""
    if not spec.telemetry:
        return None
    from .observe.telemetry import Telemetry

    return Telemetry.of(spec, provider, agent)


def open_journal(journal: ToolJournal | Database | str | os.PathLike[str] | None, checkpointer: Checkpointer) -> ToolJournal | None:
    """The side-effects journal: the one given, a database's, one at a path; else, when runs can resume, the
    checkpointer's own run database (reinloop's savers, writable), or one in memory (another saver)."""
    if isinstance(journal, ToolJournal):
        return journal
    if journal is not None:  # a run database (or a path to one): its tool_journal table
        return ToolJournal(journal)
    if checkpointer in (None, False):
        return None
    db = getattr(checkpointer, "db", None)
    if isinstance(db, Database) and not db.read_only:
        return db.journal  # at most once across processes too, as the checkpoints themselves
    return ToolJournal(":memory:")


def build_graph(
    model: str | BaseChatModel,
    tools: Sequence[BaseTool] | ToolRegistry = (),
    *,
    spec: RunSpec | None = None,
    checkpointer: Checkpointer = None,
    journal: ToolJournal | Database | str | os.PathLike[str] | None = None,
    sinks: Sequence[EventSink] = (),
    name: str = "reinloop",
    tracer_provider: Any = None,
    **changes: Any,
) -> ReinloopGraph:
    """Build the guarded agent loop for ``model`` and ``tools``.

    ``model`` is a LangChain chat model or an ``init_chat_model`` string
    (``"openai:gpt-4o-mini"``, with ``base_url=`` for OpenAI-compatible
    servers). How the run is made is a :class:`~reinloop.RunSpec`: ``spec``,
    with ``changes`` to its fields (:meth:`RunSpec.replace`), e.g.
    ``limits=Limits(max_steps=5)``, ``protocol="json"`` (or an
    :class:`~reinloop.protocols.OutputProtocol`), ``retry=RetryPolicy(...)``,
    ``memory=Memory(...)``, ``system_prompt=``, ``tool_detail="compact"``
    (tool schemas shown as signatures, see :mod:`reinloop.tools.detail`),
    ``max_output_tokens=`` (``None``: the provider's default; a reply the cap
    cut off is never used, see :mod:`reinloop.models.resolve`).
    ``sinks`` receive every node's event (e.g. ``[RunLog("reinloop.db")]``).
    Invoke the result like any LangGraph graph::

        graph.invoke({"task": "..."}, {"configurable": {"thread_id": "t1"}})

    ``journal`` (a :class:`~reinloop.tools.ToolJournal` such as ``db.journal``, a run
    database or a SQLite path) records side-effecting tool calls so a resumed
    run never repeats one; by default, with reinloop's checkpointer, they are
    journaled in its run database (so across processes), and with another
    checkpointer in memory, which guards resumes within this process only.

    With ``telemetry=True`` the runs are OpenTelemetry spans (:mod:`reinloop.observe.telemetry`), sent to
    ``tracer_provider``, else to the global provider, else over OTLP/HTTP.
    """
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    if changes.get("tool_detail") is None and spec is None:
        changes["tool_detail"] = registry.detail  # a registry's own detail is kept when none is asked
    protocol = changes.pop("protocol", None)
    if protocol is not None:
        changes.update({"protocol": protocol} if isinstance(protocol, str) else protocol_change(protocol))
    changes = {k: v for k, v in changes.items() if not (v is None and k in GROUPS)}
    given_model = None if isinstance(model, str) else model
    changes["model"] = model if isinstance(model, str) else object_label(model)
    fallbacks = changes.get("fallback_models")
    fallbacks = [fallbacks] if fallbacks is not None and not isinstance(fallbacks, (list, tuple)) else fallbacks or []
    if fallbacks:  # chat model objects are passed beside the spec, which names them
        changes["fallback_models"] = [m if isinstance(m, str) else object_label(m) for m in fallbacks]
    changes["tools"] = tuple(registry.names())
    spec = (spec or RunSpec()).replace(**changes)
    if spec.mcp is not None:  # the graph has no end to close connections at: the caller owns them
        raise SettingError("RunSpec", "mcp", "connect with reinloop.tools.mcp(config) and pass [*tools, *mcp_tools] "
                           "(close them when done)", shown=False, sentence="build_graph takes tool objects, not {setting}: {reason}")
    chat_model = given_model or resolve_model(spec.model, base_url=spec.base_url, timeout=spec.retry.timeout)
    return graph_for(spec, chat_model, registry, protocol=protocol if not isinstance(protocol, str) else None,
                     checkpointer=checkpointer, journal=journal, sinks=sinks, name=name,
                     fallbacks=[m for m in fallbacks if not isinstance(m, str)], tracer_provider=tracer_provider)


def graph_for(
    spec: RunSpec,
    chat_model: BaseChatModel,
    tools: Sequence[BaseTool] | ToolRegistry,
    *,
    protocol: OutputProtocol | None = None,
    checkpointer: Checkpointer = None,
    journal: ToolJournal | Database | str | os.PathLike[str] | None = None,
    sinks: Sequence[EventSink] = (),
    name: str = "reinloop",
    fallbacks: Sequence[BaseChatModel] = (),
    tracer_provider: Any = None,
) -> ReinloopGraph:
    """The loop as ``spec`` says, on a built chat model and tool objects (``protocol``: an object instead of the
    spec's name; ``fallbacks``: the chat model objects ``spec.fallback_models`` names, in order)."""
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    registry = registry.with_detail(spec.tool_detail)  # type: ignore[arg-type]
    check_names(spec.approve, registry.names(), list(BUILTINS))  # a misspelt name must not turn approvals off
    output = AnswerSchema.of(spec.output)
    if output is not None and ANSWER_TOOL in registry.names():
        raise SettingError("RunSpec", "output", "rename the tool", shown=False,
                           sentence=f"a tool is named {ANSWER_TOOL!r}, the name of the structured answer's tool ({{setting}}); {{reason}}")
    answer_tool = output.tool() if output is not None else None
    proto, llm = prepare_model(chat_model, get_protocol(protocol or spec.protocol), registry, answer_tool)
    context = AgentContext(
        model=chat_model,
        llm=llm,
        tools=registry,
        protocol=proto,
        limits=spec.limits,
        system_prompt=spec.system_prompt,
        retry=spec.retry,
        journal=open_journal(journal, checkpointer),
        memory=resolve_memory(spec.memory, resolve_model),
        sinks=tuple(sinks),
        workers=WorkerPool(spec.limits.tool_workers),
        spec=spec,
        pricing=Pricing.of(spec.prices, spec.local_is_free),
        output=output,
        fallbacks=tuple(ChainModel.prepared(m, get_protocol(protocol or spec.protocol), registry, answer_tool)
                        for m in chain_models(spec.fallback_models, fallbacks, spec.retry.timeout)),
        telemetry=telemetry_for(spec, tracer_provider, name),
    )
    check_fixed_parts(context)
    builder = wire(StateGraph(AgentState, context_schema=AgentContext, input_schema=InputState))
    compiled = builder.compile(checkpointer=checkpointer, name=name)
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return ReinloopGraph(reinloop_context=context, **attrs)
