"""What a final answer must be, and what the loop does when a stuck run has results in hand.

A model's final answer is checked like any other output (the seeds' first
distrust). These rules always hold:

- **A tool call written as text is not an answer.** Under native tool calling
  any text counts as the answer, so a small model that writes
  ``{"name": "calculator", "arguments": {...}}`` as text instead of through
  the API would end the run with its own call as the "answer". A whole call of
  a known tool is run as that call; anything else call-shaped is a parse error.
- **Our own words are not an answer.** A reply that repeats reinloop's hints
  or corrections (small models echo the newest message) is a parse error.

:class:`AnswerRules` adds the rules a caller chooses:

- ``min_tool_calls``: an answer that comes before this many successful tool
  calls is refused ("call a tool first"). A weak model under native tool
  calling often answers from memory at step 1; this makes it use the tools.
- ``grounded_numbers``: every number in the answer must appear in the task or
  in a tool result (or be one rounded). "17*23 = 421" with no calculator
  result 421 is refused and the model is told to compute it with a tool.
  Off by default: a strong model's derived numbers ("3 files") are fine.
  Under it, an answer that states false arithmetic ("17790000 - 1779 =
  17790000", all three figures from results) is refused too, and an
  arithmetic argument of any tool (the calculator's expression) must take
  its figures from the task or a result, apart from 0–10 and the powers of
  ten (:func:`figure_problem`), and not from a result's part about something
  the task does not name while another part is about what it names
  (:func:`reinloop.figures.source_problem`: 杭州's population for "北京和成都").
  Under it, an answer that names one of the run's tools must also repeat a
  value of a tool result (:func:`tool_talk_problem`): "The task still needs the
  function `db_insert`." talks about the tools and is refused; "The calculator
  returned 492." repeats a result and is an answer (Qwen2.5-Coder-0.5B wrote
  the first under native tool calling, where any text ends the run). An
  answer that is only a piece of the task's words ("面积,以及两倍的结果" for
  a task ending "回答：面积，以及两倍的结果。") and repeats no result is
  refused too (:func:`task_echo_problem`).
- ``calculation_tool`` (off by default): the name of the run's calculator.
  When the task asks for a calculation (it says 计算, 相差, 除以, compute,
  difference, total, … :data:`CALCULATION_WORDS`), an answer must state a
  number that tool returned (or one rounded from it). Qwen2.5-Coder-0.5B
  answered "计算这个订单的总价" with the order's own figures,
  ``{"quantity": 3, "unit_price": 12.5}``: grounded, and no total. A call of
  that tool must use the one operation the task names (:data:`OPERATION_WORDS`:
  相差 subtracts, 除以 divides, 两倍 multiplies): Qwen summed "相差".
  An answer that such a rule would refuse and that states its own
  calculation ("1252 / 16850 = 0.75", figures from the results, the task's
  operation) is not refused: the calculator runs that expression as the
  step's call (:func:`written_calculation`), and the model answers from its
  result. Asked to call the calculator, Qwen wrote the division as its
  answer three times, each refused for the 0.75 no tool had returned.
- ``wrap_up`` (off by default, so that a limit means exactly its number of
  model calls): when a run is about to break because it is
  stuck (the same action, the same error, errors in a row, or the step
  limit) and it has tool results, the model gets one more call, with no
  tools, showing the task and every result, asking for the final answer
  (LangChain's old ``early_stopping_method="generate"``). An answer that
  passes the rules above ends the run ``done``, and the outcome says it came
  from a wrap-up (``wrapped_up``); anything else breaks the run as it would
  have, resumable as before. At most one wrap-up per break. Under
  ``grounded_numbers`` or ``calculation_tool`` the request also quotes the
  results' facts that answer what the task asks (:func:`answer_facts`).
- ``ask_next_step`` (off by default): every prompt ends with a short question
  asking which tool gives what the task still needs (:data:`NEXT_STEP_CUE`).
  A small model answering a long prompt tends to reach for the tool its
  instructions name most (the calculator) or to copy its last reply; asked
  for the *next* step, it starts from what is missing. Measured on
  Qwen2.5-Coder-0.5B (BENCHMARKS.md, "with the answer rules").
- ``vary_repeats`` (off by default): a reply that repeats a call or a reply
  that failed in this run is asked for again with sampling
  (:mod:`reinloop.repeats`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SettingError
from .settings import replace_known

# The rules are data a RunSpec holds, and ``reinloop --help`` reads the spec: the checks import the
# parsing helpers (which bring LangChain) when they run, not when this module is imported.

WRAP_UP_REASONS = ("repeated_action", "same_errors", "consecutive_errors", "max_steps")
"""Breaks that mean the run is stuck or out of steps, not out of money or time: a wrap-up may answer them."""

ECHO_MARKERS = (
    "[reinloop]",
    "Your last reply could not be used",
    "could not be used; this is attempt",
    "Reply with exactly one of these forms",
    "You already did this:",
    "Tool results of earlier steps, verbatim",
    "Give the final answer to the task now",
    "Which tool gives what the task still needs",
    "the task still needs",
)
"""Phrases of reinloop's own messages to the model: an answer that repeats one is an echo."""

