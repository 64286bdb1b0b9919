"""decide: assemble the prompt and ask the model what to do next.

The first call of a run also starts it: counters reset, the clock starts. A
new task on a thread whose last run was cut off (its process died) first
closes that run as ``interrupted``.
Hints left by the guard or an operator are shown once and then cleared.
The memory work (dedup, folding old steps into the summary, recall, the
token budget) happens in :func:`reinloop.protocols.memory.prepare_prompt`; its
summarizer calls are counted with the model call, against the same budget.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.runtime import Runtime

from ..protocols.answers import NEXT_STEP_CUE
from ..tools.bounds import bounded_message, token_count
from .context import AgentContext
from ..errors import ModelCallError
from ..observe.events import emit
from ..models.fallback import Fallback, fallback_reason, refusal_problem, refusal_reason
from ..observe.location import locate
from ..protocols.memory.explain import event_line
from ..protocols.memory.feedback import prepare_step, prompt_digest
from ..protocols.memory.manager import Prepared, new_cursor
from ..protocols.memory.tokens import estimate_tokens, message_text
from ..protocols.memory.wrapup import results_prompt, wrap_up_prompt
from ..models.resolve import endpoint_host, finish_reason, invoke_model, is_truncated, model_label, prepare_model
from ..models.pricing import CallCost, CallOverBudget, add_cost, call_budget, usage_as_priced
from ..protocols.auto import ProtocolSwitch
from ..protocols.repeats import VARY_TEMPERATURE, known_repeat, refused_repeat, vary_repeat
from ..tools.registry import ToolRegistry
from ..state import AgentState, Counters, Reply, ReplyView, Turn, new_counters, new_extensions
from .memorize import build_step

logger = logging.getLogger(__name__)


def begin_run(state: AgentState) -> dict[str, Any]:
    """The state of a fresh run on this thread."""
    now = time.time()
    return {
        "run_task": state["task"],
        "run": state.get("run", 0) + 1,
        "counters": new_counters(),
        "extensions": new_extensions(),
        "started_at": now,
        "tick": now,
        "status": "running",
        "answer": None,
        "break_reason": None,
        "break_message": None,
        "decision": None,
        "hints": [],
        "summary": "",
        "memory_cursor": new_cursor(),
        "wrap_up": None,
        "wrapped_up": None,
        "output": None,
        "invalid_output": None,
        "model_index": 0,  # a new task starts on the primary model again (reinloop.fallback)
        "history": history_with_summary(state),
    }


def close_cut_off_run(state: AgentState) -> dict[str, Any]:
    """Close a run whose process died, when a new task arrives on its thread.

    The step it was in (if the model had replied) is recorded with an
    interrupted result for each call that has none, and the run goes to the
    thread's history as ``interrupted``.
    """
    update: dict[str, Any] = {}
    if state.get("reply") or state.get("pending"):
        update["scratchpad"] = [build_step(state)]
    turn = Turn(task=state.get("run_task") or state["task"], answer=None, status="interrupted")
    update["history"] = [*(state.get("history") or []), turn]
    return update


def start(state: AgentState) -> dict[str, Any]:
    """The update that starts a run, or nothing when the current run goes on."""
    status = state.get("status")
    if status == "running" and state.get("run_task", state.get("task")) == state.get("task"):
        return {}
    closed: dict[str, Any] = {}
    if status == "running":  # the last run's process died
        closed = close_cut_off_run(state)
    elif state.get("decision") == "pause":  # a new task instead of an answer to the break
        turn = Turn(task=state.get("run_task") or state["task"], answer=None, status="broken")
        closed = {"history": [*(state.get("history") or []), turn]}
    return {**closed, **begin_run({**state, **closed})}  # type: ignore[typeddict-item]


def history_with_summary(state: AgentState) -> list[Turn]:
    """The thread's history, the last run's running summary kept with its turn."""
    turns = list(state.get("history") or [])
    if turns and state.get("summary") and "summary" not in turns[-1]:
        turns[-1] = {**turns[-1], "summary": state["summary"]}
    return turns


def to_reply(message: BaseMessage, prepared: Prepared, hints: list[str]) -> Reply:
    """The parts of a model message the next nodes need, as plain data that can be stored.

    The reply is checkpointed before it is parsed, so it is bounded first
    (:func:`~reinloop.tools.bounds.bounded_message`): a call whose arguments could
    not be stored becomes an invalid call, and the model is told why.
    """
    text, calls, invalid = bounded_message(message)
    ai = AIMessage(content=text, tool_calls=calls)
    if not isinstance(message.content, str):
        text = message_text(ai)  # content blocks are read as JSON text, with the calls
    usage = getattr(message, "usage_metadata", None) or {}
    reason = finish_reason(message)
    return Reply(
        text=text,
        finish_reason=reason,
        truncated=is_truncated(reason),
        tool_calls=calls,
        invalid_tool_calls=invalid,
        prompt_tokens=token_count(usage.get("input_tokens")) or prepared.parts["total"],
        completion_tokens=token_count(usage.get("output_tokens")) or estimate_tokens(message_text(ai)),
        hints=list(hints),
        prompt_parts=prepared.parts,
        memory=prepared.events,
    )


ASIDE_FIELDS = ("text", "finish_reason", "tool_calls", "invalid_tool_calls", "prompt_tokens", "completion_tokens")
"""What is stored of a reply put aside: enough for :mod:`reinloop.runs.replay` to serve it again in its place."""


def put_aside(message: BaseMessage, prepared: Prepared) -> dict[str, Any]:
    """A reply put aside by a re-ask, as plain bounded data (:func:`to_reply`'s, without this step's prompt parts)."""
    reply = to_reply(message, prepared, [])
    return {key: reply[key] for key in ASIDE_FIELDS}  # type: ignore[literal-required]


def add_usage(c: Counters, reply: Reply, prepared: Prepared) -> Counters:
    """Counters after the model call and any summarizer calls before it, their cost included."""
    calls = reply.get("cost") or []
    models = dict(c.get("models") or {})
    for call in calls:
        models = add_cost(models, call)
    return {
        **c,
        "llm_calls": c["llm_calls"] + 1 + prepared.calls,
        "prompt_tokens": c["prompt_tokens"] + reply["prompt_tokens"] + prepared.prompt_tokens,
        "completion_tokens": c["completion_tokens"] + reply["completion_tokens"] + prepared.completion_tokens,
        "cost_usd": float(c.get("cost_usd", 0.0)) + sum(call["usd"] or 0.0 for call in calls),
        "cached_tokens": int(c.get("cached_tokens", 0)) + sum(call["cached_tokens"] for call in calls),
        "unpriced_calls": int(c.get("unpriced_calls", 0)) + sum(call["usd"] is None for call in calls),
        "models": models,
    }


def price_step(ctx: AgentContext, message: BaseMessage, prepared: Prepared) -> list[CallCost]:
    """The step's model calls priced: the agent's, then the summarizer's."""
    memory = getattr(ctx, "memory", None)
    summarizer = memory.summarizer if memory is not None and memory.summarizer is not None else ctx.model
    prompt = prepared.parts["total"]  # reinloop's own count of the request: the reported usage is checked against it
    return [ctx.pricing.price(message, ctx.model, prompt), *(ctx.pricing.price(r, ctx.model, prompt) for r in prepared.aside),
            *(ctx.pricing.price(r, summarizer) for r in prepared.replies)]


