"""execute: run the validated tool calls and attach their observations.

Invalid calls are skipped here (memorize turns their problem into their
observation). A call that repeats an earlier successful call of the run, to
a tool declared ``cacheable`` (its result depends only on its arguments:
:class:`~reinloop.tools.ToolOptions`), is not run again: it observes the
earlier result, with a note naming the step it came from and why it was
reused, and the action records that step (``reused``). A side-effecting call
in between makes the earlier result stale, and the call runs. Any other tool
runs at every call, however often it is repeated: a second reading of a
sensor, a job's status or a clock is a new reading. The calls themselves go through
:class:`~reinloop.tools.executor.ToolExecutor`: timeouts, retries,
pseudo-success checks, the side-effects journal and parallel runs all live
there; this node only places the step in its thread (for the journal), gives
the executor the run's deadline (what is left of ``max_seconds``: no call
starts or is waited for past it) and reports each call as an event. Whatever
a tool does, the loop goes on, and the guard breaks the run as ``timeout``
once its time is spent.

A call that needs an operator's approval (:mod:`reinloop.tools.approval`) is not
run: it is marked ``awaiting`` and the route goes to :mod:`.approve`, which
pauses the run; the other calls of the step run now and keep their results.
After the decisions this node runs again for the approved calls only, and
journals them whatever their tool, so an approved call runs at most once.
"""

from __future__ import annotations


import time
from typing import Any, Literal

from langgraph.runtime import Runtime

from ..tools.approval import approval_id, approval_reason, rejected_observation
from .context import AgentContext
from ..observe.events import ActionRecord, emit
from ..observe.location import locate
from ..protocols.memory.ledger import earlier_result, reused_observation
from ..protocols.memory.window import current_steps
from ..state import Action, AgentState, PendingView
from ..tools.executor import Place, ToolCall, ToolExecutor
from ..tools.options import options_of
from ..tools.registry import string_values
from .guard import can_pause


def place_of(state: AgentState) -> Place:
    """The thread, run and step the current calls belong to (outside a graph run: no thread, nothing to journal)."""
    here = locate(state)
    return Place(thread_id=here.thread_id, run=here.run, step=here.step)


def reuse_known_results(state: AgentState, ctx: AgentContext, actions: list[Action]) -> dict[int, ActionRecord]:
    """Answer repeated calls of cacheable tools from their earlier result, in place; their event records by position.

    Only a tool that declares itself ``cacheable`` is answered so: purity is declared, never assumed.
    """

    world_changers = {tool.name for tool in ctx.tools if options_of(tool).side_effects}
    cacheable = {tool.name for tool in ctx.tools if options_of(tool).cacheable}
    steps = current_steps(state)
    records: dict[int, ActionRecord] = {}
    for i, action in enumerate(actions):
        if not undone(action) or action["tool"] not in cacheable:
            continue
        known = earlier_result(steps, action["tool"], action.get("args") or {}, world_changers)
        if known is not None:
            actions[i] = {**action, "observation": reused_observation(known), "error": False, "reused": known["step"]}
            records[i] = ActionRecord(id=action.get("id") or "", tool=action["tool"], args=action.get("args") or {},
                                      observation=actions[i]["observation"], error=False, status="reused",
                                      attempts=0, latency_ms=0.0)
    return records


def undone(action: Action) -> bool:
    """A valid call with no result yet (not reused, not rejected or answered by the operator)."""
    return not action.get("problem") and "reused" not in action and action.get("observation") is None


