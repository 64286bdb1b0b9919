"""execute: run the validated tool calls, in the model's order.

Invalid calls are skipped here (memorize turns their problem into their
observation). A tool that raises or returns nothing yields an error
observation; the loop goes on.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import ActionRecord, emit
from ..state import Action, AgentState
from ..tools.executor import run_tool


def execute(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run each valid call and attach its observation."""
    ctx = runtime.context
    pending = state["pending"] or {}
    done: list[Action] = []
    records: list[ActionRecord] = []
    for action in pending.get("actions") or []:
        if action.get("problem"):
            done.append(action)
            continue
        tool = ctx.tools.get(action["tool"])
        assert tool is not None  # validate checked it
        started = time.perf_counter()
        observation, error = run_tool(tool, action.get("args") or {}, ctx.limits.max_observation_chars)
        done.append({**action, "observation": observation, "error": error})
        records.append(ActionRecord(tool=action["tool"], args=action.get("args") or {}, observation=observation,
                                    error=error, latency_ms=round((time.perf_counter() - started) * 1000, 3)))
    failed = [r for r in records if r["error"]]
    emit(
        runtime,
        "execute",
        ", ".join(f"{r['tool']} -> {'error' if r['error'] else 'ok'}" for r in records),
        actions=records,
        error="; ".join(f"{r['tool']}: {r['observation']}" for r in failed) or None,
    )
    return {"pending": {**pending, "actions": done}}
