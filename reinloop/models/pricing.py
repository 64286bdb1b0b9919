"""What a model call cost in US dollars, from the usage its provider reported, checked.

Every call (the agent's and the summarizer's) is priced from the usage the
reply carries: input tokens, the part of them read from the provider's prompt
cache (LangChain's ``usage_metadata["input_token_details"]["cache_read"]``,
OpenAI's ``prompt_tokens_details.cached_tokens``), and output tokens. Cached
input is cheaper (OpenAI: a tenth to a half of fresh input), so a call is
priced with its cached tokens, never as if all input were fresh.

The usage is checked, never taken on trust (:func:`checked_usage`): reported
input tokens below half of reinloop's own count of the request, or output
tokens below half of the estimate from the text received, are replaced by
those counts; a reply with no usage is counted the same way. A call is
priced by the model name it was *configured* with, whatever name the endpoint
reports. Each correction is flagged on the call (``CallCost["flags"]``), so on
the step's record, and shown.

Where a price comes from, first match wins:

1. ``prices`` given by the user, by the configured model name (or the model
   class's name; the reported name only for a model configured with none):
   :class:`Price`, USD per million tokens;
2. reinloop's scripted and simulated models, and with ``local_is_free=True``
   (the user's word that the endpoint is free) any model served on this
   machine (``base_url`` on a loopback address or ``localhost``), cost nothing;
3. `genai-prices <https://github.com/pydantic/genai-prices>`_, a price table
   kept up to date by Pydantic (no network: its snapshot ships with the
   package), wherever the model is served: ``gpt-4o`` through a LiteLLM-style
   proxy on 127.0.0.1 is priced as ``gpt-4o`` (and flagged as served locally);
4. a model on this machine whose name the table does not know costs nothing,
   flagged "priced at $0: local model not in the price table".

A call none of these can price (an unknown model name on a remote endpoint,
or no usage reported and no request to count) is counted as *unpriced* and
flagged in the counters, the console and the outcome: its cost is unknown,
never silently zero. With ``Limits.max_cost`` set, an unpriced call stops the
run (``cost_budget``), since the budget can no longer be enforced; once an
operator resumes it, unpriced calls pass and the budget counts the priced ones.
Before each agent call, its cost is estimated (the prompt's tokens counted and
the reply cap at the output price, :func:`check_call_cost`): a call that would
take the run past ``max_cost`` is not made.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import ipaddress
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from ..tools.bounds import token_count
from ..errors import ConfigurationError
from ..state import CallCost, ModelCost  # noqa: F401  (re-exported: the state's counters hold them)
from ..runs.limits import refused_call_reason
from .retry import model_url

logger = logging.getLogger(__name__)

LOCAL_NAMES = frozenset({"localhost"})
"""Host names that always mean this machine; every other host must be a loopback or unspecified IP address."""

MODEL_NAME_FIELDS = ("model_name", "model", "model_id")
"""Where chat model classes keep the model's name."""

PROMPT_FLOOR = 0.5
"""Reported input tokens below this share of reinloop's own count of the request are not believed."""

OUTPUT_FLOOR = 0.5
"""Reported output tokens below this share of the estimate from the text received are not believed
(tokenizers differ, but none packs twice as many characters per token as o200k on ordinary text)."""

UNLISTED_LOCAL = "priced at $0: local model not in the price table"
"""The flag of a free call on a model served here whose name genai-prices does not know."""


