"""The 50 benchmark tasks, their plans, and the sandboxed world they run in.

Tasks use the built-in tools seed 003 lists (search, calculator, translate,
file read/write, timer, database insert) over a shipped document folder
(``docs/``). Every task's correct answer is computed by running its plan
against the real tools in a fresh world, so the answer key cannot drift from
what the tools return. Family E needs a fact read 3+ steps before the answer.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from reinloop.models.simulation import Plan, PlanStep
from reinloop.tools import builtin, builtins
from reinloop.tools.demo import GLOSSARY

DOCS = Path(__file__).parent / "docs"
TOOL_NAMES = "search_docs,read_file,write_file,calculator,translate,wait,db_insert,sql_query"


@dataclass(frozen=True)
class City:
    slug: str
    zh: str
    population: int  # 万人
    area: int  # km²


CITIES = [City("hangzhou", "杭州", 1252, 16850), City("beijing", "北京", 2186, 16410),
          City("shanghai", "上海", 2487, 6341), City("shenzhen", "深圳", 1779, 1997),
          City("chengdu", "成都", 2140, 14335), City("wuhan", "武汉", 1377, 8569),
          City("xian", "西安", 1308, 10108), City("nanjing", "南京", 955, 6587)]
WORDS = ["你好", "世界", "朋友", "天气", "苹果", "智能体", "数据库", "人工智能", "机器学习", "文档"]


@dataclass(frozen=True)
class Task:
    """A task for the agent, with the plan a correct agent follows and the answer key."""

    id: str
    text: str
    steps: tuple[PlanStep, ...]
    finish: Callable[[list[str]], tuple[str, tuple[str, ...]]]
    """From the plan's observations: (the right answer, the facts the answer needs to have seen)."""


class World:
    """A fresh sandbox: documents, an inbox, a database and a search index in a temp dir."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="reinloop-eval-"))
        shutil.copytree(DOCS, self.root / "docs")
        (self.root / "inbox").mkdir()
        for i in range(4):
            (self.root / "inbox" / f"order_{i}.txt").write_text(
                f"order {i}\nquantity: {3 + i * 2}\nunit price: {12.5 + i * 4}\n", encoding="utf-8")
        self.db = self.root / "world.db"
        with sqlite3.connect(self.db) as conn:
            conn.execute("CREATE TABLE notes (key TEXT, value TEXT)")

    def tools(self) -> list[BaseTool]:
        """The benchmark's tools, confined to this world."""
        search = builtin("search_docs", folder=self.root / "docs", index=self.root / "index.db", sandbox=self.root)
        others = builtins(TOOL_NAMES.replace("search_docs,", ""), sandbox=self.root, db=self.db, db_tables="notes")
        return [search, *others]

    def close(self) -> None:
        """Delete the world."""
        shutil.rmtree(self.root, ignore_errors=True)


def _look_up_and_compute(task_id: str, text: str, query: str, path: str, expression: str) -> Task:
    """An A task: find the document, read it, compute the answer from its figures (the calculator's result)."""
    return Task(
        id=task_id, text=text,
        steps=(PlanStep("search_docs", {"query": query}), PlanStep("read_file", {"path": path}),
               PlanStep("calculator", {"expression": expression})),
        finish=lambda obs: (obs[2], (obs[2],)))


def _density(city: City) -> Task:
    return _look_up_and_compute(f"A-{city.slug}", f"{city.zh}的人口密度是多少？（人/平方公里，四舍五入取整）",
                                f"{city.zh} 人口 面积", f"docs/city_{city.slug}.md",
                                f"round({city.population}*10000/{city.area})")


def _price_per_hour(slug: str, zh: str, price: int, hours: int) -> Task:
    return _look_up_and_compute(f"A-{slug}", f"{zh}的售价除以续航小时数是多少元每小时？（保留两位小数）",
                                f"{zh} 售价 续航", f"docs/product_{slug}.md", f"round({price}/{hours}, 2)")


