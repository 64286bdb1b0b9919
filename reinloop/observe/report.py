"""A run, explained after the fact: its path drawn on the graph and a step timeline.

:func:`run_report` gathers everything known about a thread into plain data
(what ``--format json`` prints): the outcome of each task run on it, the graph
with how often each node ran and each edge was taken, the path of the latest
run, a timeline of steps (thought, actions with arguments, observations,
tokens, latency, memory events, guard decisions, errors), and the run's record
(breaks, operators' decisions, waiting calls: :mod:`reinloop.observe.record`, the
list ``reinloop runs show`` prints).

It reads two sources. The ``node_events`` table of a run database
(:class:`~reinloop.checkpoints.runlog.RunLog`) is the full record. Without it, the events
are rebuilt from the graph's checkpoints (``get_state_history``): the same
path and steps, with latencies measured between checkpoints (serialisation
included) and no memory events. The final state comes from ``get_state``
when the graph has a checkpointer.

:func:`render_html` turns a report into one self-contained page (inline SVG
and CSS, no script, a CSP that forbids every fetch); :func:`visualize` does
both and writes the file.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import groupby, pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocols.answers import wrap_up_note
from ..checkpoints import Database
from .drawing import Overlay, html_page, node_label, path_svg
from .pictures import default_graph, draw_graph
from ..errors import ConfigurationError, ThreadNotFoundError
from .events import NodeEvent, protocol_switches
from ..graph import ROUTES
from ..models.resolve import endpoint_host, model_label
from .record import RecordEntry, read_record, record_entries
from ..checkpoints.runlog import read_events
from ..models.pricing import call_flags, cost_breakdown
from .terminal import safe_html, safe_json

if TYPE_CHECKING:  # in annotations only: a report opens its database through reinloop.checkpoints
    import sqlite_utils

REPORT_FORMATS = ("html", "json")
FAILING_NODES = ("parse", "validate", "execute")  # memorize and guard only restate a step's failure


# --- events rebuilt from checkpoints ---------------------------------------------------------


def _from_state(node: str, values: dict[str, Any]) -> dict[str, Any]:
    """What a node's event would have said, read from the state it left behind."""
    counters = values.get("counters") or {}
    pending = values.get("pending") or {}
    if node == "decide":
        reply = values.get("reply") or {}
        return {"tokens_in": reply.get("prompt_tokens"), "tokens_out": reply.get("completion_tokens"),
                "data": {"cost": reply.get("cost") or []}}
    if node in ("parse", "validate", "execute"):
        actions = [{k: a.get(k) for k in ("tool", "args", "observation", "error", "problem", "repairs") if k in a}
                   for a in pending.get("actions") or []]
        error = pending.get("parse_error") if node == "parse" else "; ".join(
            f"{a.get('tool')}: {a.get('problem') or a.get('observation')}" for a in actions
            if a.get("problem") or a.get("error")) or None
        return {"thought": pending.get("thought") or None, "actions": actions, "answer": pending.get("answer"), "error": error}
    if node == "memorize":
        step = (values.get("scratchpad") or [{}])[-1]
        failed = [f"{a.get('tool')}: {a.get('observation')}" for a in step.get("actions") or [] if a.get("error")]
        return {"step": step.get("index"), "thought": step.get("thought") or None, "actions": step.get("actions") or [],
                "answer": step.get("answer"), "counters": counters,
                "error": "; ".join(filter(None, [step.get("parse_error"), *failed])) or None,
                "data": {"feedback": step["feedback"]} if step.get("feedback") else None}
    if node == "guard":
        return {"step": counters.get("steps"), "decision": values.get("decision"), "reason": values.get("break_reason"),
                "message": values.get("break_message"), "hints": values.get("hints") or [], "counters": counters}
    return {}


