"""Structured final answers: ``RunSpec.output``, a Pydantic model class or a JSON Schema of an object.

How the model is asked for the answer depends on the protocol:

- native tool calling: one more tool, :data:`ANSWER_TOOL`, whose arguments are the
  schema; calling it is the answer (the other tools still run as before);
- JSON: ``{"thought": ..., "final_answer": {<an object matching the schema>}}``;
- ReAct: ``Final Answer:`` followed by that object.

The schema is shown compactly in the system prompt (titles dropped, no spaces).
An answer is validated (pydantic for a model, ``jsonschema`` for a schema); an
invalid one becomes the step's parse error, the errors quoted with their field
paths, so the model is told what to fix and the error breakers count it. When
they trip, the break is ``invalid_output`` (:mod:`reinloop.nodes.guard`).

In the spec's JSON form a model class is kept as its JSON Schema plus its import
path (``"module:QualName"``); a resume gets the class back when a program that has
imported that module resumes it (reinloop never imports a module a run database
names), and the schema otherwise. A class that cannot be imported by that path
(defined in a function or in ``__main__``) is kept as its schema alone, and a
resumed run returns dicts.

This module imports neither pydantic nor jsonschema until a run asks for an answer schema.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import ConfigurationError, SettingError

ANSWER_TOOL = "final_answer"
"""The tool a model calls, under native tool calling, to give a structured answer."""
MAX_QUOTED_ERRORS = 5
"""How many validation errors an invalid answer's correction quotes."""


def is_model_class(value: Any) -> bool:
    """True for a Pydantic model class (told by its methods: pydantic is not imported for this)."""
    return isinstance(value, type) and hasattr(value, "model_json_schema") and hasattr(value, "model_validate")


def import_path(model: type) -> str | None:
    """``"module:QualName"`` when importing it gives ``model`` back, else ``None``."""
    path = f"{model.__module__}:{model.__qualname__}"
    return path if model.__module__ != "__main__" and imported(path) is model else None


def imported(path: str) -> Any:
    """The object at ``"module:QualName"`` in a module already imported, or ``None``.

    Never imports: a stored spec names the class, and a run database is data, so naming a
    module there must not run it. A program that resumes with its model class has imported it.
    """
    module_name, _, qualname = path.partition(":")
    value: Any = sys.modules.get(module_name)
    for part in qualname.split(".") if value is not None else ():
        value = getattr(value, part, None)
    return value


def check_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as a plain dict when it is a valid JSON Schema of an object; else a ConfigurationError."""
    import jsonschema

    from ..tools.bounds import schema_problem

    problem = schema_problem(schema)  # before anything recurses into it: too deep, too big, a $ref loop, a pattern
    if problem is not None:
        raise SettingError("RunSpec", "output", f"is refused: {problem}", shown=False,
                           sentence="the output schema ({setting}) {reason}")
    schema = json.loads(json.dumps(schema))  # plain JSON data: what is stored is what is used
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SettingError("RunSpec", "output", f"is not a valid JSON Schema: {exc.message} "
                           f"(at {'/'.join(map(str, exc.path)) or 'the top'}); fix the schema", shown=False,
                           sentence="the output schema ({setting}) {reason}") from None
    if schema.get("type") != "object":
        raise SettingError("RunSpec", "output", f"must describe an object (\"type\": \"object\"), got type {schema.get('type')!r}; "
                           "wrap the value in an object with one property", shown=False, sentence="the output schema ({setting}) {reason}")
    return schema


def output_field(value: Any) -> Any:
    """``RunSpec.output`` checked: ``None``, a model class, or a JSON Schema dict.

    The stored form (``{"schema": ..., "model": "module:QualName"}``) is read back
    as the class when it imports, else as the schema.
    """
    if value is None or is_model_class(value):
        return value
    if not isinstance(value, Mapping):
        raise SettingError("RunSpec", "output", "must be a Pydantic model class or a JSON Schema (a dict), "
                           f"got {type(value).__name__}", shown=False)
    if "schema" in value and isinstance(value["schema"], Mapping) and set(value) <= {"schema", "model"}:
        model = imported(value["model"]) if isinstance(value.get("model"), str) else None
        return model if is_model_class(model) else check_schema(value["schema"])
    return check_schema(value)


def output_form(value: Any) -> dict[str, Any] | None:
    """``RunSpec.output``'s JSON form: ``{"schema": ...}``, with ``"model": "module:QualName"`` when it imports."""
    if value is None:
        return None
    if is_model_class(value):
        path = import_path(value)
        return {"schema": value.model_json_schema(), **({"model": path} if path else {})}
    return {"schema": dict(value)}


