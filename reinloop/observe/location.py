"""Where a node is in the run: thread, run, step, node, and LangGraph's checkpoint coordinates.

LangGraph tells a node where it runs only through the run's config, partly
under private keys (``__pregel_checkpointer``, ``__pregel_task_id``) whose
names may change between versions. This module is the one place that reads
that config: the decide node (memory scope), the execute node (the tool
journal's key), the guard (can a break pause?) and the events (their
location fields) all ask :func:`locate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

CHECKPOINTER_KEY = CONFIG_KEY_CHECKPOINTER
"""Where LangGraph puts the run's checkpointer in ``config["configurable"]`` (private to LangGraph)."""
TASK_ID_KEY = "__pregel_task_id"
"""Where LangGraph puts the id of the running task in ``config["configurable"]`` (private to LangGraph)."""


@dataclass(frozen=True)
class Location:
    """Where a node runs: its thread, the run on that thread, the agent step, and the checkpoint it works from."""

    thread_id: str = ""
    """The thread (``""`` outside a graph run or without one)."""
    run: int = 0
    """Which run of the thread (a thread runs one task after another)."""
    step: int = 1
    """The agent step being taken (1-based: the steps done so far, plus one)."""
    node: str | None = None
    """The graph node that runs (``decide``, ``execute`` ...), if LangGraph says."""
    superstep: int | None = None
    """LangGraph's own step counter (one per node run), if LangGraph says."""
    checkpointed: bool = False
    """True when the run has a checkpointer: its progress is saved, and a break can pause it."""
    checkpoint_ns: str = ""
    """The graph's checkpoint namespace (``""`` for the top-level graph)."""
    checkpoint_id: str | None = None
    """The checkpoint this superstep started from (``None`` without a checkpointer)."""
    task_id: str | None = None
    """LangGraph's id of the running task."""

    def event_fields(self) -> dict[str, Any]:
        """The location fields every node event carries."""
        return {
            "thread_id": self.thread_id or None,
            "run": self.run,
            "step": self.step,
            "superstep": self.superstep,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "task_id": self.task_id,
        }


def current_config() -> Mapping[str, Any]:
    """The config of the graph run this code is inside (``{}`` when called outside one)."""
    try:
        return get_config()
    except RuntimeError:
        return {}


def locate(state: Mapping[str, Any] | None = None, config: Mapping[str, Any] | None = None,
           update: Any = None) -> Location:
    """Where a node is: from its input ``state``, its ``update`` (a new run starts there) and the run's ``config``.

    Without ``config``, the config of the graph run this is called in (none: an empty location).
    """
    conf_all = current_config() if config is None else config
    conf = conf_all.get("configurable") or {}
    meta = conf_all.get("metadata") or {}
    state = state or {}
    run = state.get("run", 0)
    if isinstance(update, Mapping) and "run" in update:  # decide starting a new task on the thread
        run = update["run"]
    # Inside a node, checkpoint_ns is the task's own namespace ("decide:<task id>",
    # below any parent graph's); the graph's checkpoints live in the part before it.
    # checkpoint_id is None there: checkpoint_map holds, per graph namespace, the id
    # of the checkpoint this superstep started from.
    task_ns = conf.get("checkpoint_ns") or ""
    graph_ns = task_ns.rsplit("|", 1)[0] if "|" in task_ns else ""
    saved = conf.get(CHECKPOINTER_KEY) not in (None, False)  # without a saver the ids point at nothing stored
    checkpoint_id = (conf.get("checkpoint_map") or {}).get(graph_ns) or conf.get("checkpoint_id")
    return Location(
        thread_id=str(conf.get("thread_id") or ""),
        run=run,
        step=(state.get("counters") or {}).get("steps", 0) + 1,
        node=meta.get("langgraph_node"),
        superstep=meta.get("langgraph_step"),
        checkpointed=saved,
        checkpoint_ns=graph_ns,
        checkpoint_id=checkpoint_id if saved else None,
        task_id=conf.get(TASK_ID_KEY),
    )
