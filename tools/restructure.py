#!/usr/bin/env python3
"""Move reinloop's modules into subpackages by concern (issue 40, items 1-3 and 6), mechanically.

Run at the root of a clean checkout::

    python tools/restructure.py            # moves, rewrites, writes the contract; commits nothing
    python tools/restructure.py --dry-run  # only checks the table against the tree and prints the moves

What it does, in order:

1. checks every module of ``reinloop/`` against :data:`MOVES` (and :data:`STAYS`) and fails, listing
   them, when one is in neither: a module another branch added must be placed in the table by hand;
2. ``git mv``\\ s each module to its new path and writes the new packages' ``__init__``;
3. rewrites every import and every module path written as text (``from reinloop.x import``, relative
   imports, the packages' lazy ``EXPORTS``, ``"reinloop.server:http_app"``, patch targets,
   ``python -m reinloop.x``, ``reinloop/x.py``) in ``reinloop/``, ``tests/``, ``benchmarks/``,
   the Markdown files, ``pyproject.toml``, ``langgraph.json`` and ``.ci/``;
4. keeps every old module path importable for one release: ``import reinloop.spec`` still works and
   warns (a :class:`DeprecationWarning` naming the new path);
5. copies the import-linter contract, ``tests/test_architecture.py`` and ``ARCHITECTURE.md`` from
   ``tools/restructure_files/``;
6. imports every module of the new tree once and fails if one does not import.

It refuses to run twice (the tree it makes has ``reinloop/observe/``) and on a dirty work tree.
Bare mentions of a moved module in prose ("see reinloop.spec") are listed, not rewritten: the same
text names telemetry attributes and stored kinds (``"reinloop.approval"``) that must not change.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

PACKAGE = "reinloop"

# old module (relative to reinloop) -> new module. A package's entry moves its whole subtree, except
# its members listed on their own. "" means: merged into the package root (the module is deleted);
# None means: the package's __init__ is deleted (its members all moved elsewhere).
MOVES: dict[str, str | None] = {
    # the package root: lazy exports now live in reinloop/__init__.py itself
    "lazy": "",
    # protocols/: what the model sees and says
    "answers": "protocols.answers",
    "output": "protocols.output",
    "repeats": "protocols.repeats",
    "memory": "protocols.memory",
    "profiles": "protocols.profiles",
    # models/: resolve, retry, fallback, caching, pricing, and the models that run in this process
    "models": "models.resolve",
    "retry": "models.retry",
    "fallback": "models.fallback",
    "caching": "models.caching",
    "pricing": "models.pricing",
    "local_models": "models.local",
    "simulation": "models.simulation",
    "scripted": "models.scripted",  # reinloop.testing re-exports it
    # tools/: registry, executor, built-ins, MCP (already there), and the bounds and approval gates of calls
    "approval": "tools.approval",
    "bounds": "tools.bounds",
    "memory.gist": "tools.gist",  # a long result cut to the lines that matter: the executor and the ledger use it
    "demo": None,
    "demo.tools": "tools.demo",
    # checkpoints/: every store of the run database lives there
    "tools.journal": "checkpoints.journal",
    "memory.store": "checkpoints.memories",
    "runlog": "checkpoints.runlog",

    # nodes/: what a node reads besides the state
    "context": "nodes.context",
    # runs/: the run's description (spec, limits) and what starts, keeps and answers runs
    "spec": "runs.spec",
    "limits": "runs.limits",
    "settings": "runs.settings",
    "runs": "runs.api",  # not runs.run: reinloop.runs.run stays the function (forwarded, see write_shims)
    "batches": "runs.batches",
    "breaks": "runs.breaks",
    "outcome": "runs.outcome",
    "pending": "runs.pending",
    "replay": "runs.replay",
    "rundb": "runs.rundb",
    "run_record": "runs.run_record",
    # observe/: events and where they come from, and everything that shows a run
    "events": "observe.events",
    "location": "observe.location",
    "callbacks": "observe.callbacks",
    "terminal": "observe.terminal",
    "redact": "observe.redact",
    "console": "observe.console",
    "report": "observe.report",
    "drawing": "observe.drawing",
    "raster": "observe.raster",
    "telemetry": "observe.telemetry",
    # cli/: the command
    "cli": "cli.app",  # not cli.main: reinloop.cli.main stays the function (forwarded, see write_shims)
    "cli_approve": "cli.approve",
    "cli_options": "cli.options",
    "cli_runs": "cli.runs",
    "batch_console": "cli.batch_console",
    "demo.scenarios": "cli.demo",
    "server": "cli.server",
}

# modules that stay where they are: the public face, the design card's four, and the rooms that exist
STAYS = ("", "__main__", "errors", "testing", "graph", "state", "nodes", "checkpoints", "protocols", "tools")

NEW_PACKAGES = {
    "models": "Models: naming one, calling it through failures, falling back, caching, pricing; and the models that run here.",
    "runs": "Runs: what a run is made of (:class:`RunSpec`, :class:`Limits`) and what starts, keeps, replays and answers runs.",
    "observe": "Observing a run: its events and where they come from, the console, the report, the pictures and the spans.",
    "cli": "The ``reinloop`` command: one module per group of subcommands over the public functions.",
}

MARKER = "observe"  # a directory the restructure creates: its presence means the script has run
FILES = Path(__file__).resolve().parent / "restructure_files"
TEXT_FILES = ("README.md", "BENCHMARKS.md", "pyproject.toml", "langgraph.json", "install.sh")
TEXT_DIRS = ("docs", ".ci")


class Refused(SystemExit):
    """The script stops: the message says why and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(f"restructure: {message}")