def wrap_up_call(ctx: AgentContext, state: AgentState) -> tuple[BaseMessage, Prepared]:
    """The stuck run's one call for its answer: the model without tools, the task and every result."""
    protocol, _ = ctx.active(state)
    messages, tokens = wrap_up_prompt(state, ctx, protocol.name)
    prepared = Prepared(messages=messages, parts={"wrap_up": tokens, "total": tokens})
    message = invoke_model(ctx, ctx.model, messages, lambda: ctx.seconds_left(state, time.time()),
                           step=state["counters"]["steps"] + 1)
    return message, prepared


def varied(ctx: AgentContext, state: AgentState, llm: Any, protocol: Any, prepared: Prepared,
           message: BaseMessage) -> BaseMessage:
    """``message``, or a re-ask with sampling when it repeats the run (:mod:`reinloop.protocols.repeats`); the replies
    put aside are counted on ``prepared`` and leave a ``resampled`` memory event."""
    kept, aside, repeat = vary_repeat(
        message, state=state, protocol=protocol, read=lambda m: to_reply(m, prepared, []),
        ask_again=lambda options: invoke_model(ctx, llm, prepared.messages,
                                               lambda: ctx.seconds_left(state, time.time()), options,
                                               step=state["counters"]["steps"] + 1),
        step=state["counters"]["steps"] + 1)
    count_aside(prepared, aside)
    if aside:
        prepared.events.append({"event": "resampled", "asks": len(aside), "temperature": VARY_TEMPERATURE,
                                "changed": not repeat})
    return kept


