"""The tool registry: a name-indexed set of LangChain tools.

Any LangChain tool works unchanged (``@tool`` functions, ``BaseTool`` and
``StructuredTool`` instances). Registering a second tool under a name that is
taken is refused: silently replacing a tool makes for a miserable debugging
session (seed 003).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from .bounds import describe_exception
from ..errors import ConfigurationError, DuplicateToolError
from .detail import ToolDetail, call_sketch, check_detail, compact_tool, signature


def loose(name: str) -> str:
    """A tool name without case and separators: ``Get-Weather`` and ``get_weather`` are the same."""
    return re.sub(r"[\W_]+", "", name).lower()


class ToolRegistry:
    """Tools by name, with their argument schemas.

    ``detail`` is how the tools are shown to the model (see
    :mod:`reinloop.tools.detail`): ``"full"`` schemas, or ``"compact"`` ones.
    Calls are always validated against the full schema.
    """

    def __init__(self, tools: Iterable[BaseTool] = (), *, detail: ToolDetail = "full") -> None:
        self.detail: ToolDetail = check_detail(detail)
        self._tools: dict[str, BaseTool] = {}
        self._shown: dict[str, str] = {}  # what the model is shown of the tools, made once (cleared by register)
        for tool in tools:
            self.register(tool)

    def with_detail(self, detail: ToolDetail) -> ToolRegistry:
        """The same tools, shown at ``detail`` (this registry is left as it is)."""
        return self if detail == self.detail else ToolRegistry(self, detail=detail)

    def register(self, tool: BaseTool) -> BaseTool:
        """Add a tool; a name that is already taken is an error."""
        if not isinstance(tool, BaseTool):
            raise ConfigurationError(
                f"expected a LangChain tool (decorate the function with @tool from "
                f"langchain_core.tools), got {type(tool).__name__}: {tool!r}"
            )
        if tool.name in self._tools:
            first, second = source_of(self._tools[tool.name]), source_of(tool)
            fix = (" (MCP tools: set \"prefix\": true in the config's \"reinloop\" section, prefix=True in Python, "
                   "to name them server_tool)" if "MCP server" in first + second else "")
            raise DuplicateToolError(
                f"a tool named {tool.name!r} is already registered; tool names must be "
                f"unique (registered: {', '.join(self.names())}). The two come from {first} and {second}{fix}",
                name=tool.name, sources=(first, second),
            )
        self._tools[tool.name] = tool
        self._shown.clear()
        return tool

    def get(self, name: str) -> BaseTool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def resolve(self, name: str) -> str | None:
        """The one tool ``name`` means despite case, separators or a copied signature, else ``None``.

        ``Calculator``, ``get-weather``, ``GetWeather`` and ``calculator(expression: string)`` (a
        signature copied from a compact tool listing) each name exactly one tool; a name that two
        tools could match, or none, names no tool.
        """
        if name in self._tools:
            return name
        bare = loose(name.split("(", 1)[0].strip().strip("`'\"*"))
        matches = [n for n in self._tools if loose(n) == bare] if bare else []
        return matches[0] if len(matches) == 1 else None

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def schema(self, name: str) -> dict[str, Any]:
        """The JSON schema of a tool's arguments, Field constraints included."""
        return args_json_schema(self._tools[name])

    def examples_of(self, name: str) -> str:
        """The example values tool ``name``'s description and schema give (``e.g. '(22*1.8)+32'``), one per line.

        Made once per tool (validate asks at every call; the schema is LangChain's conversion of the tool).
        """
        key = f"examples:{name}"
        if key not in self._shown:
            found = []
            for text in [self._tools[name].description, *descriptions(self.schema(name))]:
                for lead in _EXAMPLE_LEAD.finditer(text):
                    found += [a or b for a, b in _QUOTED.findall(text[lead.end():lead.end() + 120])]
            self._shown[key] = "\n".join(found)
        return self._shown[key]

    def sketch(self, name: str) -> str:
        """How a call of ``name`` looks: its arguments and an example (for refusals)."""
        return call_sketch(name, self.schema(name))

    def describe(self) -> str:
        """Each tool with its description and argument schema, for text prompts (one line each when compact)."""
        if "describe" not in self._shown:
            self._shown["describe"] = self._describe()
        return self._shown["describe"]

    def schemas_json(self) -> str:
        """The OpenAI-format schemas ``bind_tools`` sends, as compact JSON (what native tool calling costs in tokens)."""
        if "schemas" not in self._shown:
            schemas = [convert_to_openai_tool(t) for t in self.bindable()]
            self._shown["schemas"] = json.dumps(schemas, ensure_ascii=False, separators=(",", ":")) if schemas else ""
        return self._shown["schemas"]

    def _describe(self) -> str:
        if self.detail == "compact":
            return "\n".join(f"- {signature(tool, self.schema(tool.name))}" for tool in self)
        lines = []
        for tool in self:
            schema = json.dumps(self.schema(tool.name), ensure_ascii=False)
            lines.append(f"- {tool.name}: {tool.description.strip()}\n  args schema: {schema}")
        return "\n".join(lines)

    def bindable(self) -> list[BaseTool | dict[str, Any]]:
        """What ``bind_tools`` gets: the tools themselves, or their compact OpenAI-format schemas."""
        if self.detail == "compact":
            return [compact_tool(tool, self.schema(tool.name)) for tool in self]
        return list(self)

    def declared_args(self, name: str) -> list[str] | None:
        """The argument names tool ``name`` declares, or ``None`` when it takes undeclared ones too (a JSON
        schema with ``additionalProperties`` true or a schema, a pydantic model with ``extra="allow"``)."""
        tool = self._tools[name]
        if isinstance(tool.args_schema, dict):
            extra = tool.args_schema.get("additionalProperties")
            if extra is True or isinstance(extra, dict) or "properties" not in tool.args_schema:
                return None
            return [str(n) for n in tool.args_schema.get("properties") or {}]
        schema = tool.get_input_schema()
        if schema.model_config.get("extra") == "allow":
            return None
        return [*schema.model_fields, *(f.alias for f in schema.model_fields.values() if f.alias)]

    def undeclared_args_problem(self, name: str, args: dict[str, Any]) -> str | None:
        """Why a call of ``name`` with ``args`` is refused for arguments the tool does not declare (each with a
        declared name it may have meant), else ``None``.

        Such an argument is never dropped in silence: the call would run without a value the model meant
        to pass, and a transcript that showed it would feed the model its own invented value (Qwen 0.5B added
        ``"content": "The order has 10 items"`` to ``read_file`` and then computed with the 10)."""
        declared = self.declared_args(name)
        if declared is None:
            return None
        extra = [k for k in args if k not in declared]
        if not extra:
            return None
        guesses = [f"{echo(k)} (did you mean {m}?)" if (m := near_miss(k, declared)) else echo(k) for k in extra]
        noun = "argument" if len(extra) == 1 else "arguments"
        return (f"{name} takes no {noun} {', '.join(guesses)}; its arguments are: {', '.join(declared) or '(none)'}. "
                f"Call it again with only those. Expected: {self.sketch(name)}")

    def near_name(self, name: str) -> str | None:
        """The one tool name ``name`` is a near miss of ("lawsuit_check_cas"), to suggest, never to run."""
        looseness = {loose(n): n for n in self._tools}
        found = near_miss(loose(name.split("(", 1)[0]), list(looseness))
        return looseness[found] if found is not None else None

    def validate_args(self, name: str, args: dict[str, Any]) -> str | None:
        """Field-level problems with ``args`` for tool ``name``, or ``None`` when valid; invalid arguments
        that copy the tool's own JSON schema are called so (:func:`schema_copies`)."""
        tool = self._tools[name]
        if isinstance(tool.args_schema, dict):  # a JSON schema (MCP tools): the pydantic model stands for nothing
            problem = json_schema_problems(name, args, tool.args_schema)
            return problem and (schema_copy_problem(name, args, self.schema(name)) or problem)
        schema = tool.get_input_schema()
        try:
            schema.model_validate(args)
        except ValidationError as exc:
            described = self.schema(name)
            return schema_copy_problem(name, args, described) or format_validation_error(name, exc, described)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a user's validator is tool code: its failure is the call's
            return f"the arguments of {name} could not be checked: its schema raised {describe_exception(exc)}"
        return None


