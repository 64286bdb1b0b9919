"""Approval gates: which tool calls wait for an operator, and how the operator's answer is read.

A call needs approval when the run's ``RunSpec.approve`` says so for its tool
(``"always"``: every call; ``"ask"``: as the tool's own rule says, every call
if it has none; ``"never"``: no call; ``"*"`` names every tool), or, when the
spec says nothing about the tool, when its :func:`~reinloop.tools.configure`
option ``approval`` is ``True`` or a rule on the arguments that returns true.
A rule that raises asks: an unapproved side effect never happens because a
rule was broken.

The gate sits after validation and before execution (:mod:`reinloop.nodes.execute`
and :mod:`reinloop.nodes.approve`): calls of the step that need no approval
run, the others wait, and the run pauses with an interrupt of kind
:data:`APPROVAL_KIND` that lists them. The operator answers with one decision
per call, named by the id the interrupt lists::

    Command(resume={"decisions": {
        "s1-c1-3fa2b9c1": "approve",                           # or {"action": "approve", "always": True}
        "s1-c2-0b7d44e9": {"action": "edit", "args": {"path": "b.txt", "content": "hi"}},
        "s1-c3-9c2e1a55": {"action": "reject", "message": "not that file"},
        "s1-c4-d41f0c3a": {"action": "respond", "text": "the operator's own result"},
    }})

**One decision binds one call.** A waiting call's id is made by reinloop
(:func:`approval_id`), never taken from the model: it is a hash of the
thread, the step, the call's position in the step, its tool and its
canonical arguments, so a decision can only ever apply to the one call it was
made for: not to a second call of the reply that the model gave the same id,
not to a later step's call, not to the same call with other arguments. No id
is a pattern (``"*"`` is no wildcard); :func:`reinloop.runs.pending.approve`
without a call id decides each call it read as waiting, by its id. The
model's own id stays in the call as ``call_id`` (native tool messages pair on
it). ``always`` (with approve or reject) is remembered for the tool in the
thread's state, stored in the run database, so later calls of it in the
thread do not ask again. Calls left without a decision keep waiting.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from ..errors import ConfigurationError, SettingError

APPROVAL_KIND = "reinloop.approval"
"""The ``kind`` of an interrupt payload that lists calls waiting for approval."""
RULES: tuple[str, ...] = ("ask", "always", "never")
"""What ``RunSpec.approve`` may say about a tool (``True`` is ``"ask"``, ``False`` is ``"never"``)."""
ACTIONS: tuple[str, ...] = ("approve", "edit", "reject", "respond")
"""The decisions an operator can take on a waiting call."""
SIDE_EFFECTS = "*side_effects"
"""The ``RunSpec.approve`` key for every tool declared ``side_effects=True`` that the rules do not name: the
built-ins ``write_file`` and ``db_insert``, MCP tools the server marks destructive (or gives no hints), your own
``configure(tool, side_effects=True)``. The command line's default is ``{SIDE_EFFECTS: "ask"}``."""
SIDE_EFFECTS_WORD = "side-effects"
"""``SIDE_EFFECTS`` as the command line's ``--approve`` writes it."""
EXPECTED = ('Command(resume={"decisions": {CALL_ID: "approve" | "reject" | {"action": "approve" | "edit" | '
            '"reject" | "respond", "args": {...}, "message": "...", "text": "...", "always": true}}})')

Rule = Literal["ask", "always", "never"]


class Decision(TypedDict, total=False):
    """One operator decision on a waiting call, as read from the answer."""

    action: Literal["approve", "edit", "reject", "respond"]
    args: dict[str, Any]
    message: str
    text: str
    always: bool


def approve_rules(value: Any) -> dict[str, Rule] | None:
    """``RunSpec.approve`` checked and normalised: ``{"write_file": "ask", "*": "never"}`` (``None``: tools decide)."""
    if value is None:
        return None
    if isinstance(value, str):
        return approve_from_text(value)
    if not isinstance(value, Mapping):
        raise SettingError("RunSpec", "approve", "must map tool names to True, False, 'ask', 'always' or 'never', "
                           f"e.g. {{'write_file': True}}; got {value!r}", shown=False)
    rules: dict[str, Rule] = {}
    for name, rule in value.items():
        word = {True: "ask", False: "never"}.get(rule, rule) if isinstance(rule, bool) else rule
        if not isinstance(name, str) or word not in RULES:
            raise SettingError("RunSpec", "approve", "must be True, False, 'ask', 'always' or 'never'", value=rule,
                               sentence=f"{{setting}}[{name!r}] {{reason}}")
        rules[name] = word
    return rules