# ---------------------------------------------------------------------------------------------- the table


def old_modules(root: Path) -> dict[str, Path]:
    """Every module of the package now, relative to it (``"memory.store"``; a package is its ``__init__``)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root / PACKAGE).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path  # the package root itself is ""
    return found


def stays(module: str) -> bool:
    """True when ``module`` is in the package root's keepers (a kept package keeps its members)."""
    return module.split(".")[0] in STAYS and not moved_by(module)


def moved_by(module: str) -> str | None:
    """The :data:`MOVES` key that moves ``module``: itself or its nearest package listed there."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in MOVES:
            return key
    return None


def new_name(module: str) -> str | None:
    """``module``'s new dotted name relative to the package ("" is the root; None: deleted)."""
    key = moved_by(module)
    if key is None:
        return module
    target = MOVES[key]
    if target is None:
        if key != module:
            raise Refused(f"{module} sits in {key}, which MOVES deletes; give {module} its own entry")
        return None
    rest = module.split(".")[len(key.split(".")):]
    return ".".join([p for p in [target, *rest] if p])


def check_table(modules: dict[str, Path]) -> None:
    """Fail, listing them, when a module is neither moved nor kept, or two modules land on one name."""
    unplaced = [m for m in modules if not moved_by(m) and not stays(m)
                or moved_by(m) != m and MOVES.get(moved_by(m) or "", "") is None]  # in a package MOVES deletes
    if unplaced:
        raise Refused("these modules of reinloop/ are not in the table; add each to MOVES (or STAYS) in "
                      f"{Path(__file__).name} by hand, then run again:\n  " + "\n  ".join(unplaced))
    stale = [k for k in MOVES if k not in modules]
    if stale:
        raise Refused("MOVES names modules that no longer exist; remove or rename them:\n  " + "\n  ".join(stale))
    seen: dict[str, str] = {}
    for m in modules:
        new = new_name(m)
        if new is None or new == "" and MOVES.get(m) == "":
            continue
        if new in seen:
            raise Refused(f"{m} and {seen[new]} would both become reinloop.{new}")
        seen[new] = m


def full(rel: str | None) -> str | None:
    return None if rel is None else PACKAGE + ("." + rel if rel else "")


