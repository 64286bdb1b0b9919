"""A scripted chat model for tests and demos: deterministic, offline, with ``bind_tools``.

:class:`ScriptedChatModel` answers from a queue of replies, one per call:

- a ``str``: a plain text reply (ReAct text, chatter, a final answer);
- a ``dict``: a JSON reply (the dict serialised), for the ``json`` protocol;
- a ``list`` of :func:`tool_call` dicts: a native tool-calling reply;
- an ``AIMessage``: sent as it is (thought plus tool calls, invalid tool calls ...);
- an ``Exception`` instance: raised, to simulate a failing endpoint;
- a callable ``(messages) -> any of the above``: a reply computed from the prompt.

It records every prompt it was sent (:attr:`ScriptedChatModel.prompts`) and
the call options with it (:attr:`ScriptedChatModel.call_options`, e.g. the
``max_tokens`` reinloop caps each reply with), reports fixed
``usage_metadata``, and raises
:class:`~reinloop.errors.ScriptExhaustedError` when the script runs out.

Calls from reinloop's summarizer carry a tag
(:data:`reinloop.protocols.memory.SUMMARIZER_TAG`); they are answered by
``summary_reply`` (by default :func:`facts_summary`, an extractive summary
of the prompt) instead of consuming the script, and recorded apart in
:attr:`ScriptedChatModel.summary_prompts`. So a scripted run reads the same
with or without summaries.

A reply cut off at the token cap finishes with ``finish_reason="length"``:
script one with :func:`cut_off`, or give the model a ``max_tokens`` of its
own (like an endpoint's hard cap) and longer replies are cut to it.

Prompt-only helpers: :func:`prompt_text` (all the text a prompt holds),
:func:`answer_from_prompt` (a reply that can only use what the prompt says)
and :func:`facts_summary` (a summarizer that can only use its prompt).

:func:`replay_model` serves a stored run's replies in order, and :func:`replay_report`
re-runs a stored run on them and reports the first step where it diverges (:mod:`reinloop.runs.replay`).

:class:`SimulatedModel` (from :mod:`reinloop.models.simulation`, re-exported here) is
the benchmark's flaky stand-in: it follows a task's plan and makes seeded mistakes.
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
