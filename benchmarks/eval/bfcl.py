"""BFCL as an eval tier: ``python -m benchmarks.eval --bfcl simple,multiple,parallel,multi_turn_base --n N --seed S``.

The Berkeley Function Calling Leaderboard's own data and checkers, from the pinned ``bfcl-eval`` (installed
without its dependencies: see :data:`INSTALL`), unmodified, run on the eval's contestants:

- **Items**: a seeded sample of N items per category (``random.Random(f"{seed}:{category}")``, kept in the
  dataset's order), the same for every contestant and every run with that seed. ``simple`` is BFCL's
  ``simple_python``; the other AST categories and ``multi_turn_long_context`` work too (:data:`AST_CATEGORIES`,
  :data:`MULTI_TURN_CATEGORIES`).
- **Tools**: each item's function docs, as BFCL loads them (with its "Python 3 syntax" note), become LangChain
  tools through BFCL's own ``convert_to_tool`` in its OpenAI function-calling style (``math.factorial`` is shown
  as ``math_factorial``, BFCL's types become JSON-schema types): every contestant sees the schemas BFCL's
  OpenAI function-calling handler sends. The names are mapped back by the checker, with the registry entry of
  such a model (:data:`CHECKER_MODEL`, ``underscore_to_dot``).
- **Prompt**: each contestant's own default; an item's system message (some live items have one) is the
  system prompt; nothing eval-specific. reinloop's protocol instructions are part of reinloop; ``create_agent``
  sends the user's message and the tools, as BFCL's function-calling handler does.

What is checked, and why that is fair:

- **Single-turn categories** (BFCL's ``ast_checker``): BFCL scores one request, the calls of the model's
  first reply. So every contestant gets exactly one model turn (reinloop: ``Limits(max_steps=1)``;
  ``create_agent``: ``run_limit=1``), and what is checked is the calls it *executes* after that turn, as the
  tool bodies record them: for reinloop the step-1 calls that passed parse and validate (a call validate
  refuses is never run, so it is no answer); for ``create_agent`` every native call of its first reply; for
  ``create_agent_text_calls`` also the calls its middleware read from JSON text. No contestant gets a second
  reply: a loop's repair (asking again after an unreadable or refused reply) helps on a task, but BFCL scores
  the first reply, and a repair would have to be charged its extra request. Repairs count in the multi-turn
  category and on the eval's own tasks. The tool bodies return a neutral ``{"status": "ok"}``: BFCL checks
  calls, not answers, and no contestant reads a result before its calls are checked. The one-step limit
  changes nothing in reinloop's first prompt (a test checks it). reinloop's JSON and ReAct protocols ask
  for one call a reply, so on ``parallel`` their first reply carries one call at most: BFCL counts that
  wrong, as it would for any model.
- **Multi-turn categories** (BFCL's ``multi_turn_checker``): run as BFCL runs them. Each user turn in turn
  on one conversation (reinloop: one run per turn on one thread; ``create_agent``: the message history),
  each turn within the contestant's own limits (10 model calls a turn for both; BFCL allows 20). The tools run
  on BFCL's own backends (its file system, messaging, trading ... classes, through its
  ``execute_multi_turn_func_call``), so the model sees real results; the calls each turn executed are then
  replayed by the checker on fresh backends beside the ground truth, comparing states and results.

Reported per contestant and category: correct/N with a 95% Wilson interval, model requests, prompt plus
completion tokens and seconds per item.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import os
import random
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool

from reinloop import build_graph
from reinloop.runs.limits import Limits

from .contestants import RunResult, _measure, agent_for

BFCL_VERSION = "2026.3.23"
INSTALL = f"pip install --no-deps bfcl-eval=={BFCL_VERSION} && pip install -e '.[bench]'"
"""bfcl-eval's own dependencies (torch through sentence-transformers, numpy==1.26.4, every provider's SDK) are
not needed for its data and checkers: the ``bench`` extra holds what those import."""
ALIASES = {"simple": "simple_python"}
AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple",
                  "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_long_context")
CHECKER_MODEL = "gpt-4o-2024-11-20-FC"
"""A BFCL model entry in OpenAI's function-calling style: its ``underscore_to_dot`` is what the checker reads."""
REINLOOP = {"reinloop": "tool_calling", "reinloop_auto": "auto", "reinloop_json": "json", "reinloop_react": "react",
            "reinloop_json_strict": "json_strict"}
