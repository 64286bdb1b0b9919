"""CachingChatModel: OpenAI's prompt-cache rules, checked against hits computed by hand."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from reinloop.models.caching import CachingChatModel
from reinloop.models.pricing import Pricing
from reinloop.testing import ScriptedChatModel


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cache(**options) -> tuple[CachingChatModel, Clock]:
    clock = Clock()
    return CachingChatModel(inner=ScriptedChatModel(replies=["ok"] * 10), clock=clock, **options), clock


def test_a_prompt_shorter_than_1024_tokens_is_never_cached():
    model, _ = cache()
    assert model.lookup(list(range(1023))) == 0
    assert model.lookup(list(range(1023))) == 0  # the same prompt again: still too short to be stored


def test_a_hit_covers_the_shared_prefix_in_128_token_steps_from_1024():
    model, _ = cache()
    assert model.lookup(list(range(1500))) == 0  # first sight: stored, nothing read
    # 1,500 shared tokens: 1024 + 3 * 128 = 1408 (the last 92 are not a whole increment)
    assert model.lookup(list(range(1500)) + [-9] * 200) == 1408
    # the new 1,700-token prompt is stored too: 1,700 shared, 1024 + 5 * 128 = 1664
    assert model.lookup(list(range(1500)) + [-9] * 200 + [7]) == 1664


def test_an_identical_prompt_leaves_its_last_token_to_compute():
    model, _ = cache()
    model.lookup(list(range(1153)))
    assert model.lookup(list(range(1153))) == 1152  # 1,152 usable shared tokens: 1024 + 1 * 128
    model2, _ = cache()
    model2.lookup(list(range(1152)))
    assert model2.lookup(list(range(1152))) == 1024  # 1,151 usable: the 128 above 1,024 are not whole


def test_a_change_before_token_1024_misses_the_cache():
    model, _ = cache()
    model.lookup(list(range(3000)))
    changed = list(range(3000))
    changed[1000] = -1
    assert model.lookup(changed) == 0
    changed = list(range(3000))
    changed[1100] = -1  # 1,100 shared: only the first 1,024 count
    assert model.lookup(changed) == 1024


def test_entries_expire_after_ttl_seconds_without_use_and_a_hit_refreshes_them():
    model, clock = cache(ttl_seconds=300)
    prompt = list(range(2048))
    model.lookup(prompt)
    clock.now = 250
    assert model.lookup(prompt + [1]) == 2048  # 2,048 shared of 2,049: 1024 + 8 * 128; both entries used at 250
    clock.now = 540
    assert model.lookup(prompt) == 1920  # 290 s after the last use: still there (2,047 usable: 1024 + 7 * 128)
    clock.now = 841
    assert model.lookup(prompt) == 0  # 301 s idle: gone


def test_a_reply_reports_its_cached_tokens_as_an_openai_endpoint_does_and_is_priced_at_a_tenth():
    model, _ = cache()
    system = SystemMessage(content="rule " * 1500)
    model.invoke([system, HumanMessage(content="first")])
    reply = model.invoke([system, HumanMessage(content="first"), HumanMessage(content="second " * 300)])
    prompt, cached, out = model.calls[-1]
    assert cached >= 1024 and cached % 128 == 0 and cached < prompt
    assert reply.usage_metadata["input_tokens"] == prompt
    assert reply.usage_metadata["input_token_details"] == {"cache_read": cached}
    assert reply.response_metadata["token_usage"]["prompt_tokens_details"] == {"cached_tokens": cached}
    assert reply.response_metadata["model_name"] == "gpt-5-mini"
    cost = Pricing().price(reply, model)
    assert reply.usage_metadata["output_tokens"] == out
    # gpt-5-mini: $0.25 / M fresh input, $0.025 / M cached input, $2 / M output
    assert cost["source"] == "genai-prices"
    assert cost["usd"] == pytest.approx(((prompt - cached) * 0.25 + cached * 0.025 + out * 2.0) / 1e6)


def test_the_caching_wrapper_refuses_tools_when_the_model_inside_does():
    model = CachingChatModel(inner=ScriptedChatModel(supports_tools=False))
    with pytest.raises(NotImplementedError):
        model.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])