REFUSAL_CHARS = 300
"""How much of an earlier refusal the re-ask of a refused call quotes."""


def withheld(ctx: AgentContext, state: AgentState, protocol: Any, prepared: Prepared, message: BaseMessage) -> BaseMessage:
    """``message``, or when it repeats a read-only call whose result the run has, or a call the loop refused,
    a greedy re-ask with that tool withheld (:mod:`reinloop.protocols.repeats`); the reply put aside is counted and
    leaves a ``withheld`` event."""
    reply = to_reply(message, prepared, [])
    tool = known_repeat(state, protocol, reply, ctx.tools)
    if tool is not None:
        why, event = f"{tool} gave its result already (above).", {"event": "withheld", "tool": tool}
    elif (refused := refused_repeat(state, protocol, reply, ctx.tools)) is not None:
        tool, problem = refused
        problem = problem.split(" Expected: ")[0]  # the why, without the schema sketch the model copied from
        problem = problem if len(problem) <= REFUSAL_CHARS else problem[:REFUSAL_CHARS - 1] + "…"
        why, event = f"{tool} refused that call already: {problem}", {"event": "withheld", "tool": tool, "reason": "refused"}
    else:
        return message
    return narrowed(ctx, state, protocol, prepared, message, [t for t in ctx.tools.names() if t != tool],
                    f"{why} {NEXT_STEP_CUE}", event)


def narrowed(ctx: AgentContext, state: AgentState, protocol: Any, prepared: Prepared, message: BaseMessage,
             offered: list[str], question: str, event: dict[str, Any]) -> BaseMessage:
    """A greedy re-ask in a fresh prompt (the system message offering only ``offered`` tools, the task, the
    run's results, ``question``, and in a text protocol a reminder of the format); ``message`` is put aside and
    counted, and ``event`` is recorded. ``message`` itself when the system message cannot be narrowed."""
    fewer = ToolRegistry([t for t in ctx.tools if t.name in offered], detail=ctx.tools.detail)
    system = prepared.messages[0] if prepared.messages else None
    if protocol.native_tools:
        _, llm = prepare_model(ctx.model, protocol, fewer, ctx.output.tool() if ctx.output is not None else None)
    else:  # the listing is in the system message: the same one, with only the offered tools' entries
        llm, listing = ctx.model, ctx.tools.describe()
        if system is None or listing not in str(system.content):
            return message
        system = system.model_copy(update={"content": str(system.content).replace(listing, fewer.describe())})
    if system is None or not isinstance(system, SystemMessage):
        return message
    ending = "" if protocol.native_tools else " Reply following the required format exactly."
    messages, _ = results_prompt(state, ctx, system, question + ending)
    again = invoke_model(ctx, llm, messages, lambda: ctx.seconds_left(state, time.time()),
                         step=state["counters"]["steps"] + 1)
    count_aside(prepared, [message])
    prepared.events.append(event)
    return again