CONTESTANTS = (*REINLOOP, "create_agent", "create_agent_text_calls")
"""What ``--bfcl`` runs by default, and all it can run."""
NEUTRAL = '{"status": "ok"}'
TURN_LIMIT = 10
"""Model calls a multi-turn contestant may make per user turn (reinloop's default ``max_steps``)."""
Z95 = 1.959964


class BfclUnavailable(RuntimeError):
    """bfcl-eval (or what its data and checkers import) is missing; the message says how to install it."""


@functools.cache
def bfcl() -> SimpleNamespace:
    """The parts of bfcl-eval this tier uses, imported once; :class:`BfclUnavailable` when it is missing.

    bfcl-eval makes ``result/``, ``score/`` and ``.file_locks/`` folders under ``BFCL_PROJECT_ROOT`` when
    imported (by default beside its own package): they go to a temporary folder instead.
    """
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(Path(tempfile.gettempdir()) / "reinloop-bfcl"))
    try:
        from bfcl_eval.constants.enums import Language, ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
        from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool
        from bfcl_eval.utils import is_function_calling_format_output, load_dataset_entry, load_ground_truth_entry
        _model_registry()
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    except ImportError as exc:
        raise BfclUnavailable(f"the BFCL tier needs bfcl-eval=={BFCL_VERSION} ({exc}): {INSTALL}") from None
    return SimpleNamespace(
        Language=Language, ModelStyle=ModelStyle, GORILLA_TO_OPENAPI=GORILLA_TO_OPENAPI, ast_checker=ast_checker,
        multi_turn_checker=multi_turn_checker, multi_turn_utils=multi_turn_utils,
        execute_multi_turn_func_call=multi_turn_utils.execute_multi_turn_func_call,
        convert_to_function_call=convert_to_function_call, convert_to_tool=convert_to_tool,
        is_function_calling_format_output=is_function_calling_format_output,
        load_dataset_entry=load_dataset_entry, load_ground_truth_entry=load_ground_truth_entry)


def _model_registry() -> None:
    """Let the AST checker import: its module imports BFCL's registry of models, and so every provider's SDK.

    The checker reads one thing from it, ``underscore_to_dot`` of the model it is told about; when the SDKs
    are not installed, a registry holding :data:`CHECKER_MODEL`'s entry (``underscore_to_dot=True``, as in
    BFCL's) stands in for it. The checker's code is BFCL's, unmodified.
    """
    try:
        import bfcl_eval.constants.model_config  # noqa: F401
    except ImportError:
        registry = ModuleType("bfcl_eval.constants.model_config")
        entry = SimpleNamespace(underscore_to_dot=True)
        registry.MODEL_CONFIG_MAPPING = {CHECKER_MODEL: entry}  # type: ignore[attr-defined]
        sys.modules[registry.__name__] = registry


def version() -> str:
    """The installed bfcl-eval's version."""
    from importlib import metadata

    return metadata.version("bfcl-eval")


@dataclass(eq=False)
class Item:
    """One BFCL test entry and its ground truth."""

    id: str
    category: str
    entry: dict[str, Any]
    answer: list[Any]

    @property
    def multi_turn(self) -> bool:
        """Whether the item is a conversation checked by BFCL's multi-turn checker."""
        return self.category in MULTI_TURN_CATEGORIES

    @property
    def turns(self) -> list[list[dict[str, str]]]:
        """The messages of each user turn."""
        return list(self.entry["question"])


def categories(spec: str) -> list[str]:
    """``--bfcl``'s comma-separated categories as BFCL names; ValueError names the ones it does not know."""
    names = [ALIASES.get(c.strip(), c.strip()) for c in spec.split(",") if c.strip()]
    unknown = [n for n in names if n not in AST_CATEGORIES + MULTI_TURN_CATEGORIES]
    if unknown or not names:
        named = ", ".join(unknown) if unknown else repr(spec)
        raise ValueError(f"--bfcl: unknown category {named}; choose from "
                         f"{', '.join([*ALIASES, *AST_CATEGORIES, *MULTI_TURN_CATEGORIES])}")
    return list(dict.fromkeys(names))


def sample(names: Sequence[str], n: int, seed: int) -> list[Item]:
    """``n`` items of each category, drawn with ``seed`` (the same draw for the same seed), in dataset order."""
    items = []
    for category in (ALIASES.get(name, name) for name in names):
        everything = all_items(category)
        chosen = random.Random(f"{seed}:{category}").sample(range(len(everything)), min(n, len(everything)))
        items += [everything[i] for i in sorted(chosen)]
    return items


