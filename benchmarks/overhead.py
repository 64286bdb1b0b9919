"""Overhead per step: reinloop vs LangChain's ``create_agent``, side by side in one run.

    python benchmarks/overhead.py                    # N = 10/50/200/1000, 3 repeats (about an hour)
    python benchmarks/overhead.py --quick            # CI: small N, 1 repeat, under a minute
    python benchmarks/overhead.py --profile 200      # cProfile of 200 reinloop steps: the top costs per step
    python benchmarks/overhead.py --nodes 200        # CPU per node and for LangGraph, without a profiler
    python benchmarks/overhead.py --calls 200        # function calls per iteration on both sides, by package
    python benchmarks/overhead.py --floor            # the same calls through reinloop's six nodes, no reinloop work
    python benchmarks/overhead.py --check            # exit 1 when a CPU ratio passes its stored bound by > 10%
    python benchmarks/overhead.py --quick --check    # the same at N = 20 (CI: under a minute)

Both sides get the same scripted replies: one tool call per iteration to a
trivial tool that returns 2 KB of text, then a final answer. reinloop runs
with its defaults (``build_graph`` with the default ``Memory()``, ``Limits``
without step/time caps); ``create_agent`` (langchain 1.x) with no middleware.
The scripted model is the same small class on both sides, defined here on
``langchain_core`` alone: it keeps no record of its prompts, and the
create_agent side imports nothing of reinloop, so memory measures the
frameworks, not the fake model. Each run process first runs a
one-step task on each side and loads reinloop's exact tokenizer (a one-step
prompt is small enough to be made by its bytes, these runs' prompts need it
from their second step), so one-time costs are not spread over the
iterations; those costs are in the start table instead.

``--check`` measures only the per-iteration runs (N = 200 by default, 20
with ``--quick``; savers ``none`` and ``sqlite``) in pairs: one process per
saver imports both sides and runs them back to back, alternating which goes
first, 7 pairs by default (``--repeats``). The ratio it checks is the median
of the pairs' CPU ratios: the two runs of a pair share the machine's state of
the moment, which on a shared VM moves each side's CPU per iteration by up to
2x between processes (and one side's fastest run against the other's, in
separate processes, by 1.5x to 3.1x on one commit). That ratio is compared
with the bound stored for its saver and N in
``benchmarks/overhead_ratios.json`` (``--ratios FILE`` reads another): a
ratio above its bound by more than the file's tolerance (10%) is named with
its figures and the script exits 1.

Configurations, each in its own subprocess (so peak RSS is its own):

- ``none``: no checkpointer;
- ``sqlite``: each side's SQLite saver with its own settings: reinloop's
  ``SqliteCheckpointer`` (WAL, ``synchronous=NORMAL``) vs
  ``langgraph-checkpoint-sqlite``'s ``SqliteSaver`` (WAL, SQLite's default
  ``synchronous``, FULL); both invoked with ``durability="sync"`` (reinloop's
  default with a checkpointer: a step is on disk before the next starts);
- ``sqlite-full``: the same with ``synchronous=FULL`` set on both.

The figures are process CPU time (``time.process_time``) of ``invoke``
divided by the iterations (the machine is shared, so CPU, not wall time,
makes the ratios), the wall-time ratio beside it, peak RSS
(``ru_maxrss``), the database size (file plus WAL) with its growth exponent
``k`` in ``size ~ N^k`` between successive N, the time to read the latest
state from a new process, the time a stopped run takes to reach its first
model call when resumed in a new process (imports included: reinloop's run
paused at its step limit and continued with ``Command(resume=...)``,
create_agent's dead at its next model call and continued with
``invoke(None)``), the first ``build_graph``/``create_agent`` in a
new process (after imports), and CLI start (``reinloop --help`` and ``reinloop runs list`` vs
``python -c "import langchain.agents"``). The load average is printed with
the table.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

OUTPUT_CHARS = 2000
SIDES = ("reinloop", "create_agent")
SAVERS = ("none", "sqlite", "sqlite-full")
FULL_STEPS = (10, 50, 200, 1000)
QUICK_STEPS = (5, 20)
CHECK_STEPS, QUICK_CHECK_STEPS = (200,), (20,)
RATIOS = Path(__file__).with_name("overhead_ratios.json")
"""The CPU ratios ``--check`` holds reinloop to, per saver and N, with the tolerance."""
THREAD = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}


# --- the child side: one configuration in this process ------------------------------------------------


def fetch_tool() -> Any:
    """The trivial tool: 2 KB of text per page."""
    from langchain_core.tools import tool

    @tool
    def fetch(page: int) -> str:
        """Fetch one page of a long document."""
        line = f"page {page}: " + "lorem ipsum dolor sit amet " * 3
        return (line * (OUTPUT_CHARS // len(line) + 1))[:OUTPUT_CHARS]

    return fetch


SUMMARIZER_TAG = "reinloop:summarizer"
"""The tag of reinloop's summarizer calls (``reinloop.protocols.memory.summary.SUMMARIZER_TAG``), answered apart."""


