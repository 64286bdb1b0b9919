"""Each reply is capped, under the name the model class takes; the cap travels with every entry point."""

from __future__ import annotations

import json

import pytest

from reinloop import Limits, build_graph
from reinloop.errors import ConfigurationError
from reinloop.models.resolve import DEFAULT_MAX_OUTPUT_TOKENS, output_cap
from reinloop.runs.api import resume, run
from reinloop.testing import ScriptedChatModel
from reinloop.tools import builtins

from .openai_server import completion


def scripted_run(**kwargs):
    model = ScriptedChatModel(replies=["4"], **kwargs.pop("model_fields", {}))
    build_graph(model, builtins("calculator"), **kwargs).invoke({"task": "2+2?"})
    return model


def test_every_model_call_is_capped_at_the_default_unless_told_otherwise():
    assert scripted_run().call_options == [{"max_tokens": DEFAULT_MAX_OUTPUT_TOKENS}]
    assert scripted_run(max_output_tokens=300).call_options == [{"max_tokens": 300}]
    assert scripted_run(max_output_tokens=None).call_options == [{}]


def test_a_lower_cap_the_model_object_was_built_with_stays_in_force():
    assert scripted_run(model_fields={"max_tokens": 100}).call_options == [{}]
    assert scripted_run(model_fields={"max_tokens": 5000}).call_options == [{"max_tokens": DEFAULT_MAX_OUTPUT_TOKENS}]


def test_the_cap_goes_under_the_field_name_the_model_class_has():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from pydantic import Field

    class Gemini(FakeListChatModel):
        max_output_tokens: int | None = Field(default=None)

    assert output_cap(Gemini(responses=["x"]), 256) == {"max_output_tokens": 256}
    assert output_cap(FakeListChatModel(responses=["x"]), 256) == {}  # no known field: called as it is


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "512"])
def test_a_cap_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(ConfigurationError, match=r"max_output_tokens must be a positive integer or None"):
        build_graph(ScriptedChatModel(replies=[]), builtins("calculator"), max_output_tokens=bad)


def test_openai_endpoints_get_the_cap_as_max_completion_tokens(openai_server):
    openai_server.responses += [completion("4"), completion("5")]
    for cap in (DEFAULT_MAX_OUTPUT_TOKENS, 64):
        build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url,
                    max_output_tokens=cap).invoke({"task": "2+2?"})
    assert [r["max_completion_tokens"] for r in openai_server.requests] == [DEFAULT_MAX_OUTPUT_TOKENS, 64]


def test_a_length_finish_from_an_openai_endpoint_is_a_failed_step_not_the_answer(openai_server):
    cut = '{"thought": "I will compute", "tool": "calculator", "args": {"expression": "17*2'
    openai_server.responses += [completion(cut, finish_reason="length", completion_tokens=20),
                                completion('{"final_answer": "391"}')]
    out = build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url,
                      protocol="json", max_output_tokens=20).invoke({"task": "17*23?"})
    assert out["status"] == "done" and out["answer"] == "391"
    assert out["scratchpad"][0]["finish_reason"] == "length" and out["scratchpad"][0]["actions"] == []
    assert "replies may be at most 20 tokens" in json.dumps(openai_server.requests[1])


def test_a_reply_an_endpoint_cut_below_the_cap_asked_for_is_told_with_the_length_it_was_cut_at(openai_server):
    cut = '{"name": "calculator", "arguments": {"expression": "17*2'  # a server capping every reply at 256 tokens
    openai_server.responses += [completion(cut, finish_reason="length", completion_tokens=256), completion("391")]
    build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url,
                max_output_tokens=1024).invoke({"task": "17*23?"})
    told = json.dumps(openai_server.requests[1])
    assert "replies may be at most 256 tokens" in told and "at most 1024" not in told


def test_a_stored_run_keeps_its_cap_when_it_is_resumed(openai_server):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}}]),
                                completion("2")]
    out = run("1+1?", model="openai:gpt-4o-mini", base_url=openai_server.base_url, tools="calculator",
              limits=Limits(max_steps=1), max_output_tokens=77, thread_id="cap")
    assert out.paused
    resume("cap", extra_steps=1)
    assert [r["max_completion_tokens"] for r in openai_server.requests] == [77, 77]
