"""A simulated, flaky model: it knows each task's plan and makes a model's usual mistakes.

:class:`SimulatedModel` is a stand-in for an unreliable LLM, used by the
benchmark (``python -m benchmarks.eval``) to compare agent loops on equal
terms. It is honest about what it is: it does not understand anything. For
each call it

1. finds the task in its prompt (if the task fell out of the prompt, it cannot
   know what to do and answers so);
2. reads its own earlier calls and their observations *from the prompt* to see
   how far the plan has got (the newest successful plan step it can see);
3. with probability ``fault_rate`` makes one mistake, chosen with a seeded RNG
   among: malformed output, missing or wrong-typed arguments, an unknown tool
   name, repeating its previous call, and ignoring a tool error (moving on as
   if the failed call had worked);
4. otherwise issues the next plan step, or, when the plan is done, answers:
   correctly only if every fact the answer needs is in the prompt it was sent.

It speaks native tool calls when tools are bound (``bind_tools``), and JSON
text (``{"tool", "args"}`` / ``{"final_answer"}``) otherwise. Asked to
summarize (the last message asks for a summary), it keeps every line that
holds a number, as seed 002's summary prompt asks of a real model. It counts
the prompt tokens of every call it receives (tool schemas included) with
reinloop's estimator, so every loop is measured the same way.
"""

from __future__ import annotations

import json
import random
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from .local import LocalChatModel
from ..protocols.memory.summary import RESULT_ABOVE, SUMMARIZER_TAG, with_results
from ..protocols.memory.tokens import count_message_tokens, estimate_tokens

FAULTS: tuple[str, ...] = ("malformed", "bad_args", "unknown_tool", "repeat", "ignore_error")
"""The mistakes a :class:`SimulatedModel` can make."""

_ERROR = re.compile(r"^\s*(error|错误|工具执行异常|tool execution error)", re.I)
_SUMMARY_REQUEST = re.compile(r"summari[sz]e|summary of|总结|摘要", re.I)


@dataclass(frozen=True)
class PlanStep:
    """One tool call of a correct plan."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Plan:
    """How to solve a task, and what the answer needs to have seen."""

    steps: tuple[PlanStep, ...]
    answer: str
    facts: tuple[str, ...] = ()
    """Texts that must be in the prompt for the model to give the right answer."""


@dataclass
class CallRecord:
    """What one call to the simulated model cost."""

    prompt_tokens: int
    seconds: float
    fault: str | None = None


@dataclass
class _Seen:
    """What the prompt shows of the model's earlier work."""

    progress: int = 0  # index of the next plan step after the newest visible success
    last_call: dict[str, Any] | None = None
    last_failed: bool = False
    text: str = ""
    pairs: list[tuple[dict[str, Any], str]] = field(default_factory=list)