def old_to_new(modules: dict[str, Path]) -> dict[str, str | None]:
    """Full old dotted name -> full new dotted name, for every module that moves."""
    out: dict[str, str | None] = {}
    for m in modules:
        new = new_name(m)
        if new != m:
            out[full(m)] = full(new)  # type: ignore[index]
    return out


def new_path(root: Path, module: str, is_package: bool) -> Path:
    parts = module.split(".")
    base = root / PACKAGE / Path(*parts) if module else root / PACKAGE
    return base / "__init__.py" if is_package else base.with_suffix(".py")


# ------------------------------------------------------------------------------------------- rewriting


def top_names(path: Path) -> set[str]:
    """The names a module defines or imports at its top level (what ``reinloop.x.NAME`` may mean)."""
    names: set[str] = set()
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except SyntaxError:
        return names
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPORTS" for t in node.targets):
            names.update(k.value for k in getattr(node.value, "keys", []) if isinstance(k, ast.Constant))
    return names


class Rewriter:
    """Rewrites module paths: in imports always, in text only where the text can only mean a module."""

    def __init__(self, moves: dict[str, str | None], names: dict[str, set[str]], data: set[str] = frozenset()) -> None:
        self.moves = moves
        self.data = data  # strings the package itself uses as data ("reinloop.approval"): never rewritten
        self.names = names  # full old module -> its top-level names
        self.bare: list[str] = []
        alternatives = sorted((re.escape(m) for m in moves if m != PACKAGE), key=len, reverse=True)
        self.dotted = re.compile(r"(?<![\w.])(" + "|".join(alternatives) + r")(?![\w])((?:\.\w+)*)(:\w+)?")
        paths = sorted((re.escape(m.replace(".", "/")) for m in moves if m != PACKAGE), key=len, reverse=True)
        self.paths = re.compile(r"(?<![\w/])(" + "|".join(paths) + r")(\.py|/)")

    def module(self, old: str) -> str:
        new = self.moves.get(old, old)
        if new is None:
            raise Refused(f"{old} is deleted by the table but still imported; move what imports it first")
        return new

    def text(self, text: str, where: str, context: str = "") -> str:
        """Module paths in a string, comment or document; ``context`` is the text just before it."""

        def dotted(match: re.Match[str]) -> str:
            old, rest, colon = match.group(1), match.group(2), match.group(3)
            before = (context + text[: match.start()])[-40:]
            first = rest[1:].split(".")[0] if rest else ""
            module_context = bool(colon) or re.search(r"(-m\s+|-m\",\s*\"|sys\.modules\[\"|import_module\(\"|"
                                                      r"from\s+|import\s+|patch\(\"|:mod:`|setattr\(\")$", before)
            if rest and first in self.names.get(old, set()) or module_context:
                return self.module(old) + rest + (colon or "")
            self.bare.append(f"{where}: {match.group(0)}")
            return match.group(0)

        def path(match: re.Match[str]) -> str:
            old = match.group(1).replace("/", ".")
            return self.module(old).replace(".", "/") + match.group(2)

        return self.paths.sub(path, self.dotted.sub(dotted, text))

    def python(self, source: str, where: str, old_module: str | None, new_module: str | None,
               is_package: bool) -> str:
        """A Python file: imports from the syntax tree, then strings and comments token by token.

        ``old_module``/``new_module``: the file's own dotted names when it is in the package (its
        relative imports are resolved from the old one and written relative to the new one).
        """
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        edits: list[tuple[int, int, int, int, str]] = []
        old_pkg = old_module if is_package else (old_module or "").rpartition(".")[0]
        new_pkg = new_module if is_package else (new_module or "").rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = absolute(node, old_pkg)
                if not target.startswith(PACKAGE) or target.split(".")[0] != PACKAGE:
                    continue
                replaced = self.import_from(node, target, new_pkg if old_module is not None else None)
                if replaced is not None:
                    edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, replaced))
            elif isinstance(node, ast.Import):
                if any(a.name in self.moves or a.name.startswith(PACKAGE + ".") and
                       self._longest(a.name) for a in node.names):
                    parts = []
                    for a in node.names:
                        new = self._rename(a.name)
                        parts.append(new + (f" as {a.asname}" if a.asname else
                                            f" as {a.name.split('.')[-1]}" if new != a.name and "." in a.name else ""))
                    if any(a.asname is None and "." in a.name and self._rename(a.name) != a.name for a in node.names):
                        raise Refused(f"{where}:{node.lineno}: `import {node.names[0].name}` binds the package "
                                      "name, not the module; write it as `from ... import ...` first")
                    edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset,
                                  "import " + ", ".join(parts)))
        for start_line, start_col, end_line, end_col, new in sorted(edits, reverse=True):
            if new.startswith("\0"):  # only the module part changes: the names keep their layout
                line = lines[start_line - 1]
                m = re.compile(r"from\s+([.\w]*)\s+import\b").match(line, start_col)
                if m is None:
                    raise Refused(f"{where}:{start_line}: cannot find the module in {line.strip()!r}")
                lines[start_line - 1] = line[:m.start(1)] + new[1:] + line[m.end(1):]
                continue
            head = lines[start_line - 1][:start_col]
            tail = lines[end_line - 1][end_col:]
            lines[start_line - 1:end_line] = [head + new + tail]
        source = "".join(lines)
        return self.tokens(source, where, old_pkg if old_module is not None and is_package else None,
                           new_pkg if is_package else None)

    def _longest(self, name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in self.moves:
                return ".".join(parts[:i])
        return None

    def _rename(self, name: str) -> str:
        key = self._longest(name)
        if key is None:
            return name
        return self.module(key) + name[len(key):]

    def import_from(self, node: ast.ImportFrom, target: str, new_pkg: str | None) -> str | None:
        """The new text of ``from target import names``, or None when nothing changes."""
        as_modules = [a for a in node.names if f"{target}.{a.name}" in self.moves]
        key = self._longest(target)
        if not as_modules and key is None and node.level == 0:
            return None
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
        if as_modules:
            out = []
            rest = [a for a in node.names if a not in as_modules]
            if rest:  # the names stay imported from the same place; the modules each get their own import
                here = relative(self._rename(target), new_pkg) if new_pkg is not None else self._rename(target)
                out.append(f"from {here} import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "")
                                                             for a in rest))
            for a in as_modules:
                new = self.module(f"{target}.{a.name}")
                parent, _, last = new.rpartition(".")
                alias = a.asname or a.name
                out.append(f"from {relative(parent, new_pkg)} import {last}" + (f" as {alias}" if alias != last else ""))
            return "; ".join(out)
        new_target = self._rename(target)
        written = relative(new_target, new_pkg) if new_pkg is not None else new_target
        return None if written == (node.module or "") and node.level == 0 else "\0" + written

    def tokens(self, source: str, where: str, old_pkg: str | None, new_pkg: str | None) -> str:
        """Strings and comments; in a package ``__init__`` also its lazy ``EXPORTS`` (``".runs"``)."""
        out = []
        last_end = (1, 0)
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        pieces: list[tuple[int, int, str]] = []
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in (tokenize.STRING, tokenize.COMMENT) and tok.type != getattr(tokenize, "FSTRING_MIDDLE", -1):
                continue
            start = offsets[tok.start[0] - 1] + tok.start[1]
            end = offsets[tok.end[0] - 1] + tok.end[1]
            text = tok.string
            if old_pkg is not None and tok.type == tokenize.STRING:
                m = re.fullmatch(r"([\"'])(\.+[\w.]*)\1", text)
                if m:
                    old = resolve(m.group(2), old_pkg)
                    new = self._rename(old)
                    pieces.append((start, end, f"{m.group(1)}{relative(new, new_pkg)}{m.group(1)}"))
                    continue
            context = source[max(0, start - 40):start]
            whole = re.fullmatch(r"([\"'])(reinloop(?:\.\w+)+)\1", text)
            if old_pkg is None and whole and whole.group(2) in self.moves and whole.group(2) not in self.data:
                # a test's string that is a module's name and nothing else ("reinloop.runs" in a list of
                # modules a command must not load): a module path, unless the package uses it as data
                pieces.append((start, end, f"{whole.group(1)}{self.module(whole.group(2))}{whole.group(1)}"))
                continue
            new_text = self.text(text, f"{where}:{tok.start[0]}", context)
            if new_text != text:
                pieces.append((start, end, new_text))
        for start, end, text in sorted(pieces, reverse=True):
            source = source[:start] + text + source[end:]
        del out, last_end
        return source


