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
