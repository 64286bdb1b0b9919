"""How much of each tool the model is shown: ``"full"`` or ``"compact"``.

Tool schemas are usually most of a short run's prompt: every model call
carries all of them (with eight tools, about 1,100 tokens per call). Seed 004
cuts the cost by sending each tool as one short line. ``"compact"`` does that:

- text protocols (``json``, ``react``) list each tool as a signature line,
  ``name(arg: type, opt?: type = default): first sentence of its description``;
- native tool calling binds schemas without descriptions of the arguments,
  titles or bounds: names, types, required arguments, enums and defaults.

Nothing is lost for the model that gets a call wrong: the validate node checks
every call against the tool's full schema, and its error message quotes that
schema, so the details arrive when they are needed. The cost is that a model
no longer reads the argument descriptions (examples, bounds) before its first
call; seed 003 measured that showing Field constraints cut missing arguments
from 31% to 9% on its model, so ``"full"`` stays the default.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from langchain_core.tools import BaseTool

from ..errors import ConfigurationError

ToolDetail = Literal["full", "compact"]
from ..runs.settings import TOOL_DETAILS  # noqa: E402 (the levels are a RunSpec field's choices)

_KEEP = ("type", "properties", "additionalProperties", "required", "items", "enum", "const", "anyOf", "default", "$ref")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|(?<=[。！？])")
MAX_SUMMARY = 160


def check_detail(detail: str) -> ToolDetail:
    """``detail`` if it is a known level; a clear error otherwise."""
    if detail not in TOOL_DETAILS:
        raise ConfigurationError(f"tool_detail must be one of {', '.join(TOOL_DETAILS)}; got {detail!r}")
    return detail  # type: ignore[return-value]


def summary(description: str) -> str:
    """The first sentence of a tool description, at most ``MAX_SUMMARY`` characters."""
    text = " ".join(description.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return first if len(first) <= MAX_SUMMARY else first[: MAX_SUMMARY - 1].rstrip() + "…"


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without descriptions, titles and bounds; it still accepts what the full one accepts."""
    out: dict[str, Any] = {}
    for key in _KEEP:
        if key not in schema:
            continue
        value = schema[key]
        if key == "properties":
            value = {name: compact_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = compact_schema(value)
        elif key == "anyOf":
            value = [compact_schema(sub) for sub in value]
        out[key] = value
    if "$defs" in schema:
        out["$defs"] = {name: compact_schema(sub) for name, sub in schema["$defs"].items()}
    return out


def compact_tool(tool: BaseTool, parameters: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-format tool (what ``bind_tools`` accepts) with a compact schema and a one-sentence description."""
    return {"type": "function", "function": {"name": tool.name, "description": summary(tool.description),
                                             "parameters": {"type": "object", **compact_schema(parameters)}}}


def type_of(schema: dict[str, Any]) -> str:
    """A short type for a signature line: ``string``, ``integer[]``, ``"a" | "b"``, ``{city: string}``,
    ``{[name: string]: integer}`` (a mapping)."""
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(dict.fromkeys(type_of(s) for s in schema["anyOf"]))
    kind = schema.get("type", "any")
    if kind == "object" and schema.get("properties"):
        return "{" + ", ".join(arguments(schema)) + "}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "{[name: string]: " + type_of(schema["additionalProperties"]) + "}"
    if kind == "array":
        return f"{type_of(schema.get('items') or {})}[]"
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def arguments(schema: dict[str, Any]) -> list[str]:
    """``name: type``, ``opt?: type = default`` for each property of an object schema."""
    required = set(schema.get("required") or ())
    args = []
    for name, sub in (schema.get("properties") or {}).items():
        arg = f"{name}{'' if name in required else '?'}: {type_of(sub)}"
        if "default" in sub:
            arg += f" = {json.dumps(sub['default'], ensure_ascii=False)}"
        args.append(arg)
    return args


def example_value(name: str, schema: dict[str, Any]) -> Any:
    """A plausible value for an argument in an example call: constants and enums as they are, numbers
    inside their bounds, ``"<name>"`` for free text (small models copy a schema, not a placeholder)."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("anyOf"):
        return example_value(name, schema["anyOf"][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind in ("number", "integer"):
        low, high = schema.get("minimum", schema.get("exclusiveMinimum")), schema.get("maximum")
        value = 1 if low is None or low < 1 else low
        return value if high is None or value <= high else high
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        if schema.get("properties"):
            return example_args(schema)
        return {"<name>": "<value>"}
    return f"<{name}>"


def example_args(schema: dict[str, Any]) -> dict[str, Any]:
    """Example arguments for an object schema: its required properties (the first one, if none is)."""
    props = schema.get("properties") or {}
    names = list(schema.get("required") or []) or list(props)[:1]
    return {n: example_value(n, props.get(n) or {}) for n in names}


def bounds_of(schema: dict[str, Any]) -> str:
    """``1 to 20``, ``at most 60``, ``at least 1 item`` ...: a property's limits in words."""
    pairs = [("minimum", "maximum", ""), ("minLength", "maxLength", " characters"), ("minItems", "maxItems", " items"),
             ("minProperties", "maxProperties", " entries")]
    def shown(value: float) -> str:
        return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"

    for low_key, high_key, unit in pairs:
        low, high = schema.get(low_key), schema.get(high_key)
        if low is not None and high is not None:
            return f"{shown(low)} to {shown(high)}{unit}"
        if high is not None:
            return f"at most {shown(high)}{unit}"
        if low is not None and low > (1 if unit else 0):
            return f"at least {shown(low)}{unit}"
    return ""


def argument_notes(parameters: dict[str, Any]) -> list[str]:
    """``query: a few keywords ... (1 to 300 characters)`` for each property that has a description or bounds."""
    notes = []
    for name, sub in (parameters.get("properties") or {}).items():
        text = " ".join(str(sub.get("description") or "").split())
        bounds = bounds_of(sub)
        if text or bounds:
            notes.append(f"{name}: {text}" + (f" ({bounds})" if bounds else ""))
    return notes


def call_sketch(name: str, parameters: dict[str, Any]) -> str:
    """How a refused call should have looked: the signature, an example, and each argument in words.

    ``wait(seconds: number), for example {"seconds": 1}. Arguments: seconds: how long ... (0 to 60)``.
    It says all a JSON schema says, in prose on purpose: a small model shown
    the schema itself in a refusal copies it into its next call's arguments.
    """
    example = json.dumps(example_args(parameters), ensure_ascii=False)
    notes = argument_notes(parameters)
    return (f"{name}({', '.join(arguments(parameters))}), for example {example}"
            + (". Arguments: " + "; ".join(notes) if notes else ""))


def signature(tool: BaseTool, parameters: dict[str, Any]) -> str:
    """``name(arg: type, opt?: type = default): summary`` for text prompts."""
    return f"{tool.name}({', '.join(arguments(parameters))}): {summary(tool.description)}"
