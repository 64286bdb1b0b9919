"""The corpus under the small-model profile: the same scenarios, the same checks, and each deviation justified.

The profile is ``reinloop.profiles.small_model()``. A correct model must fare as on the default path, except where
:data:`ASKS_AGAIN` says the profile asks it again, and why that is right for the profile; there the test
asserts exactly that: the model is asked again that many times at that reply (it writes the same reply each
time), the step records the re-asks, and everything else (calls, arguments, answer) is as on the default path.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reinloop.protocols.profiles import small_model

from .scenarios import SCENARIOS, Scenario
from .script import PROTOCOLS, problems, replies, run_scenario, turns_of

SMALL_MODEL = small_model()
"""The small-model profile's answer rules."""


@dataclass(frozen=True)
class AskedAgain:
    """The profile asks the model again, ``times`` times, for the reply to its ``call``-th tool call."""

    call: int
    times: int
    why: str


ASKS_AGAIN: dict[str, AskedAgain] = {
    "ops-deploy-retry-after-lock": AskedAgain(
        call=3, times=2,
        why="vary_repeats: the retry repeats a call that failed in this run (the deploy lock), and the profile asks "
            "twice more, with sampling, for a reply that is not a repeat. A greedy small model writes a failed call "
            "again word for word; the correct model here retries on purpose after waiting, writes the same call, "
            "and it then runs as asked: the price is two model calls, not a changed call."),
}
"""Scenario id -> where and why the small-model profile asks a correct model again. Nothing else may differ."""


def profile_script(s: Scenario, protocol: str, again: AskedAgain | None) -> tuple[list, int]:
    """The scenario's replies, with the reply the profile asks for again written that many more times."""
    script = replies(s, protocol)
    if again is None:
        return script, 0
    calls = [i for i, t in enumerate(turns_of(s, protocol)) if not isinstance(t, str)]
    at = calls[again.call - 1]
    return script[:at] + [script[at]] * (1 + again.times) + script[at + 1:], again.times


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_the_small_model_profile_runs_the_model_s_calls_as_asked_and_accepts_its_answer(scenario, protocol):
    if protocol == "tool_calling" and scenario.id in {**RUNS_TEXT_CALL, **SENDS_TEXT_CALL_BACK}:
        pytest.skip("a listed deviation: test_the_profile_reads_a_shown_call_under_tool_calling_and_tells_the_model")
    again = ASKS_AGAIN.get(scenario.id)
    script, extra = profile_script(scenario, protocol, again)
    out, model = run_scenario(scenario, protocol, script, answers=SMALL_MODEL)
    found = problems(scenario, protocol, out, model, extra_asks=extra)
    assert not found, "\n".join(found)
    if again is not None:
        at = [i for i, t in enumerate(turns_of(scenario, protocol)) if not isinstance(t, str)][again.call - 1]
        events = [e for e in out["scratchpad"][at].get("memory") or [] if e.get("event") == "resampled"]
        assert events == [{"event": "resampled", "asks": again.times, "temperature": 0.8, "changed": False}]


TEXT_CALL_WHY = ("text_calls: under native tool calling the profile reads an answer that is nothing but a whole JSON "
                 "call of a known tool as a call, since Qwen2.5-Coder-0.5B writes its calls so. A read-only tool's call "
                 "runs and the model is told; a side-effecting tool's call never runs from text: the answer is sent "
                 "back (call it through the API, or answer in words), and the model's answer in words is accepted.")
RUNS_TEXT_CALL: dict[str, str] = {"shown-get-order-json": TEXT_CALL_WHY}
"""Scenario id -> why, under tool_calling, the profile runs the call the answer shows."""
SENDS_TEXT_CALL_BACK: dict[str, str] = {sid: TEXT_CALL_WHY for sid in (
    "shown-delete-user-json", "shown-delete-user-tool-args", "shown-send-email-fenced", "shown-transfer-zh",
    "shown-refund-after-lookup")}
"""Scenario id -> why, under tool_calling, the profile sends back an answer that shows a side-effecting call."""


@pytest.mark.parametrize("scenario_id", sorted({**RUNS_TEXT_CALL, **SENDS_TEXT_CALL_BACK}))
def test_the_profile_reads_a_shown_call_under_tool_calling_and_tells_the_model(scenario_id):
    from . import tools as corpus_tools

    scenario = next(s for s in SCENARIOS if s.id == scenario_id)
    script = [*replies(scenario, "tool_calling"), f"Here is the call: {scenario.answer}"]
    out, model = run_scenario(scenario, "tool_calling", script, answers=SMALL_MODEL)
    before = [name for name, _ in corpus_tools.LOG]
    assert out["status"] == "done" and out["answer"] == f"Here is the call: {scenario.answer}"
    last = out["scratchpad"][-2]  # the step of the shown call
    if scenario_id in RUNS_TEXT_CALL:
        assert [(a["tool"], a.get("from_text")) for a in last["actions"]] == [("get_order", True)]
        assert before.count("get_order") == 1 and "wrote this call as text" in str(model.prompts[-1])
    else:
        assert last["actions"] == [] and "a call written as text is never run" in last["parse_error"]
        assert len(before) == sum(len(t) for t in scenario.turns)  # the calls the model made, and nothing more


def test_every_justified_deviation_names_a_scenario_of_the_corpus():
    assert set(ASKS_AGAIN) | set(RUNS_TEXT_CALL) | set(SENDS_TEXT_CALL_BACK) <= {s.id for s in SCENARIOS}