NEXT_STEP_CUE = ("Which tool gives what the task still needs? Call that one now. If the results above "
                 "already hold the whole answer, give the final answer instead.")
"""The question ``AnswerRules.ask_next_step`` ends each prompt with."""


@dataclass(frozen=True, kw_only=True)
class AnswerRules:
    """What a final answer must satisfy, and whether a stuck run gets a wrap-up call (see the module)."""

    min_tool_calls: int = 0
    """Successful tool calls the run must have made before an answer is accepted (0: none needed)."""
    grounded_numbers: bool = False
    """Refuse an answer with a number that is in neither the task nor any tool result, or without a figure
    the task's answer clause asks for ("回答：面积，……")."""
    wrap_up: bool = False
    """At a stuck break with results in hand, ask once more, without tools, for the final answer
    (one model call beyond the limit that tripped)."""
    calculation_tool: str | None = None
    """The run's calculator: when the task asks for a calculation, an answer must state a number it returned."""
    ask_next_step: bool = False
    """End every prompt with a question about the task's next step (:data:`NEXT_STEP_CUE`)."""
    vary_repeats: bool = False
    """Ask again, sampling with a fixed seed, when a reply repeats a call or a reply that failed in this run
    (:mod:`reinloop.repeats`): a greedy small model otherwise writes its refused reply again."""

    def __post_init__(self) -> None:
        if isinstance(self.min_tool_calls, bool) or not isinstance(self.min_tool_calls, int) or self.min_tool_calls < 0:
            raise SettingError("AnswerRules", "min_tool_calls", "must be a whole number >= 0", value=self.min_tool_calls)
        tool = self.calculation_tool
        if tool is not None and (not isinstance(tool, str) or not tool.strip()):
            raise SettingError("AnswerRules", "calculation_tool", "must be the name of one of the run's tools", value=tool,
                               none="off")
        for name in ("grounded_numbers", "wrap_up", "ask_next_step", "vary_repeats"):
            if not isinstance(getattr(self, name), bool):
                raise SettingError("AnswerRules", name, "must be True or False", value=getattr(self, name))

    def replace(self, **changes: Any) -> AnswerRules:
        """A copy with some rules changed (unknown names are refused)."""
        return replace_known(self, changes, unknown="answer rule(s)", valid="answer rules")

    def as_dict(self) -> dict[str, Any]:
        """The rules as a JSON-able dict."""
        return dataclasses.asdict(self)


_CALL_OBJECT = re.compile(r"^\s*(?:```[a-zA-Z]*\s*)?(?:<tool_call>\s*)?\{")


