"""The typed state of a run: what gets checkpointed.

Everything here is plain JSON-able data (TypedDicts of str, int, float, bool,
lists and dicts), never a model, a tool or a callable: those are dependencies
and live in the runtime context (:mod:`reinloop.nodes.context`). Keeping the state
plain means any checkpointer can store it and any tool (``sqlite-utils``,
Datasette, ``jq``) can read it.

One loop iteration is one :class:`Step`: the model decided once (a thought and
zero or more tool calls, or a final answer), the calls ran, and the results
were recorded. The scratchpad is the list of steps, appended to through a
reducer so every node returns only what it adds.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired, TypedDict

FallbackReason = Literal["retries_exhausted", "context_length", "tools_unsupported", "refusal"]
"""Why a run moved on to its next model."""


class Fallback(TypedDict):
    """One move to the next model, as recorded on the step and its decide event."""

    from_model: str  # the model that failed, by its name
    to_model: str  # the model the run moved to
    reason: FallbackReason
    problem: str  # what the failing model's endpoint said, or that the model refused


class CallCost(TypedDict):
    """One priced (or unpriceable) model call, as plain data."""

    model: str  # the model name the price was looked up by
    input_tokens: int  # all input tokens, cached ones included
    cached_tokens: int
    output_tokens: int
    usd: float | None  # None: the call could not be priced
    source: str  # "prices", "local", "genai-prices" or "unpriced"
    problem: NotRequired[str]  # why it could not be priced
    flags: NotRequired[list[str]]  # what was corrected or assumed in pricing it (the usage, the name, a local $0)
    counted: NotRequired[bool]  # the usage was replaced by reinloop's own counts (the step's tokens are those)


class ModelCost(TypedDict):
    """Running totals for one model, kept in the counters."""

    calls: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    usd: float
    unpriced_calls: int


Status = Literal["running", "done", "broken"]
"""Where a run stands: still looping, finished with an answer, or stopped by a guard."""

BreakReason = Literal[
    "max_steps", "timeout", "token_budget", "cost_budget", "repeated_action", "consecutive_errors", "same_errors",
    "aborted", "invalid_output",
]
"""Machine-readable reason a guard stopped the run."""

Decision = Literal["continue", "hint", "finish", "break", "pause"]
"""What the guard decided after a step (``pause``: broken, waiting for an operator)."""

class Action(TypedDict, total=False):
    """One tool call the model asked for, and what came of it."""

    id: str  # unique in its step: the model's id, or one reinloop made when it was empty or taken (then model_id)
    model_id: str  # the id the model gave, when another call of the step had it too
    tool: str
    asked_tool: str  # the name as the model wrote it, when it named the tool loosely ("Calculator")
    args: dict[str, Any]
    raw_args: str  # arguments that were not a JSON object, verbatim
    repairs: list[str]  # format slips the loop mended (a loose tool name, arguments not an object ...), told to the model
    problem: str | None  # why the call could not run (set by parse or validate)
    observation: str | None
    error: bool
    reused: int  # answered from this earlier step's identical call of a cacheable tool, not run again
    from_text: bool  # written as the answer's text and run as this call (AnswerRules.text_calls)
    awaiting: str  # why the call waits for an operator's approval (reinloop.approval); absent once decided
    approval_id: str  # the id an operator decides it by, bound to thread, step, position, tool, arguments
    approval: dict[str, Any]  # the operator's decision on it: action (approve, edit, reject, respond), by, at ...


class Reply(TypedDict, total=False):
    """The model's raw reply for the current step (before parsing)."""

    text: str
    finish_reason: str | None  # why the model stopped, as its provider said it (stop, length, max_tokens ...)
    truncated: bool  # the token cap cut the reply off: never the answer; only a whole first call before the cut runs
    tool_calls: list[dict[str, Any]]
    invalid_tool_calls: list[dict[str, Any]]
    prompt_tokens: int
    completion_tokens: int
    hints: list[str]  # the hints shown in this prompt
    cost: list[CallCost]  # this step's model calls priced: the agent's, then any summarizer's
    prompt_parts: dict[str, int]  # tokens of each part of the prompt, by the active counter
    memory: list[dict[str, Any]]  # memory events of this step (evicted, summarized, recalled ...)
    model: str  # the model that answered, by its name (reinloop.models.resolve.model_label)
    protocol: str  # the protocol it answered in (auto's current one: tool_calling, json or react)
    fallbacks: list[Fallback]  # the moves to a next model this step made before one answered (reinloop.fallback)
    aside: list[dict[str, Any]]  # replies this step asked for and put aside (re-asks), oldest first: what a replay serves


