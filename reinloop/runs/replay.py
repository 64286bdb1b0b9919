"""Replay a stored run: the same graph, the stored model replies served in order, the first divergence found.

Every model reply of a run is already in its checkpoint history: the decide
node stores it (``state["reply"]``) with the hash of the prompt it answered
(``state["prompt_digest"]``) before anything parses it. :func:`recorded_calls`
reads them back, oldest first, one per model call. :func:`replay` builds the
run's graph again from its stored :class:`~reinloop.RunSpec` on a fresh
in-memory database, with a :class:`~reinloop.testing.ScriptedChatModel` that
serves those replies (:func:`reinloop.testing.replay_model`), feeds it the
run's tasks, answers its breaks and its waiting calls as the operator did
(:func:`recorded_decisions`: approved, edited, rejected or answered), and
compares the two runs step by step. The tools run again, or with
``stub_tools=True`` are served from the stored observations, so a replay needs
neither the model nor the world.

Each served reply costs what it cost when it was recorded (:class:`RecordedPricing`),
so a budget (``Limits.max_cost``) warns and breaks at the same step again; the
calls a replay does not make again (a fallback model's refusal, a summarizer's
calls) are counted with the step's kept reply.

What is compared, per step and in this order: the prompt (its hash), the
actions (tool and arguments), their observations, the answer or parse error,
and the guard's decision; then how the run ended. The first difference is a
:class:`Divergence`; none means the replay is identical. Costs and timings are
not compared (a replayed reply takes no time).

A step that re-asked the model (``AnswerRules.vary_repeats``:
a repeat resampled, a known or refused call withheld)
stored the replies it put aside beside the one it kept (``reply["aside"]``);
:func:`served_replies` serves them in the order they were asked, so the same
re-asks happen again. Runs stored before that was recorded replay the kept
reply alone. Not replayed: a real summarizer's summaries (the scripted model
writes its own, see :func:`~reinloop.testing.facts_summary`); a call still
waiting when the recording ended waits in the replay too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command

from ..checkpoints import Database, open_database
from ..errors import NotReplayableError, StoredNameError
from .outcome import Outcome
from ..models.pricing import CallCost, Pricing
from .rundb import open_db, thread_config
from .spec import NOT_REPLAYED, RunSpec, server_shown
from ..tools.options import METADATA_KEY, options_of

EXIT_IDENTICAL = 0
EXIT_DIVERGED = 5
"""``reinloop replay`` exits 5 when the replay diverged from the recording (0 when identical)."""


@dataclass(frozen=True)
class ModelCall:
    """One model call of a stored run: where it happened, the prompt's hash and the reply as stored."""

    run: int
    step: int
    digest: str
    reply: dict[str, Any]


@dataclass(frozen=True)
class Recording:
    """What a stored run did: its spec, tasks, model calls, steps, break answers and how it ended."""

    thread_id: str
    spec: RunSpec
    tasks: list[str]
    calls: list[ModelCall]
    steps: list[dict[str, Any]]
    decisions: dict[tuple[int, int], str]
    answers: list[Any]
    state: dict[str, Any]


@dataclass(frozen=True)
class Divergence:
    """The first place a replay differs from its recording: the step, what differs, both values."""

    run: int
    step: int
    kind: str  # prompt, action, observation, answer, decision, steps or outcome
    recorded: Any
    replayed: Any
    message: str


