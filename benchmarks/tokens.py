"""Prompt tokens and dollars per task: reinloop's memory vs the full history ``create_agent`` replays.

Both agents follow the same scripted trajectory — N tool calls that each
return a 1 KB observation (217 tokens, shown whole by both), then a final answer — with the same system prompt,
tools and task. Everything sent is counted with the same exact o200k counter:
every prompt's messages, the tool schemas sent with every call, and (for
reinloop) every summarizer call. Run it offline:

    python benchmarks/tokens.py

The model sits behind :class:`reinloop.models.caching.CachingChatModel`, a provider's
prompt cache with OpenAI's rules, priced as ``gpt-5-mini`` by genai-prices
($0.25 / M fresh input, $0.025 / M cached input, $2 / M output): the cost
columns say what the tokens cost once the cache has served what it can, and
the hit rate is the share of input tokens read from the cache. reinloop's cost
is the run's own ``counters["cost_usd"]``, checked against the wrapper's record.

The scripted summarizer (``reinloop.testing.facts_summary``) keeps every
sentence with a number, so it writes longer summaries than the one or two
sentences a real model is asked for: the summary costs here are on the high side.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from reinloop import Limits, Memory, build_graph
from reinloop.models.caching import CachingChatModel
from reinloop.models.pricing import library_price
from reinloop.protocols.memory import active_counter
from reinloop.protocols.memory.prompt import system_message
from reinloop.protocols.memory.summary import SUMMARIZER_TAG
from reinloop.protocols.memory.tokens import count_message_tokens, count_tool_schemas
from reinloop.testing import ScriptedChatModel, tool_call

FILLER = (
    "The appendix repeats the methodology: figures are audited, rounded, and reported in the currency "
    "of the region, and any restatement is flagged in the notes that follow the main table. "
)


def page(number: int) -> str:
    """A deterministic 1 KB page with two facts in it."""
    facts = (f"Page {number} of the annual report. Region {number} sold {number * 37 + 11} units "
             f"at an average price of {number * 3 + 0.5} dollars. ")
    text = facts + FILLER * 8
    return text[:1024]


@tool
def read_page(number: int) -> str:
    """Read one page of the annual report."""
    return page(number)


def script(steps: int) -> list[Any]:
    """The model's replies: ``steps`` page reads, then the answer."""
    return [[tool_call("read_page", {"number": i}, id=f"call_{i}")] for i in range(1, steps + 1)] + ["done"]


def sent(prompts: Sequence[Sequence[BaseMessage]], schema_tokens: int) -> int:
    """Tokens of every prompt, plus the tool schemas sent with each."""
    counter = active_counter()
    return sum(count_message_tokens(p, counter) + schema_tokens for p in prompts)


PRICE_AS = "gpt-5-mini"


def dollars(model: CachingChatModel) -> float:
    """What every call through ``model`` cost, cached input at its price."""
    return sum(library_price(PRICE_AS, i, c, o) or 0.0 for i, c, o in model.calls)