def all_items(category: str) -> list[Item]:
    """Every item of a BFCL category, with its ground truth, in the dataset's order."""
    b = bfcl()
    answers = {a["id"]: a["ground_truth"] for a in b.load_ground_truth_entry(category)}
    return [Item(e["id"], category, e, answers[e["id"]]) for e in b.load_dataset_entry(category)]


class Recorder:
    """The calls a contestant's tools ran, per user turn, in the order they ran.

    Single-turn tools answer :data:`NEUTRAL`; multi-turn tools run the call on BFCL's backends (under
    ``name``, so that runs never share a backend) and answer its result.
    """

    def __init__(self, item: Item) -> None:
        self.item, self.name = item, f"bfcl_{uuid.uuid4().hex[:12]}"
        self.turns: list[list[dict[str, dict[str, Any]]]] = [[]]
        self._lock = threading.Lock()  # parallel calls run on worker threads; a backend is not thread-safe

    def next_turn(self) -> None:
        """Calls from now on belong to the next user turn."""
        self.turns.append([])

    def call(self, tool: str, args: dict[str, Any]) -> str:
        """Record one call and answer it."""
        with self._lock:
            self.turns[-1].append({tool: copy.deepcopy(args)})
            if not self.item.multi_turn:
                return NEUTRAL
            b, entry = bfcl(), self.item.entry
            results, _ = b.execute_multi_turn_func_call(
                b.convert_to_function_call([{tool: args}]), entry["initial_config"], entry["involved_classes"],
                self.name, self.item.id, long_context="long_context" in self.item.category)
            return str(results[0])

    def forget(self) -> None:
        """Drop the backends BFCL keeps for this run (in its module's globals, by run name)."""
        kept = vars(bfcl().multi_turn_utils)
        for key in [k for k in kept if k.startswith(self.name)]:
            del kept[key]


def tools_for(item: Item, recorder: Recorder) -> list[BaseTool]:
    """The item's functions as LangChain tools, with the schemas BFCL's OpenAI function-calling handler sends."""
    b = bfcl()
    schemas = b.convert_to_tool(item.entry["function"], b.GORILLA_TO_OPENAPI, b.ModelStyle.OPENAI_COMPLETIONS)
    return [_tool(s["function"], recorder) for s in schemas]


def _tool(function: dict[str, Any], recorder: Recorder) -> BaseTool:
    name = function["name"]

    def body(**args: Any) -> str:
        return recorder.call(name, args)

    return StructuredTool.from_function(body, name=name, description=function.get("description", ""),
                                        args_schema=function["parameters"], infer_schema=False)


def system_prompt(item: Item) -> str | None:
    """The item's own system message, if it has one (some live items do)."""
    system = [m["content"] for m in item.turns[0] if m.get("role") == "system"]
    return "\n\n".join(system) or None


def user_text(turn: list[dict[str, str]]) -> str:
    """A turn's user messages as one task."""
    return "\n\n".join(m["content"] for m in turn if m.get("role") == "user")


Loop = Callable[[dict[str, Any]], tuple[str | None, str, str]]


def reinloop_loop(protocol: str, item: Item, model: BaseChatModel, tools: list[BaseTool], recorder: Recorder,
                  **options: Any) -> Loop:
    """reinloop with ``protocol``: one step for a single-turn item, one run per user turn on one thread else."""
    from langgraph.checkpoint.memory import InMemorySaver

    limits = options.pop("limits", None) or Limits()
    if not item.multi_turn:
        limits = dataclasses.replace(limits, max_steps=1)
    graph = build_graph(model, tools, protocol=protocol, system_prompt=system_prompt(item), limits=limits,
                        checkpointer=InMemorySaver(), **options)

    def loop(config: dict[str, Any]) -> tuple[str | None, str, str]:
        config = {**config, "configurable": {"thread_id": recorder.name}}
        for i, turn in enumerate(item.turns):
            if i:
                recorder.next_turn()
            out = graph.invoke({"task": user_text(turn)}, config)
        detail = f" (refused: {refused})" if (refused := _refusals(out)) else ""
        if out["status"] == "done":
            return out["answer"], "answer", detail[:300]
        return None, "limit", f"{out['break_reason']}: {out['break_message']}{detail}"[:300]

    return loop


