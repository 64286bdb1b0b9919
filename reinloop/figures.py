"""Figures the run's results label, and a calculator expression's names bound to them.

A small model that has read "quantity: 3 / unit price: 12.5" often calls the
calculator with the names instead of the numbers (``quantity * unit_price``),
and, shown the error, writes the same call again: Qwen2.5-Coder-0.5B did so
five times in a row. Under ``AnswerRules.calculation_tool`` the validate node
binds each name to the one figure the results label with it and runs
``3 * 12.5`` instead; the action records the binding (``bound_figures``) and
later prompts replay the call with the numbers.

A name binds only when exactly one figure fits it: a label whose words are
the name's words (``unit_price`` -> "unit price"), or else the one label that
holds all of them. A name no label fits, or two figures fit, leaves the whole
expression as written (the calculator then says what is wrong with it).

A figure that the results state only in a larger unit ("1252 万人", "30
million") is written in plain units (``12520000``) when the task does not ask
in that unit (:func:`scale_figures`), and the action records
``scaled_figures``: Qwen computed the density "人/平方公里" from "1252 万人"
as ``1252 / 16850``, and, told to multiply by 10000, wrote ``1252 * 10000``
alone. A task that asks "相差多少万人" keeps the 万.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from .answers import is_plain_constant, says
from .tools.arithmetic import named_quantities

_LABELLED = re.compile(r"^[\s\-*•·]*(?P<label>[^:：\n]{1,60}?)\s*[:：]\s*(?P<figure>-?\d[\d,]*(?:\.\d+)?)(?![\d.])",
                       re.MULTILINE)
_WORDS = re.compile(r"[a-z]+|\d+|[^\W\d_a-z]+")


def words(text: str) -> frozenset[str]:
    """The words of a name or a label: ``unitPrice``, ``unit_price`` and "Unit price" are the same two."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower().replace("_", " ")
    return frozenset(_WORDS.findall(spaced))


def labelled_figures(results: Sequence[str]) -> list[tuple[frozenset[str], str]]:
    """``(label words, figure)`` for every "label: figure" line of ``results`` ("- quantity: 3")."""
    return [(words(m["label"]), m["figure"].replace(",", "")) for r in results for m in _LABELLED.finditer(r)]


def figure_for(name: str, labelled: Sequence[tuple[frozenset[str], str]]) -> str | None:
    """The one figure the labels give ``name``, else None (none fits, or two different ones do)."""
    wanted = words(name)
    if not wanted:
        return None
    for fits in (lambda label: label == wanted, lambda label: wanted <= label):
        found = {figure for label, figure in labelled if fits(label)}
        if len(found) == 1:
            return found.pop()
        if found:
            return None
    return None


_NAME = re.compile(r"(?<![\w.])[^\W\d]\w*(?:[ \t]+[^\W\d]\w*)*")
"""A name in an expression: words with only spaces between them ("unit price" is one name)."""


def bind_figures(expression: str, results: Sequence[str]) -> tuple[str, dict[str, str]] | None:
    """``expression`` with every name replaced by its figure from ``results``, and the binding; None unless
    the expression has names and every one of them binds."""
    names = [n for n in dict.fromkeys(m.group(0) for m in _NAME.finditer(expression)) if named_quantities(n)]
    if not names:
        return None
    labelled = labelled_figures(results)
    bound = {name: figure for name in names if (figure := figure_for(name, labelled)) is not None}
    if len(bound) < len(names):
        return None
    return _NAME.sub(lambda m: bound.get(m.group(0), m.group(0)), expression), bound


