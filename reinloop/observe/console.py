"""Showing a run as it happens, from the events the nodes emit.

The consoles are consumers of the ``custom`` stream: everything they show is
also in the events a caller gets from ``graph.stream(...,
stream_mode="custom")`` and in the ``node_events`` table.

:class:`RunConsole` prints each step when it completes (thought, actions with
their arguments, observations, memory events, the guard's decision) under a
header with the run's progress (step n/max, elapsed/limit, tokens/budget,
consecutive errors/limit, repeats/limit). On a terminal it uses ``rich``:
colours (errors and breaks in red, hints in yellow, answers in green) and a
live progress line at the bottom that ticks while a node runs; under it, the
model's reply as it streams (:meth:`RunConsole.token`, fed from LangGraph's
``messages`` stream): its text as it is written, its tool calls once their
arguments are complete. When stdout is
not a terminal, or with ``color=False``, the same lines come out as plain text
(what ``tests/snapshots/demo.txt`` holds). :class:`JsonConsole` prints one
JSON event per line for scripts.
"""

from __future__ import annotations

import json
import sys
import time
from types import TracebackType
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .events import NodeEvent, protocol_switches
from ..runs.limits import Limits
from ..models.pricing import call_flags
from .terminal import safe_json, safe_text

LABEL = 13  # width of "observation: "


def short(value: Any, limit: int = 160) -> str:
    """``value`` on one line, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _of(value: str, limit: Any, unit: str = "") -> str:
    return value + unit if limit is None else f"{value}{unit}/{limit:g}{unit}"


def _same(limits: Limits, c: dict[str, Any]) -> str:
    """`` (2/3 the same way)`` once two failed steps in a row failed alike: the nearer error breaker."""
    same = c.get("same_errors", 0)
    return f" ({_of(str(same), limits.max_same_errors)} the same way)" if same >= 2 else ""


def progress(limits: Limits, counters: dict[str, Any], elapsed: float | None = None) -> str:
    """``step 2/10 · 0.3s/120s · tokens 30 · errors 1/5 · repeats 2/3``: where the run stands."""
    c = counters
    seconds = c.get("elapsed_seconds", 0.0) if elapsed is None else elapsed
    tokens = c.get("prompt_tokens", 0) + c.get("completion_tokens", 0)
    return " · ".join([
        "step " + _of(str(c.get("steps", 0)), limits.max_steps),
        _of(f"{seconds:.1f}", limits.max_seconds, "s"),
        "tokens " + _of(str(tokens), limits.token_budget),
        *_cost(limits, c),
        "errors " + _of(str(c.get("consecutive_errors", 0)), limits.max_consecutive_errors) + _same(limits, c),
        *_repeats(limits, c),
    ])


def _repeats(limits: Limits, c: dict[str, Any]) -> list[str]:
    """``repeats 2/3`` once the same action came twice in a row (a first action repeats nothing: not shown)."""
    repeats = c.get("repeats", 0)
    return ["repeats " + _of(str(repeats), limits.max_repeats)] if repeats >= 2 else []


def doing(event: NodeEvent | None) -> str:
    """What the run does after ``event``'s node, in words: ``waiting for the model``, ``running calculator``."""
    node = (event or {}).get("node")
    tools = ", ".join(dict.fromkeys(str(a.get("tool")) for a in (event or {}).get("actions") or [] if not a.get("error")))
    if node in (None, "", "guard"):
        return "waiting for the model"
    if node == "decide":
        return "reading the reply"
    if node == "parse" and tools:
        return "checking the calls"
    if node in ("validate", "approve") and tools:
        return f"running {tools}"
    if node == "memorize":
        return "checking limits"
    return "noting the step"


def _cost(limits: Limits, c: dict[str, Any]) -> list[str]:
    """``$0.0123/$0.5``, flagged ``+2 unpriced``; nothing for a run that costs nothing and has no budget."""
    usd, unpriced = float(c.get("cost_usd") or 0.0), int(c.get("unpriced_calls") or 0)
    if not usd and not unpriced and limits.max_cost is None:
        return []
    text = f"${usd:.4f}" + ("" if limits.max_cost is None else f"/${limits.max_cost:g}")
    return [text + (f" +{unpriced} unpriced" if unpriced else "")]