@dataclass(frozen=True, kw_only=True)
class Price:
    """A model's price in US dollars per million tokens."""

    input: float
    """Fresh input tokens."""
    output: float
    """Output tokens."""
    cached_input: float | None = None
    """Input tokens read from the provider's prompt cache; ``None``: the same as fresh input."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "cached_input":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigurationError(f"Price.{f.name} must be a number of dollars per million tokens >= 0, got {value!r}")

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """Dollars for one call (``input_tokens`` includes ``cached_tokens``)."""
        cached = self.input if self.cached_input is None else self.cached_input
        fresh = max(0, input_tokens - cached_tokens)
        return (fresh * self.input + cached_tokens * cached + output_tokens * self.output) / 1_000_000


def as_price(model: str, value: Price | Mapping[str, float]) -> Price:
    """A :class:`Price` from a ``Price`` or a mapping ``{"input": ..., "output": ..., "cached_input": ...}``."""
    if isinstance(value, Price):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"prices[{model!r}] must be a Price or a mapping with input and output, got {value!r}")
    unknown = sorted(set(value) - {"input", "output", "cached_input"})
    if unknown or "input" not in value or "output" not in value:
        raise ConfigurationError(
            f"prices[{model!r}] needs 'input' and 'output' (and optionally 'cached_input'), in USD per million "
            f"tokens; got {sorted(value)}"
        )
    return Price(**value)


@dataclass(frozen=True)
class Pricing:
    """How a run prices its model calls: price overrides and the local-is-free rule."""

    prices: Mapping[str, Price] = field(default_factory=dict)
    """Prices by model name, before any other source."""
    local_is_free: bool = False
    """The user's word that models served on this machine cost nothing, whatever their name. Off: a name
    genai-prices knows is priced wherever it is served, an unknown one on this machine is free and flagged."""

    @classmethod
    def of(cls, prices: Mapping[str, Price | Mapping[str, float]] | None = None, local_is_free: bool = False) -> Pricing:
        """A pricing from user input, every price checked."""
        if prices is not None and not isinstance(prices, Mapping):
            raise ConfigurationError(f"prices must map model names to prices, got {type(prices).__name__}")
        return cls({str(k): as_price(str(k), v) for k, v in (prices or {}).items()}, local_is_free)

    def as_dict(self) -> dict[str, Any]:
        """The pricing as JSON-able data (stored with a run)."""
        return {"prices": {k: dataclasses.asdict(v) for k, v in self.prices.items()}, "local_is_free": self.local_is_free}

    def price(self, message: Any, model: Any, prompt_tokens: int | None = None) -> CallCost:
        """The cost of the call that produced ``message`` with ``model``; ``prompt_tokens``: reinloop's own
        count of the request, which the reported usage is checked against (``None``: not known)."""
        own = bool(getattr(type(model), "reinloop_local", False))  # a script's usage is the script's to say
        usage, flags = (reported_usage(message), []) if own else checked_usage(message, prompt_tokens)
        configured, reported = configured_name(model), reported_name(message)
        name = configured or reported or (type(model).__name__ if model is not None else "unknown")
        if configured and reported and not same_model(configured, reported):
            flags.append(f"the endpoint reported model {reported!r}: priced as the configured {configured!r}")
        base = CallCost(model=name, input_tokens=0, cached_tokens=0, output_tokens=0, usd=None, source="unpriced")
        if usage is not None:
            base.update(input_tokens=usage[0], cached_tokens=usage[1], output_tokens=usage[2])
        if flags:
            base["flags"] = flags
        if any(f.startswith(USAGE_FLAG) for f in flags):
            base["counted"] = True
        return self._priced(base, usage, model, own, reported)

    def _priced(self, base: CallCost, usage: tuple[int, int, int] | None, model: Any, own: bool,
                reported: str | None) -> CallCost:
        name, local = base["model"], is_local(model)
        keys = [n for n in (name, type(model).__name__) if n]
        override = next(((n, self.prices[n]) for n in keys if n in self.prices), None)
        if override is not None and usage is not None:
            return {**base, "model": override[0], "usd": override[1].cost(*usage), "source": "prices"}
        if own or (local and self.local_is_free):  # the user's word that this endpoint is free
            return {**base, "usd": 0.0, "source": "local"}
        if usage is None:
            return {**base, "problem": f"the reply of {name} reported no usable token usage"}
        usd = library_price(name, *usage)
        if usd is None and local and reported and reported != name:
            usd = library_price(reported, *usage)  # a known model behind a local alias: never free in silence
            name = reported if usd is not None else name
        if usd is not None:
            flags = [*base.get("flags", []), *([LOCAL_PRICED.format(name=name)] if local else [])]
            return {**base, "model": name, "usd": usd, "source": "genai-prices", **({"flags": flags} if flags else {})}
        if local:
            return {**base, "usd": 0.0, "source": "local", "flags": [*base.get("flags", []), UNLISTED_LOCAL]}
        return {**base, "problem": f"no price known for model {name!r}; give one with prices={{{name!r}: "
                                   "Price(input=..., output=..., cached_input=...)}} (USD per million tokens)"}

    def estimate(self, model: Any, prompt_tokens: int, output_tokens: int) -> float | None:
        """Dollars a call of ``model`` would cost with this many prompt tokens (none cached) and output
        tokens, or ``None`` when its price is not known, or when the model says its own usage (reinloop's
        scripted and simulated models: their calls are priced by the script's numbers, not the prompt's)."""
        if getattr(type(model), "reinloop_local", False):
            return None
        name = configured_name(model) or type(model).__name__
        base = CallCost(model=name, input_tokens=prompt_tokens, cached_tokens=0, output_tokens=output_tokens,
                        usd=None, source="unpriced")
        return self._priced(base, (prompt_tokens, 0, output_tokens), model, False, None)["usd"]


USAGE_FLAG = "usage "
"""How every flag of a corrected usage begins."""

LOCAL_PRICED = ("priced as {name} (genai-prices) though served on this machine: say local_is_free=True "
                "(--local-is-free) if this endpoint is free")
"""The flag of a known model priced on a local endpoint (a proxy to a paid provider, or a local copy)."""


def checked_usage(message: Any, prompt_tokens: int | None) -> tuple[tuple[int, int, int] | None, list[str]]:
    """``(input, cached input, output)`` tokens to price a reply by, and a flag for each correction.

    Input below :data:`PROMPT_FLOOR` of ``prompt_tokens`` (reinloop's count of the request) is counted as
    ``prompt_tokens``; output below :data:`OUTPUT_FLOOR` of the estimate from the text received (content and
    tool calls) as that estimate; cached tokens above the input as none. A reply with no usage is counted the
    same way, or stays unknown (``None``) when the request was not counted.
    """
    from ..protocols.memory.tokens import estimate_tokens, message_text  # the memory package imports the state, which imports us

    text = message_text(message) if hasattr(message, "content") else ""
    received, size = estimate_tokens(text), len(text.encode("utf-8", "replace"))
    usage = reported_usage(message)
    if usage is None:
        if prompt_tokens is None:
            return None, []
        return (prompt_tokens, 0, received), [
            f"{USAGE_FLAG}not reported: counted {prompt_tokens:,} prompt tokens in the request and estimated "
            f"{received:,} completion tokens from the {size:,} bytes received"]
    given, cached, out = usage
    flags = []
    if prompt_tokens is not None and given < PROMPT_FLOOR * prompt_tokens:
        flags.append(f"{USAGE_FLAG}implausible: {given:,} prompt tokens reported for a request counted at "
                     f"{prompt_tokens:,}; priced as {prompt_tokens:,}")
        given = prompt_tokens
    if cached > given:
        flags.append(f"{USAGE_FLAG}implausible: {cached:,} cached of {given:,} prompt tokens; priced as none cached")
        cached = 0
    if out < OUTPUT_FLOOR * received:
        flags.append(f"{USAGE_FLAG}implausible: {out:,} completion tokens reported for {size:,} bytes received; "
                     f"priced as the {received:,} estimated from them")
        out = received
    return (given, cached, out), flags


def call_flags(calls: list[CallCost] | list[dict[str, Any]]) -> list[str]:
    """The flags of a step's calls, each once, in order: what pricing them corrected or assumed."""
    return list(dict.fromkeys(flag for call in calls for flag in call.get("flags") or []))


def usage_as_priced(call: CallCost) -> dict[str, int]:
    """The step's ``prompt_tokens``/``completion_tokens`` from its call when pricing replaced the reported usage
    (so the token budget counts what was priced); nothing otherwise."""
    if not call.get("counted"):
        return {}
    return {"prompt_tokens": call["input_tokens"], "completion_tokens": call["output_tokens"]}


def reported_usage(message: Any) -> tuple[int, int, int] | None:
    """``(input, cached input, output)`` tokens the provider reported, or ``None`` when it reported none."""
    usage = getattr(message, "usage_metadata", None)
    if usage:
        details = usage.get("input_token_details") or {}
        cached = details.get("cache_read")
        if cached is None:
            cached = _openai_cached(message)
        counts = _count(usage.get("input_tokens")), _count(cached), _count(usage.get("output_tokens"))
    else:
        raw = (getattr(message, "response_metadata", None) or {}).get("token_usage") or {}
        if not raw:
            return None
        counts = _count(raw.get("prompt_tokens")), _openai_cached(message), _count(raw.get("completion_tokens"))
    if any(c is None for c in counts):
        return None  # a count no provider could mean: the usage is unknown, not zero
    return counts  # type: ignore[return-value]


def _openai_cached(message: Any) -> int | None:
    raw = (getattr(message, "response_metadata", None) or {}).get("token_usage") or {}
    return _count((raw.get("prompt_tokens_details") or {}).get("cached_tokens"))


def _count(value: Any) -> int | None:
    """A reported token count: 0 when absent, ``None`` when absurd (negative, not a number, not storable)."""
    if value is None or value == 0:
        return 0
    return token_count(value) or None


def configured_name(model: Any) -> str | None:
    """The name ``model`` was configured with (``gpt-4o-mini``), if its class keeps one."""
    names = (getattr(model, f, None) for f in MODEL_NAME_FIELDS)
    return next((n for n in names if isinstance(n, str) and n), None)


def reported_name(message: Any) -> str | None:
    """The model name the endpoint reported with its reply, if it did."""
    meta = getattr(message, "response_metadata", None) or {}
    names = (meta.get("model_name"), meta.get("model"))
    return next((n for n in names if isinstance(n, str) and n), None)


_VERSION_TAIL = re.compile(r"(-latest|[-@]?\d{4}-?\d{2}-?\d{2}|-\d{4})$")


def same_model(configured: str, reported: str) -> bool:
    """True when ``reported`` names the model ``configured`` names: the same entry of the price table, or
    the same name up to a provider prefix and a date or ``-latest`` tail (``gpt-4o-mini-2024-07-18``)."""
    if configured == reported:
        return True
    ids = table_model(configured), table_model(reported)
    if all(ids):
        return ids[0] == ids[1]
    bare = [_VERSION_TAIL.sub("", n.rsplit("/", 1)[-1].lower()) for n in (configured, reported)]
    return bare[0] == bare[1]


def table_model(name: str) -> tuple[str, str] | None:
    """``(provider, model id)`` of ``name`` in genai-prices, or ``None`` when the table does not know it."""
    from genai_prices import Usage, calc_price

    try:
        found = calc_price(Usage(input_tokens=0, output_tokens=0), name)
    except Exception:  # LookupError for an unknown name; anything else: not a match either
        return None
    return found.provider.id, found.model.id


def is_local(model: Any) -> bool:
    """True for a model served on this machine, or one of reinloop's scripted and simulated models."""
    if getattr(type(model), "reinloop_local", False):
        return True
    url = model_url(model)
    if not url:
        return False
    return is_local_host(urlsplit(url if "//" in url else f"//{url}").hostname or "")


def is_local_host(host: str) -> bool:
    """True for ``localhost`` and loopback or unspecified IP addresses (``127.0.0.1``, ``::1``, ``0.0.0.0``);
    a name such as ``127.example.com`` is a name, not an address, and may be anywhere."""
    if host.lower().rstrip(".") in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    address = mapped or address
    return address.is_loopback or address.is_unspecified


class CallOverBudget(Exception):
    """Control flow inside the decide node: the next model call's estimate would take the run past
    ``max_cost``, so it was not made (the guard breaks the run on ``cost_budget``)."""

    def __init__(self, *, model: str, prompt_tokens: int, cap_tokens: int, usd: float, spent: float,
                 limit: float) -> None:
        self.model, self.prompt_tokens, self.cap_tokens = model, prompt_tokens, cap_tokens
        self.usd, self.spent, self.limit = usd, spent, limit
        super().__init__(refused_call_reason(self.record(0), limit))

    def record(self, llm_calls: int) -> dict[str, Any]:
        """The refused call as plain data, kept in the counters for the guard (``llm_calls``: the calls made
        before it, so a later call makes the record stale)."""
        return {"model": self.model, "prompt_tokens": self.prompt_tokens, "cap_tokens": self.cap_tokens,
                "usd": self.usd, "spent": self.spent, "llm_calls": llm_calls}


_BUDGET: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("reinloop_budget", default=None)
"""``(spent, max_cost)`` of the run whose decide node is calling its model; ``None``: no budget."""


@contextlib.contextmanager
def call_budget(limit: float | None, spent: float) -> Iterator[None]:
    """Within this block every model call of the step is estimated first (:func:`check_call_cost`) against
    ``limit`` dollars, ``spent`` of them already spent; ``limit=None``: no budget, nothing estimated."""
    token = _BUDGET.set(None if limit is None else (spent, limit))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_call_cost(ctx: Any, llm: Any, prompt: list[Any], cap_tokens: int | None, model: Any = None) -> None:
    """Raise :class:`CallOverBudget` when the call about to be made would take the run past its budget: the
    prompt's tokens counted (tools bound to ``llm`` included), the reply cap at the output price, none cached,
    priced as ``model`` (the run's, ``ctx.model``, by default). A model with no known price is not estimated (its
    call is flagged as unpriced afterwards)."""
    budget = _BUDGET.get()
    if budget is None:
        return
    from ..protocols.memory.tokens import active_counter, count_message_tokens, count_tool_schemas

    counter = active_counter()
    tools = (getattr(llm, "kwargs", None) or {}).get("tools") or []
    tokens = count_message_tokens(prompt, counter) + count_tool_schemas(tools, counter)
    model = ctx.model if model is None else model
    usd = ctx.pricing.estimate(model, tokens, cap_tokens or 0)
    spent, limit = budget
    if usd is not None and usd > 0 and spent + usd > limit * (1 + 1e-9):
        name = configured_name(model) or type(model).__name__
        raise CallOverBudget(model=name, prompt_tokens=tokens, cap_tokens=cap_tokens or 0, usd=usd, spent=spent,
                             limit=limit)


def library_price(model: str, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
    """The price ``genai-prices`` knows for one call of ``model``, or ``None``."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, cache_read_tokens=cached_tokens, output_tokens=output_tokens)
    try:
        return float(Decimal(calc_price(usage, model).total_price))
    except LookupError:
        return None
    except Exception as exc:  # a price table the library cannot apply to this usage: unknown, not zero
        logger.warning("genai-prices could not price %s: %s", model, exc)
        return None


def add_cost(totals: Mapping[str, ModelCost], call: CallCost) -> dict[str, ModelCost]:
    """Per-model totals with one more call."""
    old = totals.get(call["model"]) or ModelCost(calls=0, input_tokens=0, cached_tokens=0, output_tokens=0,
                                                 usd=0.0, unpriced_calls=0)
    new = ModelCost(
        calls=old["calls"] + 1,
        input_tokens=old["input_tokens"] + call["input_tokens"],
        cached_tokens=old["cached_tokens"] + call["cached_tokens"],
        output_tokens=old["output_tokens"] + call["output_tokens"],
        usd=old["usd"] + (call["usd"] or 0.0),
        unpriced_calls=old["unpriced_calls"] + (call["usd"] is None),
    )
    return {**totals, call["model"]: new}


def cost_breakdown(counters: Mapping[str, Any]) -> str:
    """``$0.0123; gpt-4o-mini: 5 calls, $0.0123, 2,048 of 9,000 input tokens cached``: the cost per model."""
    parts = []
    for name, m in (counters.get("models") or {}).items():
        unpriced = f", {m['unpriced_calls']} unpriced" if m["unpriced_calls"] else ""
        parts.append(f"{name}: {m['calls']} calls, ${m['usd']:.4f}{unpriced}, "
                     f"{m['cached_tokens']:,} of {m['input_tokens']:,} input tokens cached")
    return "; ".join([cost_text(counters), *parts])


def spent(counters: Mapping[str, Any], sep: str = ", ") -> str:
    """:func:`cost_text` and ``sep`` for a run that cost something or has unpriced calls, else nothing."""
    return cost_text(counters) + sep if counters.get("cost_usd") or counters.get("unpriced_calls") else ""


def cost_text(counters: Mapping[str, Any]) -> str:
    """``$0.0123`` or ``$0.0123 + 2 unpriced calls``: what a run cost so far, for people."""
    usd = float(counters.get("cost_usd") or 0.0)
    unpriced = int(counters.get("unpriced_calls") or 0)
    text = f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"
    return text + (f" + {unpriced} unpriced call{'s' if unpriced != 1 else ''}" if unpriced else "")