def _refusals(out: dict[str, Any]) -> str:
    """Why reinloop ran none of a reply's calls: the problems parse and validate found, or the parse error."""
    steps = out.get("scratchpad") or []
    problems = [str(a["problem"]) for step in steps for a in step.get("actions") or [] if a.get("problem")]
    return "; ".join(problems or [str(step["parse_error"]) for step in steps if step.get("parse_error")])


def create_agent_loop(item: Item, model: BaseChatModel, tools: list[BaseTool], recorder: Recorder, *,
                      text_calls: bool = False) -> Loop:
    """create_agent (:func:`.contestants.agent_for`): one model call for a single-turn item, else the user turns
    in turn on one message history."""
    agent = agent_for(model, tools, system_prompt=system_prompt(item), run_limit=TURN_LIMIT if item.multi_turn else 1,
                      text_calls=text_calls)

    def loop(config: dict[str, Any]) -> tuple[str | None, str, str]:
        messages: list[Any] = []
        for i, turn in enumerate(item.turns):
            if i:
                recorder.next_turn()
            asked = [HumanMessage(content=m["content"]) for m in turn if m.get("role") == "user"]
            messages = agent.invoke({"messages": messages + asked}, config)["messages"]
        last = str(messages[-1].content)
        if "limit" in last.lower() and "exceeded" in last.lower():  # ModelCallLimitMiddleware's closing words
            return None, "limit", last[:200]
        return last, "answer", ""

    return loop


@dataclass
class Outcome:
    """How one contestant did on one item: BFCL's verdict, the calls it checked, and the run's costs."""

    item: str
    category: str
    contestant: str
    correct: bool
    error: str
    calls: list[list[dict[str, Any]]]
    run: RunResult = field(repr=False)


def run_item(name: str, item: Item, model: BaseChatModel, **options: Any) -> Outcome:
    """Contestant ``name`` on ``item``, checked by BFCL."""
    recorder = Recorder(item)
    tools = tools_for(item, recorder)
    if name in REINLOOP:
        loop = reinloop_loop(REINLOOP[name], item, model, tools, recorder, **options)
    elif name in ("create_agent", "create_agent_text_calls"):
        loop = create_agent_loop(item, model, tools, recorder, text_calls=name == "create_agent_text_calls")
    else:
        raise ValueError(f"unknown BFCL contestant {name!r}; choose from {', '.join(CONTESTANTS)}")
    try:
        result = _measure(loop, model)
        correct, error = check(item, recorder)
    finally:
        recorder.forget()
    return Outcome(item.id, item.category, name, correct, error, recorder.turns, result)


def check(item: Item, recorder: Recorder) -> tuple[bool, str]:
    """BFCL's verdict on the calls ``recorder`` holds: (valid, BFCL's error type and message)."""
    b = bfcl()
    if item.multi_turn:
        turns = (recorder.turns + [[] for _ in item.answer])[: len(item.answer)]  # a crashed run's turns are empty
        decoded = [[b.convert_to_function_call([call]) for call in turn] for turn in turns]
        verdict = b.multi_turn_checker(decoded, item.answer, copy.deepcopy(item.entry), item.category,
                                       recorder.name)
        return verdict["valid"], _error(verdict, "error_message")
    calls = recorder.turns[0]
    if not calls:
        return False, "no call: none ran after the first reply (it made none, or they were refused)"
    if not b.is_function_calling_format_output(calls):
        return False, f"ast_decoder:decoder_wrong_output_format: {calls!r:.200}"
    verdict = b.ast_checker(copy.deepcopy(item.entry["function"]), copy.deepcopy(calls), item.answer,
                            b.Language.PYTHON, item.category, CHECKER_MODEL)
    return verdict["valid"], _error(verdict, "error")


