"""The contract of an output protocol: how the model is asked to act, and how its reply is read.

A protocol does three things: it writes the instructions that go in the system
prompt, it parses a raw reply into a :class:`~reinloop.state.Pending` (a
thought plus tool calls, a final answer, or a parse error), and it renders a
finished step back into chat messages for the next prompt. Parsing never
raises: whatever the model sends, the result is data.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ..tools.bounds import MAX_NESTING, check_value, describe_exception
from ..errors import ModelCallError
from ..state import Action, Pending, Reply, Step
from ..tools.registry import ToolRegistry

if TYPE_CHECKING:
    from .output import AnswerSchema

QUOTE_CHARS = 300
PENDING_LEVELS = 3
"""How deep a Pending holds a call's arguments: ``pending["actions"][i]["args"]``."""


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """A short, single-line quotation of the model's text for error messages."""
    flat = " ".join(text[: limit * 20].split())  # only the head is quoted: a 1 MB reply costs no more
    return flat if len(flat) <= limit and len(text) <= limit * 20 else flat[:limit] + "…"


def action_id(index: int, tool: str, args: Any) -> str:
    """A stable id for a call the model did not give an id (text protocols)."""
    try:  # orjson: a megabyte of arguments costs milliseconds, not tens of them
        data = orjson.dumps([tool, args], option=orjson.OPT_SORT_KEYS, default=str)
    except (TypeError, RecursionError):
        data = json.dumps([tool, args], sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    return f"call_{index}_{hashlib.sha1(data).hexdigest()[:8]}"


def answer_form(output: AnswerSchema | None) -> dict[str, Any]:
    """``{"output": output}`` for a run with a structured answer, else ``{}``: what ``instructions``, ``example``
    and ``correction`` are called with, so a protocol written before structured answers
    (``instructions(self, tools)``) still serves plain-text runs."""
    return {} if output is None else {"output": output}


def example_args(tools: ToolRegistry, name: str) -> dict[str, Any]:
    """Placeholder arguments for a call of ``name`` in a format example: ``{"expression": "<expression>"}``."""
    schema = tools.schema(name)
    required = schema.get("required") or list(schema.get("properties") or {})[:1]
    return {field: f"<{field}>" for field in required}


def example_call(tools: ToolRegistry) -> tuple[str, dict[str, Any]] | None:
    """The first tool and placeholder arguments, for format examples (``None`` without tools)."""
    names = tools.names()
    return (names[0], example_args(tools, names[0])) if names else None


def error_pending(problem: str, thought: str = "") -> Pending:
    """A parse result that carries only a problem."""
    return Pending(thought=thought, actions=[], answer=None, parse_error=problem)


class OutputProtocol(ABC):
    """How the model expresses an action or a final answer."""

    name: ClassVar[str]
    native_tools: ClassVar[bool] = False
    """True when tools are sent through the API (``bind_tools``) rather than the prompt."""

    @abstractmethod
    def instructions(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        """Text for the system prompt explaining the reply format (and the tools, for text protocols).

        With ``output`` (``RunSpec.output``) the final answer is an object matching its schema, and the
        text must say so in one voice: no plain-text answer rule beside it.
        """

    def answer_rule(self, output: AnswerSchema | None, placeholder: str) -> tuple[str, str]:
        """How a text protocol's instructions show the final answer: ``placeholder`` and no further line, or,
        with ``output``, the schema's example and its instructions (a line, for the text to go on after)."""
        if output is None:
            return placeholder, ""
        return output.example_text(), f"{output.instructions(self.native_tools)}\n"

    @abstractmethod
    def parse(self, reply: Reply) -> Pending:
        """Turn a raw reply into actions, an answer, or a parse error. Never raises."""

    # protocol="auto" moves from one protocol to another (all of it in reinloop.protocols.auto);
    # these hooks are how the nodes ask, and the other protocols stay as they are.

    def now(self, moved_to: str | None) -> OutputProtocol:
        """The protocol in force on a thread whose ``state["protocol"]`` is ``moved_to``: this one."""
        return self

    def without_native_tools(self) -> OutputProtocol | None:
        """The protocol to use with a model that cannot bind tools (``None``: this protocol cannot do without)."""
        return None

    def after_rejection(self, active: OutputProtocol, error: ModelCallError) -> str | None:
        """The protocol to move to after the endpoint rejected a call made with ``active`` (``None``: the error stands)."""
        return None

    def after_unreadable(self, moved_to: str | None, step: Step, unreadable: int) -> str | None:
        """The protocol to move to after an unreadable reply, the ``unreadable``-th in a row (``None``: stay)."""
        return None

    def announce(self, moved_to: str, feedback: str) -> str:
        """The correction ``feedback``, with the news that the reply format changes to ``moved_to``."""
        return feedback

    def response_format(self, tools: ToolRegistry, answer: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The ``response_format`` every request carries (a JSON schema the endpoint holds replies to), or ``None``.
        ``answer``: the structured answer's schema, when the run has one."""
        return None

    def repair_message(self, problem: str) -> str:
        """What the model is told after a reply that could not be used."""
        return (
            f"Your last reply could not be used: {problem}. "
            f"Reply again, following the required format exactly."
        )

    def example(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        """A minimal valid reply in this protocol (a call of the first tool, then an answer), for corrections;
        with ``output``, the answer is an object shaped by its schema."""
        call = example_call(tools)
        body = {"thought": "one short sentence"}
        answer: Any = output.example() if output is not None else "<the answer>"
        lines = [json.dumps({**body, "tool": call[0], "args": call[1]}, ensure_ascii=False)] if call else []
        return "\n".join([*lines, json.dumps({**body, "final_answer": answer}, ensure_ascii=False)])

    def correction(self, problem: str, failures: int, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        """What the model is told after an unusable reply that was the ``failures``-th failed step in a row.

        The first time, the problem and the format in one line; from the second failure in a row on,
        the problem quoted, the count, and a minimal valid reply to copy the format from.
        """
        if failures <= 1:
            return self.repair_message(problem)
        return (
            f"Your last {failures} replies in a row could not be used; this is attempt {failures + 1}. "
            f"The error: {problem}.\nReply with exactly one of these forms and nothing else, "
            f"for example:\n{self.example(tools, **answer_form(output))}"
        )

    def feedback(self, step: Step) -> str:
        """The correction shown after a failed step's reply: the one recorded with it, else the plain one."""
        return step.get("feedback") or self.repair_message(step.get("parse_error") or "")

    def synthesize(self, step: Step) -> str:
        """The step's calls in this protocol's format: a step taken with native tool calls, or any step
        replayed (see :func:`replayed_reply`)."""
        calls = [{"tool": a.get("tool"), "args": a.get("args") or {}} for a in step.get("actions") or []]
        body: dict[str, Any] = {"thought": replayed_thought(step)}
        body.update(calls[0] if len(calls) == 1 else {"calls": calls})
        return json.dumps(body, ensure_ascii=False)

    def observation_message(self, actions: list[Action]) -> str:
        """The observations of a step as one text message (text protocols)."""
        parts = []
        for a in actions:
            obs = a.get("observation") or a.get("problem") or ""
            prefix = f"Observation ({a.get('tool')}): " if len(actions) > 1 else "Observation: "
            parts.append(prefix + obs)
        return "\n".join(parts)

    def render_step(self, step: Step) -> list[BaseMessage]:
        """The messages that replay ``step`` in the next prompt (text protocols).

        The model's reply is replayed as what was *read* from it, not as it
        was written (see :func:`replayed_reply`).
        """
        messages: list[BaseMessage] = [AIMessage(content=replayed_reply(self, step))]
        if step.get("parse_error"):
            messages.append(HumanMessage(content=self.feedback(step)))
        elif step.get("actions"):
            messages.append(HumanMessage(content=self.observation_message(step["actions"])))
        return messages


REPLAYED_FAILURE_CHARS = 200
"""How much of an unusable reply the next prompts show (the correction says what was wrong with it)."""

REPLAYED_THOUGHT_CHARS = 300
"""The longest thought replayed with a step's calls; a longer one, or one with JSON in it, is left out."""


def replayed_thought(step: Step) -> str:
    """The step's thought, as later prompts show it: short prose only (JSON in a thought is a call the
    model wrote in the wrong place, and replaying it teaches the mistake)."""
    thought = " ".join(str(step.get("thought") or "").split())
    return "" if len(thought) > REPLAYED_THOUGHT_CHARS or "{" in thought else thought


def replayed_reply(protocol: OutputProtocol, step: Step) -> str:
    """The reply of ``step`` as later prompts show it.

    A model, small ones most, copies its own earlier replies: a greedy model
    shown a reply that wrapped its call in chatter, repeated it ten times or
    nested it in a thought writes it that way again. So a step whose calls
    were read is replayed as those calls in the protocol's own format
    (:meth:`OutputProtocol.synthesize`), and an unusable reply as its first
    :data:`REPLAYED_FAILURE_CHARS` characters, with a marker, beside the
    correction. A final answer and a step with no reply stay as written.
    The stored step keeps the reply verbatim (``raw``).
    """
    raw = step.get("raw") or ""
    if step.get("actions") and not step.get("parse_error"):
        return protocol.synthesize(step)
    if step.get("parse_error") and len(raw) > REPLAYED_FAILURE_CHARS:
        return raw[:REPLAYED_FAILURE_CHARS] + f"… [{len(raw) - REPLAYED_FAILURE_CHARS} more characters not shown]"
    return raw or protocol.synthesize(step)


def parse_reply(protocol: OutputProtocol, reply: Reply) -> Pending:
    """``protocol.parse(reply)``, with the guarantee of :func:`read_safely`."""
    return read_safely(lambda: protocol.parse(reply))


def read_safely(read: Callable[[], Pending]) -> Pending:
    """``read()``, with a guarantee: whatever happens, a Pending that can be stored.

    The protocols and the parse node's rules never raise by design; this is
    the last line for what design missed (and for user protocols): any
    exception but ``KeyboardInterrupt`` becomes a parse error, and so does a
    result that could not be checkpointed (see :func:`~reinloop.tools.bounds.check_value`).
    A stored reply that made the parse crash would otherwise crash every resume.
    """
    try:
        pending = read()
        checked, problem = check_value(pending, MAX_NESTING + PENDING_LEVELS)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the reply is data; reading it must not stop the run
        return error_pending(f"the reply could not be read ({quote(describe_exception(exc))})")
    if problem is not None:
        return error_pending(f"the reply could not be read: {problem}")
    return unique_ids(checked)


def unique_ids(pending: Pending) -> Pending:
    """``pending`` with each call's id unique in its step: a call whose id is empty or already taken by an earlier
    call of the reply gets one made by :func:`action_id` (the model's kept as ``model_id``). Nothing is ever
    decided by these ids (approvals bind to :func:`reinloop.tools.approval.approval_id`); tool messages pair on them."""
    actions = pending.get("actions") or []
    taken: set[str] = set()
    fixed = []
    for index, action in enumerate(actions):
        given = action.get("id")
        call_id = given if isinstance(given, str) and given else ""
        if not call_id or call_id in taken:
            made, n = action_id(index, str(action.get("tool") or ""), action.get("args") or {}), 1
            while made in taken or any(a.get("id") == made for a in actions[index + 1:]):
                made, n = f"{action_id(index, str(action.get('tool') or ''), action.get('args') or {})}_{n}", n + 1
            action = {**action, "id": made, **({"model_id": call_id} if call_id else {})}  # type: ignore[typeddict-item]
        taken.add(action["id"])
        fixed.append(action)
    return {**pending, "actions": fixed} if actions and fixed != actions else pending