def count_aside(prepared: Prepared, aside: list[BaseMessage]) -> None:
    """Count replies put aside on ``prepared``: calls and tokens, and the replies to price."""
    for reply in aside:
        usage = getattr(reply, "usage_metadata", None) or {}
        prepared.calls += 1
        prepared.prompt_tokens += token_count(usage.get("input_tokens")) or prepared.parts["total"]
        prepared.completion_tokens += token_count(usage.get("output_tokens")) or estimate_tokens(message_text(reply))
    prepared.aside.extend(aside)


def ask(ctx: AgentContext, state: AgentState) -> tuple[BaseMessage, Prepared, dict[str, Any], list[str],
                                                      ProtocolSwitch | None]:
    """Prepare the prompt and call the model; returns the reply, the prompt, a protocol switch (as a state update),
    the hints shown, and the switch as recorded."""
    if state.get("wrap_up"):
        message, prepared = wrap_up_call(ctx, state)
        return message, prepared, {}, [], None
    protocol, llm = ctx.active(state)
    prepared, hints = prepare_step(state, replace(ctx, protocol=protocol, llm=llm), locate().thread_id)
    try:
        message = invoke_model(ctx, llm, prepared.messages, lambda: ctx.seconds_left(state, time.time()),
                               step=state["counters"]["steps"] + 1)
        if ctx.answers.vary_repeats:
            message = varied(ctx, state, llm, protocol, prepared, message)
            message = withheld(ctx, state, protocol, prepared, message)
        return message, prepared, {}, hints, None
    except ModelCallError as exc:
        moved_to = ctx.protocol.after_rejection(protocol, exc)  # auto: an endpoint that refuses tools
        if moved_to is None:
            raise
        record = ProtocolSwitch(from_protocol="tool_calling", to_protocol=moved_to, reason="tools_unsupported",
                                problem=exc.problem)
    switched = {"protocol": moved_to}
    message, prepared, _, hints, _ = ask(ctx, {**state, **switched})  # type: ignore[typeddict-item]
    return message, prepared, switched, hints, record


@dataclass
class Answered:
    """A step's model call as it ended: the reply, its prompt, the state it changes, and the model that answered."""

    message: BaseMessage
    prepared: Prepared
    switched: dict[str, Any]  # the protocol auto moved to, the model the run moved to
    hints: list[str]
    ctx: AgentContext  # the context on the model that answered
    fallbacks: list[Fallback] = field(default_factory=list)
    refused: list[CallCost] = field(default_factory=list)  # replies of models that refused, priced
    protocol_switch: ProtocolSwitch | None = None  # auto moved the answering model to another protocol


def ask_models(ctx: AgentContext, state: AgentState) -> Answered:
    """:func:`ask` the run's model; a failure or refusal the next model may get round moves the run on to it."""
    index = state.get("model_index") or 0
    on = ctx.on_model(index)
    last = index >= len(ctx.fallbacks)
    try:
        message, prepared, switched, hints, record = ask(on, state)
    except ModelCallError as exc:
        protocol, _ = on.active(state)  # auto's own retry without tools failed: then the failed request had none
        tools_sent = protocol.native_tools and on.protocol.after_rejection(protocol, exc) is None
        reason = None if last else fallback_reason(exc, tools_sent)
        if reason is None:
            raise
        problem, refused = exc.problem, []
    else:
        reason = None if last else refusal_reason(message)
        if reason is None:
            return Answered(message, prepared, switched, hints, on, protocol_switch=record)
        problem, refused = refusal_problem(message), [on.pricing.price(message, on.model, prepared.parts["total"])]
    moved = {"model_index": index + 1, "protocol": None}  # the next model starts with the run's protocol afresh
    fallback = Fallback(from_model=model_label(on.model), to_model=model_label(ctx.on_model(index + 1).model),
                        reason=reason, problem=problem)
    logger.warning("model %s: %s (%s); moving on to %s", fallback["from_model"], reason, problem, fallback["to_model"])
    answered = ask_models(ctx, {**state, **moved})  # type: ignore[typeddict-item]
    return replace(answered, switched={**moved, **answered.switched}, fallbacks=[fallback, *answered.fallbacks],
                   refused=[*refused, *answered.refused])