def scripted_model(steps: int) -> Any:
    """The same script for both sides: ``steps`` tool calls, then an answer; nothing kept of the prompts.

    It is defined here, on ``langchain_core`` alone, so the create_agent
    side imports nothing of reinloop (its memory would count reinloop's
    modules). reinloop's summarizer calls get the extractive summary its
    own test model gives (:func:`reinloop.testing.facts_summary`).
    """
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from pydantic import Field

    class Scripted(BaseChatModel):
        replies: list[Any]
        cursor: int = 0
        first_call: dict[str, float] = Field(default_factory=dict)  # process CPU and wall clock at the first agent call
        crash_after: bool = False  # a call past the script raises (a process dying before its next model call)

        @property
        def _llm_type(self) -> str:
            return "overhead-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[getattr(t, "name", t) for t in tools], **kwargs)

        def remaining(self) -> int:
            return len(self.replies) - self.cursor

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            if SUMMARIZER_TAG in ((run_manager.tags or []) if run_manager else []):
                from reinloop.testing import facts_summary

                message = AIMessage(content=facts_summary(messages))
            else:
                if not self.first_call:
                    self.first_call.update(cpu=time.process_time(), wall=time.time())
                if self.crash_after and self.cursor >= len(self.replies):
                    raise Crash("the process died before this model call")
                item = self.replies[self.cursor]
                self.cursor += 1
                message = AIMessage(content="", tool_calls=item) if isinstance(item, list) else AIMessage(content=item)
            message.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
            return ChatResult(generations=[ChatGeneration(message=message)])

    calls = [[{"name": "fetch", "args": {"page": i}, "id": f"call_{i}", "type": "tool_call"}] for i in range(steps)]
    return Scripted(replies=[*calls, "read them all"])


class Crash(Exception):
    """What the scripted model raises past its script when asked to (:func:`child_stop`)."""


def open_saver(side: str, saver: str, path: Path) -> Any:
    """The side's SQLite saver at ``path`` (``None`` without one); FULL sync when asked."""
    if saver == "none":
        return None
    if side in ("reinloop", "floor"):
        from reinloop.checkpoints import SqliteCheckpointer

        opened = SqliteCheckpointer.open(path)
        conn = raw_connection(opened)
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(path, check_same_thread=False)
        opened = SqliteSaver(conn)
        opened.setup()
    if saver == "sqlite-full":
        conn.execute("PRAGMA synchronous=FULL")
    return opened


def raw_connection(saver: Any) -> Any:
    """The sqlite3 connection under a saver: SqliteSaver's ``conn``, or the run database's own."""
    return saver.conn if hasattr(saver, "conn") else saver.db.connection.raw


def close_saver(saver: Any) -> None:
    if saver is not None:
        saver.close() if hasattr(saver, "db") else saver.conn.close()


def floor_graph(model: Any, tools: list[Any], saver: Any) -> Any:
    """reinloop's six nodes and four untraced routers over its own state, doing only what create_agent does too.

    decide sends the task to the model (tools bound) and nothing else; execute runs
    the calls in line; parse, validate, memorize and guard write one key each. No
    prompt, memory, checks, events or pricing: what is left of reinloop's iteration
    is LangGraph's six supersteps over reinloop's channels and the two calls.
    """
    from langchain_core.messages import HumanMessage
    from langgraph._internal._runnable import RunnableCallable
    from langgraph.graph import END, START, StateGraph
    from reinloop.state import AgentState, InputState, new_counters

    llm, by_name = model.bind_tools(tools), {t.name: t for t in tools}

    def decide(state: Any) -> dict[str, Any]:
        reply = llm.invoke([HumanMessage(state["task"])])
        counters = state.get("counters") or new_counters()
        return {"pending": {"actions": [{"id": c["id"], "tool": c["name"], "args": c["args"]} for c in reply.tool_calls],
                            "answer": None if reply.tool_calls else reply.content},
                "counters": {**counters, "steps": counters["steps"] + 1}}

    def parse(state: Any) -> dict[str, Any]:
        return {"reply": None}

    def validate(state: Any) -> dict[str, Any]:
        return {"hints": []}

    def execute(state: Any) -> dict[str, Any]:
        actions = [{**a, "observation": by_name[a["tool"]].invoke(a["args"])} for a in state["pending"]["actions"]]
        return {"pending": {**state["pending"], "actions": actions}}

    def memorize(state: Any) -> dict[str, Any]:
        pending = state["pending"]
        return {"scratchpad": [{"index": state["counters"]["steps"], "actions": pending["actions"], "answer": pending["answer"]}]}

    def guard(state: Any) -> dict[str, Any]:
        done = state["pending"]["answer"] is not None
        return {"decision": "finish" if done else "continue", "status": "done" if done else "running",
                "answer": state["pending"]["answer"]}

    builder = StateGraph(AgentState, input_schema=InputState)
    for node in (decide, parse, validate, execute, memorize, guard):
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "decide")
    builder.add_edge("decide", "parse")
    builder.add_edge("memorize", "guard")
    routes = {
        "parse": (lambda s: "answer" if s["pending"]["answer"] is not None else "actions", {"actions": "validate", "answer": "memorize"}),
        "validate": (lambda s: "run", {"run": "execute"}),
        "execute": (lambda s: "done", {"done": "memorize"}),
        "guard": (lambda s: s["decision"], {"continue": "decide", "finish": END}),
    }
    for source, (router, path_map) in routes.items():
        builder.add_conditional_edges(source, RunnableCallable(router, trace=False), path_map)
    return builder.compile(checkpointer=saver)


def build(side: str, model: Any, tools: list[Any], saver: Any, max_steps: int | None = None) -> Any:
    """The side's graph (reinloop's with a step limit when ``max_steps`` is given; ``floor``: :func:`floor_graph`)."""
    if side == "floor":
        return floor_graph(model, tools, saver)
    if side == "reinloop":
        from reinloop import Limits, build_graph

        limits = Limits(max_steps=max_steps, max_seconds=None, max_repeats=None, repeat_hint_after=None)
        return build_graph(model, tools, limits=limits, checkpointer=saver)
    from langchain.agents import create_agent

    return create_agent(model, tools=tools, checkpointer=saver)


