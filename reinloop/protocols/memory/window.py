"""The short-term window: which steps of the run stay in the prompt verbatim.

A step is atomic: the model's decision and the observations of its calls are
rendered together or not at all, so a tool call never loses its result (the
error providers reject, and the one summaries that cut mid-step cause).

Three rules decide what is shown, newest first:

- **dedup** (seed 003's LRU): a step whose every (action, observation) pair
  reappears in a newer step is hidden; the newer one stands for both, so a
  repeated lookup refreshes its position instead of being shown twice;
- **window**: it grows by one step a step and is cut back at a fold to its
  newest ``window_steps`` steps. By default the fold comes when the window's
  steps pass ``fold_tokens`` (:func:`steps_past_size`); with ``summary_batch``
  it comes every ``summary_batch`` steps (:func:`rolling_cap`: the window
  grows up to ``window_steps + summary_batch - 1`` steps, then folds the
  oldest ``summary_batch``). Between folds each prompt is the previous
  one plus the new step, so a provider's prompt cache serves all of it but the
  new step (a window sliding one step a step changed the prompt right after
  the summary at every call, and missed the cache from there). Folding by size
  folds rarely: a fold rewrites the prompt fresh and writes a summary at the
  output price, while re-reading a step from the cache costs a tenth of the
  input price. It only ever
  holds as many steps as fit the token budget left after the fixed parts;
- **folding**: steps that do not fit the budget wait outside the window
  (their tool results stay in the prompt, verbatim, through the ledger) until
  ``summary_batch`` of them have gathered, then are folded into the summary
  together: the summarizer is called once per batch, never once per step.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...state import Step
from .memo import IdentityMemo


def current_steps(state: Mapping[str, Any]) -> list[Step]:
    """The steps of the run in progress (a thread may hold several runs).

    Steps are appended in run order, so the run's steps are the scratchpad's
    tail, found by bisection: a long run's prompt does not walk all its steps.
    """
    run = state.get("run", 0)
    pad = state.get("scratchpad") or []
    tail = pad[bisect.bisect_left(pad, run, key=lambda s: s.get("run", 0)):]
    return tail if not tail or tail[-1].get("run", 0) == run else [s for s in tail if s.get("run", 0) == run]


def unfolded_steps(state: Mapping[str, Any]) -> list[Step]:
    """The run's steps that are not yet in the summary (step indices grow within a run)."""
    folded = (state.get("memory_cursor") or {}).get("folded", 0)
    steps = current_steps(state)
    return steps[bisect.bisect_right(steps, folded, key=lambda s: s.get("index", 0)):]


def step_keys(step: Step) -> frozenset[Any]:
    """What a step showed the model: its (tool, arguments, observation) triples, or its reply.

    Only the arguments are serialised: a long observation is its own key (a string hashes once), so a
    window of 2 KB results is not turned to JSON at every prompt. Two keys are equal exactly when the
    JSON of the three was.
    """
    actions = step.get("actions") or []
    if not actions:
        return frozenset([json.dumps(["reply", step.get("raw"), step.get("parse_error")], ensure_ascii=False)])
    return frozenset(
        (a.get("tool"), json.dumps(a.get("args") or {}, sort_keys=True, ensure_ascii=False, default=str),
         observation_key(a.get("observation")))
        for a in actions
    )


def observation_key(observation: Any) -> Any:
    """An observation as a key: a string or ``None`` as it is, anything else by its JSON (tagged: never equal to a string)."""
    if observation is None or isinstance(observation, str):
        return observation
    return ("json", json.dumps(observation, sort_keys=True, ensure_ascii=False, default=str))


KEYS: IdentityMemo[frozenset[Any]] = IdentityMemo()
"""Each recorded step's :func:`step_keys`: dedup compares them at every prompt."""


def hidden_duplicates(steps: Sequence[Step]) -> dict[int, int]:
    """Steps repeated by a newer step: index of the older step -> index of the newer one."""
    hidden: dict[int, int] = {}
    newer: list[tuple[int, frozenset[str]]] = []
    for step in reversed(steps):
        if step.get("answer") is not None:
            continue  # a final answer is never hidden
        keys = KEYS.get((step,), None, lambda: step_keys(step))  # noqa: B023  (called at once)
        covering = next((index for index, later in newer if keys <= later), None)
        if covering is not None:
            hidden[step["index"]] = covering
        else:
            newer.append((step["index"], keys))
    return hidden


def fit_window(
    steps: Sequence[Step], cost: Callable[[Step], int], budget: float, window_steps: int | None
) -> list[Step]:
    """The newest steps that fit ``budget`` tokens, at most ``window_steps``, oldest first.

    Stops at the first step that does not fit: the window is contiguous.
    """
    shown: list[Step] = []
    left = budget
    for step in reversed(steps):
        if window_steps is not None and len(shown) >= window_steps:
            break
        tokens = cost(step)
        if tokens > left:
            break
        shown.append(step)
        left -= tokens
    return shown[::-1]


def rolling_cap(window_steps: int | None, batch: int | None) -> int | None:
    """Most steps the rolling window holds: ``window_steps`` after a fold, ``batch - 1`` more before the next
    (``None``: no cap in steps, when folding by size)."""
    return None if window_steps is None or batch is None else window_steps + batch - 1


def steps_past_size(shown: Sequence[Step], step_tokens: int, fold_tokens: int | None, keep: int | None) -> list[Step]:
    """The shown steps to fold when they take ``step_tokens`` > ``fold_tokens``: all but the newest ``keep``."""
    if fold_tokens is None or keep is None or step_tokens <= fold_tokens or len(shown) <= keep:
        return []
    return list(shown[: len(shown) - keep])


def steps_to_fold(visible: Sequence[Step], shown: int, batch: int | None, keep: int | None = None) -> list[Step]:
    """The oldest visible steps to fold, once there are ``batch`` of them.

    When steps did not fit (``shown`` < all), the window rolls back to its
    newest ``keep`` steps (``window_steps``), or to those that fit the budget.
    Fewer than ``batch`` wait (outside the window, in the ledger); the shown
    steps are never folded, unless none fits at all.
    """
    overflow = len(visible) - shown
    if overflow <= 0:
        return []
    count = overflow if keep is None else max(overflow, len(visible) - keep)
    if shown and count < (batch or 1):  # folding by size: what the budget pushed out is folded at once
        return []
    return list(visible[:count])
