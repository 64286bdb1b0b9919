"""Scripts and comparisons shared by the checkpointer tests of both backends."""

from __future__ import annotations

from reinloop import Limits
from reinloop.testing import tool_call

CONFIG = {"configurable": {"thread_id": "t1"}}
NO_LIMITS = Limits(max_steps=None, max_repeats=None, max_seconds=None)


def script(n: int) -> list:
    """n calculator steps with fixed ids (so two runs are identical), then an answer."""
    return [[tool_call("calculator", {"expression": f"{i}*2"}, id=f"c{i}")] for i in range(n)] + ["done"]


def comparable(values: dict) -> dict:
    """Channel values without the wall-clock fields."""
    out = {k: v for k, v in values.items() if k not in ("started_at", "tick")}
    if "counters" in out:
        out["counters"] = {k: v for k, v in out["counters"].items() if k != "elapsed_seconds"}
    return out