MAGNITUDES = {"万": 10_000, "亿": 100_000_000, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
"""Words that state a figure in a larger unit: "1252 万人" is 12,520,000 people."""

_FIGURE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def stated_unit(figure: str, results: Sequence[str]) -> str | None:
    """The magnitude word every mention of ``figure`` in ``results`` carries ("1252 万人" -> "万"), else None
    (never mentioned, mentioned bare too, or in two units)."""
    places = [m.group(1) for r in results
              for m in re.finditer(rf"(?<![\d.,]){re.escape(figure)}(?![\d]|[.,]\d)\s*(\w*)", r.lower())]
    units = {next((w for w in MAGNITUDES if place.startswith(w)), None) for place in places}
    return units.pop() if len(units) == 1 and None not in units else None


def scale_figures(expression: str, task: str, results: Sequence[str]) -> tuple[str, dict[str, str]] | None:
    """``expression`` with each figure the results state only in a larger unit written in plain units, and the
    scaling (``{"1252": "12520000"}``); None when there is none, the task asks in that unit, or the expression
    already multiplies by it (``1252 * 10000``). A plain constant (0 to 10, a power of ten) is left alone:
    in ``16850 * 2`` the 2 is the task's "两倍", whatever a result says of "2 million"."""
    written = set(_FIGURE.findall(expression))
    scaled: dict[str, str] = {}
    for figure in written:
        unit = stated_unit(figure, results)
        if unit is None or says(task, unit) or str(MAGNITUDES[unit]) in written or is_plain_constant(figure):
            continue
        scaled[figure] = format((Decimal(figure) * MAGNITUDES[unit]).normalize(), "f")
    if not scaled:
        return None
    return _FIGURE.sub(lambda m: scaled.get(m.group(0), m.group(0)), expression), scaled


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_TITLE_WORDS = re.compile(r"[^\W\d_a-zA-Z]{2,}|[a-zA-Z][a-zA-Z0-9]{2,}")


@dataclass(frozen=True)
class Part:
    """A titled part of a tool result: its top-level heading and the text under it."""

    title: str
    text: str


def titled_parts(result: str) -> list[Part]:
    """The parts of ``result`` under its top-level Markdown headings (none if it has no heading)."""
    headings = list(_HEADING.finditer(result))
    if not headings:
        return []
    top = min(len(h.group(1)) for h in headings)
    heads = [h for h in headings if len(h.group(1)) == top]
    ends = [h.start() for h in heads[1:]] + [len(result)]
    return [Part(h.group(2).strip(), result[h.start():end]) for h, end in zip(heads, ends)]


def names_task(title: str, task: str) -> bool:
    """Does the task name a word of ``title`` ("北京 Beijing" for "北京和成都……")?"""
    lowered = task.lower()
    return any(re.search(rf"(?<![a-z0-9]){re.escape(w.lower())}(?![a-z0-9])", lowered) if w.isascii()
               else w in task for w in _TITLE_WORDS.findall(title))


def _labelled_line(figure: str, text: str) -> re.Match[str] | None:
    """The "label: figure" line of ``text`` that states ``figure`` (its match: ``label``, ``figure``), else None."""
    from .protocols.prose import numbers

    for m in _LABELLED.finditer(text):
        end = text.find("\n", m.end())
        if figure in numbers(text[m.start():end if end >= 0 else len(text)]):
            return m
    return None


def source_problem(expression: str, task: str, results: Sequence[str]) -> str | None:
    """Why an arithmetic argument takes a figure from the wrong entity's part of the results, else None.

    A figure is refused when it is not in the task, every part of the results that states it is titled with
    nothing the task names, and some other part is titled with something it names. The refusal offers the
    figure those parts label the same way ("北京 Beijing: 常住人口 2186"). See the module."""
    from .protocols.prose import numbers

    split = [(r, titled_parts(r)) for r in results]
    parts = [p for _, found in split for p in found]
    named = [p for p in parts if names_task(p.title, task)]
    if not named or len(named) == len(parts):
        return None
    untitled = set().union(*(numbers(r) for r, found in split if not found))
    in_task = numbers(task)
    for figure in sorted(numbers(expression), key=expression.find):
        if figure in in_task or figure in untitled or is_plain_constant(figure):
            continue
        holders = [p for p in parts if figure in numbers(p.text)]
        if not holders or any(p in named for p in holders):
            continue
        line = _labelled_line(figure, holders[0].text)
        label = words(line["label"]) if line is not None else None
        offers = list(dict.fromkeys(f"{p.title}: {m['label'].strip()}: {m['figure']}" for p in named
                                    for m in _LABELLED.finditer(p.text) if label and words(m["label"]) == label))
        offer = f" The results give {'; '.join(offers[:4])}." if offers else ""
        asked = ", ".join(dict.fromkeys(p.title for p in named))
        missing = [n for n in joined_names(task, [p.title for p in named]) if not any(n in p.title for p in parts)]
        what = line["label"].split("(")[0].strip() if line is not None else ""
        lacking = (f" No result has a part about {', '.join(missing)} yet: search for it (for example "
                   f"'{' '.join(filter(None, [missing[0], what]))}')." if missing else "")
        return (f"{figure} is from '{holders[0].title}', which the task does not ask about; the task names "
                f"{asked}: take each figure from the part about what the task names, and look up any it still "
                f"lacks.{offer}{lacking}")
    return None


_AND = r"\s*(?:和|与|跟|及|、|以及|,|，)\s*"


def joined_names(task: str, titles: Sequence[str]) -> list[str]:
    """Names the task joins to a word of ``titles`` with "和", "与", "、" or "and": the other things it asks
    about ("成都" in "北京和成都的常住人口", "Chengdu" in "Beijing and Chengdu")."""
    found: list[str] = []
    for word in dict.fromkeys(w for t in titles for w in _TITLE_WORDS.findall(t)):
        here = re.escape(word)
        if word.isascii():
            patterns = [rf"\b{here}\s*(?:,|and|&)\s*([A-Z][\w-]+)", rf"\b([A-Z][\w-]+)\s*(?:,|and|&)\s*{here}\b"]
        else:
            patterns = [rf"{here}{_AND}([^\W\d_a-zA-Z]{{2,4}}?)(?=的|和|与|、|以及|[^\w]|$)",
                        rf"([^\W\d_a-zA-Z]{{2}}){_AND}{here}"]
        found += [m.group(1) for pattern in patterns for m in re.finditer(pattern, task)
                  if m.group(1).lower() != word.lower()]
    return list(dict.fromkeys(found))