def data_strings(root: Path) -> set[str]:
    """String literals in the package that are exactly ``reinloop.x`` (a stored kind, a logger's name)."""
    found = set()
    for path in (root / PACKAGE).rglob("*.py"):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            m = tok.type == tokenize.STRING and re.fullmatch(r"([\"'])(reinloop(?:\.\w+)+)\1", tok.string)
            if m:
                found.add(m.group(2))
    return found


def absolute(node: ast.ImportFrom, package: str | None) -> str:
    if node.level == 0:
        return node.module or ""
    base = (package or "").split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def resolve(rel: str, package: str) -> str:
    level = len(rel) - len(rel.lstrip("."))
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    rest = rel.lstrip(".")
    return ".".join(base + ([rest] if rest else []))


def relative(target: str, package: str | None) -> str:
    """``target`` written relative to ``package`` (``reinloop.cli`` from ``reinloop.runs`` is ``..cli``)."""
    if package is None:
        return target
    t, p = target.split("."), package.split(".")
    common = 0
    while common < min(len(t), len(p)) and t[common] == p[common]:
        common += 1
    return "." * (len(p) - common + 1) + ".".join(t[common:])


# ------------------------------------------------------------------------------------------ the steps


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def preflight(root: Path, dirty_ok: bool) -> None:
    if not (root / PACKAGE / "__init__.py").exists() or not (root / "pyproject.toml").exists():
        raise Refused(f"run me at the root of a reinloop checkout (no {PACKAGE}/__init__.py in {root})")
    if (root / PACKAGE / MARKER).exists():
        raise Refused(f"{PACKAGE}/{MARKER}/ exists: this tree is already restructured; nothing to do")
    if not dirty_ok and git(root, "status", "--porcelain", "--untracked-files=no").strip():
        raise Refused("the work tree has uncommitted changes; commit or stash them first (or --dirty-ok)")