def _branch(graph: Any, config: dict[str, Any]) -> list[Any]:
    """The checkpoints of the thread's current branch, oldest first."""
    snapshots = {s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(config)}
    head = graph.get_state(config)
    chain = []
    current = snapshots.get(head.config["configurable"].get("checkpoint_id"))
    while current is not None:
        chain.append(current)
        parent = (current.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        current = snapshots.get(parent)
    return chain[::-1]


def _seconds(snapshot: Any) -> float:
    return dt.datetime.fromisoformat(snapshot.created_at).timestamp() if snapshot.created_at else 0.0


def events_from_history(graph: Any, thread_id: str) -> list[NodeEvent]:
    """The events of a thread, rebuilt from its checkpoints (no ``node_events`` table needed)."""
    config = {"configurable": {"thread_id": thread_id}}
    chain = _branch(graph, config)
    events: list[NodeEvent] = []
    for before, after in pairwise(chain):
        for node in before.next:
            if node.startswith("__"):
                continue
            values = after.values
            counters = (values.get("counters") or {})
            event = {"node": node, "summary": f"{node} (rebuilt from checkpoint)", "thread_id": thread_id,
                     "run": values.get("run", 0), "step": counters.get("steps", 0) + 1,
                     "superstep": after.metadata.get("step"), "checkpoint_ns": "",
                     "checkpoint_id": before.config["configurable"]["checkpoint_id"], "started_at": _seconds(before),
                     "latency_ms": round((_seconds(after) - _seconds(before)) * 1000, 3)}
            event.update({k: v for k, v in _from_state(node, values).items() if v is not None})
            events.append(event)  # type: ignore[arg-type]
    for task in chain[-1].tasks if chain else ():
        if task.error:  # the node that raised: the run stopped there
            events.append({"node": task.name, "summary": f"raised {task.error}", "thread_id": thread_id,
                           "run": chain[-1].values.get("run", 0), "error": str(task.error)})
    return events


# --- the report ------------------------------------------------------------------------------


def _route(source: str, event: dict[str, Any] | None, target: str) -> str | None:
    """Which named route of ``source``'s conditional edge led to ``target``."""
    if source not in ROUTES:
        return None
    names = [r for r, t in ROUTES[source][1].items() if t == target]
    if len(names) == 1:
        return names[0]
    event = event or {}
    if source == "guard":
        return event.get("decision")
    if source == "parse":
        return "error" if event.get("error") else "answer"
    return None


def traversals(events: list[NodeEvent], graph: Any) -> dict[str, Any]:
    """Visits per node, errors per node, traversals per edge (by route), and the latest run's path."""
    edges = {(e.source, e.target) for e in graph.edges}
    visits, errors, counts = Counter(), Counter(), Counter()
    routes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    path: list[str] = []
    for _, run_events in groupby(events, key=lambda e: e.get("run", 0)):
        prev, prev_event, path = "__start__", None, ["__start__"]
        for event in run_events:
            node = event["node"]
            visits[node] += 1
            errors[node] += bool(event.get("error")) and (node in FAILING_NODES or "raised" in event.get("summary", ""))
            if (prev, node) in edges:
                counts[(prev, node)] += 1
                routes[(prev, node)][_route(prev, prev_event, node)] += 1
            prev, prev_event = node, event
            path.append(node)
        decision = (prev_event or {}).get("decision")
        if prev == "guard" and decision in ("finish", "break"):
            visits["__end__"] += 1
            counts[(prev, "__end__")] += 1
            routes[(prev, "__end__")][decision] += 1
            path.append("__end__")
        elif prev == "guard" and decision == "pause":  # paused at a break: the pause edge, waiting for an operator
            counts[(prev, prev)] += 1
            routes[(prev, prev)]["pause"] += 1
    return {"visits": visits, "errors": errors, "counts": counts, "routes": routes, "path": path}


def edge_label(edge: Any, count: int, routes: Counter[str]) -> str:
    """What a run's drawing writes on an edge: the routes it took (``continue ×2 / hint ×1``, ``finish``), or ``×4``.

    A conditional edge a run took names only the routes taken, with counts
    when it was taken more than once; one it never took names all its routes.
    """
    if not edge.conditional or not edge.data:
        return f"×{count}" if count else ""
    names = str(edge.data).split(" / ")
    taken = [n for n in names if routes.get(n)]
    if not taken:
        return " / ".join(names)
    return " / ".join(f"{n} ×{routes[n]}" if sum(routes.values()) > 1 else n for n in taken)


def timeline(events: list[NodeEvent]) -> list[dict[str, Any]]:
    """One entry per step: what the model thought and did, what came back, what it cost, what the guard said."""
    steps = []
    for (run, index), group in groupby(events, key=lambda e: (e.get("run", 0), e.get("step", 0))):
        evs = list(group)
        by_node = {e["node"]: e for e in evs}
        step = by_node.get("memorize") or by_node.get("execute") or by_node.get("parse") or {}
        guard = by_node.get("guard", {})
        steps.append({
            "run": run, "step": index,
            "thought": step.get("thought"), "actions": step.get("actions") or [], "answer": step.get("answer"),
            "error": step.get("error") or next((e["error"] for e in evs if e.get("error")), None),
            "parse_error": by_node.get("parse", {}).get("error"),
            "feedback": (by_node.get("memorize", {}).get("data") or {}).get("feedback"),
            "raised": next((e["error"] for e in evs if "raised" in e.get("summary", "")), None),
            "tokens_in": by_node.get("decide", {}).get("tokens_in"), "tokens_out": by_node.get("decide", {}).get("tokens_out"),
            "cost": (by_node.get("decide", {}).get("data") or {}).get("cost") or [],
            "model": (by_node.get("decide", {}).get("data") or {}).get("model"),
            "fallbacks": (by_node.get("decide", {}).get("data") or {}).get("fallbacks") or [],
            "protocol_switches": protocol_switches(by_node),
            "latency_ms": round(sum(e.get("latency_ms") or 0 for e in evs), 3),
            "nodes": [{k: e.get(k) for k in ("node", "latency_ms", "summary", "error")} for e in evs],
            "memory": [m for e in evs for m in e.get("memory") or []],
            "decision": guard.get("decision"), "reason": guard.get("reason"), "message": guard.get("message"),
            "hints": guard.get("hints") or [], "counters": guard.get("counters"),
            **approvals_of(evs),
        })
    return steps


def _costs(evs: list[NodeEvent], counters: dict[str, Any]) -> dict[str, Any]:
    """A run's model and endpoint host (as its decide events recorded them), tokens in and out, and seconds."""
    decided = [e for e in evs if e["node"] == "decide"]
    model = next((d for e in reversed(decided) if (d := e.get("data") or {}).get("model")), {})
    timed = [e for e in evs if e.get("started_at")]
    span = (max(e["started_at"] + (e.get("latency_ms") or 0) / 1000 for e in timed) - min(e["started_at"] for e in timed)
            if timed else None)
    return {
        "model": model.get("model"), "endpoint": model.get("endpoint"),
        "tokens_in": counters.get("prompt_tokens", sum(e.get("tokens_in") or 0 for e in decided)),
        "tokens_out": counters.get("completion_tokens", sum(e.get("tokens_out") or 0 for e in decided)),
        "seconds": round(counters["elapsed_seconds"], 3) if "elapsed_seconds" in counters
        else round(span, 3) if span is not None else None,
    }


def approvals_of(evs: list[NodeEvent]) -> dict[str, list[dict[str, Any]]]:
    """A step's operator decisions (``approvals``) and the calls still waiting for one (``waiting``)."""
    decided = [d for e in evs if e["node"] == "approve" for d in (e.get("data") or {}).get("decisions") or []]
    done = {d.get("id") for d in decided}
    last = next((e for e in reversed(evs) if e["node"] == "execute"), {})
    waiting = [w for w in (last.get("data") or {}).get("waiting") or [] if w.get("id") not in done]
    return {"approvals": decided, "waiting": waiting}


def runs_of(events: list[NodeEvent]) -> list[dict[str, Any]]:
    """Each task run on the thread: its task, how it ended, and where it broke."""
    runs = []
    for run, group in groupby(events, key=lambda e: e.get("run", 0)):
        evs = list(group)
        task = next((e.get("data", {}).get("task") for e in evs if e.get("data", {}).get("task")), None)
        last = next((e for e in reversed(evs) if e["node"] == "guard"), {})
        raised = next((e for e in reversed(evs) if "raised" in e.get("summary", "")), None)
        status = {"finish": "done", "break": "broken", "pause": "broken"}.get(last.get("decision") or "", "running")
        if evs[-1]["node"] == "execute" and (evs[-1].get("data") or {}).get("waiting"):
            status = "waiting"
        if raised is not None and raised is evs[-1]:
            status = "failed"
        answer = next((e.get("answer") for e in reversed(evs) if e["node"] == "memorize" and e.get("answer") is not None), None)
        runs.append({"run": run, "task": task, "status": status, "paused": last.get("decision") == "pause",
                     **_costs(evs, last.get("counters") or {}),
                     "answer": answer if status == "done" else None,
                     "wrapped_up": (last.get("data") or {}).get("wrapped_up") if status == "done" else None,
                     "break_reason": last.get("reason") if status == "broken" else None,
                     "break_message": last.get("message") if status == "broken" else None,
                     "broke_at_step": last.get("step") if status == "broken" else None,
                     "error": raised.get("error") if status == "failed" and raised else None,
                     "steps": max((e.get("step", 0) for e in evs), default=0), "counters": last.get("counters")})
    return runs


def _checkpointed(graph: Any) -> bool:
    return graph is not None and getattr(graph, "checkpointer", None) not in (None, False)


def run_report(graph: Any = None, thread_id: str = "", *, db: str | Path | sqlite_utils.Database | Database | None = None
               ) -> dict[str, Any]:
    """Everything known about thread ``thread_id``, as JSON-able data (see the module docstring)."""
    events = read_events(db, thread_id) if db is not None else []
    source = "node_events table" if events else None
    state: dict[str, Any] = {}
    if _checkpointed(graph):
        state = dict(graph.get_state({"configurable": {"thread_id": thread_id}}).values)
        if not events and state:
            events, source = events_from_history(graph, thread_id), "checkpoints"
    if not events:
        where = f"in the node_events table of {str(getattr(db, 'location', db))!r}" if db is not None else "(no run database given)"
        where += " or in the graph's checkpoints" if _checkpointed(graph) else ""
        raise ThreadNotFoundError(f"no run recorded for thread {thread_id!r} {where}; "
                                  "record runs with build_graph(..., sinks=[RunLog(db)]) or a checkpointer")
    drawable = (graph if graph is not None else default_graph()).get_graph()
    walk = traversals(events, drawable)
    runs = runs_of(events)
    if state.get("task") and runs and not runs[-1]["task"]:
        runs[-1]["task"] = state["task"]
    context = getattr(graph, "reinloop_context", None)
    if context is not None and runs and not runs[-1]["model"]:  # rebuilt from checkpoints: the graph's model
        runs[-1]["model"], runs[-1]["endpoint"] = model_label(context.model), endpoint_host(context.model)
    edges = [{"source": e.source, "target": e.target, "label": e.data, "conditional": e.conditional,
              "count": walk["counts"][(e.source, e.target)],
              "routes": {k: v for k, v in walk["routes"][(e.source, e.target)].items() if k}} for e in drawable.edges]
    nodes = [{"id": n, "visits": walk["visits"][n], "errors": walk["errors"][n]} for n in drawable.nodes]
    return {"thread_id": thread_id, "source": source, "latest": runs[-1], "runs": runs,
            "graph": {"nodes": nodes, "edges": edges}, "path": walk["path"],
            "steps": timeline(events), "record": [e.as_dict() for e in stored_record(graph, thread_id, db, state)],
            "events": events}


def stored_record(graph: Any, thread_id: str, db: Any, state: dict[str, Any]) -> list[RecordEntry]:
    """The run's record (breaks, operators' decisions, waiting calls), as ``runs show`` prints it: from the run
    database, else the graph's checkpointer when it is one, else the graph's state without the breaks table."""
    target = db if db is not None else getattr(graph, "checkpointer", None)
    try:
        return read_record(target, thread_id) if target is not None else record_entries(thread_id, state, [])
    except ConfigurationError:  # a checkpointer that is no run database (LangGraph's in-memory saver)
        return record_entries(thread_id, state, [])


# --- HTML ------------------------------------------------------------------------------------

REPORT_STYLE = """
.status{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff}
.status.done{background:#15803d}.status.broken,.status.failed{background:#b91c1c}.status.running{background:#6b7280}
.why{border-left:4px solid #b91c1c;background:#fef2f2;padding:8px 12px;margin:10px 0}
.answer{border-left:4px solid #15803d;background:#f0fdf4;padding:8px 12px;margin:10px 0}
.meta{color:#4b5563}.path{font-family:ui-monospace,monospace;font-size:12px;color:#374151;word-break:break-word}
table.timeline{border-collapse:collapse;width:100%;table-layout:fixed;min-width:900px}
col.step{width:4em}col.did{width:50%}col.tokens{width:6.5em}col.latency{width:6.5em}col.memory{width:12%}col.guard{width:20%}
.timeline td{overflow-wrap:break-word}code.args{white-space:pre-wrap}
.facts{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:8px 0}.facts dt{color:#6b7280}.facts dd{margin:0}
.sent{border-left:3px solid #a16207;padding-left:8px;margin-top:4px;color:#713f12}
.timeline th,.timeline td{border-bottom:1px solid #e5e7eb;padding:6px 8px;text-align:left;vertical-align:top}
.timeline th{background:#f9fafb;font-size:12px;text-transform:uppercase;color:#6b7280}
.timeline tr.error td{background:#fef2f2}.timeline tr.error td:first-child{border-left:4px solid #dc2626}
.timeline tr.break td{background:#fee2e2}
.timeline tr.waiting td{background:#fefce8}.timeline tr.waiting td:first-child{border-left:4px solid #ca8a04}
.approval{color:#1d4ed8}.pending{color:#a16207;font-weight:600}.status.waiting{background:#ca8a04}
.err{color:#b91c1c;font-weight:600}.hint{color:#a16207}.mem{color:#7e22ce}
code,pre{font-family:ui-monospace,monospace;font-size:12px}pre{white-space:pre-wrap;margin:2px 0}
.num{text-align:right;white-space:nowrap}
"""


def _e(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(text)


def _overlay(report: dict[str, Any], graph: Any) -> Overlay:
    last = report["path"]
    latest = report["latest"]
    drawn = {(e.source, e.target): e for e in graph.edges}
    labels = {key: edge_label(drawn[key], e["count"], Counter(e["routes"]))
              for e in report["graph"]["edges"] if (key := (e["source"], e["target"])) in drawn}
    return Overlay(
        visits={n["id"]: n["visits"] for n in report["graph"]["nodes"]},
        errors={n["id"]: n["errors"] for n in report["graph"]["nodes"]},
        edge_counts={(e["source"], e["target"]): e["count"] for e in report["graph"]["edges"]},
        edge_labels=labels,
        last_path=set(pairwise(last)),
        broke_at="guard" if latest["status"] == "broken" else None,
        broke_why=latest.get("break_reason"),
    )


def _actions_html(actions: Iterable[dict[str, Any]]) -> str:
    parts = []
    for a in actions:
        obs = a.get("observation")
        cls = ' class="err"' if a.get("error") else ""
        parts.append(f"<div><code>{_e(a.get('tool'))}</code> <code class=\"args\">{_e(a.get('args') or {})}</code>"
                     + "".join(f'<div class="hint">repaired: {_e(r)}</div>' for r in a.get("repairs") or [])
                     + (f"<pre{cls}>→ {_e(obs)}</pre>" if obs is not None else "") + "</div>")
    return "".join(parts)


def _approvals_html(s: dict[str, Any]) -> str:
    """The operator's decisions of a step, and the calls still waiting for one."""
    out = ""
    for d in s.get("approvals") or []:
        what = {"edit": f" with {_e(d.get('args'))}", "reject": f": {_e(d.get('message'))}",
                "respond": f": {_e(d.get('text'))}"}.get(d.get("action"), "")
        always = " (always, for this thread)" if d.get("always") else ""
        out += f'<div class="approval">operator: {_e(d.get("action"))} <code>{_e(d.get("id"))}</code>{what}{always}</div>'
    for w in s.get("waiting") or []:
        out += (f'<div class="pending">WAITING for approval: <code>{_e(w.get("tool"))}</code> '
                f'<code>{_e(w.get("args") or {})}</code> ({_e(w.get("awaiting"))}); answer with '
                f'<code>reinloop approve THREAD {_e(w.get("id"))}</code></div>')
    return out


def _step_row(s: dict[str, Any]) -> str:
    stopped = s["decision"] in ("break", "pause")
    cls = "break" if stopped else "waiting" if s.get("waiting") else "error" if s["error"] else ""
    guard = _e(s["decision"] or "")
    if stopped:
        word = "PAUSED at" if s["decision"] == "pause" else "BREAK"
        guard = f'<span class="err">{word} {_e(s["reason"])}</span><br>{_e(s["message"])}'
    guard += "".join(f'<div class="hint">hint: {_e(h)}</div>' for h in s["hints"])
    did = "".join(f'<div class="hint">model fallback: {_e(f["from_model"])} &rarr; {_e(f["to_model"])} '
                  f'({_e(f["reason"])}): {_e(f["problem"])}</div>' for f in s.get("fallbacks") or [])
    did += "".join(f'<div class="hint">protocol switch: {_e(p["from_protocol"])} &rarr; {_e(p["to_protocol"])} '
                   f'({_e(p["reason"])}): {_e(p["problem"])}</div>' for p in s.get("protocol_switches") or [])
    did += (f"<div><i>{_e(s['thought'])}</i></div>" if s["thought"] else "") + _actions_html(s["actions"])
    if s["answer"] is not None:
        did += f"<div><b>answer:</b> {_e(s['answer'])}</div>"
    if s["parse_error"]:
        did += f'<div class="err">parse error: {_e(s["parse_error"])}</div>'
    if s.get("feedback"):
        did += f'<div class="sent"><b>sent back to the model:</b><pre>{_e(s["feedback"])}</pre></div>'
    if s["raised"]:
        did += f'<div class="err">stopped: {_e(s["raised"])}</div>'
    did += _approvals_html(s)
    memory = "".join(f'<div class="mem">{_e(m.get("kind"))}: {_e(m.get("summary"))}</div>' for m in s["memory"])
    tokens = "" if s["tokens_in"] is None else f"{s['tokens_in']} / {s['tokens_out']}"
    tokens += _cost_html(s.get("cost") or [])
    return (f'<tr class="{cls}" data-step="{s["step"]}"><td class="num">{s["run"]}.{s["step"]}</td><td>{did}</td>'
            f'<td class="num">{tokens}</td><td class="num">{s["latency_ms"]:.1f} ms</td><td>{memory}</td><td>{guard}</td></tr>')


def _seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s" if seconds < 120 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _facts_html(latest: dict[str, Any]) -> str:
    """The latest run at a glance: model and endpoint host, tokens in and out, how long it took."""
    endpoint = f" at <code>{_e(latest['endpoint'])}</code>" if latest.get("endpoint") else ""
    facts = [("model", f"<code>{_e(latest.get('model') or 'unknown')}</code>{endpoint}"),
             ("tokens", f"{latest.get('tokens_in') or 0:,} in / {latest.get('tokens_out') or 0:,} out"),
             ("duration", _e(_seconds_text(latest.get("seconds"))))]
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def _cost_html(calls: list[dict[str, Any]]) -> str:
    """A step's dollars under its tokens: ``$0.00012, 1,024 cached``; unpriced calls in red."""
    if not calls:
        return ""
    usd = sum(c.get("usd") or 0.0 for c in calls)
    cached = sum(c.get("cached_tokens") or 0 for c in calls)
    unpriced = sum(c.get("usd") is None for c in calls)
    text = f"${usd:.5f}" + (f", {cached:,} cached" if cached else "")
    flag = f'<br><span class="err">{unpriced} unpriced</span>' if unpriced else ""
    flag += "".join(f'<div class="hint">cost: {_e(f)}</div>' for f in call_flags(calls))
    return f'<br><span class="meta">{text}</span>{flag}'


def _total_cost_html(steps: list[dict[str, Any]]) -> str:
    """The run's cost so far, from the latest counters the guard reported."""
    counters = next((s["counters"] for s in reversed(steps) if s.get("counters")), None) or {}
    if not counters.get("models"):
        return ""
    return f'<p class="meta" id="cost">cost: {_e(cost_breakdown(counters))}</p>\n'


def _outcome_html(latest: dict[str, Any]) -> str:
    status = latest["status"]
    steps = latest["steps"]
    out = (f'<p><span class="status {status}">{status}</span> '
           f'<span class="meta">run {latest["run"]}, {steps} step{"s" * (steps != 1)}</span></p>') + _facts_html(latest)
    if latest.get("task"):
        out += f"<p><b>task:</b> {_e(latest['task'])}</p>"
    if status == "broken":
        paused = " (paused: waiting for an operator to resume or abort it)" if latest.get("paused") else ""
        out += (f'<div class="why"><b>Broke at step {latest["broke_at_step"]}: {_e(latest["break_reason"])}</b>'
                f"{paused}<br>{_e(latest['break_message'])}</div>")
    elif status == "waiting":
        out += '<div class="why"><b>Waiting for an operator\'s approval</b> (see the timeline)</div>'
    elif status == "failed":
        out += f'<div class="why"><b>Stopped by an error:</b> {_e(latest["error"])}</div>'
    elif status == "done":
        out += (f'<div class="answer"><b>answer:</b> {_e(latest["answer"])}'
                f'{_e(wrap_up_note(latest.get("wrapped_up")))}</div>')
    return out


def _record_html(record: list[dict[str, Any]]) -> str:
    """The run's record as ``runs show`` prints it: breaks (resumed ones too), operators' decisions, waiting calls."""
    if not record:
        return ""
    items = "".join(f'<li class="{_e(e["kind"])}">{_e(e["text"])}</li>' for e in record)
    return f'\n<h2>Breaks and operators\' decisions</h2>\n<ul id="record">{items}</ul>'


def render_html(report: dict[str, Any], graph: Any = None) -> str:
    """A run report as one self-contained HTML page: outcome, the graph with the path drawn, the timeline."""
    drawable = (graph if graph is not None else default_graph()).get_graph()
    svg = path_svg(drawable, _overlay(report, drawable), standalone=False)
    rows = "\n".join(_step_row(s) for s in report["steps"])
    earlier = "".join(f"<li>run {r['run']}: {_e(r['status'])} — {_e(r.get('task') or '')}</li>" for r in report["runs"][:-1])
    body = (
        f"<h1>reinloop run <code>{_e(report['thread_id'])}</code></h1>\n"
        f'<p class="meta">from the {_e(report["source"])}</p>\n{_outcome_html(report["latest"])}\n'
        + _total_cost_html(report["steps"])
        + (f"<h2>Earlier runs on this thread</h2><ul>{earlier}</ul>\n" if earlier else "")
        + '<h2>Path</h2>\n<p class="meta">Blue edges were taken (thicker: the latest run), with how often; '
        "grey ones were not. Red marks errors and the break.</p>\n"
        f'<div class="figure" id="graph">{svg}</div>\n'
        f'<p class="path">{" → ".join(html.escape(node_label(n)) for n in report["path"])}</p>\n'
        '<h2>Timeline</h2>\n<table class="timeline" id="timeline"><colgroup><col class="step"><col class="did">'
        '<col class="tokens"><col class="latency"><col class="memory"><col class="guard"></colgroup>'
        "<thead><tr><th>step</th><th>thought, actions, "
        "observations</th><th>tokens in/out, cost</th><th>latency</th><th>memory</th><th>guard</th></tr></thead>\n"
        f"<tbody>\n{rows}\n</tbody></table>"
        + _record_html(report.get("record") or [])
    )
    return safe_html(html_page(f"reinloop run {report['thread_id']}", body, REPORT_STYLE))


def visualize(graph: Any = None, thread_id: str | None = None, path: str | Path | None = None, *,
              db: str | Path | sqlite_utils.Database | Database | None = None, format: str = "html",  # noqa: A002
              run: str | None = None) -> str:
    """Draw the graph, or thread ``thread_id``'s path on it with its timeline, as self-contained HTML (or JSON).

    The run is read from ``db``'s ``node_events`` table, else from the graph's
    checkpointer. The text is returned, and written to ``path`` if given.
    ``run=`` is the old name of ``thread_id`` (deprecated; it will be removed).
    """
    if run is not None:
        if thread_id is not None:
            raise ConfigurationError("visualize() got both thread_id and run (its old name); pass thread_id only")
        warnings.warn("visualize(run=...) is deprecated: the argument is a thread id, pass thread_id=...",
                      DeprecationWarning, stacklevel=2)
        thread_id = run
    if format not in REPORT_FORMATS:
        raise ConfigurationError(f"unknown report format {format!r}; choose one of: {', '.join(REPORT_FORMATS)}")
    if thread_id is None:
        text = str(draw_graph(graph, "html")) if format == "html" else json.dumps(
            {"graph": [{"source": e.source, "target": e.target, "label": e.data}
                       for e in (graph or default_graph()).get_graph().edges]}, ensure_ascii=False, indent=2)
    else:
        report = run_report(graph, thread_id, db=db)
        text = render_html(report, graph) if format == "html" else safe_json(report, indent=2, default=str)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
