"""A long tool result cut down to the lines that matter to the task, for the places that must bound it.

The ledger, the repeat hint, the last-step hint, the wrap-up and a run's
outcome each show a result in a few hundred characters. Cut blindly (head and
tail), a search hit loses what the task asked for: Qwen2.5-Coder-0.5B searched
``杭州`` and got the city's file, whose figures sit in the middle, below a
paragraph of boilerplate; the ledger line kept the boilerplate, and the
wrap-up answered "10.0" from it.

:func:`gist` keeps the lines that share the most terms with a focus text (the
task and the call's arguments): words, numbers, and for Chinese, which has no
spaces, each pair of adjacent characters; of lines that share as many, one
with figures goes first, then the shorter; a short first line (which file or
record it is) is always kept. Lines keep their order; a gap is
marked with ``…``. A result that fits is left whole, and one whose lines share
nothing with the focus is cut in the middle as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

GAP = " … "
"""What stands where lines were left out."""

_TERM = re.compile(r"[\u3400-\u9fff]+|[^\W\d_]{3,}|\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u3400-\u9fff]")
_DIGIT = re.compile(r"\d")


def terms(text: str) -> set[str]:
    """The words (three letters or more), numbers and Chinese character pairs of ``text``, lowercased."""
    found: set[str] = set()
    for run in _TERM.findall(text.lower()):
        if _CJK.match(run):
            found |= {run[i:i + 2] for i in range(len(run) - 1)} if len(run) > 1 else {run}
        else:
            found.add(run.replace(",", ""))
    return found


HEAD_SHARE = 3
"""A result's first line is kept (first) when it takes at most 1/``HEAD_SHARE`` of the limit: it says which
file or record the rest is from. Qwen2.5-Coder-0.5B searched badly and got another product's sheet; its
ledger line kept the price and battery lines, not the file's name, and it computed with them."""

MAX_LINES = 400
"""Lines of a long result weighed at most (the best-matching first): a 200 KB file is not sized line by line."""


def gist(text: str, focus: str, limit: int, size: Callable[[str], int] = len,
         cut: Callable[[str, int], str] | None = None) -> str:
    """``text`` within ``limit`` (as ``size`` measures), keeping the lines that share most terms with ``focus``.

    ``cut(text, limit)`` shortens a text with no line worth keeping, or a single
    kept line still too long (default: the head, ending in ``…``).
    """
    if size(text) <= limit:
        return text
    cut = cut or head
    lines = [flat for line in text.splitlines() if (flat := " ".join(line.split()))]
    if len(lines) == 1:  # one line too long: it is cut whatever it shares with the focus
        return cut(lines[0], limit)
    wanted = terms(focus)
    scored = [(len(terms(line) & wanted), i) for i, line in enumerate(lines)]
    # a line with figures carries a fact; of lines alike, the shorter leaves room for more
    ranked = sorted(((score + bool(_DIGIT.search(lines[i])), len(lines[i]), i) for score, i in scored if score),
                    key=lambda s: (-s[0], s[1], s[2]))
    ranked = [i for _, _, i in ranked[:MAX_LINES]]
    if not ranked:
        return cut(text, limit)
    if size(lines[0]) + size(GAP) <= limit // HEAD_SHARE:  # what the rest is about: a search hit's file
        ranked = [0, *(i for i in ranked if i)]
    kept: list[int] = []
    used = 0
    for i in ranked:
        cost = size(lines[i]) + size(GAP)
        if used + cost <= limit:
            kept.append(i)
            used += cost
    while kept and size(joined(lines, kept)) > limit:
        kept.pop()  # the lowest-ranked goes first
    return joined(lines, kept) if kept else cut(lines[ranked[0]], limit)


def joined(lines: list[str], kept: list[int]) -> str:
    """The kept lines in their order, on one line, with :data:`GAP` where lines were left out."""
    out = "" if 0 in kept else GAP.lstrip()
    previous = None
    for i in sorted(kept):
        if previous is not None:
            out += " " if i == previous + 1 else GAP
        out += lines[i]
        previous = i
    return out if len(lines) - 1 in kept else out + GAP.rstrip()


def head(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (the head, ending in ``…``)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"