class TaggedCache(CachingChatModel):
    """The cache, noting which calls were the summarizer's (by their tag), to split the dollars."""

    _summarizer: list[bool] = PrivateAttr(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self._summarizer.append(SUMMARIZER_TAG in (run_manager.tags if run_manager is not None else []))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def split(self) -> dict[str, float]:
        """Dollars of fresh input, cached input and output, for the agent's calls and the summarizer's."""
        out: dict[str, float] = {}
        for (prompt, cached, written), summarizer in zip(self.calls, self._summarizer, strict=True):
            who = "summarizer" if summarizer else "agent"
            for part, usd in (("fresh", library_price(PRICE_AS, prompt - cached, 0, 0) or 0.0),
                              ("cached", (library_price(PRICE_AS, cached, cached, 0) or 0.0)),
                              ("output", library_price(PRICE_AS, 0, 0, written) or 0.0)):
                out[f"{who} {part}"] = out.get(f"{who} {part}", 0.0) + usd
        return out


def run_reinloop(steps: int, memory: Memory) -> dict[str, Any]:
    """Run the trajectory through reinloop; tokens sent, summarizer calls, dollars and cache hit rate."""
    inner = ScriptedChatModel(replies=script(steps))
    model = TaggedCache(inner=inner, price_as=PRICE_AS)
    graph = build_graph(model, [read_page], memory=memory, limits=Limits(max_steps=steps + 1, max_seconds=None,
                                                                         max_observation_chars=2000))
    out = graph.invoke({"task": TASK})
    assert out["status"] == "done", out.get("break_message")
    schemas = count_tool_schemas(inner.bound_tools, active_counter())
    agent = sent(inner.prompts, schemas)
    summaries = out["counters"]["prompt_tokens"] - agent  # as reported: a summary asked in the agent's prompt has its tools
    recorded = sum(s["prompt_parts"]["total"] for s in out["scratchpad"])
    assert recorded == agent, (recorded, agent)  # the per-step records count what was sent
    usd = out["counters"]["cost_usd"]
    assert abs(usd - dollars(model)) < 1e-9, (usd, dollars(model))  # the run priced every call it made
    return {"tokens": agent + summaries, "summary_tokens": summaries, "summary_calls": len(inner.summary_prompts),
            "usd": usd, "hit_rate": model.hit_rate(), "split": model.split()}


def run_create_agent(steps: int, system: str) -> dict[str, Any]:
    """Run the trajectory through ``langchain.agents.create_agent``; tokens sent, dollars, cache hit rate."""
    inner = ScriptedChatModel(replies=script(steps))
    model = TaggedCache(inner=inner, price_as=PRICE_AS)
    agent = create_agent(model, [read_page], system_prompt=system)
    agent.invoke({"messages": [HumanMessage(content=f"Task: {TASK}")]})
    schemas = count_tool_schemas([convert_to_openai_tool(read_page)], active_counter())
    return {"tokens": sent(inner.prompts, schemas), "usd": dollars(model), "hit_rate": model.hit_rate(),
            "split": model.split()}


TASK = "Read the report page by page and tell me which region sold the most units."

CONFIGS = {
    "default": Memory(),
    "summary_batch=3": Memory(summary_batch=3),  # the default until folds came by size
    "no summary": Memory(summarize=False),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="5,15,30,60", help="comma-separated task lengths [5,15,30,60]")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--write", action="store_true", help="also write both tables to BENCHMARKS.md")
    args = parser.parse_args(argv)
    probe = build_graph(ScriptedChatModel(), [read_page]).reinloop_context
    system = str(system_message(probe).content)
    print(f"counter: {active_counter()}; observations: {len(page(1))} chars; memory default: {Memory().describe()}")
    rows = []
    for steps in map(int, args.steps.split(",")):
        full = run_create_agent(steps, system)
        results = {name: run_reinloop(steps, memory) for name, memory in CONFIGS.items()}
        rows.append((steps, full, results))
        if args.json:
            print(json.dumps({"steps": steps, "create_agent": full, **results}))
    if not args.json:
        text = token_table(rows) + "\n\n" + cost_table(rows) + "\n\n" + split_table(rows)
        print(text)
        if args.write:
            from benchmarks.eval.__main__ import write_markdown

            command = "python benchmarks/tokens.py " + " ".join(a for a in (argv if argv is not None else sys.argv[1:])
                                                                if a != "--write")
            write_markdown("Long runs: tokens and dollars (`benchmarks/tokens.py`)",
                           f"`{command.strip()}` — {datetime.date.today()}, model: ScriptedChatModel behind "
                           f"CachingChatModel (OpenAI's cache rules), priced as {PRICE_AS}\n\n{text}\n")
    return 0


def token_table(rows: list[tuple[int, dict[str, Any], dict[str, dict[str, Any]]]]) -> str:
    """Prompt tokens sent per task, and the ratio to create_agent."""
    header = "| steps | create_agent | " + " | ".join(f"{name} | ratio" for name in CONFIGS) + " | summarizer calls (tokens) |"
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for steps, full, results in rows:
        cells = " | ".join(f"{r['tokens']:,} | {r['tokens'] / full['tokens']:.2f}x" for r in results.values())
        d = results["default"]
        lines.append(f"| {steps} | {full['tokens']:,} | {cells} | {d['summary_calls']} ({d['summary_tokens']:,}) |")
    return "\n".join(lines)


def cost_table(rows: list[tuple[int, dict[str, Any], dict[str, dict[str, Any]]]]) -> str:
    """Dollars per task behind the prompt cache, the ratio to create_agent, and each one's cache hit rate."""
    header = ("| steps | create_agent $ (hit rate) | "
              + " | ".join(f"{name} $ (hit rate) | ratio" for name in CONFIGS) + " |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for steps, full, results in rows:
        cells = " | ".join(f"{r['usd']:.5f} ({r['hit_rate']:.0%}) | {r['usd'] / full['usd']:.2f}x"
                           for r in results.values())
        lines.append(f"| {steps} | {full['usd']:.5f} ({full['hit_rate']:.0%}) | {cells} |")
    return "\n".join(lines)


def split_table(rows: list[tuple[int, dict[str, Any], dict[str, dict[str, Any]]]]) -> str:
    """Where the dollars go: fresh input, cached input and output of the agent's calls and the summarizer's."""
    parts = ["agent fresh", "agent cached", "agent output", "summarizer fresh", "summarizer cached", "summarizer output"]
    header = "| steps | contestant | " + " | ".join(f"{p} $" for p in parts) + " |"
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for steps, full, results in rows:
        for name, r in [("create_agent", full), ("default", results["default"])]:
            cells = " | ".join(f"{r['split'].get(p, 0.0):.5f}" for p in parts)
            lines.append(f"| {steps} | {name} | {cells} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