def move_files(root: Path, modules: dict[str, Path]) -> dict[Path, tuple[str, str | None, bool]]:
    """``git mv`` every module; returns new file -> (old module, new module, is a package)."""
    placed: dict[Path, tuple[str, str | None, bool]] = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        new = new_name(module)
        old_full = full(module)
        if new is None or (new == "" and module != ""):
            git(root, "rm", "-q", str(path.relative_to(root)))
            continue
        target = new_path(root, new, is_package)
        if target != path:
            target.parent.mkdir(parents=True, exist_ok=True)
            git(root, "mv", str(path.relative_to(root)), str(target.relative_to(root)))
        placed[target] = (old_full, full(new), is_package)  # type: ignore[assignment]
    for package in {p.parent for p in placed}:
        init = package / "__init__.py"
        if not init.exists():
            rel = package.relative_to(root / PACKAGE).as_posix().replace("/", ".")
            doc = NEW_PACKAGES.get(rel, f"reinloop.{rel}.")
            init.write_text(f'"""{doc}"""\n', encoding="utf-8")
            git(root, "add", str(init.relative_to(root)))
            placed[init] = (f"{PACKAGE}.{rel}", f"{PACKAGE}.{rel}", True)
    for leftover in sorted((root / PACKAGE).rglob("*"), reverse=True):  # folders the moves emptied
        if leftover.is_dir() and not any(p for p in leftover.rglob("*") if p.suffix != ".pyc" and p.is_file()):
            shutil.rmtree(leftover)
    return placed


