"""Real small models behind the project's own server (``benchmarks/realserver.py``), marker ``realmodel``.

The tests run when llama-cpp-python imports and the model file is on disk
(``$REINLOOP_MODELS`` or ``~/.cache/reinloop-models``; ``.ci/run`` installs the
wheel and fetches the models). Otherwise they are skipped, and the session's
header says why: nothing is downloaded by a user's ``pytest``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.realserver import RealModelUnavailable, Server, check_decodes, check_llama_cpp, model_path, serving


def unavailable(name: str) -> str | None:
    """Why model ``name`` cannot be served here (no llama-cpp-python, no model file, a library that crashes), or ``None``."""
    try:
        check_llama_cpp()
        check_decodes(model_path(name))
    except RealModelUnavailable as exc:
        return str(exc)
    return None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say why the realmodel tests were skipped, also under ``-q`` (which hides skip reasons)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "realmodel" in r.keywords]
    reasons = sorted({str(r.longrepr[2]).removeprefix("Skipped: ") for r in skipped if isinstance(r.longrepr, tuple)})
    for reason in reasons:
        terminalreporter.write_line(f"realmodel tests skipped: {reason}")


def _serve(name: str, max_tokens: int, n_ctx: int = 4096) -> Iterator[Server]:
    why = unavailable(name)
    if why:
        pytest.skip(f"real model {name} unavailable: {why}")
    with serving(name, max_tokens=max_tokens, n_ctx=n_ctx, threads=1) as server:  # one thread: CI machines are shared
        yield server


@pytest.fixture(scope="session")
def qwen_server() -> Iterator[Server]:
    """Qwen2.5-Coder-0.5B-Instruct, served for the whole session."""
    yield from _serve("qwen0.5b", max_tokens=256)


@pytest.fixture(scope="session")
def smol_server() -> Iterator[Server]:
    """SmolLM2-135M-Instruct (never calls a tool), served for the whole session."""
    yield from _serve("smol135m", max_tokens=128)


@pytest.fixture
def small_context_server() -> Iterator[Server]:
    """SmolLM2-135M-Instruct with a context window of 512 tokens (``--n-ctx 512``)."""
    yield from _serve("smol135m", max_tokens=64, n_ctx=512)
