"""Large strings stored once: content-addressed blobs, and bounded previews for the logs.

A 20 MB ``write_file`` argument reaches the run database through many doors:
the model's reply, the parsed calls (rewritten by parse, validate and
execute), the scratchpad, LangGraph's pending writes of each of those, the
``node_events`` table and the side-effect journal. Stored whole at every door it
took 300 MB. Here it is stored once:

- in channel values and pending writes, every string of at least
  :data:`BLOB_MIN_CHARS` characters is replaced by a reference
  (:data:`REF` plus the sha256 of its UTF-8 text) and the text goes to the
  ``blobs`` table, keyed by ``(thread_id, hash)``; a second copy of the same
  text costs a reference, not the text. Such a value is stored with
  ``type = 'json-refs'``; reading it puts the texts back, so LangGraph and the
  loop always see whole values;
- the ``node_events`` table and the journal's ``args`` keep a :func:`preview`: the
  first :data:`PREVIEW_CHARS` characters, the length and the same sha256,
  so ``SELECT value FROM blobs WHERE hash = ...`` finds the whole text;
- the journal's observation (replayed after a crash, so needed whole) goes
  to ``blobs`` too, pointed at by ``tool_journal.observation_hash``.

Only plain JSON values under the default serde are split this way: a custom
serde (e.g. an encrypting one) gets every value whole, so no hash or text of
its data is stored outside it.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

BLOB_MIN_CHARS = 1024
"""Strings at least this long (in characters) are stored once, in ``blobs``."""

PREVIEW_CHARS = 400
"""Characters of a long string kept in the ``node_events`` table and the journal's ``args``."""

REF = "\x00blob:"
"""How a reference to a blob starts, inside a ``json-refs`` value; a sha256 in hex follows."""

JSON_REFS = "json-refs"
"""The ``type`` of a value stored as JSON text whose long strings are references to blobs."""

REF_PATTERN = re.compile(r'"\\u0000blob:([0-9a-f]{64})"')
"""A reference as a JSON string; it is one only where a string can start (see :func:`is_ref`)."""

_DIGESTS: OrderedDict[int, tuple[str, str]] = OrderedDict()
_DIGEST_CACHE = 64  # the same 20 MB string is encoded about ten times per step: hash it once


def digest(text: str) -> str:
    """The sha256 of ``text`` in UTF-8, in hex: a blob's key."""
    hit = _DIGESTS.get(id(text))
    if hit is not None and hit[0] is text:
        return hit[1]
    value = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if len(text) >= BLOB_MIN_CHARS:
        _DIGESTS[id(text)] = (text, value)
        while len(_DIGESTS) > _DIGEST_CACHE:
            _DIGESTS.popitem(last=False)
    return value


def externalize(value: Any, blobs: dict[str, str]) -> Any:
    """``value`` with every long string (or one that looks like a reference) replaced by a reference.

    The texts replaced are added to ``blobs`` (hash -> text).
    """
    kind = type(value)
    if kind is str:
        if len(value) >= BLOB_MIN_CHARS or value.startswith(REF):
            key = digest(value)
            blobs[key] = value
            return REF + key
        return value
    if kind is list:
        return [externalize(v, blobs) for v in value]
    if kind is dict:
        return {k: externalize(v, blobs) for k, v in value.items()}
    return value


def as_text(data: str | bytes | memoryview) -> str:
    """Stored JSON text (PostgreSQL returns bytes) as ``str``."""
    return data if isinstance(data, str) else bytes(data).decode("utf-8", "surrogatepass")


def is_ref(match: re.Match[str]) -> bool:
    """True when a :data:`REF_PATTERN` match is a whole JSON string value, not part of a string or a key.

    In compact JSON a string starts the text or follows ``[``, ``,`` or ``:``; inside a string
    a quote is always escaped (``\\"``), so a match there follows a backslash; a key is followed by ``:``.
    """
    start, end, text = match.start(), match.end(), match.string
    return (start == 0 or text[start - 1] in "[,:") and (end == len(text) or text[end] != ":")


def references(text: str) -> set[str]:
    """The blob hashes the JSON text of a ``json-refs`` value refers to."""
    return {m.group(1) for m in REF_PATTERN.finditer(text) if is_ref(m)}


def inline(text: str, texts: Mapping[str, str]) -> str:
    """The JSON text of a ``json-refs`` value with each reference replaced by the (JSON) text it names."""
    return REF_PATTERN.sub(lambda m: orjson.dumps(texts[m.group(1)]).decode() if is_ref(m) else m.group(0), text)


def referenced_in(texts: Iterable[str | bytes | None]) -> set[str]:
    """The blob hashes named in the JSON texts of stored values."""
    found: set[str] = set()
    for text in texts:
        if text is not None:
            found |= references(as_text(text))
    return found


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` if it is short; else its first ``limit`` characters, its length and its sha256."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text):,} chars in all; sha256 {digest(text)}]"


def preview_value(value: Any, limit: int = PREVIEW_CHARS) -> Any:
    """A plain value with every long string cut to its :func:`preview`."""
    return _walk(value, lambda s: preview(s, limit))


def _walk(value: Any, on_str: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return on_str(value)
    if isinstance(value, (list, tuple)):
        return [_walk(v, on_str) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, on_str) for k, v in value.items()}
    return value
