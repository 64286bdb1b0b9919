"""Every RunSpec field reaches every entry point: CLI flags (run, batch, resume), batch lines, resume overrides.

The lists below are derived from the fields, so a new field that an entry point does not take fails here.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import pytest

from reinloop import RunSpec
from reinloop.runs.batches import task_keys
from reinloop.cli.app import DEFAULT_LEASE, build_parser
from reinloop.cli.options import spec_changes, spec_flags
from reinloop.runs.spec import GROUPS


def field_paths() -> list[tuple[str, ...]]:
    """Every settable path of a RunSpec: its fields, and the fields of its settings groups."""
    paths = []
    for f in dataclasses.fields(RunSpec):
        if f.name in GROUPS:
            paths += [(f.name, g.name) for g in dataclasses.fields(GROUPS[f.name])]
        else:
            paths.append((f.name,))
    return paths


def sample(path: tuple[str, ...]) -> tuple[str, object]:
    """A command-line value for the field at ``path`` and the value it must become."""
    default = RunSpec()
    value = getattr(default, path[0]) if len(path) == 1 else getattr(getattr(default, path[0]), path[1])
    if path == ("retry", "attempts"):
        return "1", 2  # --model-retries counts the retries
    if isinstance(value, bool):
        return "", not value
    if path in {("protocol",): 0, ("tool_detail",): 0}:
        return {"protocol": ("json", "json"), "tool_detail": ("compact", "compact")}[path[0]]
    if path == ("memory", "embeddings"):
        return "hash", "hash"
    if path == ("memory", "encoding"):
        return "estimate", "estimate"
    if path == ("tools",):
        return "calculator,wait", ("calculator", "wait")
    if path == ("mcp",):  # the path of a config file, read when the spec is made
        servers = Path(tempfile.mkdtemp()) / "servers.json"
        servers.write_text('{"mcpServers": {}}', encoding="utf-8")
        return str(servers), str(servers)
    if path == ("output",):  # a JSON Schema file, read when the flag is parsed
        schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        answer = Path(tempfile.mkdtemp()) / "answer.json"
        answer.write_text(json.dumps(schema), encoding="utf-8")
        return str(answer), schema
    if path == ("fallback_models",):  # a repeatable flag: each one a model, its endpoint after an @
        return "openai:m@http://127.0.0.1:9/v1", ["openai:m@http://127.0.0.1:9/v1"]
    if path == ("approve",):
        return "write_file,db_insert=always", {"write_file": "ask", "db_insert": "always"}
    field_type = str(next(f for f in dataclasses.fields(GROUPS[path[0]] if len(path) == 2 else RunSpec)
                          if f.name == path[-1]).type)
    if field_type.startswith("int"):
        return "7", 7
    if field_type.startswith("float"):
        return "7.5", 7.5
    if field_type.startswith("dict"):
        return '{"m": {"input": 1, "output": 2}}', {"m": {"input": 1, "output": 2}}
    return "x-value", "x-value"


@pytest.mark.parametrize("command", [["run", "task"], ["batch", "tasks.jsonl"], ["resume", "thread"]])
def test_every_spec_field_is_a_flag_of_every_command_that_takes_a_spec(command):
    parser = build_parser()
    flags = {f.path: f for f in spec_flags()}
    assert set(flags) == set(field_paths())
    for path in field_paths():
        flag = flags[path]
        text, expected = sample(path)
        words = [flag.switch_flag()] if flag.is_switch else [flag.flag, text]
        changes = spec_changes(parser.parse_args([*command, *words]))
        got = changes[path[0]] if len(path) == 1 else changes[path[0]][path[1]]
        assert got == expected, (command, words)
        assert flag.help, f"{flag.flag} has no help text"


def test_every_spec_field_is_a_key_of_a_batch_line():
    assert set(task_keys()) == {"task", "thread_id", *(f.name for f in dataclasses.fields(RunSpec))}


def test_every_spec_field_is_an_override_of_resume_and_of_run():
    import inspect

    from reinloop.runs.batches import batch
    from reinloop.runs.api import resume, run

    for entry in (run, resume, batch):  # **changes, handed to RunSpec.replace
        kinds = [p.kind for p in inspect.signature(entry).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD in kinds, entry.__name__
    for path in field_paths():
        RunSpec().replace(**{path[0]: {path[1]: getattr(getattr(RunSpec(), path[0]), path[1])}}
                          if len(path) == 2 else {path[0]: getattr(RunSpec(), path[0])})


def test_the_cli_lease_default_is_the_batch_default():
    from reinloop.runs.batches import DEFAULT_LEASE as BATCH_DEFAULT

    assert DEFAULT_LEASE == BATCH_DEFAULT