@dataclass(frozen=True)
class ReplayReport:
    """What :func:`replay` found: identical, or the first divergence; the replay's outcome and its model calls."""

    thread_id: str
    steps: int
    model_calls: int
    outcome: dict[str, Any]
    divergence: Divergence | None = None
    error: str | None = None  # the replay stopped on this exception (one line)
    stub_tools: bool = False

    @property
    def identical(self) -> bool:
        """True when the replay did what the recording did, step by step."""
        return self.divergence is None

    @property
    def exit_code(self) -> int:
        """0 when identical, :data:`EXIT_DIVERGED` (5) when diverged."""
        return EXIT_IDENTICAL if self.identical else EXIT_DIVERGED

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-able dict (``identical`` included)."""
        return {**asdict(self), "identical": self.identical}


# --- reading a stored run --------------------------------------------------------------------------


def recorded_calls(saver: Database, thread_id: str) -> list[ModelCall]:
    """Every model call of ``thread_id``, oldest first, read from its checkpoint history.

    A checkpoint whose ``(run, llm_calls)`` differs from the one before it was written
    by a decide node: its ``reply`` is the model's answer to the prompt ``prompt_digest`` names.
    """
    calls, seen = [], None
    for saved in reversed(list(saver.checkpointer.list(thread_config(thread_id)))):
        values = saved.checkpoint["channel_values"]
        reply, counters = values.get("reply"), values.get("counters") or {}
        key = (values.get("run"), counters.get("llm_calls"))
        if reply and key != seen:
            calls.append(ModelCall(int(values.get("run") or 1), int(counters.get("steps", 0)) + 1,
                                   str(values.get("prompt_digest") or ""), dict(reply)))
        seen = key if reply else seen
    return calls


def recorded_tasks(saver: Database, thread_id: str) -> list[str]:
    """The tasks of the thread's runs, in order (one per run number)."""
    tasks: dict[int, str] = {}
    for saved in reversed(list(saver.checkpointer.list(thread_config(thread_id)))):
        values = saved.checkpoint["channel_values"]
        if values.get("run") and values.get("run_task"):
            tasks.setdefault(int(values["run"]), str(values["run_task"]))
    return [tasks[r] for r in sorted(tasks)]


def guard_decisions(saver: Database, thread_id: str) -> dict[tuple[int, int], str]:
    """``(run, step) -> the guard's last decision`` on that step, from the thread's node events."""
    return {(int(e.get("run") or 1), int(e.get("step") or 0)): str(e["decision"])
            for e in saver.events.events(thread_id) if e.get("node") == "guard" and e.get("decision")}


def read_recording(saver: Database, thread_id: str) -> Recording:
    """Everything :func:`replay` needs from a stored run; a run whose history was pruned is refused."""
    from .api import _latest_state, stored_spec

    state = _latest_state(saver, thread_id)
    calls = recorded_calls(saver, thread_id)
    steps = list(state.get("scratchpad") or [])
    if len(calls) < len(steps):
        raise NotReplayableError(thread_id, replies=len(calls), steps=len(steps))
    answers = [b.resolution for b in saver.runs.breaks(thread_id) if b.resolution is not None]
    return Recording(thread_id, stored_spec(saver.runs.get(thread_id)), recorded_tasks(saver, thread_id), calls,
                     steps, guard_decisions(saver, thread_id), answers, state)


def served_replies(calls: Sequence[ModelCall]) -> list[AIMessage]:
    """What a replay's model serves, in order: each call's replies put aside by its re-asks, then the one kept,
    each with the cost it was recorded at (:func:`recorded_costs`)."""
    served = []
    for call in calls:
        aside = list(call.reply.get("aside") or [])
        kept, aside_costs = recorded_costs(call.reply)
        served += [as_message(reply, cost) for reply, cost in zip(aside, [*aside_costs, *[None] * len(aside)])]
        served.append(as_message(call.reply, kept))
    return served


def recorded_costs(reply: Mapping[str, Any]) -> tuple[CallCost | None, list[CallCost]]:
    """The recorded cost of a step's kept reply and of its replies put aside (``None``: a run stored without costs).

    A step's costs are stored as its fallback models' refusals, the kept reply, the replies put aside, then the
    summarizer's calls (:func:`reinloop.nodes.decide.price_step`). A replay makes neither the refused nor the
    summarizer's calls again, so their dollars are counted with the kept reply: the run's total, and so its budget,
    stay the recorded ones.
    """
    costs = list(reply.get("cost") or [])
    refused = sum(1 for f in reply.get("fallbacks") or [] if f.get("reason") == "refusal")
    aside = len(reply.get("aside") or [])
    if len(costs) <= refused:
        return None, []
    kept, put_aside = costs[refused], costs[refused + 1: refused + 1 + aside]
    others = [*costs[:refused], *costs[refused + 1 + aside:]]
    if others:
        usd = None if any(c.get("usd") is None for c in (kept, *others)) else sum(float(c["usd"]) for c in (kept, *others))
        kept = {**kept, "usd": usd}
    return kept, put_aside


