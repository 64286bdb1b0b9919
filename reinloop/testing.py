"""The public testing kit: deterministic, offline models for tests and demos.

:class:`ScriptedChatModel` answers from a queue of replies, one per call, and records every prompt (its
module, :mod:`reinloop.models.scripted`, says what a reply may be, how summaries and cut replies work, and
the prompt-only helpers :func:`prompt_text`, :func:`answer_from_prompt` and :func:`facts_summary`);
:func:`tool_call` and :func:`cut_off` make replies. :func:`replay_model` serves a stored run's replies in
order, and :func:`replay_report` re-runs a stored run on them and reports the first step where it diverges
(:mod:`reinloop.runs.replay`). :class:`SimulatedModel` (:mod:`reinloop.models.simulation`) is the
benchmark's flaky stand-in: it follows a task's plan and makes seeded mistakes.
"""

from __future__ import annotations

from typing import Any

from .models.scripted import (  # noqa: F401  (the scripted model and its helpers live with the models; re-exported)
    FAULTS, Plan, PlanStep, ScriptedChatModel, SimulatedModel, answer_from_prompt, cut_off, facts_summary, prompt_text,
    tool_call,
)


def replay_model(thread_id: str, db: Any = None) -> ScriptedChatModel:
    """A scripted model that serves stored run ``thread_id``'s model replies in order (:mod:`reinloop.runs.replay`).

    ``db`` is the run database (a path, a ``postgresql://`` URL, ``None``: ``$REINLOOP_DB``). Build a graph
    on it to test a change against a recorded run; :func:`replay_report` does the whole comparison.
    """
    from .runs.replay import recorded_calls, served_replies
    from .runs.rundb import open_db

    with open_db(db) as saver:
        calls = recorded_calls(saver, thread_id)
    return ScriptedChatModel(replies=served_replies(calls), usage=None)


def replay_report(thread_id: str, db: Any = None, **options: Any) -> Any:
    """:func:`reinloop.runs.replay.replay`: the stored run re-run on its replies, and its first divergence (``None``: identical)."""
    from .runs.replay import replay

    return replay(thread_id, db, **options)
