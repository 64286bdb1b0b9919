"""Keeping model text and tool output from driving the operator's terminal.

A model reply, a tool's output, a task read from a file or a value read back
from the run database can hold bytes a terminal obeys: ``ESC]0;...`` (the
window title), ``ESC]52;...`` (a clipboard write), ``ESC[2J`` (clear the
screen), concealed text, a carriage return that overwrites the line, or
Unicode bidi overrides (U+202E) that show text in another order than it is
read. Every string reinloop prints goes through one of these functions:

- :func:`safe_text` for the console, ``runs list``, ``runs show`` and error
  lines: each such character becomes a visible escape (``\\x1b``, ``\\u202e``);
  ``\\n`` and ``\\t`` stay.
- :func:`safe_json` for JSON output: the same characters as JSON ``\\uXXXX``
  escapes, so the output decodes to exactly the stored strings.
- :func:`safe_html` for HTML pages: as character references (``&#x202e;``).

:data:`UNSAFE` is the class: C0 controls but ``\\n`` and ``\\t``, DEL, C1
controls (U+0080-U+009F), the bidi controls (U+061C, U+200E/F, U+202A-U+202E,
U+2066-U+2069), invisible format characters (soft hyphen, U+180E, zero-width
space U+200B, U+2060-U+2064 and U+206A-U+206F, the BOM U+FEFF, U+FFF9-U+FFFB,
the tag characters U+E0000-U+E007F that can hide text from a reader), line and
paragraph separators (U+2028/U+2029) and lone surrogates. The zero-width
joiners U+200C/U+200D stay: emoji sequences and Persian and Indic scripts
need them, and they move nothing.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import counted  # noqa: F401  (re-exported: it lives below the errors that use it)

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
"""The characters that can move, hide or reorder what a terminal shows."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_text(value: Any) -> str:
    """``value`` as text a terminal shows as it is: every :data:`UNSAFE` character as a visible escape."""
    text = value if isinstance(value, str) else str(value)
    return UNSAFE.sub(_escape, text)


def safe_json(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with every :data:`UNSAFE` character as a JSON escape."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return UNSAFE.sub(lambda m: json.dumps(m.group())[1:-1], text)


def safe_html(page: str) -> str:
    """An HTML page with every :data:`UNSAFE` character as a character reference."""
    return UNSAFE.sub(lambda m: f"&#x{ord(m.group()):x};", page)


class ReaderSafe:
    """A text stream that outlives its reader: once the reader closes the pipe (``| head``), writes are dropped.

    A closed stdout must never stop a run (its events and outcome are stored
    whatever is printed) nor print a traceback: the first ``BrokenPipeError``
    points file descriptor 1 at ``/dev/null``, so the interpreter's last flush
    at exit cannot fail either, and ``reader_gone`` says it happened.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once the reader is gone."""
        if not self.reader_gone:
            try:
                return int(self.stream.write(text))
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        """Flush, or do nothing once the reader is gone."""
        if not self.reader_gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._gone()

    def write_bytes(self, data: bytes) -> None:
        """Write bytes to the underlying binary stream (a PNG drawing), or drop them once the reader is gone."""
        self.flush()
        if not self.reader_gone:
            try:
                self.stream.buffer.write(data)
                self.stream.buffer.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.reader_gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO): nothing to flush later
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def fit(text: Any, width: int, *, right: bool = False) -> str:
    """``text`` on one line, cut with ``…`` and padded to ``width`` cells as a terminal shows them (rich's cell_len)."""
    from rich.cells import cell_len

    flat = safe_text(" ".join(str(text if text is not None else "").split()))
    if cell_len(flat) > width:
        while cell_len(flat) > width - 1:
            flat = flat[:-1]
        flat += "…"
    pad = " " * (width - cell_len(flat))
    return pad + flat if right else flat + pad
