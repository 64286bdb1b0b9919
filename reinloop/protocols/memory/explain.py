"""Memory events in words, for logs and the console.

Each event is a plain dict (``{"event": "summarized", "steps": [1, 2, 3], ...}``)
kept in the step record; :func:`event_line` turns one into a short line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def steps_text(steps: Sequence[int]) -> str:
    """``step 4``, ``steps 4–6`` or ``steps 2, 5``."""
    steps = list(steps)
    if len(steps) == 1:
        return f"step {steps[0]}"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"steps {steps[0]}–{steps[-1]}"
    return "steps " + ", ".join(map(str, steps))


def _short(text: str, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def event_line(event: dict[str, Any]) -> str:
    """One line for a memory event."""
    kind = event.get("event")
    steps = steps_text(event.get("steps") or []) if event.get("steps") else ""
    if kind == "evicted":
        return f"evicted {steps} from the window" + (" (into the summary)" if event.get("into") == "summary" else "")
    if kind == "summarized":
        return f"summarized {steps} ({event['tokens_in']}+{event['tokens_out']} tokens): {_short(event['line'])}"
    if kind == "summary_rejected":
        return f"summary of {steps} disagreed with the steps ({_short('; '.join(event['problems']), 80)}); kept their results instead"
    if kind == "summary_failed":
        return f"summary of {steps} failed ({_short(event['error'], 80)}); raw steps kept, retry next step"
    if kind == "deduplicated":
        return f"{steps} repeated by step {event['by']}: shown once"
    if kind == "recalled":
        records = event.get("records") or []
        best = f"; best {records[0]['score']:.2f}: {_short(records[0]['text'], 70)}" if records else ""
        return f"recalled {len(records)} memories{best}"
    if kind == "remembered":
        return f"stored {steps} as memory #{event['record']}"
    if kind == "resampled":
        return (f"the reply repeated an earlier one: asked again {event['asks']}x at temperature {event['temperature']}"
                + ("" if event.get("changed") else "; still a repeat"))
    if kind == "withheld":
        known = "a call the loop refused" if event.get("reason") == "refused" else "a call whose result is known"
        offered = f", offering only {', '.join(event['offered'])}" if event.get("offered") else ""
        return f"the reply repeated {known}: asked again without {event['tool']}{offered}"
    if kind == "steered":
        before = "called the calculator before any figure was known" if event["reason"] == "figures_first" else \
            "answered before the calculation"
        return f"the reply {before}: asked again offering {', '.join(event['tools'])}"
    if kind == "clipped":
        return f"cut the {event['part']} to fit the prompt budget"
    return f"{kind}: {_short(str({k: v for k, v in event.items() if k != 'event'}))}"