def gate(state: AgentState, ctx: AgentContext, actions: list[Action]) -> dict[int, ActionRecord]:
    """Hold the calls that need an operator's approval (``awaiting``), in place; the thread's "always" decides at once.

    Without a checkpointer a run cannot wait: such a call is not run, and says so.
    """
    remembered = state.get("approvals") or {}
    here = place_of(state)
    records: dict[int, ActionRecord] = {}
    for i, action in enumerate(actions):
        if not undone(action) or action.get("approval"):
            continue
        tool = ctx.tools.get(action["tool"])
        assert tool is not None  # validate checked it
        options = options_of(tool)
        reason = approval_reason(tool.name, options.approval, action.get("args") or {}, ctx.spec.approve,
                                 options.side_effects)
        if reason is None:
            continue
        action = {k: v for k, v in action.items() if k not in ("awaiting", "approval_id")}  # type: ignore[assignment]
        always = remembered.get(tool.name)
        if always == "approve":
            actions[i] = {**action, "approval": {"action": "approve", "by": "always", "reason": reason}}
        elif always == "reject":
            message = f"{tool.name} is always rejected in this thread"
            actions[i] = {**action, "observation": rejected_observation(tool.name, message), "error": False,
                          "approval": {"action": "reject", "by": "always", "reason": reason, "message": message}}
        elif can_pause():  # a checkpointer: the run can wait for the operator
            # the operator decides it by an id reinloop makes, bound to this one call: never the model's id
            bound = approval_id(here.thread_id, here.step, i, tool.name, action.get("args") or {}, here.run)
            actions[i] = {**action, "awaiting": reason, "approval_id": bound}
            continue
        else:
            actions[i] = {**action, "error": True, "observation": f"ERROR: {tool.name} was not run: it needs an "
                          f"operator's approval ({reason}), and this run cannot wait for one (it has no checkpointer)"}
        if actions[i].get("observation") is not None:
            records[i] = ActionRecord(id=action.get("id") or "", tool=tool.name, args=action.get("args") or {},
                                      observation=actions[i]["observation"], error=bool(actions[i].get("error")),
                                      status="rejected", attempts=0, latency_ms=0.0)
    return records


def route_after_execute(state: PendingView) -> Literal["approve", "done"]:
    """Wait for the operator if a call needs approval; else record the step."""
    actions = (state.get("pending") or {}).get("actions") or []
    return "approve" if any(a.get("awaiting") for a in actions) else "done"


def execute(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run each valid call and attach its observation, in the model's order; calls that need approval wait.

    After the operator's decisions (:mod:`.approve`) the node runs again: what ran before keeps its result,
    and the approved calls run, journaled, so none runs twice whatever crashes.
    """
    ctx = runtime.context
    pending = state["pending"] or {}
    actions: list[Action] = list(pending.get("actions") or [])
    by_position = reuse_known_results(state, ctx, actions)
    by_position.update(gate(state, ctx, actions))
    positions = [i for i, a in enumerate(actions) if undone(a) and not a.get("awaiting")]
    calls = []
    for i in positions:
        tool = ctx.tools.get(actions[i]["tool"])
        assert tool is not None  # validate checked it
        args = actions[i].get("args") or {}
        calls.append(ToolCall(tool, args, actions[i].get("id") or "", i, journaled="approval" in actions[i],
                              focus=" ".join([str(state.get("task") or ""), *string_values(args)])))
    left = ctx.seconds_left(state, time.time())
    deadline = None if left is None else time.monotonic() + left  # the run's clock binds every call
    executor = ToolExecutor(ctx.limits, ctx.workers, ctx.journal, deadline, ctx.call_hooks)
    for i, result in zip(positions, executor.run(calls, place_of(state)), strict=True):
        actions[i] = {**actions[i], "observation": result.observation, "error": result.error}
        by_position[i] = ActionRecord(id=actions[i].get("id") or "", tool=actions[i]["tool"],
                                      args=actions[i].get("args") or {}, observation=result.observation, error=result.error, status=result.status,
                                      attempts=result.attempts, latency_ms=round(result.seconds * 1000, 3))
    records = [by_position[i] for i in sorted(by_position)]  # the model's order, reused calls included
    failed = [r for r in records if r["error"]]
    summary = ", ".join(f"{r['tool']} -> {r['status']}" for r in records)
    waiting = [a["tool"] for a in actions if a.get("awaiting")]
    if waiting:
        summary = ", ".join(filter(None, [summary, f"{', '.join(waiting)} waiting for approval"]))
    workers = ctx.workers.stats()
    if workers["overdue"]:  # threads that could not be stopped: say so where the run is watched
        summary += f"; {workers['overdue']} of {workers['size']} tool workers held by abandoned calls"
    emit(
        runtime,
        "execute",
        summary,
        actions=records,
        **({"waiting": [{"id": a.get("approval_id"), "call_id": a.get("id"), "tool": a.get("tool"), "args": a.get("args"),
                         "awaiting": a.get("awaiting")} for a in actions if a.get("awaiting")]} if waiting else {}),
        **({"workers": workers} if workers["overdue"] else {}),
        error="; ".join(f"{r['tool']}: {r['observation']}" for r in failed) or None,
    )
    return {"pending": {**pending, "actions": actions}}
