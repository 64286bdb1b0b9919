"""execute: run the validated tool calls, in the model's order.

Invalid calls are skipped here (memorize turns their problem into their
observation). A tool that raises or returns nothing yields an error
observation; the loop goes on.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..state import Action, AgentState
from ..tools.executor import run_tool


def execute(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run each valid call and attach its observation."""
    ctx = runtime.context
    pending = state["pending"] or {}
    done: list[Action] = []
    for action in pending.get("actions") or []:
        if action.get("problem"):
            done.append(action)
            continue
        tool = ctx.tools.get(action["tool"])
        assert tool is not None  # validate checked it
        observation, error = run_tool(tool, action.get("args") or {}, ctx.limits.max_observation_chars)
        done.append({**action, "observation": observation, "error": error})
        emit(
            runtime,
            "execute",
            f"{action['tool']} -> {'error' if error else 'ok'}",
            tool=action["tool"],
            args=action.get("args"),
            observation=observation,
            error=error,
        )
    return {"pending": {**pending, "actions": done}}