def approve_from_text(text: str) -> dict[str, Rule]:
    """The command line's ``--approve``: ``write_file,db_insert``, ``db_insert=always``, ``side-effects``, ``all`` or ``none``."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if words == ["none"]:
        return {"*": "never"}
    if words == ["all"]:
        return {"*": "always"}
    rules: dict[str, Rule] = {}
    for word in words:
        name, _, rule = word.partition("=")
        rule = rule.strip() or "ask"
        if rule not in RULES or not name.strip():
            raise ConfigurationError(f"must be tool names (write_file,db_insert), NAME=ask|always|never, "
                                     f"{SIDE_EFFECTS_WORD} (every tool with side effects), all or none; got {word!r}")
        name = name.strip()
        rules[SIDE_EFFECTS if name == SIDE_EFFECTS_WORD else name] = rule  # type: ignore[assignment]
    if not rules:
        raise ConfigurationError("must name at least one tool, or be all or none")
    return rules


def check_names(rules: Mapping[str, str] | None, tools: list[str], known: list[str]) -> None:
    """Refuse rules that name a tool that is neither one of the run's ``tools`` nor a ``known`` one (the built-ins):
    a misspelt ``--approve write_fle`` would otherwise replace the default rule and let ``write_file`` run unasked."""
    unknown = [name for name in rules or {} if name not in ("*", SIDE_EFFECTS) and name not in (*tools, *known)]
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], [*tools, *known], n=1)
    raise SettingError("RunSpec", "approve", f"must name tools of this run ({', '.join(tools) or 'it has none'}), "
                       f"or be {SIDE_EFFECTS_WORD} (every tool with side effects), all or none", value=unknown[0],
                       sentence="{setting} {reason}" + (f"; did you mean {close[0]!r}?" if close else ""))


def cli_default() -> dict[str, Rule]:
    """What the command line asks approval for without ``--approve``: every tool with side effects."""
    return {SIDE_EFFECTS: "ask"}


def rule_for(name: str, side_effects: bool, rules: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The rule that applies to tool ``name``, and its key: its own, else ``SIDE_EFFECTS`` for such a tool, else ``*``."""
    for key in (name, SIDE_EFFECTS if side_effects else None, "*"):
        if key is not None and key in rules:
            return rules[key], key
    return None, None


def approval_reason(name: str, own: Any, args: dict[str, Any], rules: Mapping[str, str] | None,
                    side_effects: bool = False) -> str | None:
    """Why a call of tool ``name`` (its ``approval`` option: ``own``; ``side_effects``: declared so) with ``args``
    needs approval, or ``None``."""
    rule, key = rule_for(name, side_effects, rules or {})
    if rule == "never":
        return None
    if rule == "always" or (rule == "ask" and not callable(own)):
        which = f"every {name} call" if key == name else (
            f"every call of a tool with side effects, {name} among them" if key == SIDE_EFFECTS else "every call")
        return f"the run asks approval for {which} (approve={{{key!r}: {rule!r}}})"
    if callable(own):
        try:
            picked = bool(own(dict(args)))
        except Exception as exc:  # noqa: BLE001 - a broken rule must not let a call through
            return f"{name}'s approval rule raised {type(exc).__name__}: {exc}; asking to be safe"
        return f"{name}'s approval rule picked these arguments" if picked else None
    return f"{name} is configured to need approval" if own is True else None