class SimulatedModel(LocalChatModel):
    """A plan-following chat model that injects seeded faults (see the module docstring)."""

    plans: dict[str, Plan]
    """Plans keyed by the exact task text."""
    fault_rate: float = 0.0
    faults: tuple[str, ...] = FAULTS
    seed: int = 0

    _rng: random.Random = PrivateAttr()
    _records: list[CallRecord] = PrivateAttr(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        self._rng = random.Random(self.seed)
        unknown = set(self.faults) - set(FAULTS)
        if unknown or not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError(f"faults must be among {FAULTS} and fault_rate in [0, 1]; got {self.faults}, {self.fault_rate}")

    @property
    def _llm_type(self) -> str:
        return "reinloop-simulated"

    @property
    def records(self) -> list[CallRecord]:
        """One record per call received."""
        return self._records

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        """Bind tools: the model then answers with native tool calls."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def reply(self, messages: list[BaseMessage], tags: frozenset[str], options: dict[str, Any]) -> AIMessage:
        """A summary to a summarizer call; else the plan's next step, or a seeded fault; recorded with its cost."""
        start = time.perf_counter()
        tools = options.get("tools") or []
        tokens = count_message_tokens(messages) + sum(estimate_tokens(json.dumps(t, ensure_ascii=False)) for t in tools)
        if SUMMARIZER_TAG in tags or (not tools and _asks_for_summary(messages)):
            message, fault = AIMessage(content=summarize(_request_of(messages))), None
        else:
            message, fault = self._reply(messages, native=bool(tools))
        message.usage_metadata = {"input_tokens": tokens, "output_tokens": estimate_tokens(_text(message)),
                                  "total_tokens": tokens + estimate_tokens(_text(message))}
        self._records.append(CallRecord(tokens, time.perf_counter() - start, fault))
        return message

    # --- deciding -------------------------------------------------------

    def _reply(self, messages: list[BaseMessage], native: bool) -> tuple[AIMessage, str | None]:
        task = next((t for t in self.plans if any(t in str(m.content) for m in messages)), None)
        if task is None:
            return _answer("I cannot see the task in my prompt.", native), None
        plan = self.plans[task]
        seen = read_progress(messages, plan)
        fault = self._roll(seen)
        if fault is not None:
            return self._faulty(fault, plan, seen, native), fault
        step = seen.progress
        if step >= len(plan.steps):
            right = all(f in seen.text for f in plan.facts)
            return _answer(plan.answer if right else "I no longer have the facts to answer.", native), None
        return _call(plan.steps[step], native), None

    def _roll(self, seen: _Seen) -> str | None:
        if self._rng.random() >= self.fault_rate:
            return None
        usable = [f for f in self.faults
                  if (f != "repeat" or seen.last_call) and (f != "ignore_error" or seen.last_failed)]
        return self._rng.choice(usable) if usable else None

    def _faulty(self, fault: str, plan: Plan, seen: _Seen, native: bool) -> AIMessage:
        step = plan.steps[min(seen.progress, len(plan.steps) - 1)]
        if fault == "malformed":
            if native:
                return AIMessage(content="") if self._rng.random() < 0.5 else AIMessage(
                    content="", invalid_tool_calls=[{"name": step.tool, "args": '{"' + next(iter(step.args), "x") + '": ',
                                                     "id": _id(), "error": "JSONDecodeError", "type": "invalid_tool_call"}])
            return AIMessage(content='Sure! {"tool": "' + step.tool + '", "args": {"')
        if fault == "bad_args":
            args = dict(step.args)
            key = next(iter(args), None)
            if key is not None and self._rng.random() < 0.5:
                args.pop(key)
            elif key is not None:
                args[key] = [args[key]]
            return _call(PlanStep(step.tool, args), native)
        if fault == "unknown_tool":
            return _call(PlanStep("web_search", {"query": str(next(iter(step.args.values()), ""))}), native)
        if fault == "repeat" and seen.last_call is not None:
            return _call(PlanStep(seen.last_call["tool"], seen.last_call["args"]), native)
        # ignore_error: carry on as if the failed call (the step at `progress`) had worked
        following = seen.progress + 1
        if following >= len(plan.steps):
            right = all(f in seen.text for f in plan.facts)
            return _answer(plan.answer if right else "I no longer have the facts to answer.", native)
        return _call(plan.steps[following], native)


def read_progress(messages: Sequence[BaseMessage], plan: Plan) -> _Seen:
    """What the prompt shows of the plan's progress."""
    pairs = _calls_and_observations(messages)
    seen = _Seen(text="\n".join(str(m.content) for m in messages), pairs=pairs)
    for tool, args, status in _DONE.findall(seen.text):  # steps the summary says were done
        index = _plan_index(plan, {"tool": tool, "args": _loads(args)})
        if index is not None and status == "ok":
            seen.progress = max(seen.progress, index + 1)
    for call, observation in pairs:
        index = _plan_index(plan, call)
        failed = bool(_ERROR.search(observation))
        if index is not None and not failed:
            seen.progress = max(seen.progress, index + 1)
        seen.last_call, seen.last_failed = call, failed
    return seen


def _calls_and_observations(messages: Sequence[BaseMessage]) -> list[tuple[dict[str, Any], str]]:
    results = {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}
    pairs: list[tuple[dict[str, Any], str]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, AIMessage):
            continue
        if m.tool_calls:
            pairs += [({"tool": c["name"], "args": c["args"]}, results.get(c.get("id") or "", "")) for c in m.tool_calls]
            continue
        call = _json_call(str(m.content))
        if call is not None:
            following = str(messages[i + 1].content) if i + 1 < len(messages) else ""
            pairs.append((call, re.sub(r"^\s*(Observation|观察结果)\s*[:：]\s*", "", following)))
    return pairs


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _json_call(text: str) -> dict[str, Any] | None:
    start = text.find("{")
    try:
        value = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("tool"), str):
        return {"tool": value["tool"], "args": value.get("args") or {}}
    return None


def _plan_index(plan: Plan, call: dict[str, Any]) -> int | None:
    for i, step in enumerate(plan.steps):
        if step.tool == call["tool"] and step.args == call["args"]:
            return i
    return None


def _asks_for_summary(messages: Sequence[BaseMessage]) -> bool:
    """A summarization request: its instructions (first or last message) ask for a summary."""
    ends = [str(messages[0].content), str(messages[-1].content)] if messages else []
    return any(_SUMMARY_REQUEST.search(text[:400]) for text in ends)


def _request_of(messages: Sequence[BaseMessage]) -> str:
    """A summarization request's text; asked at the end of the agent's prompt, with the results it holds."""
    if messages and RESULT_ABOVE in str(messages[-1].content):
        return with_results(messages)
    return _text_of(messages)


def _text_of(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages[1:] or messages)


_CALLED = re.compile(r"called (\S+) (\{.*?\}) -> (.*?)(?=\n\s*(?:called |Step \d|final answer|unusable)|\Z)", re.S)
_DONE = re.compile(r"done (\S+) (\{.*?\}) (ok|failed)\b")  # a failed note ends its match too


def summarize(request: str) -> str:
    """Notes on the steps in a summarization request: each call, whether it worked, its numbers.

    Parses reinloop's summarizer prompt (``called TOOL {args} -> observation``)
    and writes each successful call as ``done TOOL {args} ok``, followed by the
    observation's lines that hold a number, as seed 002 asks of a real model.
    """
    notes = []
    for tool, args, observation in _CALLED.findall(request):
        status = "failed" if _ERROR.search(observation) else "ok"
        numbers = [" ".join(line.split()) for line in observation.splitlines() if re.search(r"\d", line)]
        notes.append(f"done {tool} {args} {status}" + (f": {'; '.join(numbers)[:400]}" if status == "ok" else ""))
    return " | ".join(notes) or "Nothing with numbers happened."


def _id() -> str:
    return f"call_{uuid.uuid4().hex[:10]}"


def _call(step: PlanStep, native: bool) -> AIMessage:
    if native:
        return AIMessage(content="", tool_calls=[{"name": step.tool, "args": dict(step.args), "id": _id(), "type": "tool_call"}])
    return AIMessage(content=json.dumps({"thought": "next step of my plan", "tool": step.tool, "args": step.args},
                                        ensure_ascii=False))


def _answer(text: str, native: bool) -> AIMessage:
    return AIMessage(content=text if native else json.dumps({"final_answer": text}, ensure_ascii=False))


def _text(message: AIMessage) -> str:
    return str(message.content) + json.dumps([c["args"] for c in message.tool_calls], ensure_ascii=False)
