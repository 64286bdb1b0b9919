"""The shapes a reinloop state's channels must have when they are read back from a run database.

A run database can be edited outside reinloop. A value that is JSON but of the wrong shape (a scratchpad
that is a number, a counter that is a string, a step count past 64 bits) would otherwise travel into the
loop, ``runs show`` or ``replay`` and end in a traceback far from where it was read. The saver checks each
channel of a reinloop state once, as it is read (:meth:`~reinloop.checkpoints.sql.SqlCheckpointer.get_tuple`
and ``list``), against the types :class:`reinloop.state.AgentState` declares, and refuses one that does not
match with a :class:`~reinloop.errors.StoredDataError` naming the channel and the field in it.

The check reads the TypedDicts' own annotations, so a field added to the state is checked without a change
here. Keys the state does not declare are let through (an older or newer reinloop may have written them);
a required key that is missing is refused. Another graph's state (one without reinloop's ``task`` and
``counters`` channels) is not checked.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

from ..errors import StoredDataError

INT_BOUND = 2**63  # what the stores write (orjson, SQLite, PostgreSQL bigint)
MARKERS = frozenset({"task", "counters"})  # channels that make a checkpoint a reinloop state's
NOT_NEGATIVE = frozenset({"counters", "extensions", "memory_cursor", "run", "model_index"})  # counts, never below 0


@functools.cache
def channel_types() -> dict[str, Any]:
    """Each channel of :class:`~reinloop.state.AgentState` and its declared type."""
    from ..state import AgentState  # the loop's state: imported when a checkpoint is read, not with the stores

    return typing.get_type_hints(AgentState)


def is_reinloop_state(channels: Mapping[str, Any]) -> bool:
    """Whether a checkpoint with these channels holds a reinloop state."""
    return MARKERS <= channels.keys()


def check_skeleton(skeleton: Mapping[str, Any]) -> None:
    """Refuse a checkpoint (its channel values aside) without the fields LangGraph reads: ``v``, the versions seen."""
    if type(skeleton.get("v")) is not int:
        raise StoredDataError("v", f"it is {short(skeleton.get('v'))}, not the checkpoint format's number")
    seen = skeleton.get("versions_seen", {})
    if not isinstance(seen, dict) or not all(isinstance(v, dict) for v in seen.values()):
        raise StoredDataError("versions_seen", f"it is {short(seen)}, not an object of objects")
    updated = skeleton.get("updated_channels")
    if updated is not None and (not isinstance(updated, list) or not all(isinstance(c, str) for c in updated)):
        raise StoredDataError("updated_channels", f"it is {short(updated)}, not a list of channel names")


def check_channel(channel: str, value: Any) -> None:
    """Refuse ``value`` of a reinloop state's ``channel`` when it is not of the declared type.

    The error's field is the path inside the channel (``"3.actions.0.args"``), its problem what was found.
    """
    hint = channel_types().get(channel)
    if hint is not None:
        check(value, hint, "", channel in NOT_NEGATIVE)


def check(value: Any, hint: Any, path: str, counts: bool = False, partial: bool = False) -> None:
    """Raise a :class:`StoredDataError` at ``path`` when ``value`` is not a ``hint``.

    ``counts``: numbers below are counts, never negative; ``partial``: the top-level object may lack required keys.
    """
    origin = get_origin(hint)
    if hint is Any or hint is object:
        return
    if origin in (Union, types.UnionType):
        arms = [a for a in get_args(hint) if a is not type(None)]
        if value is None and len(arms) < len(get_args(hint)):
            return
        if len(arms) == 1:
            return check(value, arms[0], path, counts, partial)
        if not any(fits(value, arm) for arm in arms):
            wrong(value, hint, path)
        return
    if origin is Literal:
        if not any(type(value) is type(a) and value == a for a in get_args(hint)):
            raise StoredDataError(path, f"it is {short(value)}, not one of {', '.join(map(repr, get_args(hint)))}")
        return
    if is_typeddict(hint):
        return check_dict(value, hint, path, counts, partial)
    if origin in (list, dict):
        if not isinstance(value, origin):
            wrong(value, hint, path)
        args = get_args(hint)
        items = enumerate(value) if origin is list else value.items()
        for key, item in items:
            if not isinstance(key, (int, str)):
                raise StoredDataError(path, f"it has a key that is a {type(key).__name__}")
            check(item, args[-1] if args else Any, join(path, key), counts)
        return
    if not fits(value, hint):
        wrong(value, hint, path)
    if counts and type(value) in (int, float) and value < 0:
        raise StoredDataError(path, f"it is {short(value)}, a negative count")


def check_dict(value: Any, hint: Any, path: str, counts: bool, partial: bool = False) -> None:
    """A TypedDict: a JSON object whose declared keys have their types and whose required keys are there."""
    if not isinstance(value, dict):
        wrong(value, hint, path)
    fields, required = typed_fields(hint)
    missing = [] if partial else sorted(required - value.keys())
    if missing:
        raise StoredDataError(path, f"it has no {', '.join(missing)}")
    for key, item in value.items():
        if key in fields:
            check(item, fields[key], join(path, key), counts)


@functools.cache
def typed_fields(hint: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A TypedDict's field types and its required keys.

    Read from the annotations, not ``__required_keys__``: under ``from __future__ import annotations`` Python
    3.11 counts a ``NotRequired`` field as required.
    """
    extras = typing.get_type_hints(hint, include_extras=True)
    required = {k for k, t in extras.items() if get_origin(t) is not typing.NotRequired} if hint.__total__ else set()
    required |= {k for k, t in extras.items() if get_origin(t) is typing.Required}
    return typing.get_type_hints(hint), frozenset(required)


def fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is a ``hint`` at its top level (a plain type, a list, a dict, a TypedDict, a Literal)."""
    origin = get_origin(hint) or hint
    if hint is Any or hint is object:
        return True
    if hint is type(None):
        return value is None
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in get_args(hint))
    if is_typeddict(hint):
        return isinstance(value, dict)
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int and -INT_BOUND <= value < INT_BOUND
    if hint is float:
        return type(value) is float or (type(value) is int and -INT_BOUND <= value < INT_BOUND)
    return isinstance(origin, type) and isinstance(value, origin) and type(value) is not bool


def wrong(value: Any, hint: Any, path: str) -> typing.NoReturn:
    raise StoredDataError(path, f"it is {short(value)}, not {describe(hint)}")


def short(value: Any) -> str:
    """A value as a problem shows it: its type and the start of its text."""
    text = repr(value)
    return f"a {type(value).__name__} ({text[:40]}{'...' if len(text) > 40 else ''})"


def describe(hint: Any) -> str:
    """A declared type in words (``int``, ``a list``, ``an object``, ``str or None``)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in get_args(hint))
    if is_typeddict(hint) or origin is dict:
        return "an object"
    if origin is list:
        return "a list"
    if hint is type(None):
        return "None"
    if hint is int:
        return "an integer of 64 bits"
    return getattr(hint, "__name__", str(hint))


def join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)