def invoke(side: str, graph: Any, steps: int, *, durable: bool = False) -> None:
    """Run the scripted task to its end (``durability="sync"`` with a saver, reinloop's default)."""
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 10 * steps + 100}
    kwargs = {"durability": "sync"} if durable else {}
    task = {"messages": [("user", "read every page")]} if side == "create_agent" else {"task": "read every page"}
    out = graph.invoke(task, config, **kwargs)
    done = out["messages"][-1].content == "read them all" if side == "create_agent" else out["status"] == "done"
    if not done:
        raise SystemExit(f"{side} did not finish its {steps} steps")


def import_side(side: str) -> None:
    if side == "floor":
        import reinloop.state  # noqa: F401
        from reinloop.checkpoints import SqliteCheckpointer  # noqa: F401
    elif side == "reinloop":
        from reinloop import Limits, build_graph  # noqa: F401  (the package loads these on first use)
        from reinloop.checkpoints import SqliteCheckpointer  # noqa: F401
        import reinloop.testing  # noqa: F401  (its summaries, for the scripted model)
    else:
        import langchain.agents  # noqa: F401


def files_size(path: Path) -> int:
    """The database file plus its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def peak_rss() -> int:
    """This process's peak resident set, in bytes (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def warm_up(side: str, tools: list[Any]) -> None:
    """Pay the one-time costs (they are in "start"): a one-step run, and with it reinloop's exact tokenizer.

    reinloop's first prompt loads the o200k encoding (0.3–0.5 s of CPU): in the
    measured run it would be spread over the iterations.
    """
    invoke(side, build(side, scripted_model(1), tools, None), 1)
    if side == "reinloop":
        from reinloop.protocols.memory import active_counter

        active_counter()


def timed_run(side: str, saver_kind: str, steps: int, path: Path) -> dict[str, Any]:
    """One run of ``steps`` iterations, its saver closed after: CPU and wall time of ``invoke`` per iteration,
    peak RSS before it, the saver's ``synchronous`` setting."""
    model, tools = scripted_model(steps), [fetch_tool()]
    saver = open_saver(side, saver_kind, path)
    sync = raw_connection(saver).execute("PRAGMA synchronous").fetchone()[0] if saver is not None else None
    graph = build(side, model, tools, saver)
    rss_before = peak_rss()
    cpu, wall = time.process_time(), time.perf_counter()
    invoke(side, graph, steps, durable=saver is not None)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if model.remaining():
        raise SystemExit(f"{side} did not use its whole script of {steps} steps")
    close_saver(saver)
    return {"cpu": cpu / steps, "wall": wall / steps, "rss_before": rss_before, "synchronous": sync}


def child_run(side: str, saver_kind: str, steps: int, path: Path) -> dict[str, Any]:
    """One run of ``steps`` iterations: CPU and wall time of ``invoke``, peak RSS, database size."""
    import_side(side)
    warm_up(side, [fetch_tool()])
    run = timed_run(side, saver_kind, steps, path)
    return {**run, "rss": peak_rss(), "size": files_size(path) if saver_kind != "none" else None}


def child_pairs(saver_kind: str, steps: int, pairs: int, workdir: Path) -> dict[str, Any]:
    """``pairs`` runs of each side in this one process, back to back, the first side alternating: CPU per iteration.

    Both sides are imported and warmed up first. The two runs of a pair share
    the machine's state of the moment, so their ratio holds where each side's
    own figure moves with it.
    """
    for side in SIDES:
        import_side(side)
        warm_up(side, [fetch_tool()])
    found: dict[str, list[float]] = {side: [] for side in SIDES}
    for p in range(pairs):
        for side in SIDES if p % 2 == 0 else SIDES[::-1]:
            path = workdir / f"pair-{side}-{saver_kind}-{steps}-{p}.db"
            found[side].append(timed_run(side, saver_kind, steps, path)["cpu"])
            for old in workdir.glob(path.name + "*"):
                old.unlink()
    return found


def child_read(side: str, path: Path) -> dict[str, Any]:
    """Open the saver at ``path`` in this new process and read the latest state (imports excluded)."""
    import_side(side)
    if side == "create_agent":
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401  (imported before the clock, like the rest)
    else:
        import sqlite_utils  # noqa: F401  (SqliteCheckpointer.open imports it on first use)
        from reinloop.checkpoints import SqliteCheckpointer  # noqa: F401

    cpu, wall = time.process_time(), time.perf_counter()
    saver = open_saver(side, "sqlite", path)
    latest = saver.get_tuple(THREAD)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert latest is not None and latest.checkpoint["channel_values"]
    close_saver(saver)
    return {"cpu": cpu, "wall": wall}


