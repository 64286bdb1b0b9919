"""When a plain-text reply is the final answer in a text protocol (``json``, ``react``).

Small models often answer in prose once they have a tool's result ("The
calculator returned the final answer 492.") instead of the required format.
Such a reply is taken as the final answer when all of these hold:

1. the previous step of the run ran a tool and got a result (not an error):
   the model has something in hand to answer from;
2. the text holds nothing call-like: no ``{`` or ``}``, no code fence, no
   ``Action:``/``Args:`` line, no ``name(`` where ``name`` is a tool (in any
   case or spelling of separators), no ``word(key=`` or ``word("`` call;
3. it repeats a value of that result: one of its numbers, or, for a result
   without numbers, one of its words of four letters or more.

Anything else stays a parse error and is corrected. Chatter that announces a
call ("I will use the calculator") has no result to repeat and is not
accepted; prose that repeats a result while announcing a next call (for
example "now add 100 to 84") is the one case this rule takes for an answer
wrongly, so the rule stays off in ``tool_calling``, where any text is the
answer anyway, and never applies before a tool has answered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from ..state import Action
from ..tools.registry import loose

_MARKERS = re.compile(r"[{}]|```|^\s*(?:Action|Args|Action Input|Arguments)\s*:", re.M | re.I)
_CALL = re.compile(r"\b[A-Za-z_][\w.-]*\s*\(\s*(?:[A-Za-z_]\w*\s*[:=]|['\"])")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_WORD = re.compile(r"\w{4,}")


def calls_a_tool(text: str, tool_names: Iterable[str]) -> bool:
    """True when ``text`` writes a call: a tool's name (in any case or separators) followed by ``(``."""
    if _CALL.search(text):
        return True
    wanted = {loose(n) for n in tool_names}
    return any(loose(m.group(1)) in wanted for m in re.finditer(r"([\w.-]+)\s*\(", text))


def numbers(text: str) -> set[str]:
    """The numbers in ``text``, normalised (``1,000`` -> ``1000``, ``492.0`` -> ``492``)."""
    found = set()
    for raw in _NUMBER.findall(text):
        plain = raw.replace(",", "") if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+", raw) else raw.replace(",", ".")
        try:
            value = float(plain)
        except ValueError:
            continue
        if not math.isfinite(value):  # more digits than a float holds: compared as written
            found.add(plain.lstrip("0") or "0")
            continue
        found.add(f"{value:g}" if value != int(value) else str(int(value)))
    return found


def repeats_a_result(text: str, results: Sequence[str]) -> bool:
    """True when ``text`` repeats a number of one of ``results`` (or a word, for a result without numbers)."""
    said = numbers(text)
    words = {w.lower() for w in _WORD.findall(text)}
    for result in results:
        values = numbers(result)
        if values & said or (not values and {w.lower() for w in _WORD.findall(result)} & words):
            return True
    return False


def call_like(text: str, tool_names: Iterable[str]) -> bool:
    """True when ``text`` holds anything call-like (rule 2 of the module docstring)."""
    return bool(_MARKERS.search(text)) or calls_a_tool(text, tool_names)


def prose_answer(text: str, tool_names: Iterable[str], last_actions: Sequence[Action]) -> str | None:
    """``text`` as the final answer when it qualifies (see the module docstring), else ``None``."""
    answer = text.strip()
    results = [str(a.get("observation") or "") for a in last_actions if not a.get("error")]
    if not answer or not results or call_like(answer, tool_names):
        return None
    return answer if repeats_a_result(answer, results) else None
