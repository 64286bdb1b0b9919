"""Errors carry their facts as fields, and their messages are made from them."""

from __future__ import annotations

import pickle

import httpx2
import openai
import pytest

from reinloop.errors import (
    ModelCallError, ModelSetupError, RunError, RunStoppedError, SettingError, TelemetrySetupError, ToolDatabaseError,
)
from reinloop.models.resolve import resolve_model
from reinloop.models.retry import RetryPolicy
from reinloop.runs.api import run
from reinloop.testing import ScriptedChatModel
from reinloop.tools.files import QuotaError, Sandbox, SandboxError


def test_a_model_call_error_makes_its_message_from_its_fields():
    error = ModelCallError(endpoint="http://m/v1", error_type="RateLimitError", detail="slow down", status_code=429,
                           retryable=True, stopped_by="attempts", attempts=3)
    assert str(error) == ("model endpoint http://m/v1 answered HTTP 429: see the provider's status page (slow down); "
                          "gave up after 3 attempts. The run is saved: resume it when the endpoint is back")
    assert error.resumable and not error.rejected and not error.malformed


def test_a_run_error_without_advice_is_its_own_problem():
    assert RunError("the tool pool is gone").problem == "the tool pool is gone"


def test_a_model_without_its_api_key_names_the_variable_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSetupError) as raised:
        resolve_model("openai:gpt-4o-mini")
    assert (raised.value.model, raised.value.key_variable) == ("openai:gpt-4o-mini", "OPENAI_API_KEY")
    assert "set OPENAI_API_KEY" in str(raised.value)


def test_a_run_the_endpoint_stopped_names_its_thread_and_says_once_how_to_resume(run_db):
    request = httpx2.Request("POST", "http://models.local/v1/chat/completions")
    down = openai.APIStatusError("upstream down", response=httpx2.Response(503, request=request), body=None)
    model = ScriptedChatModel(replies=[down] * 2)
    with pytest.raises(RunStoppedError) as raised:
        run("hi", model=model, tools="calculator", thread_id="s1", retry=RetryPolicy(attempts=2, base_delay=0))
    error = raised.value
    assert error.thread_id == "s1"
    assert error.reason.startswith("model endpoint ScriptedChatModel answered HTTP 503") and "saved" not in error.reason
    assert str(error).count("resume it") == 1 and str(error).endswith("resume it with `reinloop resume s1`")


def test_a_path_the_sandbox_refuses_is_a_field(tmp_path):
    sandbox = Sandbox(tmp_path)
    with pytest.raises(SandboxError) as raised:
        sandbox.read("../../etc/passwd")
    assert raised.value.path == "../../etc/passwd" and raised.value.limit is None


def test_a_file_over_the_read_limit_carries_the_limit(tmp_path):
    (tmp_path / "big.txt").write_text("x" * 100)
    with pytest.raises(SandboxError) as raised:
        Sandbox(tmp_path, max_read_bytes=10).read("big.txt")
    assert (raised.value.path, raised.value.limit) == ("big.txt", 10)


@pytest.mark.parametrize(
    "error",
    [
        ModelCallError(endpoint="e", error_type="X", status_code=400, param="tools"),
        ModelSetupError("no key", model="openai:x", key_variable="OPENAI_API_KEY"),
        ToolDatabaseError("same file", path="/tmp/run.db"),
        RunStoppedError("t9", "model endpoint e failed"),
        SettingError("Limits", "max_steps", "must be positive", value=0, none="off"),
        TelemetrySetupError("opentelemetry.sdk"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_keep_their_fields_and_message_through_pickling(error):
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and copy.__dict__ == error.__dict__


def test_a_quota_error_is_a_sandbox_error_with_its_path_and_limit():
    error = QuotaError("run", 100, 90, 20, "notes.txt")
    assert isinstance(error, SandboxError) and (error.path, error.limit, error.used, error.wanted) == ("notes.txt", 100, 90, 20)


def test_a_setting_error_makes_its_message_from_its_fields_in_either_terms():
    error = SettingError("ToolSettings", "write_quota", "must be a positive number of bytes", value=-1, none="or")
    assert str(error) == "ToolSettings.write_quota must be a positive number of bytes or None, got -1"
    assert error.worded("--write-quota", none="none") == "--write-quota must be a positive number of bytes or none, got -1"
    telemetry = TelemetrySetupError("opentelemetry.sdk")
    assert (telemetry.owner, telemetry.name, telemetry.missing) == ("RunSpec", "telemetry", "opentelemetry.sdk")
    assert str(telemetry).endswith("(or run without --otel / RunSpec.telemetry)")