def child_stop(side: str, path: Path, steps: int) -> dict[str, Any]:
    """A run of ``steps`` iterations with the side's saver, stopped before its next model call.

    reinloop's stops at its step limit and pauses, as a circuit breaker leaves a run
    (``reinloop resume`` continues it); create_agent's process dies at its next model call
    (its model raises), the checkpoint after the tools being the latest.
    """
    import_side(side)
    tools = [fetch_tool()]
    saver = open_saver(side, "sqlite", path)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 10 * steps + 100}
    if side == "reinloop":
        graph = build(side, scripted_model(steps), tools, saver, max_steps=steps)
        graph.invoke({"task": "read every page"}, config)
        stopped = bool(graph.get_state(config).interrupts)
    else:
        model = scripted_model(steps)
        model.replies, model.crash_after = model.replies[:-1], True
        graph = build(side, model, tools, saver)
        try:
            graph.invoke({"messages": [("user", "read every page")]}, config, durability="sync")
        except Crash:
            pass
        stopped = graph.get_state(config).next == ("model",)
    close_saver(saver)
    if not stopped:
        raise SystemExit(f"{side}'s run of {steps} steps did not stop before its next model call")
    return {"stopped": steps}


def child_resume(side: str, path: Path, steps: int) -> dict[str, Any]:
    """Continue the run :func:`child_stop` left, in this new process: CPU and wall clock at its first model call.

    The clock starts with the process (``time.process_time`` counts from it; the
    parent notes the wall clock before it starts this one), so imports count:
    what a user waits for between ``reinloop resume`` and the model's first token.
    """
    import_side(side)
    tools = [fetch_tool()]
    model = scripted_model(0)  # its one reply: the answer
    saver = open_saver(side, "sqlite", path)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 100}
    if side == "reinloop":
        from langgraph.types import Command

        graph = build(side, model, tools, saver, max_steps=steps)
        out = graph.invoke(Command(resume={"action": "continue", "extra_steps": 1}), config)
        done = out["status"] == "done"
    else:
        graph = build(side, model, tools, saver)
        out = graph.invoke(None, config, durability="sync")
        done = out["messages"][-1].content == "read them all"
    close_saver(saver)
    if not done or not model.first_call:
        raise SystemExit(f"{side} did not resume its run of {steps} steps to the end")
    return {"cpu": model.first_call["cpu"], "wall_at": model.first_call["wall"]}


def child_build(side: str) -> dict[str, Any]:
    """The first graph in a new process: imports, then build (timed apart)."""
    cpu, wall = time.process_time(), time.perf_counter()
    import_side(side)
    model, tools = scripted_model(1), [fetch_tool()]
    imports = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    graph = build(side, model, tools, None)
    built = time.process_time() - cpu, time.perf_counter() - wall
    invoke(side, graph, 1)
    return {"import_cpu": imports[0], "import_wall": imports[1], "cpu": built[0], "wall": built[1],
            "first_cpu": time.process_time() - cpu, "first_wall": time.perf_counter() - wall}


def place_of(filename: str) -> str:
    """The package a code file belongs to: a site-packages top level, reinloop, or the standard library."""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    if "/reinloop/" in filename:
        return "reinloop"
    return "benchmark script" if "/benchmarks/" in filename else "Python standard library"


def child_calls(side: str, steps: int) -> dict[str, Any]:
    """Function calls per iteration of one run on ``side`` without a saver, by package, and its traced child runs.

    A ``sys.setprofile`` counter (tool worker threads included) counts Python
    calls by their function's package and C calls by their caller's; the
    count does not depend on the machine's load, unlike CPU time. Traced
    child runs are the calls of langchain-core's ``on_chain_start`` (its callback managers').
    """
    import_side(side)
    model, tools = scripted_model(steps), [fetch_tool()]
    warm_up(side, tools)
    graph = build(side, model, tools, None)
    counted: dict[str, int] = {}
    lock = threading.Lock()

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" or event == "c_call":
            place = place_of(frame.f_code.co_filename)
            if event == "call" and frame.f_code.co_name == "on_chain_start" and place == "langchain_core":
                place = "traced child runs"
            with lock:
                counted[place] = counted.get(place, 0) + 1

    threading.setprofile(count)
    sys.setprofile(count)
    try:
        invoke(side, graph, steps)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return {place: n / steps for place, n in counted.items()}