class Pending(TypedDict, total=False):
    """The parsed reply of the current step, on its way through validate and execute."""

    thought: str
    actions: list[Action]
    answer: str | None
    parse_error: str | None
    fallback: str | None  # protocol="auto": the reply showed the model needs this protocol
    prose: bool  # a text protocol took a plain-text reply after a tool result as the answer
    output: dict[str, Any]  # the structured answer, validated (RunSpec.output), as JSON data
    invalid_output: Any  # a structured answer that did not validate, as the model gave it


class Step(TypedDict, total=False):
    """One finished loop iteration, as kept in the scratchpad."""

    index: int  # 1-based step number within its run
    run: int  # which task on this thread (multi-turn threads)
    thought: str
    raw: str  # the model's text reply, verbatim
    actions: list[Action]
    answer: str | None
    parse_error: str | None
    error: bool
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float  # dollars this step's model calls cost (summarizer included), the priced ones
    cached_tokens: int  # prompt tokens the provider read from its cache
    unpriced_calls: int  # calls of this step whose cost is unknown
    hints: list[str]  # hints the model saw before this step
    prompt_parts: dict[str, int]  # tokens of each part of this step's prompt (system, task, steps ...)
    memory: list[dict[str, Any]]  # memory events before this step (evicted, summarized, recalled ...)
    feedback: str  # the correction the model is shown after this step's unusable reply
    switched_to: str  # protocol="auto": the protocol the run uses from the next step on
    finish_reason: str  # why the model stopped writing, when its provider said
    output: dict[str, Any]  # the step's structured answer, validated (RunSpec.output)
    invalid_output: Any  # the step's structured answer that did not validate: never the output
    model: str  # the model that answered this step, by its name
    protocol: str  # the protocol it answered in
    fallbacks: list[Fallback]  # moves to a next model before one answered (reinloop.fallback)
    cost_flags: list[str]  # what pricing this step's calls corrected or assumed (reinloop.models.pricing.call_flags)


class Counters(TypedDict):
    """Running totals the guards read."""

    steps: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    errors: int
    consecutive_errors: int
    same_errors: NotRequired[int]  # failed steps in a row that failed the same way (absent in older checkpoints)
    repeats: int
    elapsed_seconds: float
    cost_usd: NotRequired[float]  # dollars spent on priced model calls (absent in older checkpoints)
    cached_tokens: NotRequired[int]  # prompt tokens read from the provider's cache
    unpriced_calls: NotRequired[int]  # model calls whose cost is unknown: cost_usd is a lower bound then
    models: NotRequired[dict[str, ModelCost]]  # the same, per model
    refused_call: NotRequired[dict[str, Any]]  # a model call not made: its estimate crossed max_cost (reinloop.pricing)


class Extensions(TypedDict):
    """Limits raised by an operator when resuming a broken run."""

    steps: int
    seconds: float
    tokens: int
    cost: NotRequired[float]  # dollars added to max_cost
    unpriced: NotRequired[int]  # unpriced calls the operator let pass


class Turn(TypedDict):
    """A finished task on a multi-turn thread."""

    task: str
    answer: str | None
    status: str
    summary: NotRequired[str]  # the run's running summary, if steps were folded into one


