"""The JSON protocol: one JSON object per reply (seeds 000, 001 and 004).

Models wrap JSON in Markdown fences, chat around it, use single quotes, leave
trailing commas or stop before the last brace. The parser strips fences, cuts
the first object out of the surrounding text, and repairs damage with
``json-repair`` before giving up with a message that says what was wrong.
Hostile replies are bounded (:mod:`reinloop.tools.bounds`): JSON nested too deep,
damaged JSON too long to repair in time, numbers too large to store become
parse errors, whatever their size.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..tools.bounds import MAX_NESTING, check_value, clean_text, repair_problem, too_deep
from ..state import Action, Pending, Reply
from ..tools.registry import ToolRegistry
from .base import OutputProtocol, action_id, error_pending, quote

if TYPE_CHECKING:
    from .output import AnswerSchema

_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)(?:```|\Z)", re.S)
TOOL_KEYS = ("tool", "action", "tool_name", "name")
ARGS_KEYS = ("args", "action_input", "arguments", "input", "parameters", "tool_input")
ANSWER_KEYS = ("final_answer", "answer", "finalAnswer")
THOUGHT_CHARS = 300
"""At most this many characters of thought in a ``json_strict`` reply: the call, not the thought, is what counts."""
FINISH_NAMES = {"final_answer", "final answer", "finish", "answer"}


def load_json(text: str, nesting: int = MAX_NESTING) -> tuple[Any, str | None]:
    """The JSON value at the start of ``text`` (repaired if damaged and small enough), or a problem.

    Valid JSON of any size is read by the C decoder; damaged JSON is given to
    ``json-repair`` only when :func:`~reinloop.tools.bounds.repair_problem` finds
    it short, simple and shallow enough, which keeps a parse within tens of
    milliseconds. The value is checked by
    :func:`~reinloop.tools.bounds.check_value` (at most ``nesting`` levels), so
    what comes back can be stored.
    """
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except RecursionError:  # the C decoder stops at Python's recursion limit
        return None, too_deep()
    except ValueError as exc:
        value, problem = _repair(text, exc, nesting)
        if problem is not None:
            return None, problem
    return check_value(value, nesting)


def _repair(text: str, error: ValueError, nesting: int) -> tuple[Any, str | None]:
    refused = repair_problem(text, nesting)
    if refused is not None:
        return None, f"it is not valid JSON ({error}) and {refused}"
    import json_repair  # only for damaged JSON: a run that never sees any does not load it

    try:
        return json_repair.loads(text), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the repair library is best-effort; never crash the loop
        return None, f"it is not valid JSON and could not be repaired ({type(exc).__name__})"


def extract_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first JSON object in ``text``, repaired if needed, or a problem."""
    fenced = _FENCE.search(text)
    brace = text.find("{")
    # a fenced reply, not a fence inside the reply's JSON (an answer that shows a code block)
    body = fenced.group(1) if fenced and "{" in fenced.group(1) and (brace < 0 or fenced.start() < brace) else text
    start = body.find("{")
    if start < 0:
        return None, f"no JSON object found in the reply: {quote(text)!r}"
    candidate = body[start:]
    value, problem = load_json(candidate, MAX_NESTING + 1)  # the reply's object is a level above the arguments
    if problem is not None:
        return None, f"the JSON in the reply cannot be used: {problem}: {quote(candidate)!r}"
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict)), None)
    if not isinstance(value, dict) or not value:
        return None, f"the reply is not a usable JSON object: {quote(candidate)!r}"
    return value, None