class _Status:
    """The live progress line: re-rendered by ``rich.live`` several times a second."""

    def __init__(self, owner: RunConsole) -> None:
        self.owner = owner

    def __rich__(self) -> Text:
        o = self.owner
        elapsed = o.counters.get("elapsed_seconds", 0.0) + (time.time() - o.since)
        line = progress(o.limits, {**o.counters, "steps": o.counters.get("steps", 0) + 1}, elapsed)
        status = Text.assemble(("● ", "cyan"), line, (f" · {safe_text(doing(o.last))}", "dim"))
        for text in o.reply.lines():
            status.append("\n")
            status.append(safe_text(text), "italic dim")
        return status


class StreamedReply:
    """The model reply being streamed: its text so far, and its tool calls once the reply is complete."""

    def __init__(self) -> None:
        self.step: Any = None  # (reinloop_step, message id) of the reply shown
        self.text = ""
        self.calls: dict[int, dict[str, str]] = {}
        self.done = False

    def add(self, chunk: Any, metadata: dict[str, Any]) -> None:
        """Take one streamed chunk of the decide node's model call (other calls, a summarizer's, are not shown)."""
        # the summarizer's tag (reinloop.protocols.memory.SUMMARIZER_TAG), spelled out: the console does not import LangChain
        if metadata.get("langgraph_node") != "decide" or "reinloop:summarizer" in (metadata.get("tags") or []):
            return
        key = (metadata.get("reinloop_step"), getattr(chunk, "id", None))
        if key != self.step:  # a new reply: each model call's chunks share one id
            self.__init__()  # type: ignore[misc]
            self.step = key
        content = getattr(chunk, "content", "")
        self.text += content if isinstance(content, str) else "".join(
            b.get("text", "") for b in content if isinstance(b, dict))
        for piece in getattr(chunk, "tool_call_chunks", None) or []:
            call = self.calls.setdefault(int(piece.get("index") or 0), {"name": "", "args": ""})
            call["name"] += piece.get("name") or ""
            call["args"] += piece.get("args") or ""
        self.done = self.done or bool((getattr(chunk, "response_metadata", None) or {}).get("finish_reason"))

    def lines(self) -> list[str]:
        """What the live line shows under the progress: ``writing: ...`` and, once complete, each call."""
        shown = [f"  writing: {short(self.text[-400:], 120)}"] if self.text.strip() else []
        if self.done:
            shown += [f"  call:    {c['name']} {short(c['args'])}" for c in self.calls.values()]
        return shown


