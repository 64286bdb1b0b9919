"""The three agent loops compared, each run the same way on the same task and model.

- ``reinloop``: ``build_graph`` with its default limits and memory (native
  tool calling, full tool schemas).
- ``reinloop_compact``: the same limits and memory, with seed 004's prompt:
  JSON replies and every tool as one signature line (``protocol="json"``,
  ``tool_detail="compact"``).
- ``reinloop_json``, ``reinloop_react``, ``reinloop_auto``, ``reinloop_json_strict``: ``reinloop`` with
  another output protocol (full tool schemas); the real-model tier runs them.
- ``reinloop_ruled``, ``reinloop_json_ruled``, ``reinloop_compact_ruled``: tool
  calling, JSON and compact JSON with the small-model answer rules
  (:data:`SMALL_MODEL_RULES`); the real-model tier runs them.
- ``create_agent``: LangChain's agent with ``ToolErrorMiddleware`` (tool
  exceptions go back to the model) and ``ModelCallLimitMiddleware`` (a step
  limit of 10 model calls, like reinloop's default).
- ``create_agent_text_calls``: the same, with a call the model writes as JSON
  text read as that tool call (:mod:`.textcalls`): the fair baseline for a small model.
- ``bare_loop``: seed 000's hand-written while-loop: JSON replies, a
  ``deque(maxlen=6)`` message window, three parse attempts, ten iterations.

Every model call is metered by one callback handler (calls, prompt tokens from
the model's usage, cached prompt tokens and dollars, time inside the model), so
"framework time" is wall time minus model time, measured identically for all three.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware, ToolErrorMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool

from reinloop import build_graph

from reinloop.protocols.profiles import small_model
from reinloop.protocols.memory.summary import SUMMARIZER_TAG
from reinloop.models.pricing import Pricing, model_url

from .textcalls import TextCallMiddleware

PRICING = Pricing(local_is_free=False)
"""Every call priced by the model name its reply reports (the simulated model behind the cache: gpt-5-mini)."""

SYSTEM: str | None = "You are a careful assistant. Use the tools; use the calculator for every calculation."
"""The eval's system prompt, given to every contestant; ``--no-system-prompt`` sets None (each its own default)."""


@dataclass
class RunResult:
    """How one contestant did on one task."""

    answer: str | None
    ending: str  # "answer", "limit" or "crash"
    iterations: int
    prompt_tokens: int
    wall_seconds: float
    model_seconds: float
    detail: str = ""
    completion_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0
    unpriced_calls: int = 0


class Meter(BaseCallbackHandler):
    """Counts agent model calls, prompt tokens and the time spent inside the model.

    Summarizer calls (tagged ``reinloop:summarizer``) count for tokens and model
    time but are not loop iterations.
    """

    def __init__(self, model: Any = None) -> None:
        # the simulated models are priced as gpt-5-mini; a model behind an endpoint on this machine is free
        self.model, self.pricing = model, (Pricing() if model_url(model) else PRICING)
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.usd = 0.0
        self.unpriced_calls = 0
        self.model_seconds = 0.0
        self._started: dict[Any, float] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.calls += SUMMARIZER_TAG not in (kwargs.get("tags") or [])
        self._started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.model_seconds += time.perf_counter() - self._started.pop(run_id, time.perf_counter())
        for generation in response.generations[0]:
            message = getattr(generation, "message", None)
            usage = getattr(message, "usage_metadata", None) or {}
            self.prompt_tokens += int(usage.get("input_tokens") or 0)
            self.completion_tokens += int(usage.get("output_tokens") or 0)
            cost = self.pricing.price(message, self.model)  # by the model name the reply reports, as for any endpoint
            self.cached_tokens += cost["cached_tokens"]
            self.usd += cost["usd"] or 0.0
            self.unpriced_calls += cost["usd"] is None

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self.model_seconds += time.perf_counter() - self._started.pop(run_id, time.perf_counter())


def _measure(loop: Callable[[dict[str, Any]], tuple[str | None, str, str]], model: Any) -> RunResult:
    meter = Meter(model)
    start = time.perf_counter()
    try:
        answer, ending, detail = loop({"callbacks": [meter]})
    except Exception as exc:  # a crash is a result too
        answer, ending, detail = None, "crash", f"{type(exc).__name__}: {exc}"[:300]
    wall = time.perf_counter() - start
    return RunResult(answer, ending, meter.calls, meter.prompt_tokens, wall, meter.model_seconds, detail,
                     meter.completion_tokens, meter.cached_tokens, meter.usd, meter.unpriced_calls)


