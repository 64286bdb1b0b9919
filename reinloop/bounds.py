"""Bounds on what a model (or a tool) sends: how deep, how big, what can be stored.

A reply is untrusted data, and some data hurts the code that reads it:

- JSON nested a thousand levels deep overflows Python's recursion limit in
  ``json``, ``json-repair``, ``orjson`` (which stops at 254 levels) and every
  recursive walk (action signatures, token counting, storage). Anything a
  model sends that is nested deeper than :data:`MAX_NESTING` levels is
  refused: it becomes a parse error (or an invalid tool call) the model is
  shown, never a crash.
- ``json-repair`` costs up to 10 µs per character, is quadratic on some
  shapes and worse on deep input (80,000 ``{`` took tens of seconds), so
  damaged JSON is repaired only when it is short (:data:`MAX_REPAIR_CHARS`),
  simple enough (:data:`MAX_REPAIR_WORK`) and shallow; valid JSON of any size
  is read by the C decoder.
- Storage (``orjson``) refuses integers beyond 64 bits and lone UTF-16
  surrogates (``"\\ud800"``, which JSON escapes can produce). Lone surrogates
  are replaced by U+FFFD; such integers are refused like deep nesting.

Every check here is linear in the size of its input and does its heavy
lifting in C (``orjson``, ``re``, ``bytes.translate``), so a 1 MB reply is
checked in milliseconds. ``benchmarks/parse.py`` measures it.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

import orjson

MAX_NESTING = 100
"""The deepest nesting of lists and objects accepted in a model's JSON (tool arguments, replies)."""

MAX_REPAIR_CHARS = 5_000
"""Damaged JSON longer than this is not repaired (``json-repair`` would take too long): a parse error."""

MAX_REPAIR_WORK = 1_200_000
"""Damaged JSON whose length times its count of ``{ [ , : " '`` exceeds this is not repaired either.

``json-repair`` scans ahead from each unquoted token, which makes it
quadratic on some shapes: 2,000 characters of ``{a:b},`` took 70 ms, 8,000
took 620 ms. Measured over many shapes, this product bounds its time."""

_STRUCTURE = '{[,:"\''  # the characters json-repair's work grows with

_INT_RANGE = (-(2**63), 2**64 - 1)  # what orjson (storage) can write
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _nest(levels: int, value: Any) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def _orjson_max_depth() -> int:
    """The deepest nesting orjson writes (254 in orjson 3.x), found by trying."""
    low, high = 1, 1024  # invariant: depth `low` is written; above `high` is not tried
    while low < high:
        mid = (low + high + 1) // 2
        try:
            orjson.dumps(_nest(mid - 1, []))
            low = mid
        except (TypeError, RecursionError):
            high = mid - 1
    return low


_ORJSON_DEPTH = _orjson_max_depth()
"""orjson stops at this depth: wrapped in ``_ORJSON_DEPTH - n`` lists, a value deeper than ``n`` fails."""


