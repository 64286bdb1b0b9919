"""RunSpec: one frozen, typed, versioned description of a run, with a lossless JSON form."""

from __future__ import annotations

import dataclasses
import json

import pytest

from reinloop import Limits, Memory, RetryPolicy, RunSpec
from reinloop.errors import ConfigurationError
from reinloop.runs.spec import SPEC_VERSION
from reinloop.tools import BUILTINS, ToolSettings
from reinloop.tools.settings import BUILTIN_NAMES

EVERYTHING = RunSpec(
    model="openai:local", base_url="http://127.0.0.1:8765/v1", protocol="react", tool_detail="compact",
    max_output_tokens=300, retry=RetryPolicy(attempts=2, base_delay=0.1, max_delay=3.0, timeout=None),
    tools=("calculator", "write_file"), tool_settings=ToolSettings(sandbox="/tmp/box", write_quota=None),
    limits=Limits(max_steps=None, token_budget=900), system_prompt="Be brief. 简短。",
    memory=Memory(window_steps=None, summarize=False, recall=True, embeddings="hash", store="/tmp/m.db",
                  user="ops", summarizer="openai:gpt-4o-mini", encoding="estimate"),
)


def test_the_json_form_reads_back_equal_and_carries_its_version():
    text = EVERYTHING.to_json()
    assert json.loads(text)["version"] == SPEC_VERSION
    assert RunSpec.from_json(text) == EVERYTHING
    assert RunSpec.from_json(RunSpec().to_json()) == RunSpec()


def test_an_unknown_key_is_refused_by_name():
    with pytest.raises(ConfigurationError, match="unknown run spec key\\(s\\) max_stepz; valid: version, model"):
        RunSpec.from_json('{"version": 1, "max_stepz": 3}')
    with pytest.raises(ConfigurationError, match="unknown limit\\(s\\) max_stepz"):
        RunSpec.from_json('{"limits": {"max_stepz": 3}}')
    with pytest.raises(ConfigurationError, match="newer than this reinloop reads"):
        RunSpec.from_json(json.dumps({"version": SPEC_VERSION + 1}))
    with pytest.raises(ConfigurationError, match="a run spec must be JSON"):
        RunSpec.from_json("{model: x}")


def test_replace_changes_fields_and_a_mapping_changes_only_the_named_settings():
    spec = RunSpec(limits=Limits(max_steps=4, max_seconds=9))
    changed = spec.replace(limits={"max_steps": 6}, memory={"window_steps": 2}, tools="calculator,wait")
    assert changed.limits == Limits(max_steps=6, max_seconds=9) and changed.memory.window_steps == 2
    assert changed.tools == ("calculator", "wait") and spec.limits.max_steps == 4  # frozen: the original stays
    assert spec.replace(limits=Limits()).limits == Limits()  # an object replaces the whole group
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.model = "x"  # type: ignore[misc]


@pytest.mark.parametrize("changes, message", [
    ({"max_step": 3}, "unknown run option\\(s\\) max_step; valid: model, base_url"),
    ({"protocol": "xml"}, "unknown protocol 'xml'; choose one of: tool_calling, json, react, auto, json_strict"),
    ({"tool_detail": "terse"}, "tool_detail must be one of full, compact; got 'terse'"),
    ({"max_output_tokens": 0}, "max_output_tokens must be a positive integer or None"),
    ({"limits": 5}, "RunSpec.limits must be a Limits \\(or a mapping of its fields\\), got int"),
    ({"retry": {"attemps": 2}}, "unknown retry setting\\(s\\) attemps"),
    ({"memory": {"embeddings": "bert"}}, "Memory.embeddings 'bert' is not an embedder reinloop knows by name"),
    ({"tool_settings": {"write_quota": -1}}, "ToolSettings.write_quota must be a positive number of bytes or None"),
    ({"tools": 3}, "tools must be a list of names or a comma-separated string"),
])
def test_an_invalid_value_is_a_clear_configuration_error(changes, message):
    with pytest.raises(ConfigurationError, match=message):
        RunSpec().replace(**changes)


def test_objects_are_stored_by_their_type_and_come_back_as_the_defaults():
    class Embedder:
        def embed_query(self, text): return [0.0]
        def embed_documents(self, texts): return [[0.0] for _ in texts]

    data = RunSpec(memory=Memory(recall=True, embeddings=Embedder())).to_dict()
    assert data["memory"]["embeddings"] == "<Embedder object>"
    assert RunSpec.from_dict(data).memory.embeddings is None


def test_the_stored_form_has_no_credentials():
    spec = RunSpec(base_url="http://user:s3cret@127.0.0.1:9/v1?api_key=k3y")
    assert "s3cret" not in json.dumps(spec.stored()) and "k3y" not in json.dumps(spec.stored())


def test_the_builtin_names_the_spec_knows_are_the_builtin_tools():
    assert tuple(sorted(BUILTINS)) == BUILTIN_NAMES


def test_the_names_the_spec_checks_are_the_protocols_and_detail_levels_the_loop_has():
    from reinloop.protocols import PROTOCOLS
    from reinloop.runs.spec import PROTOCOL_NAMES

    assert tuple(PROTOCOLS) == PROTOCOL_NAMES


def test_a_custom_protocol_object_runs_though_the_spec_cannot_name_it():
    from reinloop import build_graph
    from reinloop.protocols import JsonProtocol
    from reinloop.testing import ScriptedChatModel

    class Terse(JsonProtocol):
        name = "terse"

    graph = build_graph(ScriptedChatModel(replies=['{"final_answer": "ok"}']), protocol=Terse())
    assert graph.reinloop_context.protocol.name == "terse" and graph.reinloop_context.spec.protocol == "tool_calling"
    assert graph.invoke({"task": "t"})["answer"] == "ok"


def test_approve_rules_are_normalised_kept_in_the_json_form_and_a_bad_rule_is_named():
    spec = RunSpec(approve={"write_file": True, "db_insert": "always", "calculator": False})
    assert spec.approve == {"write_file": "ask", "db_insert": "always", "calculator": "never"}
    assert RunSpec.from_json(spec.to_json()) == spec
    assert RunSpec(approve="none").approve == {"*": "never"}
    assert RunSpec(approve="side-effects,calculator=always").approve == {"*side_effects": "ask", "calculator": "always"}
    with pytest.raises(ConfigurationError, match=r"RunSpec.approve\['write_file'\] must be True, False, 'ask', "
                                                 r"'always' or 'never', got 'maybe'"):
        RunSpec(approve={"write_file": "maybe"})


def test_a_custom_protocol_written_before_structured_answers_still_runs_and_is_corrected():
    from reinloop import build_graph
    from reinloop.protocols import JsonProtocol
    from reinloop.testing import ScriptedChatModel

    class Older(JsonProtocol):  # the signatures of the methods before RunSpec.output existed
        name = "older"

        def instructions(self, tools):
            return "Answer as JSON: " + super().instructions(tools)

        def example(self, tools):
            return super().example(tools)

        def correction(self, problem, failures, tools):
            return "again, as JSON: " + super().correction(problem, failures, tools)

    model = ScriptedChatModel(replies=["not json at all", '{"final_answer": "ok"}'])
    out = build_graph(model, protocol=Older()).invoke({"task": "t"})
    assert out["answer"] == "ok"
    assert str(model.prompts[0][0].content).count("Answer as JSON: ") == 1
    assert any("again, as JSON: " in str(m.content) for m in model.prompts[1])