def print_calls(steps: int, rows: int = 8) -> None:
    """Function calls per iteration on both sides (each in its own process), by package, and the traced child runs."""
    found = {side: child("calls", side, str(steps)) for side in SIDES}
    runs = {side: found[side].pop("traced child runs", 0.0) for side in SIDES}
    ours, theirs = found["reinloop"], found["create_agent"]
    print(f"{steps} iterations, no saver; calls per iteration (Python calls by their package, C calls by their caller's)\n")
    print("| package | reinloop | create_agent | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for place in sorted(set(ours) | set(theirs), key=lambda p: -ours.get(p, 0))[:rows]:
        a, b = ours.get(place, 0.0), theirs.get(place, 0.0)
        print(f"| {place} | {a:,.1f} | {b:,.1f} | {a / b:.2f} |" if b else f"| {place} | {a:,.1f} | {b:,.1f} | |")
    a, b = sum(ours.values()) + runs["reinloop"], sum(theirs.values()) + runs["create_agent"]
    print(f"| all | {a:,.1f} | {b:,.1f} | {a / b:.2f} |")
    print(f"| traced child runs (`on_chain_start`) | {runs['reinloop']:.1f} | {runs['create_agent']:.1f} | |")


def child_main(argv: list[str]) -> None:
    kind, side, *rest = argv
    if kind == "run":
        result = child_run(side, rest[0], int(rest[1]), Path(rest[2]))
    elif kind == "calls":
        result = child_calls(side, int(rest[0]))
    elif kind == "read":
        result = child_read(side, Path(rest[0]))
    elif kind == "stop":
        result = child_stop(side, Path(rest[0]), int(rest[1]))
    elif kind == "resume":
        result = child_resume(side, Path(rest[0]), int(rest[1]))
    elif kind == "pairs":
        result = child_pairs(side, int(rest[0]), int(rest[1]), Path(rest[2]))
    else:
        result = child_build(side)
    print(json.dumps(result))


# --- the parent side: configurations in subprocesses, the tables ---------------------------------------


def child(*args: str) -> dict[str, Any]:
    """Run this script as a child with ``args``; its JSON result."""
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def command_cpu(command: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of a command, as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def cli_start(repeats: int, workdir: Path) -> dict[str, tuple[float, float]]:
    """Median CPU and wall of ``reinloop --help``, of ``reinloop runs list`` on a database holding a finished run,
    and of importing ``langchain.agents``."""
    db = workdir / "cli-runs.db"
    for old in workdir.glob(db.name + "*"):
        old.unlink()
    child("run", "reinloop", "sqlite", "5", str(db))
    commands = {"reinloop --help": [sys.executable, "-m", "reinloop", "--help"],
                "reinloop runs list": [sys.executable, "-m", "reinloop", "runs", "list", "--db", str(db)],
                "import langchain.agents": [sys.executable, "-c", "import langchain.agents"]}
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            found[name].append(command_cpu(command))
    return {name: (statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)) for name, runs in found.items()}


def heavy(side: str, saver: str, steps: int) -> bool:
    """create_agent with SqliteSaver at 1,000 steps takes minutes (its file grows as N^2): run once."""
    return side == "create_agent" and saver != "none" and steps >= 1000


def measure(steps: tuple[int, ...], repeats: int, savers: tuple[str, ...], workdir: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """Every configuration ``repeats`` times, sides alternating; the latest database of each is kept for reading."""
    found: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for n in steps:
        for r in range(repeats):
            for saver in savers:
                for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                    if saver == "sqlite-full" and side == "create_agent" and found.get((side, "sqlite", n), [{}])[0].get("synchronous") == 2:
                        continue  # SqliteSaver is FULL already: its "sqlite" runs are its FULL runs
                    if r and heavy(side, saver, n):
                        continue
                    path = workdir / f"{side}-{saver}-{n}.db"
                    for old in workdir.glob(path.name + "*"):
                        old.unlink()
                    print(f"{side}, {saver}, {n} steps, run {r + 1} ...", file=sys.stderr, flush=True)
                    found.setdefault((side, saver, n), []).append(child("run", side, saver, str(n), str(path)))
    if "sqlite-full" in savers:
        for n in steps:
            found.setdefault(("create_agent", "sqlite-full", n), found.get(("create_agent", "sqlite", n), []))
    return found


RESUME_MAX_STEPS = 200
"""Longest run resumed: create_agent's SqliteSaver takes minutes to write 1,000 steps (2.5 GB)."""


def measure_resumes(steps: tuple[int, ...], repeats: int, workdir: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """For each N: a stopped run of N steps per side, then ``repeats`` resumes of a fresh copy, each in a new process.

    A resume's wall time runs from just before its process starts to its first model call.
    """
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for n in (n for n in steps if n <= RESUME_MAX_STEPS):
        for side in SIDES:
            stopped = workdir / f"{side}-stopped-{n}.db"
            print(f"{side}, a run of {n} steps stopped before its next model call ...", file=sys.stderr, flush=True)
            child("stop", side, str(stopped), str(n))
        for r in range(repeats):
            for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                stopped, copy = workdir / f"{side}-stopped-{n}.db", workdir / f"{side}-resumed-{n}.db"
                for old in workdir.glob(copy.name + "*"):
                    old.unlink()
                for part in workdir.glob(stopped.name + "*"):
                    shutil.copyfile(part, workdir / part.name.replace(stopped.name, copy.name))
                print(f"{side}, resume after {n} steps, run {r + 1} ...", file=sys.stderr, flush=True)
                started = time.time()
                found.setdefault((side, n), []).append({**(got := child("resume", side, str(copy), str(n))),
                                                        "wall": got["wall_at"] - started})
    return found


def med(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def spread(runs: list[dict[str, Any]], key: str, scale: float, fmt: str) -> str:
    values = sorted(r[key] * scale for r in runs)
    text = format(statistics.median(values), fmt)
    return text if len(values) == 1 else f"{text} ({format(values[0], fmt)}–{format(values[-1], fmt)})"


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.0f} kB"


def exponent(small: tuple[int, float], large: tuple[int, float]) -> str:
    return f"{math.log(large[1] / small[1]) / math.log(large[0] / small[0]):.2f}"


SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def print_runs(found: dict[tuple[str, str, int], list[dict[str, Any]]], steps: tuple[int, ...], savers: tuple[str, ...]) -> None:
    print("| saver | N | reinloop CPU ms/iter | create_agent CPU ms/iter | CPU ratio | wall ratio "
          "| reinloop peak RSS | create_agent peak RSS | RSS ratio | reinloop db | create_agent db | db ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for saver in savers:
        for n in steps:
            ours, theirs = found[("reinloop", saver, n)], found[("create_agent", saver, n)]
            sizes = ("", "", "")
            if saver != "none":
                a, b = med(ours, "size"), med(theirs, "size")
                sizes = (mb(a), mb(b), f"1/{b / a:,.1f}" if b >= a else f"{a / b:.2f}")
            print(f"| {saver} | {n:,} | {spread(ours, 'cpu', 1e3, '.2f')} | {spread(theirs, 'cpu', 1e3, '.2f')} "
                  f"| {med(ours, 'cpu') / med(theirs, 'cpu'):.2f} | {med(ours, 'wall') / med(theirs, 'wall'):.2f} "
                  f"| {med(ours, 'rss') / 1e6:.0f} MB | {med(theirs, 'rss') / 1e6:.0f} MB "
                  f"| {med(ours, 'rss') / med(theirs, 'rss'):.2f} | {' | '.join(sizes)} |")
    for saver in savers:
        if saver == "none" or len(steps) < 2:
            continue
        for side in SIDES:
            points = [(n, med(found[(side, saver, n)], "size")) for n in steps]
            ks = ", ".join(f"{a[0]:,}→{b[0]:,}: {exponent(a, b)}" for a, b in zip(points, points[1:]))
            sync = found[(side, saver, steps[0])][0]["synchronous"]
            print(f"\n{side}, {saver} (synchronous={SYNC_NAMES.get(sync, sync)}): size ~ N^k, k = {ks}", end="")
    print()


def print_reads(reads: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    print("\n| read the latest state, new process (imports excluded) | N | reinloop | create_agent | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for n in sorted({n for _, n in reads}):
        a, b = med(reads[("reinloop", n)], "wall"), med(reads[("create_agent", n)], "wall")
        print(f"| open the saver + `get_tuple` (wall) | {n:,} | {a * 1e3:.1f} ms | {b * 1e3:.1f} ms | {a / b:.2f} |")


def print_resumes(resumes: dict[tuple[str, int], list[dict[str, Any]]]) -> None:
    print("\n| resume a stopped run, new process: to its first model call, imports included | N | reinloop "
          "| create_agent | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for n in sorted({n for _, n in resumes}):
        ours, theirs = resumes[("reinloop", n)], resumes[("create_agent", n)]
        for key, label in (("cpu", "CPU"), ("wall", "wall")):
            a, b = med(ours, key), med(theirs, key)
            print(f"| {label} | {n:,} | {a * 1e3:.0f} ms | {b * 1e3:.0f} ms | {a / b:.2f} |")


FLOOR_SIDES = ("floor", "reinloop", "create_agent")


def print_floor(steps: tuple[int, ...], repeats: int, savers: tuple[str, ...], workdir: Path) -> None:
    """CPU per iteration of :func:`floor_graph` beside reinloop's and create_agent's, each run in its own process."""
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.1f}; "
          f"{repeats} repeat(s), median CPU ms per iteration; ratios to create_agent\n")
    print("| saver | N | floor: six nodes, no reinloop work | reinloop | create_agent | floor ratio | reinloop ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for saver in savers:
        for n in steps:
            runs: dict[str, list[dict[str, Any]]] = {side: [] for side in FLOOR_SIDES}
            for r in range(repeats):
                for side in FLOOR_SIDES if r % 2 == 0 else FLOOR_SIDES[::-1]:
                    path = workdir / f"floor-{side}-{saver}-{n}.db"
                    for old in workdir.glob(path.name + "*"):
                        old.unlink()
                    print(f"{side}, {saver}, {n} steps, run {r + 1} ...", file=sys.stderr, flush=True)
                    runs[side].append(child("run", side, saver, str(n), str(path)))
            floor, ours, theirs = (med(runs[side], "cpu") for side in FLOOR_SIDES)
            print(f"| {saver} | {n:,} | {floor * 1e3:.2f} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} "
                  f"| {floor / theirs:.2f} | {ours / theirs:.2f} |")


def print_start(builds: dict[str, list[dict[str, Any]]], cli: dict[str, tuple[float, float]]) -> None:
    print("\n| start, new process | reinloop | create_agent | ratio |")
    print("| --- | ---: | ---: | ---: |")
    ours, theirs = builds["reinloop"], builds["create_agent"]
    print(f"| imports, CPU | {med(ours, 'import_cpu') * 1e3:.0f} ms | {med(theirs, 'import_cpu') * 1e3:.0f} ms "
          f"| {med(ours, 'import_cpu') / med(theirs, 'import_cpu'):.2f} |")
    for key, label in (("cpu", "first `build_graph` / `create_agent`, CPU"), ("wall", "first `build_graph` / `create_agent`, wall"),
                       ("first_cpu", "the same and a first one-step run, CPU"), ("first_wall", "the same and a first one-step run, wall")):
        print(f"| {label} | {med(ours, key) * 1e3:.1f} ms | {med(theirs, key) * 1e3:.1f} ms | {med(ours, key) / med(theirs, key):.2f} |")
    b, bw = cli["import langchain.agents"]
    for command in ("reinloop --help", "reinloop runs list"):
        a, aw = cli[command]
        print(f"| `{command}` vs `python -c \"import langchain.agents\"`, CPU | {a * 1e3:.0f} ms | {b * 1e3:.0f} ms "
              f"| {a / b:.2f} |")
        print(f"| the same, wall | {aw * 1e3:.0f} ms | {bw * 1e3:.0f} ms | {aw / bw:.2f} |")


def profile(steps: int, top: int = 5) -> None:
    """cProfile of ``steps`` reinloop iterations without persistence: the top costs, per step."""
    import_side("reinloop")
    model, tools = scripted_model(steps), [fetch_tool()]
    warm_up("reinloop", tools)  # one-time costs, as in the runs
    graph = build("reinloop", model, tools, None)
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    invoke("reinloop", graph, steps)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"{steps} steps, {total / steps * 1e3:.2f} ms CPU per step (profiled)")
    rows = stats.stats  # type: ignore[attr-defined]
    ours = [(key, value) for key, value in rows.items() if "reinloop" in key[0] and "/benchmarks/" not in key[0]]
    print(f"\ntop {top} reinloop functions by cumulative time (including what they call), per step:")
    for (file, line, name), (_, calls, _, cum, _) in sorted(ours, key=lambda kv: -kv[1][3])[:top * 3]:
        print(f"  {cum / steps * 1e3:6.3f} ms  {calls / steps:5.1f} calls  {Path(file).parent.name}/{Path(file).name}:{line} {name}")
    print(f"\ntop {top} functions by own time, per step:")
    for (file, line, name), (_, calls, own, _, _) in sorted(rows.items(), key=lambda kv: -kv[1][2])[:top]:
        print(f"  {own / steps * 1e3:6.3f} ms  {calls / steps:5.1f} calls  {Path(file).parent.name}/{Path(file).name}:{line} {name}")


def node_times(steps: int) -> None:
    """CPU per step of each reinloop node, without a profiler (each node wrapped in a clock), and the rest."""
    import_side("reinloop")
    import reinloop.graph as wiring

    spent: dict[str, float] = {}

    def clocked(node: Any) -> Any:
        def run(state: Any, runtime: Any) -> Any:
            start = time.process_time()
            try:
                return node(state, runtime)
            finally:
                spent[node.__name__] = spent.get(node.__name__, 0.0) + time.process_time() - start

        run.__name__ = node.__name__
        return run

    for name in ("decide", "parse", "validate", "execute", "memorize", "guard"):
        setattr(wiring, name, clocked(getattr(wiring, name)))
    tools = [fetch_tool()]
    warm_up("reinloop", tools)
    spent.clear()
    graph = build("reinloop", scripted_model(steps), tools, None)
    start = time.process_time()
    invoke("reinloop", graph, steps)
    total = time.process_time() - start
    print(f"{steps} steps, {total / steps * 1e3:.2f} ms CPU per step:")
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds / steps * 1e3:6.3f} ms  {name}")
    print(f"  {(total - sum(spent.values())) / steps * 1e3:6.3f} ms  LangGraph and the rest")


Pairs = dict[tuple[str, int], dict[str, list[float]]]
"""``--check``'s measurements: per (saver, N), each side's CPU per iteration, run by run, pair by pair."""


def pair_ratios(pairs: dict[str, list[float]]) -> list[float]:
    """Each pair's CPU ratio, reinloop's run over create_agent's run beside it."""
    return [a / b for a, b in zip(pairs["reinloop"], pairs["create_agent"])]


def pair_ratio(pairs: dict[str, list[float]]) -> float:
    """The median of the pairs' CPU ratios."""
    return statistics.median(pair_ratios(pairs))


def measure_pairs(steps: tuple[int, ...], repeats: int, savers: tuple[str, ...], workdir: Path,
                  found: Pairs | None = None) -> Pairs:
    """``repeats`` pairs for each saver and N, one process each, added to ``found``."""
    found = {} if found is None else found
    for saver in savers:
        for n in steps:
            print(f"{saver}, {n} steps: {repeats} pair(s) of runs in one process ...", file=sys.stderr, flush=True)
            runs = child("pairs", saver, str(n), str(repeats), str(workdir))
            into = found.setdefault((saver, n), {side: [] for side in SIDES})
            for side in SIDES:
                into[side] += runs[side]
    return found


class RatioBounds:
    """The stored bounds of ``--check``: ``{"tolerance": 0.1, "ratios": {saver: {N: ratio}}}``."""

    def __init__(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
            self.tolerance = float(data["tolerance"])
            self.ratios = {(saver, int(n)): float(r) for saver, by_n in data["ratios"].items() for n, r in by_n.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SystemExit(f"cannot read the stored ratios {path}: {exc}; it holds "
                             '{"tolerance": 0.1, "ratios": {"none": {"200": 1.5}}}') from exc
        self.path = path

    def past(self, found: Pairs, saver: str, n: int) -> bool:
        """Whether the ratio of ``saver`` at ``n`` steps is past its stored bound and tolerance."""
        bound = self.ratios.get((saver, n))
        return bound is not None and pair_ratio(found[(saver, n)]) > bound * (1 + self.tolerance)

    def failures(self, found: Pairs) -> tuple[list[str], list[str]]:
        """Lines for the ratios within their bounds and for those past them (with by how much)."""
        passed, failed = [], []
        for (saver, n), pairs in found.items():
            bound, ratio = self.ratios.get((saver, n)), pair_ratio(pairs)
            if bound is None:
                passed.append(f"{saver}, N = {n}: CPU ratio {ratio:.2f}, no stored bound in {self.path.name} (not checked)")
                continue
            limit = bound * (1 + self.tolerance)
            line = (f"{saver}, N = {n}: CPU ratio reinloop/create_agent {ratio:.2f} (median of {len(pairs['reinloop'])} "
                    f"pairs), stored {bound:.2f} (limit {limit:.2f} with {self.tolerance:.0%})")
            if ratio > limit:
                failed.append(f"{line}: {ratio / bound - 1:.0%} above the stored ratio, "
                              f"{ratio / limit - 1:.0%} past the limit")
            else:
                passed.append(line)
        return passed, failed


def print_pairs(found: Pairs) -> None:
    print("| saver | N | pairs | reinloop CPU ms/iter | create_agent CPU ms/iter | CPU ratio, median of pairs (min–max) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for (saver, n), pairs in found.items():
        ratios = pair_ratios(pairs)
        cells = [f"{statistics.median(pairs[side]) * 1e3:.2f} ({min(pairs[side]) * 1e3:.2f}–{max(pairs[side]) * 1e3:.2f})"
                 for side in SIDES]
        print(f"| {saver} | {n:,} | {len(ratios)} | {cells[0]} | {cells[1]} "
              f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |")


CHECK_PAIRS = 7
"""Pairs of runs ``--check`` measures for each saver and N in a round (``--repeats`` sets another number)."""
CHECK_ROUNDS = 3
"""Rounds of pairs a ratio past its bound gets before ``--check`` fails: a burst of load on a shared machine
passes by, a regression stays past the bound in every round."""


def check(steps: tuple[int, ...], repeats: int, savers: tuple[str, ...], bounds: RatioBounds) -> int:
    """The per-iteration runs only, in pairs, their table, and each CPU ratio against its stored bound; 1 if one is
    past it after :data:`CHECK_ROUNDS` rounds (each round adds pairs to the configurations past their bound)."""
    load = os.getloadavg()
    rounds = 1
    with tempfile.TemporaryDirectory() as tmp:
        found = measure_pairs(steps, repeats, savers, Path(tmp))
        while rounds < CHECK_ROUNDS:
            late = [(saver, n) for saver in savers for n in steps if bounds.past(found, saver, n)]
            if not late:
                break
            rounds += 1
            for saver, n in late:  # the median of all rounds' pairs counts
                measure_pairs((n,), repeats, (saver,), Path(tmp), found)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores, load average "
          f"{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {repeats} pair(s) a round, "
          f"{rounds} round(s); CPU per iteration median (min–max)\n")
    print_pairs(found)
    passed, failed = bounds.failures(found)
    print(f"\ncheck against {bounds.path}:")
    for line in passed:
        print(f"  ok    {line}")
    for line in failed:
        print(f"  FAIL  {line}")
    if failed:
        print(f"overhead check failed: {len(failed)} CPU ratio(s) past the stored bound by more than "
              f"{bounds.tolerance:.0%}:\n" + "\n".join(failed), file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child_main(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"N = {QUICK_STEPS}, 1 repeat, no FULL runs (for CI)")
    parser.add_argument("--steps", type=int, nargs="+", help=f"iterations per run (default {FULL_STEPS})")
    parser.add_argument("--repeats", type=int, help="runs per configuration (default 3; 1 with --quick)")
    parser.add_argument("--savers", nargs="+", choices=SAVERS, help="configurations (default: all)")
    parser.add_argument("--profile", type=int, metavar="N", help="profile N reinloop steps instead")
    parser.add_argument("--nodes", type=int, metavar="N", help="CPU per reinloop node over N steps instead")
    parser.add_argument("--calls", type=int, metavar="N", help="function calls per iteration on both sides over N steps instead")
    parser.add_argument("--floor", action="store_true",
                        help="CPU per iteration of reinloop's six nodes doing no reinloop work, beside both sides, instead")
    parser.add_argument("--check", action="store_true",
                        help="per-iteration runs only (N = 200, or 20 with --quick), both sides in one process, in pairs "
                             "(--repeats, default 7); exit 1 when the median pair's CPU ratio passes its stored bound by "
                             "more than the stored tolerance")
    parser.add_argument("--ratios", type=Path, default=RATIOS, metavar="FILE",
                        help=f"the stored bounds --check reads (default {RATIOS.name} beside this script)")
    args = parser.parse_args(argv)
    if args.check:
        steps = tuple(args.steps or (QUICK_CHECK_STEPS if args.quick else CHECK_STEPS))
        savers = tuple(args.savers or ("none", "sqlite"))
        raise SystemExit(check(steps, args.repeats or CHECK_PAIRS, savers, RatioBounds(args.ratios)))
    if args.calls:
        print_calls(args.calls)
        return
    if args.profile:
        profile(args.profile)
        return
    if args.nodes:
        node_times(args.nodes)
        return
    steps = tuple(args.steps or (QUICK_STEPS if args.quick else FULL_STEPS))
    repeats = args.repeats or (1 if args.quick else 3)
    savers = tuple(args.savers or (("none", "sqlite") if args.quick else SAVERS))
    if args.floor:
        with tempfile.TemporaryDirectory() as tmp:
            print_floor(tuple(args.steps or (10, 200)), repeats, tuple(args.savers or ("none", "sqlite")), Path(tmp))
        return
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        found = measure(steps, repeats, savers, workdir)
        reads: dict[tuple[str, int], list[dict[str, Any]]] = {}
        if "sqlite" in savers:
            for n in steps:
                for side in SIDES:
                    path = workdir / f"{side}-sqlite-{n}.db"
                    reads[(side, n)] = [child("read", side, str(path)) for _ in range(repeats)]
        resumes = measure_resumes(steps, repeats, workdir) if "sqlite" in savers else {}
        builds = {side: [child("build", side) for _ in range(repeats)] for side in SIDES}
        cli = cli_start(repeats, workdir)
    load_end = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores, load average "
          f"{load[0]:.1f} at the start, {load_end[0]:.1f} at the end; {repeats} repeat(s), median (min–max)\n")
    print_runs(found, steps, savers)
    if reads:
        print_reads(reads)
    if resumes:
        print_resumes(resumes)
    print_start(builds, cli)


if __name__ == "__main__":
    main()