def rewrite_all(root: Path, rewriter: Rewriter, placed: dict[Path, tuple[str, str | None, bool]]) -> list[Path]:
    changed = []
    for path, (old, new, is_package) in placed.items():
        source = path.read_text(encoding="utf-8")
        text = rewriter.python(source, str(path.relative_to(root)), old, new, is_package)
        if text != source:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for folder in ("tests", "benchmarks", "tools"):
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).exists() else []:
            if path.resolve() == Path(__file__).resolve() or FILES in path.resolve().parents:
                continue
            source = path.read_text(encoding="utf-8")
            text = rewriter.python(source, str(path.relative_to(root)), None, None, False)
            if text != source:
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    documents = [root / f for f in TEXT_FILES if (root / f).exists()]
    for folder in TEXT_DIRS:
        documents += [p for p in sorted((root / folder).rglob("*")) if p.is_file()] if (root / folder).exists() else []
    documents += [p for p in sorted(root.glob("tests/**/*.md"))]
    for path in documents:
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        text = rewriter.text(source, str(path.relative_to(root)))
        if text != source:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


SHIM = '''

# ---- old module paths, kept for one release (issue 40): ``import reinloop.spec`` warns and gives
# ``reinloop.runs.spec``. Written by tools/restructure.py; delete this block in the release after.
MOVED = {moved}
"""Each module path before the restructure -> where that module is now."""


class _MovedModules:
    """Finds an old module path: imports the module at its new path under the old name too, and warns."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> object:
        import importlib.machinery
        import warnings

        if name not in MOVED:
            return None
        warnings.warn(f"{{name}} moved to {{MOVED[name]}}; import it from there (the old path goes in the next "
                      "release)", DeprecationWarning, stacklevel=3)
        module = importlib.import_module(MOVED[name])
        return importlib.machinery.ModuleSpec(name, _Alias(module), is_package=hasattr(module, "__path__"))


class _Alias:
    """The loader of an old module path: the module at its new path, not a copy."""

    def __init__(self, module: object) -> None:
        self.module, self.spec = module, getattr(module, "__spec__", None)

    def create_module(self, spec: object) -> object:
        return self.module

    def exec_module(self, module: object) -> None:
        """Nothing to run: the module ran at its new path; it keeps its own spec (import set the old one)."""
        module.__spec__ = self.spec  # type: ignore[attr-defined]


import sys as _sys  # noqa: E402

if _MovedModules not in _sys.meta_path:
    _sys.meta_path.insert(0, _MovedModules)  # before the path finder, or reinloop.memory.tokens would load twice
'''

FORWARD = '''

# ---- ``{old}`` was a module and is now this package: its names still resolve here, with a warning,
# for one release (issue 40). Written by tools/restructure.py; delete this block in the release after.
_OLD_NAMES = {names!r}


def __getattr__(name: str) -> object:
    import importlib
    import warnings

    if name not in _OLD_NAMES:
        raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")
    warnings.warn(f"{old}.{{name}} moved to {new}.{{name}}; import it from there (the old path goes in the "
                  "next release)", DeprecationWarning, stacklevel=2)
    value = globals()[name] = getattr(importlib.import_module("{new}"), name)  # warned once
    return value
'''


