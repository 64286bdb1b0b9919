"""``search_docs``: full-text search over a folder of text and Markdown files.

The files are indexed into a SQLite FTS5 table and ranked with ``bm25``
(a title hit weighs five body hits); each hit comes with a snippet. The
index is incremental: :meth:`DocsIndex.update` compares every file's size
and modification time with what it indexed last and re-reads only files that
changed, appeared or disappeared, reporting progress per file. The tool calls
it before each search (a ``stat`` per file, milliseconds for a thousand
files), so edits show up without a rebuild.

FTS5's ``unicode61`` tokenizer splits words on spaces and punctuation, which
Chinese and Japanese do not use; so every CJK character is indexed (and
searched) as its own token, separated by an invisible zero-width space, and a
query word such as ``杭州天气`` becomes its character pairs, each a phrase
(``杭 州``, ``州 天``, ``天 气``: :func:`query_terms`), so a whole question still finds
the files that share its words. The model's
query is never passed to FTS5 as syntax: each word is quoted, so ``NEAR``,
``*``, ``col:`` or a stray quote are just text.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from ..errors import ConfigurationError
from .files import open_beneath
from .options import function_tool

logger = logging.getLogger(__name__)

SUFFIXES = (".txt", ".md", ".markdown")
MAX_FILE_BYTES = 5_000_000
PREVIEW_CHARS = 1000
"""How much of the best hit's file ``search_docs`` shows by default (and of each hit that scored nearly as well)."""
OPENED = 3
"""Most hits whose file text one search shows."""
NEARLY = 0.8
"""A hit scoring at least this share of the best one's bm25 score is shown like the best."""
ZWSP = "\u200b"
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = re.compile(rf"([{_CJK_CHARS}])")
_CJK_RUN = re.compile(rf"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, path)`` after each file (re)indexed."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, doc INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(path UNINDEXED, title, body, tokenize = 'porter unicode61 remove_diacritics 2');
"""


def has_fts5() -> bool:
    """Can this Python's ``sqlite3`` create FTS5 tables?"""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def segment(text: str) -> str:
    """Text with every CJK character set apart by zero-width spaces (its own FTS token)."""
    return _CJK.sub(rf"{ZWSP}\1{ZWSP}", text)


def query_terms(word: str) -> list[str]:
    """A query word as search terms: a run of CJK characters becomes its overlapping pairs.

    Chinese has no spaces, so a small model's query is often a whole question
    (``杭州和深圳的常住人口相差多少万人``); as one phrase it matches nothing. Its character
    pairs (``杭州``, ``州和``, ``和深``, …) match every document sharing a word with it, and
    bm25 ranks the one sharing the most (and the rarest) first.
    """
    terms = []
    for part in _CJK_RUN.findall(word):
        if _CJK.match(part) and len(part) > 2:
            terms += [part[i : i + 2] for i in range(len(part) - 1)]
        else:
            terms.append(part)
    return terms


def fts_query(query: str) -> str:
    """The model's words as a safe FTS5 query: each term a quoted phrase, any term may match."""
    words = re.findall(r"\w+", query)
    if not words:
        raise ValueError(f"the query {query!r} has no words to search for; give a few keywords")
    terms = list(dict.fromkeys(t for w in words for t in query_terms(w)))
    return " OR ".join(f'"{segment(t)}"' for t in terms[:32])


def title_of(path: str, text: str) -> str:
    """The first Markdown heading or non-empty line, else the file name."""
    for line in text.splitlines()[:20]:
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:120]
    return Path(path).name


@dataclass(frozen=True)
class IndexStats:
    """What one :meth:`DocsIndex.update` did."""

    added: int
    updated: int
    removed: int
    unchanged: int
    skipped: int
    seconds: float

    @property
    def reindexed(self) -> int:
        """Files read and indexed in this update (new or changed)."""
        return self.added + self.updated


@dataclass(frozen=True)
class Hit:
    """One search result."""

    path: str
    title: str
    snippet: str
    score: float