def clean_text(text: str) -> str:
    """``text`` with lone UTF-16 surrogates (which no store or encoder accepts) replaced by U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def nesting_depth(text: str) -> int:
    """How deeply ``[`` and ``{`` nest in ``text``, counting brackets inside strings too.

    An upper bound of the depth of the JSON it holds, however damaged: cheap
    (C speed) and on the safe side, for deciding whether to repair the text.
    """
    brackets = text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKET)
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))


def repair_problem(text: str, nesting: int = MAX_NESTING) -> str | None:
    """Why the damaged JSON ``text`` is not given to ``json-repair`` (too long, too intricate, too deep), or ``None``."""
    if len(text) > MAX_REPAIR_CHARS:
        return f"too long to repair ({len(text):,} characters; at most {MAX_REPAIR_CHARS:,} are repaired)"
    structure = sum(text.count(c) for c in _STRUCTURE)
    if len(text) * structure > MAX_REPAIR_WORK:
        return (f"too intricate to repair ({structure:,} brackets, commas, colons and quotes in "
                f"{len(text):,} characters)")
    depth = nesting_depth(text)
    if depth > nesting:
        return f"too deep to repair (brackets nest {depth:,} levels; at most {nesting} are accepted)"
    return None


def too_deep(depth: int | None = None) -> str:
    """The problem of JSON nested ``depth`` levels deep (``None``: more than allowed)."""
    deep = f"{depth} levels deep" if depth is not None else f"more than {MAX_NESTING} levels deep"
    return f"it is nested {deep}; at most {MAX_NESTING} levels are accepted"


def check_value(value: Any, nesting: int = MAX_NESTING) -> tuple[Any, str | None]:
    """``(value, None)`` when ``value`` is JSON data that can be stored, else ``(None, problem)``.

    The value comes back with lone surrogates replaced; it is refused when it
    nests deeper than ``nesting`` levels (a container of the model's values
    allows for its own levels), holds an integer beyond 64 bits, a non-string
    key, or an object that is not JSON data. The common case is one
    ``orjson.dumps`` (C speed): wrapped in enough lists, a value nested too
    deep exceeds orjson's own limit.
    """
    wrap = _ORJSON_DEPTH - nesting
    try:
        orjson.dumps(_nest(wrap, value))
        return value, None
    except (TypeError, RecursionError):  # rare: find out why, and mend what can be mended
        pass
    value, problem = _mend(value, 0, nesting)
    if problem is not None:
        return None, problem
    try:
        orjson.dumps(_nest(wrap, value))
    except (TypeError, RecursionError) as exc:
        return None, f"it is not JSON data ({exc})"
    return value, None


def _mend(value: Any, depth: int, nesting: int) -> tuple[Any, str | None]:
    """``value`` with its strings cleaned, or a problem; recursion is bounded by ``nesting``."""
    if isinstance(value, str):
        return clean_text(value), None
    if isinstance(value, int) and not isinstance(value, bool):
        if _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            return value, None
        digits = int(value.bit_length() * 0.30103) + 1
        return None, f"it holds a number of about {digits} digits, too large for a 64-bit integer; send it as a string"
    if not isinstance(value, (dict, list, tuple)):
        return value, None
    if depth >= nesting:
        return None, too_deep()
    if isinstance(value, dict):
        mended: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                return None, f"it has a key that is not a string: a {type(key).__name__}"
            item, problem = _mend(item, depth + 1, nesting)
            if problem is not None:
                return None, problem
            mended[clean_text(key)] = item
        return mended, None
    items = []
    for item in value:
        item, problem = _mend(item, depth + 1, nesting)
        if problem is not None:
            return None, problem
        items.append(item)
    return items, None


def bounded_message(message: Any) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """``(text, tool_calls, invalid_tool_calls)`` of a chat message, every part checked and storable.

    A tool call whose arguments :func:`check_value` refuses moves to the
    invalid calls (arguments dropped, ``error`` saying why), so the
    model gets an error result for that call id; content blocks become their
    JSON text, or a note when they cannot be stored.
    """
    text = _content_text(getattr(message, "content", ""))
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for call in getattr(message, "invalid_tool_calls", None) or []:
        checked, problem = check_value({k: v for k, v in dict(call).items() if k != "args"})
        args = call.get("args")
        invalid.append({**(checked or {}), "args": clean_text(args) if isinstance(args, str) else None,
                        **({"error": f"the call cannot be used: {problem}"} if problem else {})})
    for call in getattr(message, "tool_calls", None) or []:
        checked, problem = check_value(dict(call), MAX_NESTING + 1)  # the arguments sit one level down
        if problem is None:
            calls.append(checked)
            continue
        name, call_id = call.get("name"), call.get("id")
        invalid.append({"type": "invalid_tool_call", "name": clean_text(name) if isinstance(name, str) else None,
                        "id": clean_text(call_id) if isinstance(call_id, str) else None,
                        "args": None, "error": f"the arguments cannot be used: {problem}"})
    return text, calls, invalid


def _content_text(content: Any) -> str:
    """A message's content as text: a string as it is, content blocks as JSON text if they can be stored."""
    if isinstance(content, str):
        return clean_text(content)
    checked, problem = check_value(content)
    if problem is not None:
        return f"(the reply's content cannot be read: {problem})"
    return json.dumps(checked, ensure_ascii=False)


def token_count(value: Any) -> int:
    """A token count a provider reported, or 0 when it is missing or absurd (negative, not a number, not storable)."""
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return count if 0 < count < 2**53 else 0


def exception_message(exc: BaseException) -> str:
    """``str(exc)`` cleaned and stripped, even for an exception whose ``str()`` raises."""
    try:
        message = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException as inner:  # noqa: BLE001 - a hostile __str__ must not decide our fate
        return f"(its message could not be read: {type(inner).__name__})"
    return clean_text(message).strip()


def describe_exception(exc: BaseException) -> str:
    """``<Type>: <message>`` for any exception, even one whose ``str()`` raises."""
    return f"{type(exc).__name__}: {exception_message(exc) or '(no message)'}"