def _difference(a: City, b: City) -> Task:
    return Task(
        id=f"B-{a.slug}-{b.slug}", text=f"{a.zh}和{b.zh}的常住人口相差多少万人？",
        steps=(PlanStep("search_docs", {"query": f"{a.zh} 常住人口"}),
               PlanStep("read_file", {"path": f"docs/city_{a.slug}.md"}),
               PlanStep("search_docs", {"query": f"{b.zh} 常住人口"}),
               PlanStep("read_file", {"path": f"docs/city_{b.slug}.md"}),
               PlanStep("calculator", {"expression": f"abs({a.population}-{b.population})"})),
        finish=lambda obs: (obs[4], (obs[4],)))


def _translate(i: int, word: str) -> Task:
    path = f"out/word_{i}.txt"
    english = GLOSSARY[word]
    return Task(
        id=f"C-{i}", text=f"把“{word}”翻译成英文，写入文件 {path}，再读出来确认文件内容。",
        steps=(PlanStep("translate", {"text": word, "target": "en"}),
               PlanStep("write_file", {"path": path, "content": english}),
               PlanStep("read_file", {"path": path})),
        finish=lambda obs: (obs[2].strip(), (obs[2].strip(),)))


def _note(i: int) -> Task:
    key, value = f"ticket-{100 + i}", f"status-{['open', 'closed', 'pending'][i % 3]}-{i * 7}"
    return Task(
        id=f"D-{i}", text=f"在数据库 notes 表里记录 key={key}, value={value}，然后用查询确认记下的 value。",
        steps=(PlanStep("db_insert", {"table": "notes", "row": {"key": key, "value": value}}),
               PlanStep("sql_query", {"query": f"SELECT value FROM notes WHERE key = '{key}' LIMIT 1"})),
        finish=lambda obs: (value, (value,)))


def _long(i: int, city: City, word: str) -> Task:
    fact = f"面积 (area): {city.area}"
    return Task(
        id=f"E-{i}", text=(f"先在手册里查{city.zh}的面积，然后计时等待片刻，再把“{word}”翻译成英文，"
                           f"最后计算面积的两倍。回答：面积，以及两倍的结果。"),
        steps=(PlanStep("search_docs", {"query": f"{city.zh} 面积"}),
               PlanStep("read_file", {"path": f"docs/city_{city.slug}.md"}),
               PlanStep("wait", {"seconds": 0.01}),
               PlanStep("translate", {"text": word, "target": "en"}),
               PlanStep("calculator", {"expression": f"{city.area}*2"})),
        finish=lambda obs: (f"{city.area} km², doubled {obs[4]}", (fact, obs[4])))


def _timer(i: int) -> Task:
    a, b = 17 + i * 3, 23 + i
    return Task(
        id=f"F-{i}", text=f"计时等待片刻之后，计算 {a}*{b}。",
        steps=(PlanStep("wait", {"seconds": 0.01}), PlanStep("calculator", {"expression": f"{a}*{b}"})),
        finish=lambda obs: (obs[1], (obs[1],)))


def _order(i: int) -> Task:
    qty, price = 3 + i * 2, 12.5 + i * 4
    return Task(
        id=f"H-{i}", text=f"读取 inbox/order_{i}.txt，计算这个订单的总价（数量乘以单价）。",
        steps=(PlanStep("read_file", {"path": f"inbox/order_{i}.txt"}),
               PlanStep("calculator", {"expression": f"{qty}*{price}"})),
        finish=lambda obs: (obs[1], (f"quantity: {qty}", obs[1])))


FAMILIES = {
    "A": "search, read, calculate (density, price per hour)",
    "B": "two cities' difference (5 steps)",
    "C": "translate, write a file, read it back",
    "D": "database insert, then query",
    "E": "a fact from 3+ steps back (5 steps)",
    "F": "timer, then calculate",
    "H": "read an order file, calculate",
}
"""Task families by the letter their ids start with."""


def family(task_id: str) -> str:
    """The family letter of a task id (``"B-hangzhou-shenzhen"`` -> ``"B"``)."""
    return task_id.split("-", 1)[0]


