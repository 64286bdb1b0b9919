"""A reply the calculation rule would refuse, asked again at once with the tools narrowed.

Under ``AnswerRules.calculation_tool`` two replies come before their time, and
a greedy small model, told so, writes them again until a limit breaks the run.
Qwen2.5-Coder-0.5B, on tasks that need a figure looked up and then computed:

- called the calculator first, with the names of figures it had not looked up
  (``price /续航_hours``) or with made-up ones (``1000000 / 2000000``), seven
  times in a row (the calculator's error, saying to find the figures first,
  did not move it);
- with the figures in front of it, answered with one of them ("1252 people
  per square kilometer") instead of computing.

Each is asked again once, greedily, in a fresh prompt (the system message,
the task, the run's results verbatim and one question, with none of the
model's own replies, as :mod:`reinloop.repeats` does for a known repeat):

- ``figures_first``: a call of the calculator whose expression needs figures
  (a name, or a figure in neither the task nor any result) while no result
  holds a figure yet is asked again **without** the calculator
  (:data:`FIGURES_FIRST`); shown the same prompt that way, Qwen searched;
- ``calculate_first``: an answer to a task that asks for a calculation
  (:func:`~reinloop.answers.asks_for_calculation`), before the calculator has
  returned anything and with results in hand, is asked again with the
  calculator **alone** (:data:`CALCULATE_FIRST`); Qwen then called it.

Under ``vary_repeats`` too, a repeat of a read-only call whose result the run
has (:mod:`reinloop.repeats`) is asked again with the calculator alone and the
same question when the calculation is due (:func:`calculation_due`: the task
asks for one, a result holds a figure, the calculator has returned nothing):
Qwen re-read an order file three times with its quantity and unit price in
hand, the tool withheld, and only computed the total once told to.

Either way the re-ask's reply goes on to parse like any other, under every
rule: nothing is accepted that the rules would refuse, and a second wrong
reply is refused as before. The reply put aside is counted (calls, tokens,
cost) and the step records a ``steered`` memory event.
"""

from __future__ import annotations

from typing import Any, Literal

from .answers import (asks_for_calculation, calculation_problem, figure_problem, is_plain_constant, operation_phrase,
                      written_calculation, written_call)
from .memory.ledger import results
from .memory.window import current_steps
from .state import AgentState, Reply
from .tools.arithmetic import named_quantities
from .tools.registry import string_values

Reason = Literal["figures_first", "calculate_first"]

FIGURES_FIRST = ("{tool} needs figures that no tool result holds yet: find them first. Which tool finds "
                 "what the task needs? Call that one now.")
"""The question of a ``figures_first`` re-ask (``{tool}``: the calculator's name)."""
CALCULATE_FIRST = ("The answer needs a calculation{how}. Which figures from the results does it take? "
                   "Call {tool} with them now.")
"""The question of a ``calculate_first`` re-ask (``{how}``: the operation the task names, if one,
:func:`~reinloop.answers.operation_phrase`)."""


def needs_figures(expression: str, task: str, observed: list[str]) -> bool:
    """Whether ``expression`` cannot be computed as written from what the run knows: it names quantities
    ("price / hours") or holds a figure that neither the task nor any result states
    (:func:`~reinloop.answers.figure_problem`'s test)."""
    return bool(named_quantities(expression)) or figure_problem(expression, task, observed) is not None


def holds_figures(observed: list[str]) -> bool:
    """Whether any result states a figure beyond the plain constants (0-10, powers of ten)."""
    from .protocols.prose import numbers

    return any(not is_plain_constant(n) for r in observed for n in numbers(r))


def calculation_due(state: AgentState, ctx: Any) -> str | None:
    """The :data:`CALCULATE_FIRST` question when the run's next step is the calculation the task asks for (a
    result holds a figure and the calculator has returned nothing yet), else None."""
    tool = ctx.answers.calculation_tool
    task = str(state.get("task") or "")
    if tool is None or ctx.tools.get(tool) is None or not asks_for_calculation(task):
        return None
    done = results(current_steps(state))
    if any(r["tool"] == tool for r in done) or not holds_figures([r["observation"] for r in done]):
        return None
    return CALCULATE_FIRST.format(tool=tool, how=operation_phrase(task))


def steer(state: AgentState, ctx: Any, protocol: Any, reply: Reply) -> tuple[Reason, list[str], str] | None:
    """``(reason, the tools to offer, the question)`` when ``reply`` is to be asked again, else None."""
    from .nodes.parse import read_text

    tool = ctx.answers.calculation_tool
    if tool is None or ctx.tools.get(tool) is None or state.get("wrap_up") or reply.get("truncated"):
        return None
    pending = read_text({**state, "reply": reply}, ctx, protocol)  # type: ignore[typeddict-item]
    task = str(state.get("task") or "")
    done = results(current_steps(state))
    observed = [r["observation"] for r in done]
    actions = pending.get("actions") or []
    if len(actions) == 1 and ctx.tools.resolve(str(actions[0].get("tool") or "")) == tool:
        expressions = string_values(actions[0].get("args") or {})
        if not holds_figures(observed) and any(needs_figures(e, task, observed) for e in expressions):
            others = [name for name in ctx.tools.names() if name != tool]
            return ("figures_first", others, FIGURES_FIRST.format(tool=tool)) if others else None
        return None
    answer = pending.get("answer")
    if actions or answer is None or pending.get("parse_error") or not done or not asks_for_calculation(task):
        return None
    if any(written_call(str(answer), ctx.tools.names())):  # a call written as text: parse reads it as one
        return None
    computed = [r["observation"] for r in done if r["tool"] == tool]
    if computed or calculation_problem(str(answer), task, tool, computed) is None:
        return None
    if written_calculation(str(answer), task, observed) is not None:  # parse runs the calculation it states
        return None
    return "calculate_first", [tool], CALCULATE_FIRST.format(tool=tool, how=operation_phrase(task))
