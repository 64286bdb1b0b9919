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
from ..spec import TOOL_DETAILS  # noqa: E402 (the levels are a RunSpec field's choices)

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


def signature(tool: BaseTool, parameters: dict[str, Any]) -> str:
    """``name(arg: type, opt?: type = default): summary`` for text prompts."""
    return f"{tool.name}({', '.join(arguments(parameters))}): {summary(tool.description)}"