def select(tasks: list[Any], spec: str, families: dict[str, str] = FAMILIES) -> list[Any]:
    """The tasks a ``--tasks`` spec names: comma-separated ids or family letters (of ``families``), in the
    spec's order.

    ``"first-of-each"`` is the first task of every family, shortest plans first.
    """
    if spec == "first-of-each":
        firsts = {family(t.id): t for t in reversed(tasks)}
        return sorted(firsts.values(), key=lambda t: (len(t.steps), t.id))
    by_id = {t.id: t for t in tasks}
    chosen: list[Task] = []
    for name in filter(None, (part.strip() for part in spec.split(","))):
        found = [by_id[name]] if name in by_id else [t for t in tasks if family(t.id) == name]
        if not found:
            raise ValueError(f"--tasks: no task or family {name!r}; families are {', '.join(families)}, "
                             f"ids look like {tasks[0].id}")
        chosen += [t for t in found if t not in chosen]
    return chosen


def all_tasks() -> list[Task]:
    """The 50 tasks, in a fixed order."""
    tasks = [_density(c) for c in CITIES]
    tasks += [_price_per_hour("aurora", "Aurora X1 智能手表", 1299, 18),
              _price_per_hour("comet", "Comet 2 无线耳机", 699, 30)]
    tasks += [_difference(CITIES[i], CITIES[(i + 3) % 8]) for i in range(8)]
    tasks += [_translate(i, WORDS[i]) for i in range(8)]
    tasks += [_note(i) for i in range(6)]
    tasks += [_long(i, CITIES[i % 8], WORDS[(i + 2) % 10]) for i in range(10)]
    tasks += [_timer(i) for i in range(4)]
    tasks += [_order(i) for i in range(4)]
    assert len(tasks) == 50 and len({t.text for t in tasks}) == 50
    return tasks


def _is_call_text(answer: str) -> bool:
    text = answer.strip().removeprefix("```json").removeprefix("```").lstrip()
    return text.startswith("<tool_call>") or (text.startswith("{") and '"arguments"' in text)


def solve(task: Task) -> Plan:
    """Run the task's plan on the real tools in a fresh world: the plan with its answer key."""
    world = World()
    try:
        tools = {t.name: t for t in world.tools()}
        observations = [str(tools[s.tool].invoke(s.args)) for s in task.steps]
    finally:
        world.close()
    answer, facts = task.finish(observations)
    for fact in facts:
        if not any(fact in o for o in observations):
            raise AssertionError(f"{task.id}: fact {fact!r} is in no observation: {observations}")
    return Plan(steps=task.steps, answer=answer, facts=facts)


ECHO_RUN = 16
"""Letters and digits of the task, in a row, that an answer may not repeat (the key itself aside)."""


def _bare(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def echoes_task(answer: str, task: str, key: str) -> bool:
    """Whether ``answer`` repeats a run of :data:`ECHO_RUN` letters/digits of ``task``, once ``key`` (the
    right answer, which family D's task itself holds) is taken out of both."""
    cut = _bare(key)
    said, asked = _bare(answer).replace(cut, "|"), _bare(task).replace(cut, "|")
    return any(asked[i:i + ECHO_RUN] in said for i in range(len(asked) - ECHO_RUN + 1) if "|" not in asked[i:i + ECHO_RUN])


def is_correct(answer: str | None, plan: Plan, task: str = "") -> bool:
    """The agent's answer holds the right answer: the whole token, or every number of a longer answer.

    A tool call written out as text is no answer, even when its arguments hold
    the key (family D's value is in the task itself), and neither is an answer
    that repeats the task's words (:func:`echoes_task`) when the task holds the
    key: a real model that fails to make its call must not score by echoing
    the task. Where the task does not hold the key, an answer that restates the
    question before its figure ("…的售价除以续航小时数是 72.17 元每小时") is an answer.
    """
    if not answer or _is_call_text(answer):
        return False
    if task and _bare(plan.answer) in _bare(task) and echoes_task(answer, task, plan.answer):
        return False  # only where the task holds the key can an echo of it score
    expected = plan.answer.strip()
    if " " not in expected:
        return expected.lower() in answer.lower()
    found = set(re.findall(r"\d+(?:\.\d+)?", answer))
    return all(n in found for n in re.findall(r"\d+(?:\.\d+)?", expected))
