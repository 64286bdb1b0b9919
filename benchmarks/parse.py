"""Parse time per reply, by size and nesting depth, for every protocol (hostile replies included).

What is timed is what the loop does with each reply: ``decide`` bounds the
model's message (:func:`reinloop.tools.bounds.bounded_message`), ``parse`` reads it
(:func:`reinloop.protocols.base.parse_reply`). For each size the replies are
of several shapes, well-formed and hostile: a tool call with one long
argument (valid, and damaged so that it needs repair), a call whose arguments
are a wide list, prose with braces, a run of ``{`` characters, blank lines
and fences (the ReAct regexes' worst case). Each cell is the slowest shape,
best of ``--repeat`` runs. One row holds damaged JSON just inside the repair
bounds, in the shapes ``json-repair`` is slowest on. The depth rows wrap a call's arguments in N levels
of ``{"a": ...}`` and ``[...]``. The target is 100 ms per reply up to 1 MB.
Run it offline:

    python benchmarks/parse.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from reinloop.tools.bounds import MAX_REPAIR_CHARS, MAX_REPAIR_WORK, bounded_message
from reinloop.protocols import get_protocol
from reinloop.protocols.base import parse_reply
from reinloop.state import Reply

PROTOCOLS = ("json", "react", "tool_calling", "auto")
TARGET_MS = 100.0


def call_text(args: str) -> str:
    return '{"thought": "t", "tool": "write_file", "args": ' + args + "}"


def shapes(size: int) -> dict[str, tuple[str, Any]]:
    """Replies of about ``size`` characters: name -> (JSON text of a call, its arguments as data)."""
    long_arg = {"path": "a.txt", "content": "lorem ipsum " * (size // 12)}
    wide = {"numbers": list(range(size // 7))}
    valid = call_text(json.dumps(long_arg))
    return {
        "long argument": (valid, long_arg),
        "long argument, damaged": (valid[:-2] + ",", long_arg),
        "wide list": (call_text(json.dumps(wide)), wide),
        "prose with braces": (("the {answer} is near; " * (size // 22)), None),
        "open braces": ("{" * size, None),
        "blank lines": ("Thought:" + "\n \n" * (size // 3) + "Action: x", None),
        "fences and spaces": ("```json\n" + " " * size + "\n```", None),
    }


def at_repair_bounds() -> dict[str, tuple[str, Any]]:
    """Damaged JSON just inside the repair bounds, in the shapes json-repair is slowest on."""
    pairs = 1
    while (pairs + 1) * 6 * ((pairs + 1) * 4) <= MAX_REPAIR_WORK:  # len x structure of "{" + "{a:b}," * n
        pairs += 1
    return {
        "unquoted keys, longest repaired": ("{" + "a\n" * ((MAX_REPAIR_CHARS - 1) // 2), None),
        "{a:b}, most intricate repaired": ("{" + "{a:b}," * pairs, None),
    }


def deep(depth: int, kind: str) -> tuple[str, Any]:
    """A call whose arguments nest ``depth`` levels (``dict``: ``{"a": ...}``, ``list``: ``[...]``)."""
    if kind == "dict":
        text = '{"a": ' * depth + "1" + "}" * depth
        value: Any = 1
        for _ in range(depth):
            value = {"a": value}
    else:
        text = "[" * depth + "]" * depth
        value = []
        for _ in range(depth - 1):
            value = [value]
        value = {"a": value}
        text = '{"a": ' + text + "}"
    return call_text(text), value


def reply_for(protocol: str, text: str, args: Any) -> AIMessage:
    """The model message a protocol would receive for this call."""
    if protocol == "tool_calling" and args is not None:
        return AIMessage(content="", tool_calls=[{"name": "write_file", "args": {}, "id": "c1"}]).model_copy(
            update={"tool_calls": [{"name": "write_file", "args": args, "id": "c1", "type": "tool_call"}]})
    if protocol == "react" and text.startswith('{"thought"'):
        return AIMessage(content="Thought: t\nAction: write_file\nArgs: " + text[text.index('"args": ') + 8 : -1])
    if protocol == "react" and text.startswith("{"):
        return AIMessage(content="Thought: t\nAction: write_file\nArgs: " + text)
    return AIMessage(content=text)


def seconds(protocol: str, message: AIMessage, repeat: int) -> float:
    """Best time of ``repeat`` runs of bounding and parsing one reply."""
    proto = get_protocol(protocol)
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        text, calls, invalid = bounded_message(message)
        parse_reply(proto, Reply(text=text, tool_calls=calls, invalid_tool_calls=invalid))
        best = min(best, time.perf_counter() - began)
    return best


def row(label: str, cases: dict[str, tuple[str, Any]], repeat: int, on_case: Callable[[str, str, float], None]) -> list[float]:
    """The slowest case's time for each protocol, in ms."""
    cells = []
    for protocol in PROTOCOLS:
        worst = 0.0
        for name, (text, args) in cases.items():
            ms = seconds(protocol, reply_for(protocol, text, args), repeat) * 1000
            on_case(protocol, f"{label} {name}", ms)
            worst = max(worst, ms)
        cells.append(worst)
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000", help="reply sizes in characters [1 KB ... 1 MB]")
    parser.add_argument("--depths", default="10,100,1000,100000", help="nesting depths of the arguments")
    parser.add_argument("--repeat", type=int, default=3, help="runs per reply; the best counts [3]")
    parser.add_argument("--verbose", action="store_true", help="also print every shape's time")
    args = parser.parse_args(argv)

    def on_case(protocol: str, case: str, ms: float) -> None:
        if args.verbose:
            print(f"  {protocol:12} {case:40} {ms:9.2f} ms", file=sys.stderr)

    print(f"| reply | {' | '.join(PROTOCOLS)} | within {TARGET_MS:g} ms |")
    print("| --- |" + " ---: |" * (len(PROTOCOLS) + 1))
    worst = 0.0
    for size in map(int, args.sizes.split(",")):
        cells = row(f"{size:,} chars", shapes(size), args.repeat, on_case)
        worst = max(worst, *cells)
        print(f"| {size:,} chars (slowest of {len(shapes(size))} shapes) | "
              + " | ".join(f"{c:.1f} ms" for c in cells) + f" | {'yes' if max(cells) <= TARGET_MS else 'NO'} |")
    cells = row("repair bounds", at_repair_bounds(), args.repeat, on_case)
    worst = max(worst, *cells)
    print("| damaged JSON at the repair bounds (slowest of 2 shapes) | " + " | ".join(f"{c:.1f} ms" for c in cells)
          + f" | {'yes' if max(cells) <= TARGET_MS else 'NO'} |")
    for depth in map(int, args.depths.split(",")):
        cells = row(f"depth {depth}", {k: deep(depth, k) for k in ("dict", "list")}, args.repeat, on_case)
        worst = max(worst, *cells)
        print(f"| nested {depth:,} deep | " + " | ".join(f"{c:.1f} ms" for c in cells)
              + f" | {'yes' if max(cells) <= TARGET_MS else 'NO'} |")
    print(f"\nslowest reply: {worst:.1f} ms (best of {args.repeat} runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