def _error(verdict: dict[str, Any], key: str) -> str:
    if verdict["valid"]:
        return ""
    message = verdict.get(key)
    message = "; ".join(map(str, message)) if isinstance(message, list) else str(message)
    return f"{verdict.get('error_type', 'invalid')}: {message}"[:300]


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``correct`` successes in ``n`` (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p, zz = correct / n, z * z
    centre = (p + zz / (2 * n)) / (1 + zz / n)
    half = z * math.sqrt(p * (1 - p) / n + zz / (4 * n * n)) / (1 + zz / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The numbers reported for one contestant on one category (or on all)."""
    n, correct = len(outcomes), sum(o.correct for o in outcomes)
    low, high = wilson(correct, n)
    return {
        "correct": correct, "n": n, "interval_95": [round(low, 4), round(high, 4)],
        "requests_per_item": sum(o.run.iterations for o in outcomes) / max(n, 1),
        "prompt_tokens_per_item": sum(o.run.prompt_tokens for o in outcomes) / max(n, 1),
        "completion_tokens_per_item": sum(o.run.completion_tokens for o in outcomes) / max(n, 1),
        "seconds_per_item": sum(o.run.wall_seconds for o in outcomes) / max(n, 1),
        "crashes": sum(o.run.ending == "crash" for o in outcomes),
    }


def report(outcomes: Sequence[Outcome]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{category: {contestant: numbers}}``, with ``all`` over every category when there are several."""
    names = list(dict.fromkeys(o.category for o in outcomes))
    groups = {c: [o for o in outcomes if o.category == c] for c in names}
    if len(names) > 1:
        groups["all"] = list(outcomes)
    return {c: {name: summarize([o for o in group if o.contestant == name])
                for name in dict.fromkeys(o.contestant for o in group)} for c, group in groups.items()}


def table(numbers: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The report as a Markdown table, one row per category and contestant."""
    lines = ["| category | contestant | correct | 95% interval | requests / item | "
             "prompt + completion tokens / item | seconds / item |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for category, by_name in numbers.items():
        for name, r in by_name.items():
            low, high = r["interval_95"]
            crashes = f" ({r['crashes']} crashed)" if r["crashes"] else ""
            lines.append(f"| {category} | {name} | {r['correct']}/{r['n']}{crashes} | "
                         f"{100 * low:.0f}–{100 * high:.0f}% | "
                         f"{r['requests_per_item']:.1f} | {r['prompt_tokens_per_item']:,.0f} + "
                         f"{r['completion_tokens_per_item']:,.0f} | {r['seconds_per_item']:,.1f} |")
    return "\n".join(lines)


def run_all(items: Sequence[Item], names: Sequence[str], model: BaseChatModel, *, save: str | None = None,
            verbose: bool = False, outcomes: list[Outcome] | None = None, **options: Any) -> list[Outcome]:
    """Every contestant on every item; each outcome appended to ``save`` (JSON lines) as it ends.

    ``outcomes`` (filled as items end) keeps what finished when the run is interrupted.
    """
    outcomes = outcomes if outcomes is not None else []
    for item in items:
        for name in names:
            outcome = run_item(name, item, model, **options)
            outcomes.append(outcome)
            if save:
                with open(save, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record(outcome), ensure_ascii=False, default=str) + "\n")
            if verbose:
                print(f"{item.id:<24} {name:<24} {'ok ' if outcome.correct else 'BAD'} "
                      f"{outcome.run.iterations:>2} calls {outcome.run.wall_seconds:6.1f} s  "
                      f"{json.dumps(outcome.calls, default=str):.80} {outcome.error:.100}", file=sys.stderr, flush=True)
    return outcomes


def record(outcome: Outcome) -> dict[str, Any]:
    """One ``--save`` line."""
    return {**{k: v for k, v in dataclasses.asdict(outcome).items() if k != "run"}, **dataclasses.asdict(outcome.run)}


def is_saved(path: Path) -> bool:
    """Whether a ``--save`` file holds BFCL outcomes (not the eval's own tasks)."""
    with open(path, encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "{}")
    return "item" in json.loads(first)


def load(path: Path) -> list[Outcome]:
    """The outcomes of a ``--save`` file, for the items every contestant in it finished, judged by BFCL again."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = list(dict.fromkeys(r["contestant"] for r in records))
    by_run = {(r["item"], r["contestant"]): r for r in records}
    done = [i for i in dict.fromkeys(r["item"] for r in records) if all((i, n) in by_run for n in names)]
    categories = dict.fromkeys(by_run[i, names[0]]["category"] for i in done)
    items = {item.id: item for category in categories for item in all_items(category)}
    fields = {f.name for f in dataclasses.fields(RunResult)}
    outcomes = []
    for i in done:
        for name in names:
            r, recorder = by_run[i, name], Recorder(items[i])
            recorder.turns = r["calls"]
            try:
                correct, error = check(items[i], recorder)
            finally:
                recorder.forget()
            run = RunResult(**{k: v for k, v in r.items() if k in fields})
            outcomes.append(Outcome(i, r["category"], name, correct, error, r["calls"], run))
    return outcomes