def decide(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Call the model once with the prompt built from the state."""
    ctx = runtime.context
    update = start(state)
    view: AgentState = {**state, **{k: v for k, v in update.items() if k != "scratchpad"}}  # type: ignore[typeddict-item]
    try:
        with call_budget(ctx.limits.effective_cost(view["extensions"]), float(view["counters"].get("cost_usd", 0.0))):
            answered = ask_models(ctx, view)
    except CallOverBudget as refused:  # the guard breaks the run on cost_budget
        emit(runtime, "decide", f"step {view['counters']['steps'] + 1}: {refused}", step=view["counters"]["steps"] + 1)
        counters = {**view["counters"], "refused_call": refused.record(view["counters"]["llm_calls"])}
        return {**update, "reply": None, "pending": None, "counters": counters}
    message, prepared, on = answered.message, answered.prepared, answered.ctx
    update.update(answered.switched)
    for event in prepared.events:
        emit(runtime, "memory", event_line(event), **event)
    reply = to_reply(message, prepared, answered.hints)
    protocol, _ = ctx.active({**view, **answered.switched})
    reply.update(model=model_label(on.model), protocol="tool_calling" if protocol.native_tools else protocol.name)
    if answered.fallbacks:
        reply["fallbacks"] = answered.fallbacks
    if prepared.aside:
        reply["aside"] = [put_aside(m, prepared) for m in prepared.aside]
    reply["cost"] = [*answered.refused, *price_step(on, message, prepared)]
    reply.update(usage_as_priced(reply["cost"][len(answered.refused)]))  # the tokens priced, when the usage was not believed
    c = view["counters"]
    counters = add_usage(c, reply, prepared)
    counters["llm_calls"] += len(answered.refused)  # a refusing model's reply is paid for: its tokens count too
    counters["prompt_tokens"] += sum(call["input_tokens"] for call in answered.refused)
    counters["completion_tokens"] += sum(call["output_tokens"] for call in answered.refused)
    wrapping = view.get("wrap_up")
    emit(
        runtime,
        "decide",
        (f"step {c['steps'] + 1}: wrap-up call without tools, for the answer in hand ({wrapping['reason']}); "
         if wrapping else f"step {c['steps'] + 1}: ") + f"model replied ({reply['prompt_tokens']} prompt tokens, "
        f"{len(reply['tool_calls'])} tool calls)" + "".join(f"; cost unknown: {call['problem']}"
                                                         for call in reply["cost"] if call.get("problem"))
        + "".join(f"; {f['from_model']} failed ({f['reason']}): moved on to {f['to_model']}" for f in answered.fallbacks)
        + (f"; {moved['from_protocol']} refused ({moved['reason']}): moved on to {moved['to_protocol']}"
           if (moved := answered.protocol_switch) else ""),
        step=c["steps"] + 1,
        tokens_in=reply["prompt_tokens"],
        tokens_out=reply["completion_tokens"],
        cost=reply["cost"],
        prompt_parts=prepared.parts,
        counter=prepared.counter,
        task=view["task"] if "run" in update else None,  # a new task starts: say which
        model=reply["model"],
        protocol=reply["protocol"],
        fallbacks=answered.fallbacks or None,
        protocol_switch=answered.protocol_switch,
        endpoint=endpoint_host(on.model),  # the host only: reports show it, credentials never reach an event
    )
    return {**update, **prepared.update, "reply": reply, "hints": [], "pending": None, "counters": counters,
            "prompt_digest": prepared.digest or prompt_digest(prepared.messages)}


def route_after_decide(state: ReplyView) -> Literal["reply", "not_called"]:
    """A reply is parsed; a call not made (its estimate crossed the cost budget) goes to the guard."""
    return "reply" if state.get("reply") is not None else "not_called"
