"""Reading a structured answer (``RunSpec.output``) out of a parsed reply, and checking it.

The protocol reads the reply as usual; this finds the answer's JSON in it:

- native tool calling: the arguments of a call of the answer tool (alone in its
  reply); a plain-text reply is read as JSON, so an answer written out still counts
  when it is valid;
- JSON: the value of ``final_answer`` as the model wrote it (an object, or a string
  holding one), read again from the reply's object: the protocol flattens a
  one-key object to its value, which suits text answers and not these; a reply
  that *is* a valid answer object (no ``final_answer`` key) is taken too;
- ReAct: the object after ``Final Answer:``.

A valid answer becomes the pending answer (its JSON text) with ``output`` (the
JSON data); an invalid one a parse error that quotes the errors, with the value
kept as ``invalid_output``. Nothing here raises: the parse node reads it through
:func:`~reinloop.protocols.base.read_safely`.
"""

from __future__ import annotations

import json
from typing import Any

from .output import ANSWER_TOOL, AnswerSchema
from ..state import Pending, Reply
from ..tools.registry import loose
from .base import OutputProtocol, error_pending
from .json_protocol import ANSWER_KEYS, ARGS_KEYS, FINISH_NAMES, TOOL_KEYS, extract_object, load_json

NOT_AN_OBJECT = "(root): the answer must be a JSON object"


def as_object(value: Any) -> Any:
    """``value``, or the JSON object a string holds (fenced or in prose): the value to validate."""
    if not isinstance(value, str):
        return value
    found, _ = extract_object(value) if "{" in value else (None, None)
    return found if found is not None else value.strip()


def json_answer(text: str) -> Any:
    """The answer a JSON-protocol reply gives, as the model wrote it; the whole object when it names none."""
    obj, _ = extract_object(text)
    if obj is None:
        return text.strip()
    tool = next((obj[k] for k in TOOL_KEYS if k in obj), None)
    if isinstance(tool, str) and tool.strip().lower() in FINISH_NAMES:
        answer = next((obj[k] for k in (*ANSWER_KEYS, *ARGS_KEYS) if k in obj), None)
    else:
        answer = next((obj[k] for k in ANSWER_KEYS if k in obj), obj)
    if isinstance(answer, str) and answer.strip().startswith("{"):
        parsed, problem = load_json(answer.strip())
        return parsed if problem is None else answer
    return answer


def checked(schema: AnswerSchema, value: Any, thought: str) -> Pending:
    """The answer ``value`` validated: an answer with ``output``, or a parse error with ``invalid_output``."""
    errors = schema.errors(value) if isinstance(value, dict) else [NOT_AN_OBJECT]
    if errors:
        return {**error_pending(schema.problem(value, errors), thought), "invalid_output": value}
    plain = schema.plain(value)
    return Pending(thought=thought, actions=[], answer=json.dumps(plain, ensure_ascii=False), parse_error=None,
                   output=plain)


def answer_call(pending: Pending, schema: AnswerSchema) -> Pending | None:
    """The answer given by a call of the answer tool (``None``: the reply calls no such tool)."""
    actions = pending.get("actions") or []
    calls = [a for a in actions if loose(a.get("tool") or "") == loose(ANSWER_TOOL)]
    if not calls:
        return None
    thought = pending.get("thought") or ""
    if len(actions) > 1:
        return error_pending(f"{ANSWER_TOOL} must be called alone, once the other tools' results are in; "
                             "none of this reply's calls was run", thought)
    call = calls[0]
    if call.get("problem"):  # its arguments were not JSON: an invalid answer, said as the client said it
        return {**error_pending(f"the final answer cannot be used: {call['problem']}", thought),
                "invalid_output": call.get("raw_args") or ""}
    if "raw_args" in call and not call.get("args"):
        return checked(schema, as_object(call["raw_args"]), thought)
    return checked(schema, call.get("args") or {}, thought)


def read_structured(protocol: OutputProtocol, reply: Reply, pending: Pending, schema: AnswerSchema) -> Pending:
    """``pending`` with its answer read as ``schema`` says; tool calls and other errors pass unchanged."""
    called = answer_call(pending, schema)
    if called is not None:
        return called
    text = reply.get("text") or ""
    thought = pending.get("thought") or ""
    if pending.get("parse_error"):
        if protocol.native_tools or reply.get("truncated") or "{" not in text:
            return pending
        obj, _ = extract_object(text)  # the answer object written alone, without "final_answer"
        ok = isinstance(obj, dict) and not schema.errors(obj)
        return checked(schema, obj, thought) if ok else pending
    if pending.get("answer") is None:
        return pending
    if protocol.name == "json" and not pending.get("prose"):
        return checked(schema, json_answer(text), thought)
    return checked(schema, as_object(pending["answer"]), thought)