RECORDED_COST = "reinloop_recorded_cost"
"""Where a served reply carries its recorded cost (``response_metadata``), for :class:`RecordedPricing`."""


def as_message(reply: Mapping[str, Any], cost: Mapping[str, Any] | None = None) -> AIMessage:
    """A stored reply as the chat message that produced it: text, tool calls, usage, finish reason and the
    cost it was recorded at."""
    usage = {"input_tokens": int(reply.get("prompt_tokens") or 0), "output_tokens": int(reply.get("completion_tokens") or 0)}
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    finish = reply.get("finish_reason")
    meta = {**({"finish_reason": finish} if finish else {}), **({RECORDED_COST: dict(cost)} if cost else {})}
    return AIMessage(content=reply.get("text") or "", tool_calls=list(reply.get("tool_calls") or []),
                     invalid_tool_calls=list(reply.get("invalid_tool_calls") or []), usage_metadata=usage,
                     response_metadata=meta)


@dataclass(frozen=True)
class RecordedPricing(Pricing):
    """A replay's pricing: a served reply costs what it was recorded at; any other call is priced as usual; the
    estimate before a call (under ``max_cost``) is made for the recorded run's model, as it was when recorded."""

    recorded: Any = None
    """What stands in for the recorded run's model when a call is estimated (``None``: the served model)."""

    @classmethod
    def of_spec(cls, pricing: Pricing, spec: RunSpec) -> RecordedPricing:
        """Pricing of ``spec``'s recorded run: its model name and endpoint stand in for the served script."""
        name = spec.model.split(":", 1)[-1] if spec.model and not spec.model.startswith("<") else None
        recorded = SimpleNamespace(model_name=name, base_url=spec.base_url) if name else None
        return cls(pricing.prices, pricing.local_is_free, recorded=recorded)

    def estimate(self, model: Any, prompt_tokens: int, output_tokens: int) -> float | None:
        """:meth:`Pricing.estimate` for the recorded run's model (the served script says no usage of its own)."""
        return super().estimate(self.recorded if self.recorded is not None else model, prompt_tokens, output_tokens)

    def price(self, message: Any, model: Any, prompt_tokens: int | None = None) -> CallCost:
        """The recorded cost a served reply carries, else :meth:`Pricing.price`."""
        recorded = (getattr(message, "response_metadata", None) or {}).get(RECORDED_COST)
        if recorded:
            return CallCost(**recorded)  # type: ignore[typeddict-item]
        return super().price(message, model, prompt_tokens)


# --- operators' decisions ------------------------------------------------------------------------------