class MemoryCursor(TypedDict):
    """Which steps of the current run have left the prompt for good."""

    folded: int  # steps up to this index are in the summary (or were dropped)
    failures: int  # summarizer failures in a row; the raw steps stay until a retry succeeds


def new_counters() -> Counters:
    """Counters of a run that has not started."""
    return Counters(
        steps=0,
        llm_calls=0,
        prompt_tokens=0,
        completion_tokens=0,
        errors=0,
        consecutive_errors=0,
        same_errors=0,
        repeats=0,
        elapsed_seconds=0.0,
        cost_usd=0.0,
        cached_tokens=0,
        unpriced_calls=0,
        models={},
    )


def new_extensions() -> Extensions:
    """No limits raised."""
    return Extensions(steps=0, seconds=0.0, tokens=0, cost=0.0, unpriced=0)


class WrapUp(TypedDict):
    """The break a wrap-up call stands in for: taken as it was if the call gives no answer."""

    reason: BreakReason
    message: str


class AgentState(TypedDict, total=False):
    """The checkpointed state of one thread."""

    task: str
    run: int
    protocol: str | None  # the protocol in force when protocol="auto" moved on from native tool calling (None: the run's own)
    model_index: int  # which of RunSpec.models the run is on (0: the primary; reinloop.fallback)
    scratchpad: Annotated[list[Step], operator.add]
    counters: Counters
    extensions: Extensions
    started_at: float  # wall-clock start of the current run (time.time())
    tick: float  # wall-clock time up to which elapsed_seconds is accounted
    status: Status
    answer: str | None
    break_reason: BreakReason | None
    break_message: str | None
    hints: list[str]  # shown to the model on its next call, then cleared
    decision: Decision | None  # the guard's last decision, read by its router
    reply: Reply | None
    pending: Pending | None
    history: list[Turn]
    summary: str  # running summary of steps that left the memory window
    memory_cursor: MemoryCursor  # which steps of the current run left the prompt for good
    run_task: str  # the task the current run was started for (a new task starts a new run)
    prompt_digest: str  # a hash of the last prompt sent: the next one must differ
    approvals: dict[str, str]  # tool -> "approve" | "reject": the operator's "always" for this thread
    wrap_up: WrapUp | None  # a stuck run's last call for an answer, without tools, is under way (reinloop.answers)
    wrapped_up: str | None  # the break a wrap-up answer saved the run from (set when it ends done that way)
    output: dict[str, Any] | None  # the run's structured answer, validated, as JSON (RunSpec.output)
    invalid_output: Any  # the last structured answer that did not validate, kept and marked as such


class PendingView(TypedDict, total=False):
    """The one channel the routers after parse, validate and execute read (LangGraph then copies it alone for them)."""

    pending: Pending | None


class ReplyView(TypedDict, total=False):
    """The one channel the router after decide reads."""

    reply: Reply | None


class DecisionView(TypedDict, total=False):
    """The one channel the router after guard reads."""

    decision: Decision | None


BREAK_KIND = "reinloop.break"
"""The ``kind`` of an interrupt payload that reports a circuit break."""


class BreakPayload(TypedDict):
    """What a paused run reports through LangGraph's ``interrupt()``."""

    kind: str  # BREAK_KIND
    reason: BreakReason
    message: str
    counters: Counters
    limits: dict[str, Any]
    how_to_resume: str
    observations: NotRequired[list[dict[str, Any]]]  # the run's latest tool results: the answer may be in them


class ResumeValue(TypedDict, total=False):
    """The operator's answer to a break: ``Command(resume={...})``."""

    action: Literal["continue", "abort"]
    extra_steps: int
    extra_seconds: float
    extra_tokens: int
    extra_cost: float
    hint: str


class InputState(TypedDict):
    """What a caller passes to start a run: ``{"task": "..."}``."""

    task: str