def coerce_args(value: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a dict, or ``({}, raw_text)`` when they are not an object."""
    if value is None:
        return {}, None
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{"):
            parsed, _ = load_json(stripped)
            if isinstance(parsed, dict):
                return parsed, None
        return {}, value
    return {}, json.dumps(value, ensure_ascii=False)


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _answer_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict) and len(value) == 1:
        return _answer_text(next(iter(value.values())))
    return json.dumps(value, ensure_ascii=False)


def interpret(obj: dict[str, Any], index: int = 1) -> Pending:
    """Map a decoded object with any of the common key spellings to a Pending."""
    thought = str(obj.get("thought") or obj.get("reasoning") or "").strip()
    answer = _first(obj, ANSWER_KEYS)
    tool = _first(obj, TOOL_KEYS)
    args_value = _first(obj, ARGS_KEYS)
    if isinstance(tool, str) and tool.strip().lower() in FINISH_NAMES:
        answer = answer if answer is not None else args_value
        tool = None
    if answer is not None and not tool:
        return Pending(thought=thought, actions=[], answer=_answer_text(answer), parse_error=None)
    if not isinstance(tool, str) or not tool.strip():
        keys = ", ".join(sorted(map(str, obj))) or "none"
        return error_pending(
            f'the JSON object has neither a "tool" nor a "final_answer" key (keys: {keys})', thought
        )
    args, raw = coerce_args(args_value)
    action = Action(id=action_id(index, tool.strip(), args), tool=tool.strip(), args=args)
    if raw is not None:
        action["raw_args"] = raw
    return Pending(thought=thought, actions=[action], answer=None, parse_error=None)


def reply_schema(tools: ToolRegistry, answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema every reply of the JSON protocol fits: a call of one of ``tools`` (``{"tool", "args"}``, the
    call first, then an optional thought of at most :data:`THOUGHT_CHARS` characters; no argument the tool does not
    declare, unless its schema allows more) or a final answer (a string,
    or an object of the ``answer`` schema). Each tool's own ``$defs`` are moved to the root under the tool's name,
    so its ``$ref`` s still point at them."""
    thought = {"type": "string", "maxLength": THOUGHT_CHARS}
    defs: dict[str, Any] = {}
    shapes = []
    for name in tools.names():
        args = _hoisted(tools.schema(name), name, defs)
        if args.get("type", "object") == "object" and "additionalProperties" not in args:
            args = {**args, "additionalProperties": False}  # undeclared arguments are refused, unless the tool allows
        shapes.append({"type": "object", "properties": {"tool": {"const": name}, "args": args, "thought": thought},
                       "required": ["tool", "args"], "additionalProperties": False})
    final = _hoisted(answer, "answer", defs) if answer is not None else {"type": "string"}
    shapes.append({"type": "object", "properties": {"final_answer": final, "thought": thought},
                   "required": ["final_answer"], "additionalProperties": False})
    return {"anyOf": shapes, **({"$defs": defs} if defs else {})}


def _hoisted(schema: dict[str, Any], owner: str, defs: dict[str, Any]) -> dict[str, Any]:
    local = schema.get("$defs") or {}
    renamed = {key: f"{owner}__{key}" for key in local}

    def moved(value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in renamed:
                value = {**value, "$ref": "#/$defs/" + renamed[ref[8:]]}
            return {k: moved(v) for k, v in value.items() if k != "$defs"}
        if isinstance(value, list):
            return [moved(v) for v in value]
        return value

    for key, body in local.items():
        defs[renamed[key]] = moved(body)
    return moved(schema)


class JsonProtocol(OutputProtocol):
    """Replies are JSON objects: ``{"thought", "tool", "args"}`` or ``{"final_answer"}``."""

    name = "json"

    def instructions(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        answer, shape = self.answer_rule(output, '"<answer>"')
        return (
            "Reply with exactly one JSON object and no other text.\n"
            'To call a tool: {"thought": "<why>", "tool": "<tool name>", "args": {<arguments>}}\n'
            f'To give the final answer: {{"thought": "<why>", "final_answer": {answer}}}\n{shape}'
            "Call one tool at a time and wait for its observation.\n\n"
            f"Available tools:\n{tools.describe()}"
        )

    def parse(self, reply: Reply) -> Pending:
        text = clean_text(reply.get("text") or "").strip()
        if not text:
            return error_pending("the reply is empty")
        obj, problem = extract_object(text)
        if obj is None:
            return error_pending(problem or "unusable reply")
        return interpret(obj)

    def repair_message(self, problem: str) -> str:
        return (
            f"Your last reply could not be used: {problem}. Reply again with exactly one JSON "
            'object: {"thought": ..., "tool": ..., "args": {...}} or {"thought": ..., "final_answer": ...}.'
        )


class StrictJsonProtocol(JsonProtocol):
    """The JSON protocol with every reply held to :func:`reply_schema` by the endpoint (``response_format``).

    For endpoints with structured outputs (OpenAI, vLLM, llama.cpp's server, Ollama): the model can only write a
    well-formed call of a tool it has, with arguments of the tool's schema, or a final answer, so a small model's
    reply is never cut by a long thought nor malformed. An endpoint that refuses ``response_format`` fails the
    call with its own error: use ``json`` there.
    """

    name = "json_strict"  # type: ignore[assignment]

    def instructions(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        answer, shape = self.answer_rule(output, '"<answer>"')
        return (
            "Reply with exactly one JSON object and no other text.\n"
            'To call a tool: {"tool": "<tool name>", "args": {<arguments>}}\n'
            f'To give the final answer: {{"final_answer": {answer}}}\n{shape}'
            f'A "thought" of one short sentence may follow (at most {THOUGHT_CHARS} characters).\n'
            "Call one tool at a time and wait for its observation.\n\n"
            f"Available tools:\n{tools.describe()}"
        )

    def response_format(self, tools: ToolRegistry, answer: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The ``response_format`` request field: :func:`reply_schema` as a JSON schema."""
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": reply_schema(tools, answer)}}
