"""Runs that wait for an operator: what waits, and the answer that resumes them.

    reinloop runs pending                       pending_runs(db=...)
    reinloop approve THREAD [CALL_ID] ...       approve(thread_id, call_id, edit=..., reject=..., respond=..., always=...)

A run waits when calls of its step need approval (:mod:`reinloop.tools.approval`);
it is stored as it is (status ``running``, its waiting calls in its latest
checkpoint), so any process can answer it later. :func:`approve` resumes it
in this process with one decision, for one call or for every waiting call,
and runs it to its next stop (which may be another approval).

Two processes may answer the same run at once (two ``reinloop approve`` in
two terminals): :func:`reinloop.runs.rundb.answer_claim` lets exactly one of them go on, by one
insert in the tool journal that fails on a duplicate
(:meth:`~reinloop.checkpoints.journal.ToolJournal.decide`); the other is refused
with :class:`~reinloop.errors.AlreadyAnsweredError` before it runs anything,
so a call runs once and the thread has one history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..tools.approval import waiting_calls
from ..errors import ConfigurationError
from .outcome import Outcome
from .rundb import open_db, thread_config


@dataclass(frozen=True)
class PendingRun:
    """A stored run waiting for approval: its task and the calls that wait (id, tool, args, reason, step)."""

    thread_id: str
    task: str
    calls: list[dict[str, Any]]
    updated_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The run as a JSON-able dict."""
        return asdict(self)


def pending_runs(db: str | Path | None = None) -> list[PendingRun]:
    """The stored runs waiting for an operator's approval, most recently updated first."""
    found = []
    with open_db(db) as saver:
        for record in saver.runs.list(status="running"):
            latest = saver.checkpointer.get_tuple(thread_config(record.thread_id))
            calls = waiting_calls(dict(latest.checkpoint["channel_values"])) if latest is not None else []
            if calls:
                found.append(PendingRun(record.thread_id, record.task or "", calls, record.updated_at))
    return found


def decision_of(*, edit: str | Mapping[str, Any] | None = None, reject: str | None = None, respond: str | None = None,
                always: bool = False) -> dict[str, Any]:
    """One decision from :func:`approve`'s options: approve unless ``edit``, ``reject`` or ``respond`` is given."""
    given = [name for name, value in (("edit", edit), ("reject", reject), ("respond", respond)) if value is not None]
    if len(given) > 1:
        raise ConfigurationError(f"give one of --edit, --reject and --respond, not {' and '.join('--' + g for g in given)}")
    if always and given and given[0] != "reject":
        raise ConfigurationError(f"--always goes with approving or --reject, not with --{given[0]}")
    if edit is not None:
        args = edit
        if isinstance(edit, str):
            try:
                args = json.loads(edit)
            except json.JSONDecodeError as exc:
                raise ConfigurationError(f"--edit must be the call's arguments as a JSON object: {exc.msg} "
                                         f"at character {exc.pos}") from None
        return {"action": "edit", "args": args}
    if reject is not None:
        return {"action": "reject", "message": reject, "always": always}
    if respond is not None:
        return {"action": "respond", "text": respond}
    return {"action": "approve", "always": always}


def approve(
    thread_id: str,
    call_id: str | None = None,
    *,
    edit: str | Mapping[str, Any] | None = None,
    reject: str | None = None,
    respond: str | None = None,
    always: bool = False,
    db: str | Path | None = None,
    on_event: Any = None,
    **changes: Any,
) -> Outcome:
    """Answer a run waiting for approval and run it to its next stop.

    One decision (approve; ``edit`` with new arguments, a JSON object; ``reject``
    with a message; ``respond`` with the tool's result) for call ``call_id``, or
    for every waiting call when it is ``None``. ``always`` remembers an approval
    or rejection for the tool in this thread. ``changes`` and objects go to
    :func:`reinloop.runs.api.resume` (``model=``, ``tools=`` for a run started from Python).
    """
    from .api import resume

    decision = decision_of(edit=edit, reject=reject, respond=respond, always=always)
    if call_id is None and decision["action"] == "edit":
        raise ConfigurationError("--edit changes one call's arguments: name the call (reinloop approve THREAD CALL_ID "
                                 "--edit JSON); `reinloop runs pending` lists the waiting calls")
    ids = [call_id] if call_id is not None else [c["id"] for c in waiting_of(thread_id, db)]
    return resume(thread_id, db=db, decisions=dict.fromkeys(ids, decision), on_event=on_event, **changes)


def waiting_of(thread_id: str, db: str | Path | None) -> list[dict[str, Any]]:
    """The calls run ``thread_id`` waits for now (each decided by its own id: "every call" is no pattern)."""
    with open_db(db) as saver:
        latest = saver.checkpointer.get_tuple(thread_config(thread_id))
    return waiting_calls(dict(latest.checkpoint["channel_values"])) if latest is not None else []
