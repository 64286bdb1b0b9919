"""What a model call cost in US dollars, from the usage its provider reported.

Every call (the agent's and the summarizer's) is priced from the usage the
reply carries: input tokens, the part of them read from the provider's prompt
cache (LangChain's ``usage_metadata["input_token_details"]["cache_read"]``,
OpenAI's ``prompt_tokens_details.cached_tokens``), and output tokens. Cached
input is cheaper (OpenAI: a tenth to a half of fresh input), so a call is
priced with its cached tokens, never as if all input were fresh.

Where a price comes from, first match wins:

1. ``prices`` given by the user, by the model name the provider reported or
   the one the model was configured with (:class:`Price`, USD per million tokens);
2. a local model is free: one served on this machine (``base_url`` on
   ``127.0.0.1``/``localhost``), or reinloop's scripted and simulated models
   (``local_is_free=False`` prices a local proxy that forwards to a paid provider);
3. `genai-prices <https://github.com/pydantic/genai-prices>`_, a price table
   kept up to date by Pydantic (no network: its snapshot ships with the package).

A call none of these can price (an unknown model name, or no usage reported)
is counted as *unpriced* and flagged in the counters, the console and the
outcome: its cost is unknown, never silently zero. With ``Limits.max_cost``
set, an unpriced call stops the run (``cost_budget``), since the budget can
no longer be enforced; once an operator resumes it, unpriced calls pass and
the budget counts the priced ones.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from .bounds import token_count
from .errors import ConfigurationError
from .state import CallCost, ModelCost  # noqa: F401  (re-exported: the state's counters hold them)
from .retry import model_url

logger = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
"""Hosts whose models are served on this machine, and so free."""

MODEL_NAME_FIELDS = ("model_name", "model", "model_id")
"""Where chat model classes keep the model's name."""


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
    local_is_free: bool = True
    """Models served on this machine cost nothing (switch off for a local proxy to a paid provider)."""

    @classmethod
    def of(cls, prices: Mapping[str, Price | Mapping[str, float]] | None = None, local_is_free: bool = True) -> Pricing:
        """A pricing from user input, every price checked."""
        if prices is not None and not isinstance(prices, Mapping):
            raise ConfigurationError(f"prices must map model names to prices, got {type(prices).__name__}")
        return cls({str(k): as_price(str(k), v) for k, v in (prices or {}).items()}, local_is_free)

    def as_dict(self) -> dict[str, Any]:
        """The pricing as JSON-able data (stored with a run)."""
        return {"prices": {k: dataclasses.asdict(v) for k, v in self.prices.items()}, "local_is_free": self.local_is_free}

    def price(self, message: Any, model: Any) -> CallCost:
        """The cost of the call that produced ``message`` with ``model``."""
        usage = reported_usage(message)
        names = model_names(message, model)
        name = names[0] if names else "unknown"
        base = CallCost(model=name, input_tokens=0, cached_tokens=0, output_tokens=0, usd=None, source="unpriced")
        if usage is not None:
            base.update(input_tokens=usage[0], cached_tokens=usage[1], output_tokens=usage[2])
        override = next(((n, self.prices[n]) for n in names if n in self.prices), None)
        if override is not None and usage is not None:
            return {**base, "model": override[0], "usd": override[1].cost(*usage), "source": "prices"}
        if self.local_is_free and is_local(model):
            return {**base, "usd": 0.0, "source": "local"}
        if usage is None:
            return {**base, "problem": f"the reply of {name} reported no usable token usage"}
        usd = library_price(name, *usage)  # by the name the provider reported, if it did: it is what it billed
        if usd is not None:
            return {**base, "usd": usd, "source": "genai-prices"}
        return {**base, "problem": f"no price known for model {name!r}; give one with prices={{{name!r}: "
                                   "Price(input=..., output=..., cached_input=...)}} (USD per million tokens)"}


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


def model_names(message: Any, model: Any) -> list[str]:
    """The names a call's model goes by: the one the provider reported, the configured one, its class."""
    meta = getattr(message, "response_metadata", None) or {}
    names = [meta.get("model_name"), meta.get("model")]
    names += [getattr(model, f, None) for f in MODEL_NAME_FIELDS]
    names.append(type(model).__name__ if model is not None else None)
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))


def is_local(model: Any) -> bool:
    """True for a model served on this machine, or one of reinloop's scripted and simulated models."""
    if getattr(type(model), "reinloop_local", False):
        return True
    url = model_url(model)
    if not url:
        return False
    host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    return host in LOCAL_HOSTS or host.startswith("127.")


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
