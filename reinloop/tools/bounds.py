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
from functools import lru_cache
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


# --- JSON Schemas: an MCP server's tool schema, an --output-schema ------------------------------------
#
# A schema is data from outside too: an MCP server's tool schema, a user's --output-schema file, a stored run.
# Python's ``re`` (which jsonschema uses for ``pattern`` and ``patternProperties``) backtracks: ``^(a+)+$``
# against 29 characters of the model's took 35 s. Patterns are matched with RE2 (``google-re2``), whose time
# is linear in the text; a pattern RE2 cannot take (a backreference, a lookaround) refuses the schema. Size,
# nesting and ``$ref`` loops are checked first, by loops that never recurse, so no schema can crash the check.

MAX_SCHEMA_CHARS = 200_000
"""The longest JSON Schema accepted, in characters of its JSON text (a big tool's schema is a few thousand)."""
MAX_SCHEMA_NESTING = 64
"""The deepest nesting of objects and lists accepted in a JSON Schema (a property's schema is two levels)."""
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas: their keys mean nothing
_ECMA_U = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")


class SchemaPatternError(ValueError):
    """A schema's ``pattern`` that RE2 cannot match (``pattern``, ``reason``)."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"its pattern {pattern[:100]!r} cannot be matched in linear time by RE2 ({reason}); "
                         "write it without backreferences or lookarounds")
        self.pattern, self.reason = pattern, reason


def linear_pattern(pattern: str) -> Any:
    """``pattern`` (ECMA-262, as JSON Schema writes it) compiled by RE2; :class:`SchemaPatternError` if it cannot be."""
    return _re2_compiled(pattern)


@lru_cache(maxsize=512)
def _re2_compiled(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern to stderr
    try:
        return re2.compile(_ECMA_U.sub(r"\1\\x{\2}", pattern), options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise SchemaPatternError(pattern, reason) from None


def schema_problem(schema: Any) -> str | None:
    """Why the JSON Schema ``schema`` is refused before any use, or ``None``.

    Too long (:data:`MAX_SCHEMA_CHARS`), nested too deep (:data:`MAX_SCHEMA_NESTING`), a ``$ref`` that is
    not local (``#...``: nothing is fetched) or points nowhere, a loop of ``$ref`` (and ``allOf``/``anyOf``/
    ... ) that never reaches a property or an item, a pattern RE2 cannot take, or ``patternProperties``
    beside ``unevaluatedProperties`` (whose check jsonschema does with ``re``).
    """
    nodes, depth = _schema_nodes(schema)
    if depth > MAX_SCHEMA_NESTING:
        return f"it is nested more than {MAX_SCHEMA_NESTING} levels deep; at most {MAX_SCHEMA_NESTING} are accepted"
    try:
        size = len(json.dumps(schema, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        return f"it is not JSON data ({exc})"
    if size > MAX_SCHEMA_CHARS:
        return f"it is {size:,} characters long; at most {MAX_SCHEMA_CHARS:,} are accepted"
    unevaluated = False
    for node in nodes:
        unevaluated = unevaluated or "unevaluatedProperties" in node
        try:
            if isinstance(node.get("pattern"), str):
                linear_pattern(node["pattern"])
            keyed = node.get("patternProperties")
            for pattern in keyed if isinstance(keyed, dict) else ():
                linear_pattern(pattern)
        except SchemaPatternError as exc:
            return str(exc)
    if unevaluated and any(isinstance(n.get("patternProperties"), dict) for n in nodes):
        return "it has patternProperties beside unevaluatedProperties, which reinloop cannot check in linear time"
    return _ref_problem(schema, nodes)


def _schema_nodes(schema: Any) -> tuple[list[dict[str, Any]], int]:
    """Every object of ``schema`` that may be a schema (not inside ``enum``, ``const`` ...), and the deepest
    nesting found (the walk stops past :data:`MAX_SCHEMA_NESTING`). A loop, never a recursion."""
    nodes: list[dict[str, Any]] = []
    deepest = 0
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        deepest = max(deepest, depth)
        if depth > MAX_SCHEMA_NESTING:
            break
        if isinstance(value, dict):
            nodes.append(value)
            stack.extend((v, depth + 1) for k, v in value.items() if k not in _DATA_KEYS)
        else:
            stack.extend((v, depth + 1) for v in value)
    return nodes, deepest


def _resolve(root: Any, nodes: list[dict[str, Any]], ref: str) -> tuple[Any, str | None]:
    """The schema a local ``$ref`` (``#``, ``#/a/b``, ``#name``) points at, or ``(None, problem)``."""
    from urllib.parse import unquote

    if not ref.startswith("#"):
        return None, f"its $ref {ref[:100]!r} is not local (only #... references are followed, nothing is fetched)"
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):  # an anchor
        found = [n for n in nodes if n.get("$anchor") == fragment]
        return (found[0], None) if found else (None, f"its $ref {ref[:100]!r} names no $anchor of the schema")
    target = root
    for part in fragment.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None, f"its $ref {ref[:100]!r} points nowhere in the schema"
    return target, None


def _ref_problem(root: Any, nodes: list[dict[str, Any]]) -> str | None:
    """A ``$ref`` that cannot be followed, or a loop of schemas applied to one value (``$ref``, ``allOf`` ...)."""
    edges: dict[int, list[dict[str, Any]]] = {}
    names: dict[int, str] = {}
    for node in nodes:
        nexts = []
        if isinstance(node.get("$ref"), str):
            target, problem = _resolve(root, nodes, node["$ref"])
            if problem:
                return problem
            names[id(node)] = node["$ref"]
            nexts.append(target)
        nexts += [s for k in _IN_PLACE_LISTS if isinstance(node.get(k), list) for s in node[k]]
        nexts += [node[k] for k in _IN_PLACE_ONE if k in node]
        edges[id(node)] = [n for n in nexts if isinstance(n, dict)]
    done: set[int] = set()
    for start in nodes:  # depth-first, with an explicit stack: a node met again on the current path is a loop
        if id(start) in done:
            continue
        path: set[int] = {id(start)}
        stack = [(start, iter(edges.get(id(start), ())))]
        while stack:
            node, following = stack[-1]
            child = next(following, None)
            if child is None:
                stack.pop()
                path.discard(id(node))
                done.add(id(node))
            elif id(child) in path:
                refs = [names[id(n)] for n, _ in stack if id(n) in names]
                return (f"its $ref {(refs or ['#'])[-1][:100]!r} makes a loop that never reaches a property or an "
                        "item (a schema that applies itself to the same value)")
            elif id(child) not in done:
                path.add(id(child))
                stack.append((child, iter(edges.get(id(child), ()))))
    return None


def linear_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator of ``schema`` (its ``$schema``'s draft, 2020-12 by default) whose ``pattern``,
    ``patternProperties`` and ``additionalProperties`` match with RE2. Check :func:`schema_problem` first."""
    import jsonschema

    draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _linear_draft(draft)(schema)


@lru_cache(maxsize=16)
def _linear_draft(draft: Any) -> Any:
    import jsonschema

    return jsonschema.validators.extend(draft, {"pattern": _pattern, "patternProperties": _pattern_properties,
                                                "additionalProperties": _additional_properties})


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not linear_pattern(pattern).search(instance):
        yield ValidationError(f"{instance[:200]!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if linear_pattern(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    """jsonschema's ``additionalProperties`` with the ``patternProperties`` keys matched by RE2."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not any(linear_pattern(p).search(k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        shown = ", ".join(repr(e) for e in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {', '.join(map(repr, sorted(patterns)))}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")
