"""Model-call retries: tenacity's loop, decisions from the exception's type and status code, never its text."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest

from reinloop.errors import ModelCallError, ScriptExhaustedError
from reinloop.models.retry import RetryPolicy, call_with_retries, first_then_retried

REQUEST = httpx2.Request("POST", "http://models.local/v1/chat/completions")
ENDPOINT = "http://models.local/v1"


def status_error(status: int, *, retry_after: str | None = None, param: str | None = None,
                 message: str = "nope") -> openai.APIStatusError:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    response = httpx2.Response(status, request=REQUEST, headers=headers)
    return openai.APIStatusError(message, response=response, body={"message": message, "param": param})


def failing(*failures: BaseException, then: Any = "ok") -> tuple[Callable[[], Any], list[int]]:
    """A call that raises ``failures`` one by one, then returns ``then``; and the list counting its calls."""
    calls: list[int] = []

    def call() -> Any:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return then

    return call, calls


def retried(call: Callable[[], Any], *, policy: RetryPolicy = RetryPolicy(base_delay=1.0, max_delay=2.0),
            left: float | None = None) -> tuple[Any, list[float]]:
    waits: list[float] = []
    result = call_with_retries(call, endpoint=ENDPOINT, policy=policy, seconds_left=lambda: left, sleep=waits.append)
    return result, waits


def test_transient_failures_are_retried_with_capped_exponential_backoff():
    call, calls = failing(status_error(503), status_error(502), status_error(500))
    result, waits = retried(call)
    assert result == "ok" and len(calls) == 4
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0 and 1.0 <= waits[2] <= 2.0  # capped at max_delay


def test_the_servers_retry_after_is_honoured_even_above_the_cap():
    call, _ = failing(status_error(429, retry_after="7"))
    _, waits = retried(call)
    assert waits == [7.0]


def test_exhausted_retries_carry_the_status_the_attempts_and_leave_the_run_resumable():
    call, calls = failing(*[status_error(503, message="upstream down")] * 4)
    with pytest.raises(ModelCallError) as raised:
        retried(call)
    error = raised.value
    assert (error.status_code, error.attempts, error.stopped_by, error.endpoint) == (503, 4, "attempts", ENDPOINT)
    assert error.retryable and error.resumable and len(calls) == 4
    assert error.detail == "upstream down"
    assert str(error) == error.problem + error.advice
    assert "resume" not in error.problem and "The run is saved: resume it" in error.advice


def test_a_wait_longer_than_the_time_left_stops_at_once_and_says_both_numbers():
    call, calls = failing(status_error(429, retry_after="100"))
    with pytest.raises(ModelCallError) as raised:
        retried(call, left=5.0)
    error = raised.value
    assert (error.stopped_by, error.next_wait, error.seconds_left) == ("deadline", 100.0, 5.0)
    assert error.resumable and len(calls) == 1
    assert "the next wait (100.0 s) is longer than the 5.0 s left of max_seconds" in str(error)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_permanent_failure_fails_fast_in_one_line(status):
    call, calls = failing(status_error(status, message="line one\nline two"))
    with pytest.raises(ModelCallError) as raised:
        retried(call)
    error = raised.value
    assert len(calls) == 1 and error.status_code == status and error.stopped_by == "permanent"
    assert not error.retryable and not error.resumable
    assert "\n" not in str(error) and str(error).startswith(f"model endpoint {ENDPOINT} answered HTTP {status}: ")


def test_a_client_timeout_is_retried_by_its_type():
    call, calls = failing(openai.APITimeoutError(request=REQUEST), httpx2.ReadTimeout("slow", request=REQUEST))
    assert retried(call)[0] == "ok" and len(calls) == 3


def test_an_error_whose_text_says_timeout_is_not_retried_unless_its_type_is_one():
    class ConnectionTimeoutWarning(Exception):  # a name and a message that say "timeout", from no client
        pass

    for error in (ValueError("connection timeout while reading"), ConnectionTimeoutWarning("timeout")):
        call, calls = failing(error)
        with pytest.raises(type(error)):
            retried(call)
        assert len(calls) == 1


def test_an_error_that_is_no_client_error_is_raised_as_it_is():
    call, calls = failing(ScriptExhaustedError("the script ran out"))
    with pytest.raises(ScriptExhaustedError):
        retried(call)
    assert len(calls) == 1


def test_a_reply_body_the_client_cannot_read_is_retried_by_its_type():
    unreadable = json.JSONDecodeError("Expecting value", '{"choices": [', 13)
    call, calls = failing(unreadable, unreadable)
    with pytest.raises(ModelCallError) as raised:
        retried(call, policy=RetryPolicy(attempts=2, base_delay=0))
    assert raised.value.retryable and raised.value.error_type == "JSONDecodeError" and len(calls) == 2


def test_a_model_call_error_keeps_its_fields_through_pickling():
    call, _ = failing(status_error(400, param="tools"))
    with pytest.raises(ModelCallError) as raised:
        retried(call)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (copy.status_code, copy.param, copy.stopped_by, str(copy)) == (400, "tools", "permanent", str(raised.value))


def test_retry_policy_keeps_its_public_fields():
    policy = RetryPolicy(attempts=2, base_delay=0.1, max_delay=3.0, timeout=9.0)
    assert (policy.attempts, policy.base_delay, policy.max_delay, policy.timeout) == (2, 0.1, 3.0, 9.0)


def test_a_first_failure_becomes_tenacitys_first_attempt_and_the_retries_go_on_from_it():
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

    call, calls = failing(ConnectionError("reset"), ConnectionError("reset again"))
    waited: list[int] = []

    def retrying() -> Retrying:
        return Retrying(retry=retry_if_exception_type(ConnectionError), stop=stop_after_attempt(3), sleep=lambda s: None,
                        before_sleep=lambda state: waited.append(state.attempt_number))

    assert first_then_retried(call, retrying) == "ok"
    assert len(calls) == 3 and waited == [1, 2]  # the call made three times, the first failure counted as attempt 1


def test_a_first_failure_that_is_not_retried_is_raised_as_it_was():
    from tenacity import Retrying, retry_if_exception_type

    refused = ValueError("bad request")
    call, calls = failing(refused)
    with pytest.raises(ValueError) as caught:
        first_then_retried(call, lambda: Retrying(retry=retry_if_exception_type(ConnectionError), sleep=lambda s: None))
    assert caught.value is refused and len(calls) == 1


def test_a_call_that_succeeds_at_once_never_sets_tenacity_up():
    def no_retrying() -> Any:
        raise AssertionError("tenacity was set up for a call that succeeded")

    call, calls = failing()
    assert first_then_retried(call, no_retrying) == "ok" and len(calls) == 1
