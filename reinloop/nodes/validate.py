"""validate: does each requested tool exist, and are its arguments valid?

A name that differs from a tool's only in case or separators, or that carries
a signature copied from the tool listing (``calculator(expression: string)``),
is taken for the one tool it names; the step keeps the name as written in
``asked_tool``. A name written as a call with no arguments beside it
(``wait(1)``, ``calculator(expression="2+2")``) passes the value in its
brackets to the tool's one required argument.

An argument copied from our own prompt instead of the task is refused: a
format placeholder (``"<expression>"``), or an example value from the tool's
description or schema (``"(22*1.8)+32"``) that neither the task nor any result
of the run contains, brackets and spaces aside. Small models copy the first concrete value they see.
Under ``AnswerRules.calculation_tool`` a call of that tool whose expression
names figures instead of writing them (``quantity * unit_price``) has each
name bound to the one figure the run's results label with it
(:mod:`reinloop.figures`), and the action records ``bound_figures``; and a
call that does not use the one operation the task names (``1252 + 1779`` for
"相差") is refused (:func:`reinloop.answers.operation_problem`), and so is a call of one figure and
no calculation (``16850``, :func:`reinloop.answers.figure_only_problem`), whose result would pass for a
computed one, and a call that does not multiply by the multiple the task names (``1252 * 16850`` for
"面积的两倍", :func:`reinloop.answers.factor_problem`), and one that divides the other way round from the
task's "A 除以 B" (``30 / 699`` for "售价除以续航", :func:`reinloop.answers.division_problem`), and one that
subtracts a figure from itself or divides it by itself (``2186 - 2186``, :func:`reinloop.answers.self_operation_problem`). Before these checks, a figure the results
state only in 万 or millions is written in plain units when the task does not ask in them, recorded as
``scaled_figures`` (:func:`reinloop.figures.scale_figures`).
Under ``AnswerRules.grounded_numbers`` an arithmetic argument takes every
figure from the task or a result
(:func:`reinloop.answers.figure_problem`): a copy may mix the task's figures
with an example's (``(3*12.5)+32``); and none from the part of a result about
something the task does not name while another part is about what it names
(:func:`reinloop.figures.source_problem`: 杭州's 1252 for "北京和成都……").

An optional argument whose value alone makes the call invalid (``"limit": 1000000``
where at most 20 is allowed) is left out, as an argument the tool does not take is:
the tool's default stands in, and the step lists it in ``ignored_args``.

A refused call is not an exception: its problem (the list of available tools,
or the field-level validation errors and the expected schema) becomes the
call's observation, so the model can correct itself on the next step.

A reply with more calls than ``Limits.max_calls_per_step`` is refused as a
whole before any call is looked at: the step records one problem (not one
per call) and nothing runs, so a reply of 5,000 calls costs one short error
message instead of 5,000 executions and 5,000 observations in the prompt.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, Literal

from langgraph.runtime import Runtime

from ..context import AgentContext
from ..events import emit
from ..protocols.base import error_pending
from ..state import Action, AgentState, PendingView
from ..memory.window import current_steps
from ..answers import (compounding_problem, division_problem, factor_expression, factor_problem, figure_only_problem,
                       figure_problem, is_expression, operation_problem, self_operation_problem)
from ..figures import bind_figures, scale_figures, source_problem
from ..tools.registry import ToolRegistry, copied_example, echo, inline_args, single_field, string_values


def check_action(action: Action, tools: ToolRegistry, known: Callable[[], str] = str,
                 figures: Callable[[], tuple[str, list[str]]] | None = None,
                 calculator: tuple[str, Callable[[], tuple[str, list[str]]],
                                   Callable[[], tuple[list[str], list[str]]]] | None = None) -> Action:
    """The action with ``problem`` set if it cannot run as asked (``known`` gives the task and the run's results,
    which make a value that also appears in a tool's example a real one; it is called only for such a value).

    ``figures`` (under ``AnswerRules.grounded_numbers``) gives the task and the results apart: then an
    arithmetic argument must take its figures from them. ``calculator`` (under ``AnswerRules.calculation_tool``)
    is that tool's name, the same parts, and that tool's results apart from the task and the others: a call of it
    has the names in its arguments bound to figures, and is checked against the task's operation."""
    if action.get("problem"):
        return action
    asked = action.get("tool") or ""
    name = tools.resolve(asked)
    if name is None:
        available = ", ".join(tools.names()) or "(none)"
        return {**action, "problem": f"unknown tool {echo(asked)}; available tools: {available}"}
    if name != asked:  # a case, separator or copied-signature slip: run the one tool it names, and say so
        action = {**action, "tool": name, "asked_tool": asked}
    tool = tools.get(name)
    assert tool is not None
    args = action.get("args") or {}
    if not args and "raw_args" not in action and (inline := inline_args(asked, tool)) is not None:
        args = inline  # `wait(1)` as the tool's name: the value in the brackets is its one argument
    if "raw_args" in action and not args:
        field = single_field(tool)
        if field is None:
            return {
                **action,
                "problem": f"the arguments of {name} must be a JSON object, got "
                f"{echo(action['raw_args'])}. Expected: {tools.sketch(name)}",
            }
        args = {field: action["raw_args"]}
    args, ignored = tools.known_args(name, args)
    if ignored:  # not part of the call: neither run nor shown again to the model
        action = {**action, "ignored_args": ignored}
    problem = tools.validate_args(name, args)
    if problem is not None and (defaulted := tools.invalid_optional_args(name, args)):
        # an optional argument with a bad value is left out: the tool's default stands in, and the replay omits it
        args, problem = {k: v for k, v in args.items() if k not in defaulted}, None
        action = {**action, "ignored_args": [*action.get("ignored_args", []), *defaulted]}
    if problem is None and calculator is not None and calculator[0] == name:
        binds = {k: b for k, v in args.items() if isinstance(v, str) and (b := bind_figures(v, calculator[1]()[1]))}
        if binds:
            args = {**args, **{k: text for k, (text, _) in binds.items()}}
            action = {**action, "bound_figures": {n: f for _, bound in binds.values() for n, f in bound.items()}}
        task, results = calculator[1]()
        scales = {k: sc for k, v in args.items() if isinstance(v, str) and (sc := scale_figures(v, task, results))}
        if scales:
            args = {**args, **{k: text for k, (text, _) in scales.items()}}
            action = {**action, "scaled_figures": {f: p for _, done in scales.values() for f, p in done.items()}}
        computed, looked_up = calculator[2]()

        def why(v: str) -> str | None:
            return (figure_only_problem(v, task) or self_operation_problem(v) or operation_problem(v, task)
                    or compounding_problem(v, task, computed, looked_up) or factor_problem(v, task, results)
                    or division_problem(v, task, results))

        problem = next((p for v in string_values(args) if (p := why(v))), None)
        if problem is not None and (whole := factor_expression(task, results)) is not None:
            # the whole call, which a small model copies where it ignored "multiply 16850 by 2"
            fixed = {k: whole if isinstance(v, str) and why(v) else v for k, v in args.items()}
            if fixed != args:
                problem += f": call {name} with {json.dumps(fixed, ensure_ascii=False)}"
    if problem is None and (copied := copied_example(args, tools.examples_of(name), known)) is not None:
        problem = (f"{echo(copied)} is an example from the tool's description or the reply format, not a value "
                   f"from the task; call {name} with the task's own values")
    if figures is not None:
        task, results = figures()
        scaled = [f"{f} = {plain}" for f, plain in (action.get("scaled_figures") or {}).items()]
        expressions = [v for v in string_values(args) if is_expression(v)]
        # the wrong entity's figure first: told only to subtract (1252 + 2186 for "相差"), Qwen kept 杭州's 1252
        wrong = next((p for v in expressions if (p := source_problem(v, task, results))), None)
        problem = wrong or problem or next((p for v in expressions if (p := figure_problem(v, task, [*results, *scaled]))),
                                           None)
    return {**action, "args": args, "problem": problem}


def known_text(state: AgentState) -> str:
    """The task and every result of the current run: where real argument values come from."""
    task, results = known_parts(state)
    return "\n".join([task, *results])


def succeeded(state: AgentState) -> list[Action]:
    """The current run's calls that returned a result (no error, not refused), oldest first.

    Only results: a refusal quotes the refused value, and a value we quoted is not one the model found."""
    return [a for s in current_steps(state) for a in s.get("actions") or [] if not a.get("error") and not a.get("problem")]


def known_parts(state: AgentState) -> tuple[str, list[str]]:
    """The task, and every result of the current run, oldest first."""
    return str(state.get("task") or ""), [str(a.get("observation") or "") for a in succeeded(state)]


def calculated(state: AgentState, tool: str) -> tuple[list[str], list[str]]:
    """``(what tool returned, the task and every other result)`` in the current run."""
    done = succeeded(state)
    return ([str(a.get("observation") or "") for a in done if a.get("tool") == tool],
            [str(state.get("task") or ""), *(str(a.get("observation") or "") for a in done if a.get("tool") != tool)])


def validate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Check every action of the current step against the tool registry."""
    pending = state["pending"] or {}
    if too_many := runtime.context.limits.check_calls(len(pending.get("actions") or [])):
        emit(runtime, "validate", f"reply refused: {too_many}", actions=[], error=too_many)
        return {"pending": error_pending(too_many, pending.get("thought") or "")}
    # The run's results are joined only for an argument that is one of a tool's examples (a long run has many),
    # and then once for the whole reply.
    known = functools.cache(lambda: known_text(state))
    parts = functools.cache(lambda: known_parts(state))
    rules = runtime.context.answers
    figures = parts if rules.grounded_numbers else None
    tool = rules.calculation_tool
    calculator = (tool, parts, functools.cache(lambda: calculated(state, tool))) if tool is not None else None
    actions = [check_action(a, runtime.context.tools, known, figures, calculator) for a in pending.get("actions") or []]
    refused = [a for a in actions if a.get("problem")]
    emit(
        runtime,
        "validate",
        f"{len(actions) - len(refused)} valid, {len(refused)} refused",
        actions=[{"tool": a.get("tool"), "args": a.get("args") or {}, "problem": a.get("problem"),
                  **({"asked_tool": a["asked_tool"]} if a.get("asked_tool") else {}),
                  **({"bound_figures": a["bound_figures"]} if a.get("bound_figures") else {}),
                  **({"scaled_figures": a["scaled_figures"]} if a.get("scaled_figures") else {})} for a in actions],
        error="; ".join(f"{a.get('tool')}: {a['problem']}" for a in refused) or None,
    )
    return {"pending": {**pending, "actions": actions}}


def route_after_validate(state: PendingView) -> Literal["run", "refused"]:
    """Execute if at least one call is valid; otherwise record the refusals."""
    actions = (state.get("pending") or {}).get("actions") or []
    return "run" if any(not a.get("problem") for a in actions) else "refused"