class DocsIndex:
    """An FTS5 index of the ``.txt``/``.md`` files under ``folder``, kept in a SQLite file."""

    def __init__(self, folder: str | os.PathLike[str], index: str | os.PathLike[str] | None = None) -> None:
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ConfigurationError(f"docs folder {str(folder)!r} is not an existing directory; check --docs")
        if not has_fts5():
            raise ConfigurationError("this Python's sqlite3 has no FTS5; search_docs needs it (install pysqlite3-binary)")
        self.folder = root.resolve()
        self.index = Path(index) if index is not None else default_index_path(self.folder)
        self.index.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection for one transaction: committed on success, always closed."""
        conn = sqlite3.connect(self.index, timeout=30)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    def scan(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every indexable file under the folder: relative path and ``lstat``.

        ``os.fwalk`` descends through directory descriptors, so a directory swapped for a symbolic link
        during the walk is not followed; links are never followed: they could lead anywhere.
        """
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(self.folder, follow_symlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.lower().endswith(SUFFIXES) and not name.startswith("."):
                    try:
                        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:  # removed meanwhile
                        continue
                    if stat.S_ISREG(info.st_mode):
                        yield Path(dirpath, name).relative_to(self.folder).as_posix(), info

    def update(self, progress: Progress | None = None) -> IndexStats:
        """Re-index the files that changed since the last update; returns what was done."""
        began = time.perf_counter()
        with self._lock, self._connect() as conn:
            stored = {p: (m, s, d) for p, m, s, d in conn.execute("SELECT path, mtime_ns, size, doc FROM files")}
            seen, skipped = {}, 0
            for path, info in self.scan():
                if info.st_size > MAX_FILE_BYTES:
                    skipped += 1
                    continue
                seen[path] = (info.st_mtime_ns, info.st_size)
            changed = [p for p in seen if stored.get(p, (None, None))[:2] != seen[p]]
            removed = [p for p in stored if p not in seen]
            for path in removed:
                self._drop(conn, path, stored[path][2])
            failed: list[str] = []
            for done, path in enumerate(changed, 1):
                if path in stored:
                    self._drop(conn, path, stored[path][2])
                if not self._add(conn, path):
                    failed.append(path)
                if progress is not None:
                    progress(done, len(changed), path)
        indexed = [p for p in changed if p not in failed]
        updated = sum(1 for p in indexed if p in stored)
        stats = IndexStats(len(indexed) - updated, updated, len(removed), len(seen) - len(changed),
                           skipped + len(failed), time.perf_counter() - began)
        logger.info("search_docs index of %s: %s", self.folder, stats)
        return stats

    def _add(self, conn: sqlite3.Connection, path: str) -> bool:
        """Index one file, as it is when opened (kind and size from ``fstat``); ``False`` if it was skipped."""
        try:
            fd = open_beneath(self.folder, path)  # a link swapped in since the scan is refused, not followed
        except OSError:
            return False
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return False
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            return False
        mtime_ns, size = info.st_mtime_ns, info.st_size
        text = data.decode("utf-8", errors="replace")
        cursor = conn.execute(
            "INSERT INTO docs (path, title, body) VALUES (?, ?, ?)", (path, segment(title_of(path, text)), segment(text))
        )
        conn.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (path, mtime_ns, size, cursor.lastrowid))
        return True

    @staticmethod
    def _drop(conn: sqlite3.Connection, path: str, doc: int) -> None:
        conn.execute("DELETE FROM docs WHERE rowid = ?", (doc,))
        conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """The best ``limit`` files for ``query``, by bm25 (title hits weigh more).

        Files that matched only words found in most of the documents (bm25 score 0) are left
        out when another file matched better.
        """
        sql = (
            "SELECT path, title, snippet(docs, 2, '[', ']', '…', 16), -bm25(docs, 0.0, 5.0, 1.0) AS score "
            "FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 0.0, 5.0, 1.0) LIMIT ?"
        )
        with self._connect() as conn:
            rows = conn.execute(sql, (fts_query(query), limit)).fetchall()
        hits = [Hit(p, t.replace(ZWSP, ""), " ".join(s.replace(ZWSP, "").split()), round(sc, 3)) for p, t, s, sc in rows]
        # bm25 gives a word found in most of the documents no weight: a hit that matched only such
        # words scores 0. Those are noise next to a real match, and only shown when nothing else matched.
        return [h for h in hits if h.score > 0] if hits and hits[0].score > 0 else hits

    def text(self, path: str) -> str:
        """The indexed text of the file at ``path`` (as it was at the last update), or ``""``."""
        with self._connect() as conn:
            row = conn.execute("SELECT body FROM docs WHERE path = ?", (path,)).fetchone()
        return row[0].replace(ZWSP, "") if row else ""

    def count(self) -> int:
        """How many files are indexed."""
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])