def recorded_decisions(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``approval id -> the operator's decision`` for every call of the recorded ``steps`` an operator decided on.

    The id binds the call as it waited (thread, run, step, position, tool, the model's arguments), so a
    replay that asks about the same call gets the same answer: approved, edited (the operator's arguments),
    rejected (the operator's message) or answered (the operator's text).
    """
    from ..tools.approval import bound_id

    decisions: dict[str, Any] = {}
    for step in steps:
        for index, action in enumerate(step.get("actions") or []):
            record = action.get("approval") or {}
            if record.get("by") != "operator":
                continue
            asked = {**action, "args": record.get("original_args", action.get("args") or {})}
            kind = record.get("action")
            decision: dict[str, Any] = {"action": kind, **({"always": True} if record.get("always") else {})}
            if kind == "edit":
                decision["args"] = action.get("args") or {}
            elif kind == "reject":
                decision["message"] = record.get("message") or ""
            elif kind == "respond":
                decision["text"] = str(action.get("observation") or "")
            decisions[bound_id(asked, index, int(step.get("index") or 0))] = decision
    return decisions


# --- stub tools --------------------------------------------------------------------------------------


def call_key(tool: str, args: Any) -> str:
    """One call as a string: the tool and its arguments, keys sorted."""
    return json.dumps([tool, args], sort_keys=True, ensure_ascii=False, default=str)


def stub_tools(tools: Sequence[BaseTool], steps: Sequence[Mapping[str, Any]], *,
               only_side_effects: bool = False) -> list[BaseTool]:
    """``tools`` with the same names and schemas, answering each call from the stored observation of the same call.

    A stored error comes back as an error with the same text; a call the recording never
    made fails with ``ERROR: NotRecorded: ...``, so the replay shows where it went its own way.
    ``only_side_effects`` stubs the tools that change the world (``side_effects=True``) and keeps the others.
    """
    served: dict[str, list[tuple[str, bool]]] = {}
    for step in steps:
        for action in step.get("actions") or []:
            if action.get("observation") is not None and not action.get("reused"):
                served.setdefault(call_key(action.get("tool", ""), action.get("args") or {}), []).append(
                    (str(action["observation"]), bool(action.get("error"))))
    return [stub_of(tool, served) if not only_side_effects or options_of(tool).side_effects else tool for tool in tools]


def stub_of(tool: BaseTool, served: dict[str, list[tuple[str, bool]]]) -> BaseTool:
    """One stub: pops the next stored observation of the call it gets."""

    def answer(**args: Any) -> str:
        queue = served.get(call_key(tool.name, args))
        if not queue:
            raise recorded_error("ERROR: NotRecorded: the recorded run never made this call")
        text, error = queue.pop(0)
        if error:
            raise recorded_error(text)
        return text

    options = dataclasses.replace(options_of(tool), retries=0, validator=None, timeout=None)
    return StructuredTool.from_function(func=answer, name=tool.name, description=tool.description,
                                        args_schema=tool.args_schema, metadata={**(tool.metadata or {}), METADATA_KEY: options})


def recorded_error(text: str) -> Exception:
    """An exception the executor reports as ``text`` (``ERROR: <Type>: <message>``)."""
    head, _, rest = text.partition(": ")
    name, _, message = rest.partition(": ") if head == "ERROR" else ("ReplayedError", "", text)
    kind = type(name if name.isidentifier() else "ReplayedError", (Exception,), {})
    return kind(message)


# --- the replay ----------------------------------------------------------------------------------------


def replay(
    thread_id: str, db: str | Path | None = None, *, stub_tools: bool = False,
    tools: Sequence[BaseTool] = (), side_effects: bool = False, start_mcp: bool = False, **changes: Any,
) -> ReplayReport:
    """Re-run stored run ``thread_id`` with its model replies served in order; the first divergence, if any.

    ``tools`` gives tool objects by name (a run made with tools that are not built in);
    ``changes`` change the stored spec (:meth:`RunSpec.replace`, e.g. ``limits={"max_steps": 2}``):
    a replay with them shows where the run would have gone otherwise. A replay is no new run to trace:
    it exports no spans, whatever the stored run did, unless ``telemetry=True`` asks (:data:`reinloop.runs.spec.NOT_REPLAYED`).

    The run database is data, so a replay uses nothing it names that acts on the world: the calls of
    side-effecting tools (``side_effects=True``: ``write_file``, ``db_insert`` ...) are answered from the
    stored observations unless ``side_effects=True``, which also needs the sandbox and tool database
    given in ``changes`` (``tool_settings={"sandbox": ...}``), not the stored ones; the stored spec's MCP
    servers are started only with ``start_mcp=True`` (or replaced by ``mcp=`` or MCP tools in ``tools``).
    """
    with open_db(db) as saver:
        recording = read_recording(saver, thread_id)
    return replay_recording(recording, stub=stub_tools, tools=tools, side_effects=side_effects, start_mcp=start_mcp,
                            **changes)


def replay_recording(recording: Recording, *, stub: bool = False, tools: Sequence[BaseTool] = (),
                     side_effects: bool = False, start_mcp: bool = False, **changes: Any) -> ReplayReport:
    """:func:`replay` on a recording already read."""
    from .api import Given, _graph, tool_list, with_objects
    from ..models.scripted import ScriptedChatModel

    model = ScriptedChatModel(replies=served_replies(recording.calls), usage=None)
    spec, given = with_objects(recording.spec, changes)
    spec = spec.replace(**{name: getattr(RunSpec(), name) for name in NOT_REPLAYED if name not in changes})
    check_stored_names(recording.thread_id, spec, tools, changes, side_effects=side_effects and not stub,
                       start_mcp=start_mcp)
    given = Given(model, tuple(tools), given.protocol)
    built = tool_list(spec, given)
    if stub or not side_effects:
        built = stub_tools(built, recording.steps, only_side_effects=not stub)
        longest = max((len(str(a.get("observation") or "")) for s in recording.steps for a in s.get("actions") or []), default=0)
        cap = spec.limits.max_observation_chars
        if cap is not None and longest > cap:  # a stored observation is served whole, never cut again
            spec = spec.replace(limits={"max_observation_chars": longest})
    with open_database(":memory:") as saver:
        graph = _graph(saver, spec, Given(model, tuple(built), given.protocol), built, model)
        graph.reinloop_context = dataclasses.replace(
            graph.reinloop_context, pricing=RecordedPricing.of_spec(graph.reinloop_context.pricing, spec))
        error = drive(graph, recording)
        replayed = read_recording_after(saver, recording.thread_id)
    divergence = compare(recording, replayed, error)
    outcome = Outcome.from_state(recording.thread_id, replayed.state).as_dict()
    return ReplayReport(recording.thread_id, len(replayed.steps), model.calls, outcome, divergence, error, stub)


def check_stored_names(thread_id: str, spec: RunSpec, tools: Sequence[BaseTool], changes: Mapping[str, Any], *,
                       side_effects: bool, start_mcp: bool) -> None:
    """Refuse to use what only the run database names: MCP servers to start, paths to write in."""
    from ..tools.mcpclient import mcp_tools_in

    if spec.mcp is not None and not start_mcp and "mcp" not in changes and not mcp_tools_in(tools):
        servers = "; ".join(f"{name}: {server_shown(server)}" for name, server in
                            (spec.mcp.get("mcpServers") or {}).items())
        raise StoredNameError(thread_id, "mcp", servers, "--start-mcp (start_mcp=True) to start them, or --mcp FILE "
                              "to start yours")
    if not side_effects:
        return
    given_settings = changes.get("tool_settings") or {}
    given_settings = given_settings if isinstance(given_settings, Mapping) else dataclasses.asdict(given_settings)
    for name, flag in (("sandbox", "--sandbox DIR"), ("db", "--db-tool FILE")):
        stored = getattr(spec.tool_settings, name)
        if stored is not None and given_settings.get(name) is None:
            raise StoredNameError(thread_id, f"tool_settings.{name}", str(stored),
                                  f"{flag} to say where the side-effecting tools may write")


def drive(graph: Any, recording: Recording) -> str | None:
    """Feed the replay the recording's tasks, break answers and operators' decisions on waiting calls;
    the exception it stopped on, if any."""
    from .api import stream_run

    answers, decided = list(recording.answers), recorded_decisions(recording.steps)
    try:
        for task in recording.tasks:
            outcome = stream_run(graph, {"task": task}, recording.thread_id)
            while (outcome.paused and answers) or (outcome.waiting and waiting_decided(outcome.waiting, decided)):
                answer = {"decisions": waiting_decided(outcome.waiting, decided)} if outcome.waiting else answers.pop(0)
                outcome = stream_run(graph, Command(resume=answer), recording.thread_id)
    except Exception as exc:  # noqa: BLE001 - a replay that fails has diverged; the report says how
        return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or ['(no message)'])[0]}"
    return None


def waiting_decided(waiting: Sequence[Mapping[str, Any]], decided: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded decisions on the calls that wait (none: the recording never decided on them)."""
    return {str(call["id"]): decided[str(call["id"])] for call in waiting if str(call.get("id")) in decided}


def read_recording_after(saver: Database, thread_id: str) -> Recording:
    """The replay's own run, read as a recording (an empty one when it never got a checkpoint)."""
    latest = saver.checkpointer.get_tuple(thread_config(thread_id))
    state = dict(latest.checkpoint["channel_values"]) if latest else {}
    return Recording(thread_id, RunSpec(), [], recorded_calls(saver, thread_id), list(state.get("scratchpad") or []),
                     guard_decisions(saver, thread_id), [], state)


# --- comparing ----------------------------------------------------------------------------------------


@dataclass
class StepView:
    """What is compared of one step."""

    prompt: str | None = None
    actions: list[tuple[str, Any]] = field(default_factory=list)
    observations: list[tuple[Any, bool]] = field(default_factory=list)
    answer: tuple[Any, Any] = (None, None)
    decision: str | None = None


def step_views(recording: Recording) -> dict[tuple[int, int], StepView]:
    """``(run, step) -> StepView`` of every step of a recording, in order."""
    views: dict[tuple[int, int], StepView] = {}
    for call in recording.calls:
        views.setdefault((call.run, call.step), StepView()).prompt = call.digest
    for step in recording.steps:
        view = views.setdefault((int(step.get("run") or 1), int(step.get("index") or 0)), StepView())
        actions = step.get("actions") or []
        view.actions = [(a.get("tool"), a.get("args")) for a in actions]
        view.observations = [(a.get("observation"), bool(a.get("error"))) for a in actions]
        view.answer = (step.get("answer"), step.get("parse_error"))
    for key, decision in recording.decisions.items():
        views.setdefault(key, StepView()).decision = decision
    return dict(sorted(views.items()))


CHECKS = (("prompt", "prompt", "the prompt differs (its hash)"), ("actions", "action", "the model's actions differ"),
          ("observations", "observation", "the tools' observations differ"),
          ("answer", "answer", "the answer or parse error differs"), ("decision", "decision", "the guard decided otherwise"))
"""What is compared of each step, in order: the :class:`StepView` field, the divergence's kind, what it means."""


def compare(recorded: Recording, replayed: Recording, error: str | None) -> Divergence | None:
    """The first difference between a recording and its replay, step by step, then in how they ended."""
    ours, theirs = step_views(recorded), step_views(replayed)
    for key in sorted(set(ours) | set(theirs)):
        run, step = key
        if key not in theirs:
            stopped = f": {error}" if error else ""
            return Divergence(run, step, "steps", "a step", None, f"step {step}: the recording has it, the replay "
                              f"stopped before it{stopped}")
        if key not in ours:
            return Divergence(run, step, "steps", None, "a step", f"step {step}: the replay went on past the recording")
        for name, kind, what in CHECKS:
            a, b = getattr(ours[key], name), getattr(theirs[key], name)
            if a != b and not (name == "prompt" and None in (a, b)):
                return Divergence(run, step, kind, a, b, f"step {step}: {what}: recorded {short(a)}, replayed {short(b)}")
    return ending_difference(recorded.state, replayed.state, error)


def ending_difference(recorded: Mapping[str, Any], replayed: Mapping[str, Any], error: str | None) -> Divergence | None:
    """A difference in how the two runs ended (status, break, pause), after identical steps."""
    fields = ("status", "break_reason", "answer", "decision")
    a, b = ({k: s.get(k) for k in fields} for s in (recorded, replayed))
    if a == b and error is None:
        return None
    step = int((replayed.get("counters") or {}).get("steps", 0))
    return Divergence(int(replayed.get("run") or 1), step, "outcome", a, b | ({"error": error} if error else {}),
                      f"after step {step}: the run ended otherwise: recorded {short(a)}, replayed {short(b)}"
                      + (f" ({error})" if error else ""))


def short(value: Any, width: int = 160) -> str:
    """A value as one line of JSON, cut to ``width`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