def approval_id(thread_id: str, step: int, index: int, tool: str, args: Mapping[str, Any], run: int = 0) -> str:
    """The id an operator decides a waiting call by: ``s{step}-c{position}-{hash}``, the hash binding it to the
    thread (and its ``run``: the task on it), the step, the call's position in the step, its tool and its
    canonical arguments."""
    canonical = json.dumps([thread_id, run, step, index, tool, args], sort_keys=True, ensure_ascii=False, default=str,
                           separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"s{step}-c{index + 1}-{digest}"


def read_decisions(answer: Any, waiting: list[Mapping[str, Any]], validate: Any) -> dict[str, Decision]:
    """The operator's answer as one checked decision per waiting call id (undecided calls left out).

    Each key must be the ``id`` of a waiting call, exactly: no id is a pattern.
    ``validate(tool, args)`` returns the problem of edited arguments, or ``None``;
    an edit it refuses raises :class:`~reinloop.errors.ConfigurationError` with the problem.
    """
    if not isinstance(answer, Mapping) or not isinstance(answer.get("decisions"), Mapping) or set(answer) - {"decisions"}:
        raise ConfigurationError(f"cannot answer calls waiting for approval with {answer!r}; expected {EXPECTED}")
    given = dict(answer["decisions"])
    ids = {str(a.get("id")): a for a in waiting}
    unknown = sorted(str(k) for k in set(given) - set(ids))
    if unknown:
        raise ConfigurationError(f"no call {', '.join(map(repr, unknown))} waits for approval; waiting: "
                                 f"{', '.join(ids) or '(none)'} (a decision names one waiting call by its id)")
    return {call_id: read_decision(call_id, given[call_id], action, validate)
            for call_id, action in ids.items() if given.get(call_id) is not None}


def read_decision(call_id: str, raw: Any, action: Mapping[str, Any], validate: Any) -> Decision:
    """One call's decision, checked; an edit's arguments are validated against the tool's schema."""
    decision = {"action": raw} if isinstance(raw, str) else raw
    if not isinstance(decision, Mapping) or decision.get("action") not in ACTIONS:
        raise ConfigurationError(f"bad decision for call {call_id!r}: {raw!r}; expected {EXPECTED}")
    kind = decision["action"]
    allowed = {"action", "always", {"edit": "args", "reject": "message", "respond": "text"}.get(kind, "action")}
    extra = sorted(set(decision) - allowed)
    if extra:
        raise ConfigurationError(f"decision {kind!r} for call {call_id!r} takes no {', '.join(extra)}; expected {EXPECTED}")
    if decision.get("always") and kind not in ("approve", "reject"):
        raise ConfigurationError(f"'always' goes with approve or reject, not {kind!r} (call {call_id!r})")
    out = Decision(action=kind, always=bool(decision.get("always")))
    if kind == "edit":
        args = decision.get("args")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError as exc:
                raise ConfigurationError(f"the edited arguments of call {call_id!r} are not JSON: {exc.msg}") from None
        if not isinstance(args, Mapping):
            raise ConfigurationError(f"the edited arguments of call {call_id!r} must be a JSON object, got {args!r}")
        problem = validate(action["tool"], dict(args))
        if problem:
            raise ConfigurationError(f"the edited arguments of call {call_id!r} were refused: {problem}")
        out["args"] = dict(args)
    elif kind == "reject":
        out["message"] = str(decision.get("message") or "the operator rejected this call")
    elif kind == "respond":
        if not isinstance(decision.get("text"), str) or not decision["text"].strip():
            raise ConfigurationError(f"respond needs the result's text for call {call_id!r}")
        out["text"] = decision["text"]
    return out


def rejected_observation(tool: str, message: str) -> str:
    """What the model reads for a call the operator rejected."""
    return f"REJECTED: the operator did not allow this {tool} call: {message}"


def bound_id(action: Mapping[str, Any], index: int, step: int) -> str:
    """The approval id of a waiting ``action``, the ``index``-th call of ``step``: the one the gate gave it
    (:func:`approval_id`, thread included); a call stored before approval ids, one made without the thread."""
    return str(action.get("approval_id") or approval_id("", step, index, str(action.get("tool")), action.get("args") or {}, 0))


def waiting_calls(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calls of the state's current step that wait for an operator: id (:func:`approval_id`), tool, args,
    reason, step, and the call's own ``call_id``."""
    step = (state.get("counters") or {}).get("steps", 0) + 1
    actions = (state.get("pending") or {}).get("actions") or []
    return [{"id": bound_id(a, i, step), "tool": a.get("tool"), "args": a.get("args") or {}, "reason": a["awaiting"],
             "step": step, "call_id": a.get("id")}
            for i, a in enumerate(actions) if a.get("awaiting")]
