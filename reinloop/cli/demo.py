"""``reinloop demo``: the seeds' example agents, run offline with a scripted model.

Each scenario is one configuration of the same graph: the protocol, the tools
and the model's scripted replies. The last one shows a guard at work: a model
that keeps repeating itself gets a hint, then the run is broken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from langchain_core.messages import AIMessage

from ..checkpoints import Database, open_database
from ..observe.events import EventSink
from ..runs.limits import Limits
from ..runs.outcome import Outcome
from ..runs.api import EventHandler, Given, run_with
from ..runs.spec import RunSpec, object_label
from ..testing import ScriptedChatModel, tool_call
from ..tools.catalog import builtins


@dataclass(frozen=True)
class Scenario:
    """A seed example: a task, a protocol, and the replies of the scripted model."""

    name: str
    task: str
    protocol: str
    replies: list[Any]
    expected_answer: str | None
    expected_break: str | None = None
    limits: Limits = field(default_factory=Limits)

    def model(self) -> ScriptedChatModel:
        """A fresh scripted model for this scenario."""
        return ScriptedChatModel(replies=list(self.replies))


SEED_000 = Scenario(
    name="seed 000: user lookup then arithmetic (json protocol, one reply needs repair)",
    task="查询用户ID为1的信息，然后计算他的年龄乘以2的结果",
    protocol="json",
    replies=[
        'Sure! ```json\n{"thought": "先查询用户1", "tool": "db_query", "args": {"table": "users", "key": "1",}}\n```',
        "我认为答案是……",
        {"thought": "张三30岁，计算30*2", "tool": "calculator", "args": {"expression": "30*2"}},
        {"thought": "计算结果是60", "final_answer": "60"},
    ],
    expected_answer="60",
)

SEED_001 = Scenario(
    name="seed 001: weather then a conversion (native tool calling)",
    task="杭州今天天气怎么样？如果气温高于20度，帮我算一下 (22*1.8)+32 是多少",
    protocol="tool_calling",
    replies=[
        [tool_call("get_weather", {"city": "杭州"})],
        AIMessage(content="22℃ > 20℃，需要计算", tool_calls=[tool_call("calculator", {"expression": "(22*1.8)+32"})]),
        "杭州今天多云，22℃。(22*1.8)+32 = 71.6",
    ],
    expected_answer="杭州今天多云，22℃。(22*1.8)+32 = 71.6",
)

SEED_002 = Scenario(
    name="seed 002: temperature difference (ReAct text protocol)",
    task="北京和上海现在的气温相差多少度？",
    protocol="react",
    replies=[
        'Thought: 先查北京气温\nAction: get_weather\nArgs: {"city": "北京"}',
        'Thought: 再查上海气温\nAction: get_weather\nArgs: {"city": "上海"}\nObservation: 上海 30度 (invented, ignored)',
        'Thought: 计算差值\nAction: calculator\nArgs: {"expression": "24-18"}',
        "Thought: 上海24度，北京18度\nFinal Answer: 6",
    ],
    expected_answer="6",
)

SEED_003 = Scenario(
    name="seed 003: a model stuck in a loop (the repeat breaker trips)",
    task="杭州的天气如何？",
    protocol="tool_calling",
    replies=[[tool_call("get_weather", {"city": "杭州"})] for _ in range(3)],
    expected_answer=None,
    expected_break="repeated_action",
)

SCENARIOS: tuple[Scenario, ...] = (SEED_000, SEED_001, SEED_002, SEED_003)
"""The demo's scenarios, in the order they run."""

BANNER = (
    "reinloop demo: the seeds' example agents, run offline. The model is SCRIPTED "
    "(reinloop.testing.ScriptedChatModel): its replies are fixed in advance and no "
    "network call is made."
)


DEMO_TOOLS = ("calculator", "db_query", "get_weather")


def demo(
    on_event: EventHandler | None = None,
    on_scenario: Callable[[Scenario], None] | None = None,
    out: TextIO | None = None,
    sinks: Sequence[EventSink] = (),
    on_outcome: Callable[[Scenario, Outcome], None] | None = None,
    db: Database | None = None,
) -> list[tuple[Scenario, Outcome]]:
    """Run every scenario as thread ``demo-N``; return each with its outcome.

    Each is a stored run of ``db`` (its spec, checkpoints, node events and breaks, as ``reinloop run`` stores
    one), so ``runs list`` and ``runs show demo-3`` read it back; without ``db``, an in-memory database.
    A thread left by an earlier demo in the same database is replaced.
    """
    database = db if db is not None else open_database(":memory:")
    try:
        results = []
        for number, scenario in enumerate(SCENARIOS):
            if on_scenario is not None:
                on_scenario(scenario)
            thread_id = f"demo-{number}"
            database.checkpointer.delete_thread(thread_id)  # a new demo run, not a new task on the old one
            model = scenario.model()
            spec = RunSpec(model=object_label(model), protocol=scenario.protocol, tools=DEMO_TOOLS, limits=scenario.limits)
            tools = tuple(builtins(",".join(DEMO_TOOLS)))
            outcome = run_with(database, scenario.task, spec, Given(model, tools), thread_id=thread_id,
                               on_event=_to_sinks(on_event, sinks))
            results.append((scenario, outcome))
            if on_outcome is not None:
                on_outcome(scenario, outcome)
        return results
    finally:
        if db is None:
            database.close()


def _to_sinks(on_event: EventHandler | None, sinks: Sequence[EventSink]) -> EventHandler | None:
    """``on_event``, and every extra sink given (a :class:`~reinloop.RunLog` of another database)."""
    if not sinks:
        return on_event

    def handle(event: dict[str, Any]) -> None:
        for sink in sinks:
            sink(event)
        if on_event is not None:
            on_event(event)

    return handle


def as_expected(scenario: Scenario, outcome: Outcome) -> bool:
    """Did the scenario end the way it is meant to?"""
    if scenario.expected_break is not None:
        return outcome.status == "broken" and outcome.break_reason == scenario.expected_break
    return outcome.status == "done" and outcome.answer == scenario.expected_answer