def write_shims(root: Path, moves: dict[str, str | None], names: dict[str, set[str]]) -> None:
    """Old module paths keep working for one release: a finder in ``reinloop/__init__.py`` and,
    where an old module's name is now a package (``reinloop.runs``), a forwarding ``__getattr__``."""
    new_modules = {m for m in moves.values() if m}
    new_modules |= {m.rsplit(".", i)[0] for m in list(new_modules) for i in range(1, m.count(".") + 1)}
    aliased = {old: new for old, new in sorted(moves.items()) if new and new != PACKAGE and old not in new_modules}
    init = root / PACKAGE / "__init__.py"
    body = "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in aliased.items()) + "}"
    init.write_text(init.read_text(encoding="utf-8") + SHIM.format(moved=body), encoding="utf-8")
    for old, new in sorted(moves.items()):
        if new and old in new_modules and old != new and old != PACKAGE:
            package = root / Path(*old.split(".")) / "__init__.py"
            if package.exists():
                public = sorted(n for n in names.get(old, set()) if not n.startswith("_"))
                shadowed = [n for n in public if (package.parent / f"{n}.py").exists() or (package.parent / n).is_dir()]
                if shadowed:  # `from reinloop.runs import run` would give the submodule, not the old function
                    raise Refused(f"{old} had names that are now submodules of the package {old}: "
                                  f"{', '.join(shadowed)}; give those modules other names in MOVES")
                package.write_text(package.read_text(encoding="utf-8") + FORWARD.format(old=old, new=new, names=public),
                                   encoding="utf-8")


def copy_files(root: Path) -> None:
    """The contract, its test and the new ARCHITECTURE.md, kept beside this script until it runs."""
    for source, target in (("importlinter.ini", ".importlinter"), ("test_architecture.py", "tests/test_architecture.py"),
                           ("ARCHITECTURE.md", "ARCHITECTURE.md")):
        shutil.copyfile(FILES / source, root / target)
        git(root, "add", target)


def import_everything(root: Path) -> list[str]:
    """Every module of the new tree imported in a fresh interpreter; returns the ones that fail."""
    modules = sorted(full(m) for m in old_modules(root) if not m.endswith("__main__"))  # type: ignore[misc]
    optional = ("postgres", "mcpclient", "raster", "telemetry", "embeddings")
    program = ("import importlib, sys, traceback, warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
               "bad = []\nfor m in sys.argv[1:]:\n    try:\n        importlib.import_module(m)\n"
               "    except ModuleNotFoundError as e:\n"
               "        if not (e.name or '').startswith('reinloop'): continue\n"
               "        bad.append(f'{m}: {e!r}')\n"
               "    except Exception as e:\n        bad.append(f'{m}: {e!r}')\nprint('\\n'.join(bad))\n")
    done = subprocess.run([sys.executable, "-c", program, *modules], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    failures = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode:
        failures.append(done.stderr.strip())
    del optional
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="check the table and print the moves; change nothing")
    parser.add_argument("--dirty-ok", action="store_true", help="run on a work tree with uncommitted changes")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout (default: here)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    preflight(root, args.dirty_ok or args.dry_run)
    modules = old_modules(root)
    check_table(modules)
    moves = old_to_new(modules)
    if args.dry_run:
        for old, new in sorted(moves.items()):
            print(f"{old:40} -> {new or '(deleted)'}")
        return 0
    names = {full(m): top_names(p) for m, p in modules.items()}  # type: ignore[misc]
    rewriter = Rewriter(moves, names, data_strings(root))  # type: ignore[arg-type]
    placed = move_files(root, modules)
    changed = rewrite_all(root, rewriter, placed)
    write_shims(root, moves, names)  # type: ignore[arg-type]
    copy_files(root)
    git(root, "add", "-A", PACKAGE, "tests", "benchmarks", *[f for f in TEXT_FILES if (root / f).exists()])
    print(f"moved {len(moves)} modules, rewrote {len(changed)} files")
    if rewriter.bare:
        print(f"left alone ({len(rewriter.bare)}): a moved module's name in prose or a data string; read them:")
        print("  " + "\n  ".join(sorted(set(rewriter.bare))))
    failures = import_everything(root)
    if failures:
        print("these modules do not import:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    entries = sorted(p.name for p in (root / PACKAGE).iterdir() if p.name != "__pycache__")
    print(f"reinloop/ holds {len(entries)} entries: {' '.join(entries)}")
    print("next: lint-imports; pytest -m 'not slow' -x -q; git commit -m 'Restructure reinloop by concern (issue 40)'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