def default_index_path(folder: Path) -> Path:
    """Where the index of ``folder`` is kept by default: the user's cache directory."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha1(str(folder).encode("utf-8")).hexdigest()[:12]
    return cache / "reinloop" / f"docs-{digest}.sqlite"


def sandbox_prefix(folder: Path, sandbox: str | os.PathLike[str] | None) -> str:
    """``"docs/"`` when ``folder`` is ``<sandbox>/docs``; ``""`` with no sandbox or a folder outside it."""
    if sandbox is None:
        return ""
    try:
        inside = Path(folder).resolve().relative_to(Path(sandbox).resolve())
    except ValueError:
        return ""
    return "" if str(inside) == "." else inside.as_posix() + "/"


def format_hits(query: str, hits: list[Hit], files: int, prefix: str = "", openings: Mapping[str, str] | None = None) -> str:
    """Hits as bullet lines with their snippets (``prefix``: put before each path, e.g. ``"docs/"``).

    ``openings`` maps a hit's path to its file's text (cut by the caller), shown in place of its snippet. The
    lines carry no list numbers and no scores: a small model copies any number it is shown into its answer
    ("1.000人/平方公里"), and a number that is only a rank would then pass for a grounded figure.
    """
    if not hits:
        return f"no document matches {query!r} ({files} files searched); try other or fewer keywords"
    openings = openings or {}
    return "\n".join(f"- {prefix}{hit.path} — {hit.title}\n{openings[hit.path]}" if hit.path in openings
                     else f"- {prefix}{hit.path} — {hit.title}\n  {hit.snippet}" for hit in hits)


def opened(hits: list[Hit]) -> list[Hit]:
    """The hits whose file text is shown: the best, and those that scored nearly as well (at most :data:`OPENED`).

    A query naming two things (``杭州,深圳``) matches both files equally; a snippet of the second is its title,
    and a small model then searches again for what the first one's text showed."""
    return [h for h in hits[:OPENED] if h.score >= NEARLY * hits[0].score] if hits else []


def opening_of(text: str, path: str, chars: int) -> str:
    """The first ``chars`` characters of the best hit's file, saying what was left out."""
    if len(text) <= chars:
        return text.strip()
    return f"{text[:chars].rstrip()}\n… ({len(text) - chars} more characters: read_file {path!r} for the rest)"


class SearchDocsInput(BaseModel):
    """Arguments of search_docs."""

    query: str = Field(description="a few keywords, in the documents' language, e.g. 'refund policy' or '退款 政策'", min_length=1, max_length=300)
    limit: int = Field(default=5, description="how many documents to return", ge=1, le=20)


def search_docs_tool(
    folder: str | os.PathLike[str] | None = None,
    index: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    sandbox: str | os.PathLike[str] | None = None,
    preview_chars: int = PREVIEW_CHARS,
) -> BaseTool:
    """``search_docs``: keyword search over the text/Markdown files under ``folder``.

    With ``sandbox`` (``read_file``'s directory) holding ``folder``, each hit's path is given relative to the
    sandbox (``docs/city.md``), so the model can pass it to ``read_file`` as it is. The best hit shows the
    first ``preview_chars`` characters of its file instead of a snippet (``0``: a snippet like the others), and
    so do up to two more that scored nearly as well (:func:`opened`):
    a snippet is the window with the most query words, which for a short query (``杭州``) is the title, not
    the figures, and a small model then repeats the search rather than read the file.
    """
    if folder is None:
        raise ConfigurationError("tool 'search_docs' needs a folder of documents: give --docs DIR (from Python: builtin('search_docs', folder=DIR))")
    docs = DocsIndex(folder, index)
    docs.update(progress)
    prefix = sandbox_prefix(docs.folder, sandbox)

    def search_docs(query: str, limit: int = 5) -> str:
        docs.update()
        hits = docs.search(query, limit)
        shown = opened(hits) if preview_chars else []
        openings = {h.path: opening_of(docs.text(h.path), prefix + h.path, preview_chars) for h in shown}
        return format_hits(query, hits, docs.count(), prefix, openings)

    return function_tool(
        search_docs,
        name="search_docs",
        description=f"Full-text search over the local documents in {docs.folder.name}/ (text and Markdown). "
        "Returns the best-matching files, the opening text of the best ones and a snippet of each other; use read_file for the rest.",
        args_schema=SearchDocsInput,
        parallel_safe=True,
        transient=(),
    )
