"""validate: does each requested tool exist, and are its arguments valid?

The loop distrusts the model's format, never its intent: a call runs with
exactly the arguments the model gave, or not at all.

- An unknown tool, an argument the tool does not declare, or an invalid
  value is refused: the problem (the list of tools or of declared arguments,
  a near name it may have meant, the field-level validation errors and the
  expected schema) becomes the call's observation, so the model corrects the
  call itself on its next step. No argument is left out, defaulted or
  rewritten. A tool takes undeclared arguments only when its schema says so
  (``additionalProperties``, or a pydantic model with ``extra="allow"``).
- A few format slips are mended, and each mend is recorded on the action
  (``repairs``), told to the model beside the result and shown by
  ``runs show`` and the report; none changes a value: a name that differs
  from a tool's only in case or separators, or carries a signature copied from
  the tool listing (``calculator(expression: string)``), is taken for the one
  tool it names (``asked_tool`` keeps it as written); a name written as a call
  with nothing else beside it (``wait(1)``) passes the value in its brackets
  to the tool's one required argument. Arguments that are not a JSON object
  (a ReAct ``Action Input: 上海``) are passed whole, unchanged, to a tool's one
  required argument; the action keeps them as written (``raw_args``).
- A tool may opt in to refusing values copied from our prompt instead of the
  task (``configure(tool, refuse_examples=True)``): a format placeholder
  (``"<expression>"``) or one of its own examples (``"(22*1.8)+32"``) that
  the task and the run's results do not contain.

A reply with more calls than ``Limits.max_calls_per_step`` is refused as a
whole before any call is looked at: the step records one problem (not one
per call) and nothing runs, so a reply of 5,000 calls costs one short error
message instead of 5,000 executions and 5,000 observations in the prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from langgraph.runtime import Runtime

from .context import AgentContext
from ..observe.events import emit
from ..protocols.base import error_pending
from ..state import Action, AgentState, PendingView
from ..protocols.memory.window import current_steps
from ..tools.options import options_of
from ..tools.registry import ToolRegistry, copied_example, echo, inline_args, single_field


def check_action(action: Action, tools: ToolRegistry, known: Callable[[], str] = str) -> Action:
    """The action with ``problem`` set if it cannot run exactly as asked, and ``repairs`` listing the format
    slips mended (``known`` gives the task and the run's results; it is called only for a tool that refuses
    copied examples, and only for a value that is one)."""
    if action.get("problem"):
        return action
    asked = action.get("tool") or ""
    name = tools.resolve(asked)
    if name is None:
        available = ", ".join(tools.names()) or "(none)"
        near = tools.near_name(asked)
        hint = f" (did you mean {near}?)" if near else ""
        return {**action, "problem": f"unknown tool {echo(asked)}{hint}; available tools: {available}"}
    repairs = list(action.get("repairs") or [])
    if name != asked:  # a case, separator or copied-signature slip: the one tool it names, and the model is told
        action = {**action, "tool": name, "asked_tool": asked}
        repairs.append(f"you wrote the tool name {echo(asked)}; the tool {name} was called")
    tool = tools.get(name)
    assert tool is not None
    args = action.get("args") or {}
    if not args and "raw_args" not in action and (inline := inline_args(asked, tool)) is not None:
        args = inline  # `wait(1)` as the tool's name: the value in the brackets is its one argument (name told above)
    if "raw_args" in action and not args:
        field = single_field(tool)
        if field is None:
            return {
                **action,
                "problem": f"the arguments of {name} must be a JSON object, got "
                f"{echo(action['raw_args'])}. Expected: {tools.sketch(name)}",
            }
        args = {field: action["raw_args"]}  # a ReAct "Action Input: 上海": the value, whole, as its one argument
    problem = tools.undeclared_args_problem(name, args) or tools.validate_args(name, args)
    if problem is None and options_of(tool).refuse_examples and (
            copied := copied_example(args, tools.examples_of(name), known)) is not None:
        problem = (f"{echo(copied)} is an example from the tool's description or the reply format, and neither "
                   f"the task nor a result has it; call {name} with the task's own values")
    return {**action, "args": args, "problem": problem, **({"repairs": repairs} if repairs else {})}


def known_text(state: AgentState) -> str:
    """The task and every result of the current run: where real argument values come from."""
    return "\n".join([str(state.get("task") or ""), *(str(a.get("observation") or "") for a in succeeded(state))])


def succeeded(state: AgentState) -> list[Action]:
    """The current run's calls that returned a result (no error, not refused), oldest first.

    Only results: a refusal quotes the refused value, and a value we quoted is not one the model found."""
    return [a for s in current_steps(state) for a in s.get("actions") or [] if not a.get("error") and not a.get("problem")]


def validate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Check every action of the current step against the tool registry."""
    pending = state["pending"] or {}
    if too_many := runtime.context.limits.check_calls(len(pending.get("actions") or [])):
        emit(runtime, "validate", f"reply refused: {too_many}", actions=[], error=too_many)
        return {"pending": error_pending(too_many, pending.get("thought") or "")}
    # The run's results are joined only for an argument that is one of a tool's examples (a long run has many),
    # and then once for the whole reply.
    known = functools.cache(lambda: known_text(state))
    actions = [check_action(a, runtime.context.tools, known) for a in pending.get("actions") or []]
    refused = [a for a in actions if a.get("problem")]
    emit(
        runtime,
        "validate",
        f"{len(actions) - len(refused)} valid, {len(refused)} refused",
        actions=[{"tool": a.get("tool"), "args": a.get("args") or {}, "problem": a.get("problem"),
                  **({"asked_tool": a["asked_tool"]} if a.get("asked_tool") else {}),
                  **({"repairs": a["repairs"]} if a.get("repairs") else {})} for a in actions],
        error="; ".join(f"{a.get('tool')}: {a['problem']}" for a in refused) or None,
    )
    return {"pending": {**pending, "actions": actions}}


def route_after_validate(state: PendingView) -> Literal["run", "refused"]:
    """Execute if at least one call is valid; otherwise record the refusals."""
    actions = (state.get("pending") or {}).get("actions") or []
    return "run" if any(not a.get("problem") for a in actions) else "refused"