def written_call(text: str, tool_names: Iterable[str]) -> tuple[dict[str, Any] | None, bool]:
    """``(call, call_shaped)``: the first whole JSON call of a known tool that ``text`` starts with.

    ``call`` is ``{"tool": name, "args": {...}}`` when the text begins with a
    whole, strict JSON object naming a known tool (``name``/``tool`` plus
    ``arguments``/``args``); ``call_shaped`` is True when the text begins with
    a JSON object naming a tool at all, whole or not (then it is no answer).
    """
    from .tools.registry import loose

    if not _CALL_OBJECT.match(text):
        return None, False
    names = {loose(n): n for n in tool_names}
    start = text.find("{")
    head = text[start:start + 400]
    named = re.search(r'"(?:name|tool)"\s*:\s*"([^"]+)"', head)
    if named is None or loose(named.group(1)) not in names:
        return None, False
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None, True
    if not isinstance(value, dict):
        return None, True
    args = value.get("arguments", value.get("args", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None, True
    if not isinstance(args, dict):
        return None, True
    return {"tool": names[loose(named.group(1))], "args": args}, True


ECHO_CHARS = 40
"""A stretch this long, word for word, shared with one of our messages makes an answer an echo."""


def echoed(answer: str, ours: Sequence[str]) -> str | None:
    """The first stretch of :data:`ECHO_CHARS` characters of ``answer`` found in one of ``ours``, else None.

    Whitespace and case are ignored; only the first 2,000 characters of the answer are looked at.
    """
    flat = " ".join(answer[:2000].split()).lower()
    texts = [" ".join(t.split()).lower() for t in ours if t]
    for start in range(0, max(0, len(flat) - ECHO_CHARS) + 1, 8):
        piece = flat[start:start + ECHO_CHARS]
        if len(piece) == ECHO_CHARS and any(piece in t for t in texts):
            return piece
    return None


def echo_problem(answer: str, ours: Sequence[str] = ()) -> str | None:
    """Why ``answer`` is no answer when it repeats reinloop's own messages (``ours``: the instructions,
    corrections and hints the model was sent), else None."""
    marker = next((m for m in ECHO_MARKERS if m.lower() in answer.lower()), None) or echoed(answer, ours)
    if marker is None:
        return None
    return (f"your answer repeats reinloop's message to you ({marker!r}) instead of answering the task; "
            "give the answer to the task itself, from the tool results")


def rounded_forms(value: str) -> set[str]:
    """``value`` and its roundings to fewer decimals (``727.137`` -> ``727.14``, ``727.1``, ``727``); a negative
    one's magnitude too, since a difference is stated without its sign ("相差 527" for ``1252 - 1779`` = -527)."""
    forms = {value}
    try:
        number = float(value)
    except ValueError:
        return forms
    if not math.isfinite(number):
        return forms
    for signed in {number, abs(number)}:
        for places in range(0, 4):
            rounded = round(signed, places)
            forms.add(str(int(rounded)) if rounded == int(rounded) else f"{rounded:g}")
    return forms


def number_forms(sources: Sequence[str]) -> set[str]:
    """Every number of ``sources``, and its roundings (:func:`rounded_forms`)."""
    from .protocols.prose import numbers

    return {form for source in sources for value in numbers(source) for form in rounded_forms(value)}


def ungrounded(answer: str, sources: Sequence[str]) -> list[str]:
    """The numbers of ``answer`` found in none of ``sources`` (nor rounded from one), in order."""
    from .protocols.prose import numbers

    return sorted(numbers(answer) - number_forms(sources), key=answer.find)


def grounding_problem(answer: str, sources: Sequence[str]) -> str | None:
    """Why ``answer`` is refused under ``grounded_numbers``, else None."""
    missing = ungrounded(answer, sources)
    if not missing:
        return None
    shown = ", ".join(missing[:5])
    return (f"your answer has {shown}, which no tool result and not the task contains; compute it with a tool "
            "(the calculator for arithmetic) and answer with the tool's result")


_EXPRESSION_WORDS = re.compile(r"\b(?:sqrt|abs|round|floor|ceil|log10|log|exp|sin|cos|tan|min|max|pi|e)\b")
_EXPRESSION = re.compile(r"[\d\s.,+\-*/%()^×÷]*\d[\d\s.,+\-*/%()^×÷]*")
_OPERATOR = re.compile(r"\d\s*[+\-*/%^×÷]|\)\s*[+\-*/%^×÷]|[+\-*/%^×÷]\s*\(")


_DATE = re.compile(r"\s*\d{1,4}([-/.])\d{1,2}\1\d{1,4}\s*")


def is_expression(value: str) -> bool:
    """Is ``value`` an arithmetic expression (figures, operators, brackets, the calculator's functions),
    and not a date such as ``2026-12-01``?"""
    bare = _EXPRESSION_WORDS.sub(" ", value.lower())
    return bool(_EXPRESSION.fullmatch(bare) and _OPERATOR.search(bare)) and not _DATE.fullmatch(value)


def is_plain_constant(value: str) -> bool:
    """0 to 10 and the powers of ten: figures a calculation may bring in itself (rounding digits, 万 = 10000)."""
    try:
        number = float(value)
    except ValueError:
        return False
    if number.is_integer() and 0 <= number <= 10:
        return True
    exponent = math.log10(abs(number)) if number else 0.5
    return exponent.is_integer()


def figure_problem(expression: str, task: str, results: Sequence[str]) -> str | None:
    """Why an arithmetic argument is refused under ``grounded_numbers``, else None.

    Each of its figures must be in the task or a tool result (or be a plain
    constant, :func:`is_plain_constant`): Qwen2.5-Coder-0.5B computed the order
    total "(3*12.5)+32", the task's figures with the ``+32`` of the
    calculator's example ``(22*1.8)+32``. The refusal lists the figures the
    results gave, newest first.
    """
    from .protocols.prose import numbers

    if not is_expression(expression):
        return None
    known = numbers(task).union(*(numbers(r) for r in results))
    stray = sorted((n for n in numbers(expression) if n not in known and not is_plain_constant(n)),
                   key=expression.find)
    if not stray:
        return None
    have = list(dict.fromkeys(n for r in reversed(results) for n in sorted(numbers(r), key=r.find)))[:8]
    offer = f" The figures the tool results give: {', '.join(have)}." if have else ""
    return (f"the expression uses {', '.join(stray[:5])}, which neither the task nor any tool result contains "
            f"(a figure from an example is not the task's); use only the figures of the task and the results.{offer}")


_EQUATION = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*([+\-*/×÷x])\s*(-?\d[\d,]*(?:\.\d+)?)\s*=\s*(-?\d[\d,]*(?:\.\d+)?)")


def false_equation(answer: str) -> str | None:
    """The first ``a op b = c`` of ``answer`` that is false (beyond rounding), else None."""
    for match in _EQUATION.finditer(answer):
        a, op, b, c = match.groups()
        try:
            x, y, z = (float(v.replace(",", "")) for v in (a, b, c))
        except ValueError:
            continue
        if op in "/÷" and y == 0:
            return match.group(0)
        value = {"+": x + y, "-": x - y, "*": x * y, "×": x * y, "x": x * y}.get(op, x / y if y else 0.0)
        places = len(c.split(".")[1]) if "." in c else 0
        if abs(value - z) > 0.5 * 10 ** -places + 1e-9 * abs(value):
            return match.group(0)
    return None


def equation_problem(answer: str) -> str | None:
    """Why ``answer`` is refused under ``grounded_numbers`` for stating false arithmetic, else None."""
    wrong = false_equation(answer)
    if wrong is None:
        return None
    return (f"your answer states {wrong!r}, which is false; compute it with a tool (the calculator for "
            "arithmetic) and answer with the tool's result")


def tool_talk_problem(answer: str, tool_names: Iterable[str], results: Sequence[str]) -> str | None:
    """Why ``answer`` is refused as talk about the tools (it names a tool and repeats no result), else None."""
    from .protocols.prose import repeats_a_result
    from .tools.registry import loose

    words = {loose(w) for w in re.findall(r"[\w-]+", answer)}
    named = next((n for n in tool_names if loose(n) in words), None)
    if named is None or repeats_a_result(answer, results):
        return None
    return (f"your answer talks about the tool {named!r} and repeats no tool result, so it answers nothing; "
            "call the tool the task still needs, or answer the task with the values the tools returned")


def _bare(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def task_echo_problem(answer: str, task: str, results: Sequence[str]) -> str | None:
    """Why ``answer`` is refused as a piece of the task's own words (and of no tool result), else None.

    Qwen2.5-Coder-0.5B answered "面积,以及两倍的结果" to a task ending "回答：面积，以及两倍的结果。"
    ("answer: the area, and twice it"), and "朋友" to one asking to translate “朋友”. Punctuation, spaces
    and case are ignored; an answer of under four letters or digits (two CJK characters) may well be in the
    task ("3 or 5?" -> "5"), and one that a tool result holds, or whose numbers one does, is an answer even
    when the task holds it too (a value recorded, then read back; a city the task names and a result compares).
    """
    from .protocols.prose import repeats_a_result

    bare = _bare(answer)
    shortest = 2 if any(ord(ch) >= 0x2E80 for ch in bare) else 4  # a CJK word is two characters
    if (len(bare) < shortest or bare not in _bare(task) or repeats_a_result(answer, results)
            or any(bare in _bare(r) for r in results)):  # "深圳" for "杭州和深圳哪个大？", read in a result
        return None
    return ("your answer only repeats words of the task and no tool result, so it answers nothing; "
            "answer the task with the values the tools returned")


CALCULATION_WORDS = ("计算", "算出", "相差", "差值", "乘以", "除以", "加上", "减去", "总价", "总和", "合计", "平均",
                     "两倍", "倍数", "四舍五入", "取整", "小数", "calculate", "compute", "difference", "multiply",
                     "multiplied", "divide", "divided", "total", "average", "twice", "times", "rounded",
                     "decimal places", "to the nearest")
"""Words that say a task asks for a calculation (``AnswerRules.calculation_tool``)."""


OPERATION_WORDS: dict[str, tuple[str, ...]] = {
    "-": ("相差", "差值", "减去", "difference", "minus", "subtract"),
    "/": ("除以", "密度", "divided", "divide", "density"),
    "*": ("乘以", "两倍", "multiplied", "multiply", "twice", "times"),
    "+": ("加上", "总和", "plus", "sum of"),
}
"""Words naming one arithmetic operation, by its operator (``AnswerRules.calculation_tool``)."""

_OPERATION_NAMES = {"-": ("a difference", "subtract"), "/": ("a division", "divide"), "*": ("a product", "multiply"),
                    "+": ("a sum", "add")}


def says(task: str, word: str) -> bool:
    """Whether ``task`` has ``word``: a whole word in Latin script, anywhere in Chinese (which has no spaces)."""
    lowered = task.lower()
    return word in lowered if not word.isascii() else bool(re.search(rf"\b{word}\b", lowered))


def operation_problem(expression: str, task: str) -> str | None:
    """Why a calculator ``expression`` is refused: the task names one operation (相差, divided, twice, …) and the
    expression does not use it. Qwen2.5-Coder-0.5B computed "杭州和深圳的常住人口相差多少万人" as ``1252 + 1779``."""
    named = named_operation(task)
    if named is None or not is_expression(expression):
        return None
    op, word = named
    if op in expression:
        return None
    noun, verb = _OPERATION_NAMES[op]
    return (f"the task asks for {noun} ({word!r}) and the expression has no {op!r}; "
            f"{verb} the figures (for example with {op})")


def named_operation(task: str) -> tuple[str, str] | None:
    """``(operator, the task's word for it)`` when ``task`` names exactly one operation (:data:`OPERATION_WORDS`)."""
    named = {op: word for op, words in OPERATION_WORDS.items()
             if (word := next((w for w in words if says(task, w)), None)) is not None}
    return next(iter(named.items())) if len(named) == 1 else None


_FIGURE_ONLY = re.compile(r"[\s(]*-?\d[\d,]*(?:\.\d+)?[\s)]*")


_SELF_OPERATION = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([-/])\s*\1(?![\d.])")


def self_operation_problem(expression: str) -> str | None:
    """Why a calculator ``expression`` is refused: it subtracts a figure from itself or divides it by itself
    (``2186 - 2186``), which gives 0 or 1 whatever the task. Qwen2.5-Coder-0.5B, asked "北京和成都的常住人口
    相差多少万人" with only 北京's figure found, computed ``2186 - 2186`` and answered 0."""
    found = _SELF_OPERATION.search(expression) if is_expression(expression) else None
    if found is None:
        return None
    figure, op = found.groups()
    verb = "subtracts {0} from itself" if op == "-" else "divides {0} by itself"
    return (f"the expression {verb.format(figure)}; a calculation takes two different figures: find the other "
            "one first if no result has it")


def figure_only_problem(expression: str, task: str) -> str | None:
    """Why a calculator ``expression`` that is one figure and no calculation (``16850``) is refused: its result
    is that figure, which then passes for a computed one. Qwen2.5-Coder-0.5B, asked for "面积的两倍", called
    the calculator with the area alone and answered with it."""
    if not _FIGURE_ONLY.fullmatch(expression):
        return None
    return (f"{expression.strip()!r} is one figure, not a calculation; write the whole calculation the task asks "
            f"for, figures and operation{operation_phrase(task)}")


def operation_phrase(task: str) -> str:
    """`` (the task asks for a product, '两倍': use *)`` when ``task`` names one operation, else ``""``."""
    named = named_operation(task)
    return f" (the task asks for {_OPERATION_NAMES[named[0]][0]}, {named[1]!r}: use {named[0]})" if named else ""


MULTIPLES = {"两倍": 2, "双倍": 2, "二倍": 2, "三倍": 3, "四倍": 4, "五倍": 5, "十倍": 10, "twice": 2, "doubled": 2,
             "tripled": 3}
"""Words that name a multiple, and its factor: "面积的两倍" is the area times 2."""
_MULTIPLE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:倍|times\b)")


def multiple_words(text: str) -> set[tuple[str, str]]:
    """``(word, factor)`` for every multiple ``text`` names ("两倍" → 2, "twice" → 2, "3倍" → 3)."""
    found = {(word, str(factor)) for word, factor in MULTIPLES.items() if says(text, word)}
    return found | {(m.group(0), m.group(1)) for m in _MULTIPLE.finditer(text)}


def named_factor(task: str) -> tuple[str, str] | None:
    """``(the task's word, its factor)`` when ``task`` names one multiple ("两倍", "twice", "3倍"), else None."""
    found = multiple_words(task)
    factors = {factor for _, factor in found}
    return min(found) if len(factors) == 1 else None


def multiple_of(name: str, word: str, lowered: str) -> bool:
    """Whether ``lowered`` (a lower-cased text) asks for the multiple ``word`` of ``name``: "面积的两倍",
    "twice the area"."""
    return f"{name}的{word}" in lowered or f"{word} the {name}" in lowered


def multiplied_figure(task: str, word: str, results: Sequence[str]) -> str | None:
    """The one figure the results label with what ``task`` asks the multiple ``word`` of ("面积的两倍",
    "twice the area": the figure labelled 面积 or area), or None when they hold none or several."""
    from .figures import labelled_figures

    lowered = task.lower()
    of = {figure for label, figure in labelled_figures(results) for name in label
          if not name.isdigit() and multiple_of(name, word, lowered)}
    return next(iter(of)) if len(of) == 1 else None


def factor_expression(task: str, results: Sequence[str]) -> str | None:
    """The calculation ``task`` asks for when it names a multiple of a figure the results label
    ("面积的两倍" and "面积 (area): 16850" give ``16850 * 2``), else None. A refusal quotes it as a whole
    call: Qwen2.5-Coder-0.5B ignored "multiply 16850 by 2" and copied ``{"expression": "16850 * 2"}``."""
    named = named_factor(task)
    if named is None:
        return None
    figure = multiplied_figure(task, named[0], results)
    return f"{figure} * {named[1]}" if figure is not None else None


def factor_problem(expression: str, task: str, results: Sequence[str] = ()) -> str | None:
    """Why a calculator ``expression`` is refused: the task names a multiple ("两倍") and the expression does not
    multiply by its factor. Qwen2.5-Coder-0.5B computed "面积的两倍" as population times area, ``1252 * 16850``.
    When the task names what to multiply ("面积的两倍", "twice the area") and the results label one figure so,
    the refusal names that figure, and an expression without that figure is refused too."""
    from .protocols.prose import numbers

    named = named_factor(task)
    if named is None or not is_expression(expression):
        return None
    word, factor = named
    figure = multiplied_figure(task, word, results)
    written = numbers(expression)
    if figure is not None and figure not in written:  # Qwen doubled the population: `1252 * 2`
        return (f"the task asks for {word!r} of {figure}, the figure the results give for what it multiplies, and "
                f"the expression does not use {figure}; multiply {figure} by {factor}")
    if factor in written:
        return None
    what = f"{figure} (what the task multiplies)" if figure is not None else "the figure"
    return (f"the task asks for {word!r}, a multiple: times {factor}, and the expression has no {factor}; "
            f"multiply {what} by {factor}")


_DIVIDED = re.compile(r"除以|divided by", re.IGNORECASE)
_LABEL_WORDS = re.compile(r"[^\W\d_a-zA-Z]{2,}|[a-zA-Z]{3,}")


def division_order(task: str, results: Sequence[str]) -> tuple[str, str, str, str] | None:
    """``(dividend's label, its figure, divisor's label, its figure)`` when the task says "A 除以 B" ("A divided by
    B") and the results label exactly one figure with the nearest word of A before it and of B after it."""
    from .figures import _LABELLED

    said = _DIVIDED.search(task)
    if said is None or len(_DIVIDED.findall(task)) != 1:
        return None
    lowered = task.lower()
    labels: dict[str, set[str]] = {}
    for r in results:
        for m in _LABELLED.finditer(r):
            for word in _LABEL_WORDS.findall(m["label"]):
                labels.setdefault(word.lower(), set()).add(m["figure"].replace(",", ""))
    before = [(lowered.rfind(w, 0, said.start()), w) for w in labels if lowered.rfind(w, 0, said.start()) >= 0]
    after = [(lowered.find(w, said.end()), w) for w in labels if lowered.find(w, said.end()) >= 0]
    if not before or not after:
        return None
    top, bottom = max(before)[1], min(after)[1]
    if len(labels[top]) != 1 or len(labels[bottom]) != 1 or labels[top] == labels[bottom]:
        return None
    return top, next(iter(labels[top])), bottom, next(iter(labels[bottom]))


def division_problem(expression: str, task: str, results: Sequence[str]) -> str | None:
    """Why a calculator ``expression`` is refused: the task divides A by B and the expression divides B's figure
    by A's. Qwen2.5-Coder-0.5B computed "售价除以续航小时数" (699 元, 30 小时) as ``30 / 699``."""
    from .protocols.prose import numbers

    order = division_order(task, results) if is_expression(expression) else None
    if order is None:
        return None
    top, a, bottom, b = order
    found = {n: m.start() for m in re.finditer(r"\d+(?:\.\d+)?", expression) for n in numbers(m.group(0))
             if n in (a, b)}
    if a in found and b in found and found[b] < found[a]:
        return (f"the task divides {top} ({a}) by {bottom} ({b}), and the expression has them the other way round; "
                f"write {a} / {b}")
    return None


def compounding_problem(expression: str, task: str, computed: Sequence[str], looked_up: Sequence[str]) -> str | None:
    """Why a calculator ``expression`` is refused: the task names one operation ("两倍", "相差") and the expression
    applies it again to a figure only the calculator returned (``computed``; ``looked_up``: the task and the
    other results). Qwen2.5-Coder-0.5B, having computed 16850 * 2 = 33700 for "面积的两倍", went on with
    ``33700 * 2``, ``67400 * 2``, … until the step limit. Rounding a result (``round(743.03)``) applies no
    operator and passes."""
    from .protocols.prose import numbers

    named = named_operation(task)
    if named is None or not is_expression(expression) or named[0] not in expression:
        return None
    known, returned = set().union(*(numbers(t) for t in looked_up)), number_forms(computed)
    again = [n for n in sorted(numbers(expression), key=expression.find)
             if n not in known and not is_plain_constant(n) and n in returned]
    if not again:
        return None
    return (f"{again[0]} is what the calculator already computed for the task's {named[1]!r}, which asks for one "
            f"{_OPERATION_NAMES[named[0]][0]}; answer with {again[0]} (or compute from the figures the tools looked up)")


_ANSWER_CLAUSE = re.compile(r"(?:回答|答复|answer with|reply with|\banswer\s*:)\s*[:：]?(.+)$", re.I | re.S)


def asked_figures(task: str, results: Sequence[str]) -> list[tuple[str, str]]:
    """``(name, figure)`` for each figure the results label with a name the task's answer clause asks for
    ("回答：面积，以及两倍的结果" asks for 面积; "answer with the area and ..." for area). A name the
    clause asks a multiple of ("回答：面积的两倍") is not asked for itself, and a name the results give two
    figures for is left out."""
    from .figures import labelled_figures

    clause = _ANSWER_CLAUSE.search(task)
    if clause is None:
        return []
    asked = clause.group(1).lower()
    multiples = [word for word, _ in multiple_words(asked)]
    found: dict[str, set[str]] = {}
    for label, figure in labelled_figures(results):
        for name in sorted(label, key=len, reverse=True):
            if (len(name) >= 2 and not name.isdigit() and name.lower() in asked
                    and not any(multiple_of(name.lower(), w, asked) for w in multiples)):
                found.setdefault(name, set()).add(figure)
                break
    return [(name, next(iter(figures))) for name, figures in found.items() if len(figures) == 1]


def asked_figure_problem(answer: str, task: str, results: Sequence[str]) -> str | None:
    """Why ``answer`` is refused: the task's answer clause asks for a figure the results give
    (:func:`asked_figures`) and the answer does not state it. Qwen2.5-Coder-0.5B answered
    "……回答：面积，以及两倍的结果。" with "The area of 杭州 is 33700 square kilometers", the doubled
    area, and the area (16850) nowhere."""
    from .protocols.prose import numbers

    stated = numbers(answer)
    missing = [(name, figure) for name, figure in asked_figures(task, results) if not stated & rounded_forms(figure)]
    if not missing:
        return None
    shown = ", ".join(f"{name} ({figure} in the results)" for name, figure in missing)
    return (f"the task asks the answer to state {shown}, and your answer does not; answer with "
            f"{' and '.join(f for _, f in missing)} as well as the rest of what the task asks")


def answer_facts(task: str, calls: Sequence[tuple[str, Any, str]], *, asked: bool = True,
                 calculation_tool: str | None = None) -> list[str]:
    """The facts of the results that answer what ``task`` asks, for a wrap-up to quote: with ``asked``, each
    figure the answer clause asks for that the results label (:func:`asked_figures`: ``面积: 16850``), and, under a
    ``calculation_tool``, its newest result for a task that asks for a calculation, with the operation the
    task names if it names one (``16850 * 2 = 33700``). ``calls`` are the run's successful ``(tool, args,
    observation)``, oldest first.

    Shown the task and every result, Qwen2.5-Coder-0.5B answered "……回答：面积，以及两倍的结果" with
    "The area of 杭州 is 33700 square kilometers" (the doubled area as the area) in every wording asked;
    told which results give what, it answered ``16850`` and ``33700``."""
    from .tools.registry import string_values

    facts = [f"{name}: {figure}" for name, figure in asked_figures(task, [obs for _, _, obs in calls])] if asked else []
    if calculation_tool is not None and asks_for_calculation(task):
        named = named_operation(task)
        for expression, observation in ((v, obs) for tool, args, obs in reversed(calls) if tool == calculation_tool
                                        for v in string_values(args)):  # its arguments, as validate reads them
            if is_expression(expression) and (named is None or named[0] in expression):
                facts.append(f"{' '.join(expression.split())} = {' '.join(observation.split())}")
                break
    return facts


def asked_items(task: str) -> str | None:
    """What the task's answer clause asks for ("回答：面积，以及两倍的结果。" → ``面积，以及两倍的结果``), else None."""
    clause = _ANSWER_CLAUSE.search(task)
    return clause.group(1).strip().rstrip("。.!！") or None if clause is not None else None


def asks_for_calculation(task: str) -> bool:
    """Whether ``task`` says it wants something calculated (one of :data:`CALCULATION_WORDS`; a rounding asked
    for, "四舍五入取整", "rounded to 2 decimal places", is one too: Qwen answered a density asked so with
    the population)."""
    return any(says(task, w) for w in CALCULATION_WORDS)


def calculation_problem(answer: str, task: str, tool: str, computed: Sequence[str]) -> str | None:
    """Why ``answer`` is refused for a task that asks for a calculation: it states no number ``tool``
    returned (``computed``: that tool's results in this run), else None."""
    from .protocols.prose import numbers

    if not asks_for_calculation(task):
        return None
    if numbers(answer) & number_forms(computed):
        return None
    if not computed:
        return (f"the task asks for a calculation and {tool} has not computed anything yet; call {tool} with the "
                "figures from the task and the results, then answer with its result")
    return (f"the task asks for a calculation and your answer states no number {tool} returned; "
            f"answer with {tool}'s result (or call {tool} for what is still to compute)")


_WRITTEN_SUM = re.compile(r"[(\d][\d\s.,+\-*/()×÷]*[+\-*/×÷][\d\s.,+\-*/()×÷]*[\d)](?=\s*=)")


def written_calculation(answer: str, task: str, results: Sequence[str]) -> str | None:
    """The calculation an answer states with its own result ("1252 / 16850 = 0.75"), for the calculator to run,
    else None.

    Only an expression left of an ``=`` whose figures all come from the task or the results, and that uses the
    operation the task names; ``×`` and ``÷`` are written ``*`` and ``/``, thousands separators dropped."""
    for match in _WRITTEN_SUM.finditer(answer):
        expression = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", match.group(0).strip()).replace("×", "*").replace("÷", "/")
        if (is_expression(expression) and figure_problem(expression, task, results) is None
                and operation_problem(expression, task) is None):
            return expression
    return None


def too_few_calls_problem(made: int, needed: int) -> str:
    """Why an answer that came before ``needed`` successful tool calls is refused."""
    calls = "call" if needed == 1 else "calls"
    return (f"an answer needs at least {needed} successful tool {calls} first, and this run has made {made}; "
            "call the tool that gives what the task asks for, then answer from its result")