def run_reinloop(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
    """reinloop with its defaults."""
    graph = build_graph(model, tools, system_prompt=SYSTEM, **options)

    def loop(config: dict[str, Any]) -> tuple[str | None, str, str]:
        out = graph.invoke({"task": task}, config)
        if out["status"] == "done":
            return out["answer"], "answer", ""
        return None, "limit", f"{out['break_reason']}: {out['break_message']}"

    return _measure(loop, model)


def run_reinloop_compact(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
    """reinloop with default limits and memory, JSON replies and compact tool descriptions."""
    return run_reinloop(task, model, tools, protocol="json", tool_detail="compact", **options)


def _with_protocol(protocol: str) -> Callable[..., RunResult]:
    def run(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
        return run_reinloop(task, model, tools, protocol=protocol, **options)

    run.__doc__ = f"reinloop with its defaults and protocol={protocol!r}."
    return run


def agent_for(model: BaseChatModel, tools: list[BaseTool], *, system_prompt: str | None = None,
              run_limit: int = 10, text_calls: bool = False) -> Any:
    """The create_agent contestants' agent: tool errors returned to the model, ``run_limit`` model calls a run,
    and with ``text_calls`` calls written as JSON text read as calls (:mod:`.textcalls`); ``system_prompt``
    or none."""
    middleware: list[Any] = [ToolErrorMiddleware(on_error=lambda exc, request: f"Error: {type(exc).__name__}: {exc}"),
                             ModelCallLimitMiddleware(run_limit=run_limit, exit_behavior="end")]
    return create_agent(model, tools, system_prompt=system_prompt,
                        middleware=middleware + ([TextCallMiddleware()] if text_calls else []))


def run_create_agent(task: str, model: BaseChatModel, tools: list[BaseTool], *, text_calls: bool = False,
                     **options: Any) -> RunResult:
    """LangChain's create_agent with tool errors returned to the model and a 10-call limit."""
    agent = agent_for(model, tools, system_prompt=SYSTEM, text_calls=text_calls)

    def loop(config: dict[str, Any]) -> tuple[str | None, str, str]:
        out = agent.invoke({"messages": [HumanMessage(content=task)]}, config)
        last = out["messages"][-1]
        if isinstance(last, AIMessage) and "limit" in str(last.content).lower() and "exceeded" in str(last.content).lower():
            return None, "limit", str(last.content)[:200]
        return (str(last.content) if isinstance(last, AIMessage) else None), "answer", ""

    return _measure(loop, model)


def run_create_agent_text_calls(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
    """create_agent, with calls the model writes as JSON text read as tool calls (the fair baseline)."""
    return run_create_agent(task, model, tools, text_calls=True)


def run_bare_loop(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
    """Seed 000's SimpleAgent, as written there (with the tools listed in its prompt)."""
    by_name = {t.name: t for t in tools}
    system = ((SYSTEM + "\n" if SYSTEM else "") + "Reply with one JSON object only: {\"tool\": \"name\", \"args\": {...}} or "
              "{\"final_answer\": \"...\"}.\nTools: " + "; ".join(f"{t.name}: {t.description}" for t in tools))

    def loop(config: dict[str, Any]) -> tuple[str | None, str, str]:
        messages: deque[Any] = deque(maxlen=6)
        messages.append(SystemMessage(content=system))
        messages.append(HumanMessage(content=task))
        for _ in range(10):
            text = model.invoke(list(messages), config).content
            parsed = _parse_with_retry(model, str(text), config)
            if parsed is None:
                return "抱歉，我无法理解你的请求，请重新表述。", "answer", "parse failed 3 times"
            if "final_answer" in parsed:
                return str(parsed["final_answer"]), "answer", ""
            name, args = parsed.get("tool"), parsed.get("args", {})
            messages.append(AIMessage(content=json.dumps(parsed, ensure_ascii=False)))
            if name not in by_name:
                messages.append(HumanMessage(content=f"错误：工具 {name} 不存在"))
                continue
            try:
                messages.append(HumanMessage(content=f"观察结果: {by_name[name].invoke(args)}"))
            except Exception as exc:
                messages.append(HumanMessage(content=f"工具执行异常: {exc}"))
        return None, "limit", "max_iter reached"

    return _measure(loop, model)


def _parse_with_retry(model: BaseChatModel, text: str, config: dict[str, Any]) -> dict[str, Any] | None:
    for attempt in range(3):
        try:
            return json.loads(re.sub(r"```json|```", "", text).strip())  # type: ignore[no-any-return]
        except json.JSONDecodeError:
            if attempt < 2:
                retry = "你的上次输出不是合法JSON，请重新输出，只包含JSON对象。"
                text = str(model.invoke([HumanMessage(content=retry), HumanMessage(content=text)], config).content)
    return None


SMALL_MODEL_RULES = small_model()
"""The rules of the small-model profile (:mod:`reinloop.protocols.profiles.small_model`): one tool-free call for the
answer when a run is stuck, the next-step question, a repeated failure asked for again with sampling, and a
call written as text run as that call (BENCHMARKS.md)."""


def _with_rules(protocol: str, **more: Any) -> Callable[..., RunResult]:
    def run(task: str, model: BaseChatModel, tools: list[BaseTool], **options: Any) -> RunResult:
        return run_reinloop(task, model, tools, protocol=protocol, answers=SMALL_MODEL_RULES, **more, **options)

    run.__doc__ = f"reinloop with protocol={protocol!r}{', compact tools' if more else ''} and the small-model answer rules."
    return run


CONTESTANTS: dict[str, Callable[..., RunResult]] = {
    "reinloop": run_reinloop,
    "reinloop_compact": run_reinloop_compact,
    "create_agent": run_create_agent,
    "create_agent_text_calls": run_create_agent_text_calls,
    "bare_loop": run_bare_loop,
    "reinloop_json": _with_protocol("json"),
    "reinloop_json_strict": _with_protocol("json_strict"),
    "reinloop_react": _with_protocol("react"),
    "reinloop_auto": _with_protocol("auto"),
    "reinloop_ruled": _with_rules("tool_calling"),
    "reinloop_json_ruled": _with_rules("json"),
    "reinloop_compact_ruled": _with_rules("json", tool_detail="compact"),
}
"""Every contestant by name; ``options`` are reinloop's ``build_graph`` keywords (the others ignore them)."""

SIMULATED_DEFAULT = ("reinloop", "reinloop_compact", "create_agent", "bare_loop")
"""What the simulated eval runs by default (SimulatedModel speeds up no protocol but these)."""

REAL_DEFAULT = ("reinloop", "reinloop_json", "reinloop_react", "reinloop_auto", "reinloop_compact", "create_agent")
"""What ``--real`` runs by default: reinloop in every protocol, compact tools, and create_agent."""