def compact(schema: Any) -> Any:
    """``schema`` without its ``title`` keys (pydantic writes one per field): fewer tokens, same meaning."""
    if isinstance(schema, dict):
        return {k: compact(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [compact(v) for v in schema]
    return schema


def field_path(parts: Any) -> str:
    """A validation error's location as ``items[0].name`` (``(root)`` for the object itself)."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


@dataclass(frozen=True)
class AnswerSchema:
    """What a structured answer must match, and how to check it and give it back."""

    schema: dict[str, Any]
    """The JSON Schema shown to the model and used for the answer tool."""
    model: type | None = None
    """The Pydantic model class, when the run was given one."""

    @classmethod
    def of(cls, output: Any) -> AnswerSchema | None:
        """The answer schema of ``RunSpec.output`` (``None``: answers are plain text)."""
        output = output_field(output)
        if output is None:
            return None
        if is_model_class(output):
            return cls(schema=output.model_json_schema(), model=output)
        return cls(schema=dict(output))

    def shown(self) -> str:
        """The schema as the prompt shows it: compact JSON."""
        return json.dumps(compact(self.schema), ensure_ascii=False, separators=(",", ":"))

    def tool(self) -> dict[str, Any]:
        """The answer tool, in OpenAI's tool format, for ``bind_tools``."""
        description = "Give the final answer; the arguments are the answer. Call it alone, once you know the answer."
        return {"type": "function", "function": {"name": ANSWER_TOOL, "description": description,
                                                 "parameters": compact(self.schema)}}

    @cached_property
    def tool_json(self) -> str:
        """:meth:`tool` as compact JSON: what its schema costs in tokens when it is sent through the API."""
        return json.dumps(self.tool(), ensure_ascii=False, separators=(",", ":"))

    def errors(self, value: Any) -> list[str]:
        """What is wrong with ``value``, one ``path: message`` per problem (``[]``: it is valid)."""
        if self.model is not None:
            from pydantic import ValidationError

            try:
                self.model.model_validate(value)  # type: ignore[attr-defined]
            except ValidationError as exc:
                return [f"{field_path(e['loc'])}: {e['msg']}" for e in exc.errors()]
            return []
        from ..tools.bounds import linear_validator

        validator = linear_validator(self.schema)  # patterns matched by RE2: a model's string cannot stall a step
        found = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
        return [f"{field_path(e.absolute_path)}: {e.message}" for e in found]

    def plain(self, value: Any) -> Any:
        """A valid answer as the state keeps it: JSON data (a model's validated and dumped, defaults filled)."""
        if self.model is not None:
            return self.model.model_validate(value).model_dump(mode="json")  # type: ignore[attr-defined]
        return value

    def instance(self, value: Any) -> Any:
        """A stored answer as the caller gets it: the model instance, or the dict for a schema."""
        if value is None or self.model is None:
            return value
        return self.model.model_validate(value)  # type: ignore[attr-defined]

    def example(self) -> dict[str, Any]:
        """An answer shaped by the schema, for format examples: its required fields with placeholder values."""
        from ..tools.detail import example_args

        return example_args(compact(self.schema))

    def example_text(self) -> str:
        """:meth:`example` as compact JSON, as the format lines show it."""
        return json.dumps(self.example(), ensure_ascii=False)

    def instructions(self, native_tools: bool) -> str:
        """What the system prompt says about the answer's form: the answer tool's call under native tool
        calling, else the schema the answer object must match (the protocol's format lines show the example)."""
        schema = self.shown()
        if native_tools:
            return (f"When you know the answer, give it by calling the {ANSWER_TOOL} tool, alone, with the answer "
                    f"as its arguments (this JSON Schema: {schema}).")
        return f"The final answer is one JSON object matching this JSON Schema: {schema}"

    def problem(self, value: Any, errors: list[str]) -> str:
        """The correction of an invalid answer: what it was, the errors with their field paths, the schema."""
        from .base import quote

        shown = "; ".join(errors[:MAX_QUOTED_ERRORS])
        more = f" (and {len(errors) - MAX_QUOTED_ERRORS} more)" if len(errors) > MAX_QUOTED_ERRORS else ""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return (f"the final answer {quote(text, 200)!r} does not match the answer schema: {shown}{more}. "
                f"Give the whole answer again, fixed, matching {self.shown()}")


def read_schema_file(path: str) -> dict[str, Any]:
    """The JSON Schema in the file at ``path`` (``--output-schema FILE.json``), checked."""
    try:
        with open(path, encoding="utf-8") as file:
            schema = json.load(file)
    except OSError as exc:
        raise ConfigurationError(f"cannot read the output schema {path!r}: {exc.strerror}; give a JSON Schema file") from None
    except ValueError as exc:
        raise ConfigurationError(f"the output schema {path!r} is not JSON ({exc}); give a JSON Schema file") from None
    except RecursionError:
        from ..tools.bounds import MAX_SCHEMA_NESTING

        raise ConfigurationError(f"the output schema {path!r} is nested too deep to read; give a JSON Schema "
                                 f"nested at most {MAX_SCHEMA_NESTING} levels") from None
    if not isinstance(schema, dict):
        raise ConfigurationError(f"the output schema {path!r} must hold a JSON object, got {type(schema).__name__}")
    return check_schema(schema)