def near_miss(word: str, names: list[str]) -> str | None:
    """The one name of ``names`` that ``word`` is a slip of: a close spelling (``limt``), or a name it shortens or
    lengthens (``expr`` for ``expression``); ``None`` when none or several are. A suggestion, never a substitution."""
    close = difflib.get_close_matches(word, names, n=2, cutoff=0.75)
    if len(close) == 1:
        return close[0]
    if len(word) >= 3:
        cut = [n for n in names if len(n) >= 3 and (n.startswith(word) or word.startswith(n))]
        if len(cut) == 1:
            return cut[0]
    return None


def source_of(tool: BaseTool) -> str:
    """Where a tool comes from, for messages: its MCP server, reinloop's built-ins, or the caller's code."""
    described = getattr(tool, "source", None)
    if isinstance(described, str) and described:
        return described
    if (tool.metadata or {}).get("builtin"):
        return f"reinloop's built-in tool {tool.name!r}"
    return f"the {type(tool).__name__} {tool.name!r} given in the tools"


def json_schema_problems(name: str, args: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Problems with ``args`` against a tool's JSON schema (one line per bad field, then the schema), or ``None``."""
    import jsonschema

    from .bounds import linear_validator, schema_problem

    problem = schema_problem(schema)  # a tool's schema is the server's: too deep, too big, a $ref loop, a pattern
    if problem is not None:
        return f"the arguments of {name} could not be checked: its schema is refused ({problem})"
    try:
        errors = sorted(linear_validator(schema).iter_errors(args), key=lambda e: list(e.absolute_path))
    except jsonschema.exceptions.SchemaError as exc:
        return f"the arguments of {name} could not be checked: its schema is invalid ({exc.message})"
    if not errors:
        return None
    problems = [f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message[:ECHO_CHARS]}" for e in errors]
    return f"invalid arguments for {name}: " + "; ".join(problems) + f". Expected: {json.dumps(schema, ensure_ascii=False)}"


def args_json_schema(tool: BaseTool) -> dict[str, Any]:
    """The ``parameters`` object the model sees for ``tool``."""
    function = convert_to_openai_tool(tool)["function"]
    params = dict(function.get("parameters") or {})
    params.pop("title", None)
    return params


ECHO_CHARS = 200
"""Longest echo of the model's own input in a refusal: a 20 MB argument must not come back as a 20 MB error."""


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(value)``, cut to ``limit`` characters with its full length said."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} chars in all)"


SCHEMA_WORDS = frozenset({"type", "anyOf", "oneOf", "allOf", "properties", "additionalProperties", "items", "$ref",
                          "description", "title", "enum", "const", "default", "required", "minimum", "maximum",
                          "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                          "pattern", "format", "examples"})
"""JSON Schema's keywords: an argument made of them is the parameter's schema, copied."""
_SCHEMA_MARKS = {"type", "anyOf", "oneOf", "allOf", "properties", "additionalProperties", "items", "$ref"}


def schema_copies(args: dict[str, Any]) -> list[str]:
    """The arguments whose value is an object of JSON Schema keywords only, with at least one that makes a
    schema (``type``, ``anyOf``, ``properties`` ...): Qwen2.5-Coder-0.5B wrote ``"row": {"anyOf":
    [{"type": "string"}, ...], "maxProperties": 50}`` for ``db_insert``, four times in a row."""
    return [key for key, value in args.items()
            if isinstance(value, dict) and value and set(value) <= SCHEMA_WORDS and set(value) & _SCHEMA_MARKS]


def schema_copy_problem(name: str, args: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Why invalid ``args`` are refused when they copy the schema (:func:`schema_copies`), else None."""
    copied = schema_copies(args)
    if not copied:
        return None
    fields = ", ".join(repr(k) for k in copied)
    words = ", ".join(repr(w) for w in sorted(set().union(*(args[k] for k in copied)))[:4])
    return (f"invalid arguments for {name}: {fields} holds a copy of the tool's parameter schema ({words}), not a "
            f"value; write the value itself, from the task. Expected: {call_sketch(name, schema)}")


def format_validation_error(name: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """One line per bad field, then the schema, so the model can fix its call."""
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        got = "" if err["type"] == "missing" else f" (got {echo(err.get('input'))})"
        problems.append(f"{where}: {err['msg']}{got}")
    return f"invalid arguments for {name}: " + "; ".join(problems) + f". Expected: {call_sketch(name, schema)}"


_INLINE = re.compile(r"^[^(]*\((.*)\)\s*$", re.S)
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*$", re.S)
_TYPED = re.compile(r"^\s*[A-Za-z_]\w*\??\s*:")  # `expression: string`: a copied signature, not a value


def inline_args(asked: str, tool: BaseTool) -> dict[str, Any] | None:
    """The arguments of a call written into the name (``wait(1)``, ``calculator(expression="2+2")``).

    Only for a tool with exactly one required argument and a single value in
    the brackets (a JSON literal, or text taken as it is); a copied signature
    (``name(arg: type)``) or several values give ``None``.
    """
    match = _INLINE.match(asked)
    field = single_field(tool)
    if match is None or field is None or not match.group(1).strip() or _TYPED.match(match.group(1)):
        return None
    inner = match.group(1).strip()
    if (keyword := _KEYWORD.match(inner)) is not None:
        if keyword.group(1) != field:
            return None
        inner = keyword.group(2)
    try:
        value = json.loads(inner)
    except ValueError:
        value = inner[1:-1] if len(inner) > 1 and inner[0] == inner[-1] and inner[0] in "'\"" else inner
    return {field: value}


_PLACEHOLDER = re.compile(r"^<[^<>]{1,40}>$")
_EXAMPLE_LEAD = re.compile(r"\b(?:e\.g\.|for example|such as|like)|例如|比如", re.I)
_QUOTED = re.compile(r"'([^'\n]{1,100})'|\"([^\"\n]{1,100})\"")
COPIED_CHARS = 4
"""A copied example this short ("2+2") is too common to tell from a real value."""


def descriptions(schema: Any) -> list[str]:
    """Every ``description`` in a JSON schema, nested ones too."""
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for k, v in schema.items() if k != "description" for d in descriptions(v)]
    if isinstance(schema, list):
        return [d for v in schema for d in descriptions(v)]
    return []


def string_values(value: Any) -> list[str]:
    """Every string in a call's arguments, nested ones too (depth-first)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in string_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in string_values(v)]
    return []


def copied_example(args: dict[str, Any], examples: str, known: str | Callable[[], str]) -> str | None:
    """An argument the model copied from our prompt instead of the task, else None.

    Only for a tool that opts in (``refuse_examples``). Either a placeholder of a format example
    (``"<expression>"``) that the task and results do not contain, or a value
    of more than :data:`COPIED_CHARS` characters that is one of the tool's
    examples (``examples``: :meth:`ToolRegistry.examples_of`, e.g. the
    calculator's ``'(22*1.8)+32'``) and shares no number or word with the
    task and the run's results (``known``): "convert 22C" may well compute
    ``(22*1.8)+32``, "read order_0.txt and total it" does not. Values a description lists as valid (table
    names, enums) are not examples and pass. ``known`` may be a function giving that text: it is called only
    for a value that is an example.
    """
    def unknown(value: str) -> bool:
        return squeezed(value) not in squeezed(known() if callable(known) else known)

    for text in string_values(args):
        value = text.strip()
        if _PLACEHOLDER.match(value) and unknown(value):
            return value
        if (len(value) > COPIED_CHARS and squeezed(value) in {squeezed(e) for e in examples.splitlines()}
                and not (tokens(value) & tokens(known() if callable(known) else known))):
            return value
    return None


_WORDS = re.compile(r"[^\W\d_]{3,}|[\u4e00-\u9fff]{2,}")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def squeezed(text: str) -> str:
    """``text`` without whitespace and brackets, lowercased: ``22 * 1.8 + 32`` is the example ``(22*1.8)+32`` copied."""
    return "".join(text.split()).lower().translate(_BRACKETS)


_BRACKETS = str.maketrans("", "", "()[]{}")


def tokens(text: str) -> set[str]:
    """The numbers and words (three letters or more; two Chinese characters or more) of ``text``, lowercased."""
    return {t.lower() for t in _WORDS.findall(text)} | set(_DIGITS.findall(text))


def single_field(tool: BaseTool) -> str | None:
    """The name of the tool's only required argument, if it has exactly one."""
    if isinstance(tool.args_schema, dict):  # a JSON schema (MCP tools)
        names = [str(n) for n in tool.args_schema.get("required") or []]
        return names[0] if len(names) == 1 else None
    schema: type[BaseModel] = tool.get_input_schema()
    required = [n for n, f in schema.model_fields.items() if f.is_required()]
    return required[0] if len(required) == 1 else None