class RunConsole:
    """Prints each completed step of a run, with colours and a live progress line on a terminal."""

    def __init__(self, limits: Limits, out: TextIO | None = None, *, color: bool = True,
                 live: bool | None = None, terminal: bool | None = None) -> None:
        """``live``/``terminal``: ``None`` asks whether ``out`` is a terminal (``True`` forces it)."""
        self.limits = limits
        self.console = Console(
            file=out or sys.stdout,
            force_terminal=terminal,
            color_system="auto" if color else None,
            highlight=False,
            soft_wrap=True,  # long lines stay whole: logs and snapshots are compared line by line
            emoji=False,
        )
        self.live_enabled = self.console.is_terminal if live is None else live
        self._live: Live | None = None
        self.events: list[NodeEvent] = []
        self.counters: dict[str, Any] = {}
        self.since = time.time()
        self.flags_shown: set[str] = set()  # cost flags said already
        self.node = ""
        self.last: NodeEvent | None = None
        """The latest event: the live line says what comes after it (:func:`doing`)."""
        self.reply = StreamedReply()

    def __enter__(self) -> RunConsole:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the live progress line (a no-op when there is none)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def print(self, text: str | Text = "", style: str = "") -> None:
        """Print a line of text (above the live progress line); control characters come out escaped."""
        self.console.print(safe_text(text) if isinstance(text, str) else text, style=style, markup=False)

    def handle(self, event: NodeEvent) -> None:
        """Take one event: a completed step is printed when its guard has decided."""
        if self.live_enabled and self._live is None:
            self._live = Live(_Status(self), console=self.console, transient=True, refresh_per_second=8)
            self._live.start()
        if event.get("node") == "decide" and self.events and self.events[-1].get("node") == "guard":
            self.events = []
        self.events.append(event)
        self.node, self.last = event.get("node", ""), event
        if event.get("counters"):
            self.counters, self.since = dict(event["counters"] or {}), time.time()
        if event.get("summary", "").startswith("raised "):
            self.print(f"  error:       {event['node']} {event['summary']}", "bold red")
        elif event.get("node") == "guard":
            self._print_step(self.events)
            self.events = []
            self.reply = StreamedReply()

    def token(self, chunk: Any, metadata: dict[str, Any]) -> None:
        """Take one piece of a streamed model reply (``runs.run(..., on_token=console.token)``): shown live."""
        self.reply.add(chunk, metadata)
        if self._live is not None:
            self._live.refresh()

    def _line(self, label: str, value: str, style: str = "") -> None:
        self.print(Text.assemble((f"  {label + ':':<{LABEL}}", style or "dim"), (safe_text(value), style)))

    def _print_step(self, events: list[NodeEvent]) -> None:
        by_node = {e["node"]: e for e in events}
        guard, step = by_node["guard"], by_node.get("memorize", {})
        self.print(f"[{progress(self.limits, guard.get('counters') or {})}]", "bold")
        decided = by_node.get("decide", {}).get("data") or {}
        for moved in decided.get("fallbacks") or []:  # reinloop.fallback
            self._line("fallback", f"{moved['from_model']} -> {moved['to_model']} ({moved['reason']}): "
                                   f"{short(moved['problem'])}", "yellow")
        for switch in protocol_switches(by_node):  # on the model that answered, after any fallback
            self._line("protocol", f"{switch['from_protocol']} -> {switch['to_protocol']} ({switch['reason']}): "
                                   f"{short(switch['problem'])}", "yellow")
        for flag in call_flags(decided.get("cost") or []):  # after the moves, each once: a local $0 is said on its first step
            if flag not in self.flags_shown:
                self.flags_shown.add(flag)
                self._line("cost", flag, "yellow")
        if step.get("thought"):
            self._line("thought", short(step["thought"]), "italic")
        for action in step.get("actions") or []:  # a refused call's observation is its problem
            self._line("action", f"{action.get('tool')} {short(action.get('args') or {})}", "cyan")
            self._line("observation", short(action.get("observation") or ""), "red" if action.get("error") else "")
        if by_node.get("parse", {}).get("error"):
            self._line("parse error", short(by_node["parse"]["error"]), "red")
        if step.get("answer") is not None:
            self._line("answer", short(step["answer"]), "bold green")
        for event in events:
            for memory in event.get("memory") or []:
                self._line("memory", f"{memory.get('kind')}: {short(memory.get('summary', ''))}", "magenta")
        self._print_guard(guard)

    def _print_guard(self, event: NodeEvent) -> None:
        decision = event.get("decision") or "?"
        if decision == "break":
            self._line("guard", f"BREAK {event.get('reason')}: {event.get('message')}", "bold red")
        elif decision == "pause":
            self._line("guard", f"PAUSED at {event.get('reason')}: {event.get('message')}", "bold red")
        else:
            self._line("guard", decision, {"finish": "green", "hint": "yellow"}.get(decision, ""))
        for hint in event.get("hints") or []:
            self._line("hint", short(hint), "yellow")


class PlainConsole(RunConsole):
    """A :class:`RunConsole` that prints plain text only: no colours, no live line, nothing to close."""

    def __init__(self, limits: Limits, out: TextIO | None = None) -> None:
        super().__init__(limits, out, color=False, live=False)


class JsonConsole:
    """Prints every event as one JSON object per line (``"type": "event"``), for scripts."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out

    def __enter__(self) -> JsonConsole:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def handle(self, event: NodeEvent) -> None:
        """Print one event as a JSON line."""
        print(safe_json({"type": "event", **event}, default=str), file=self.out or sys.stdout, flush=True)
