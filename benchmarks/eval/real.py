"""The real-model tier of the eval: ``python -m benchmarks.eval --real qwen0.5b``.

The same tasks and contestants as the simulated eval, against a small local
model served by ``benchmarks/realserver.py`` (started and stopped here), at
temperature 0. What differs, and why:

- Wall-clock limits are off (``Limits(max_seconds=None)``) for reinloop, as
  create_agent has none: on a shared 2-core machine a model call can take a
  minute, and a limit would then measure the machine, not the loop. Step limits
  and every other guard stay at their defaults.
- The default task subset is the first task of every family (7 of 50): every
  family is covered, and it is what fits the time budget (see BENCHMARKS.md).
  With ``--set heldout`` it is the whole held-out set (46 tasks).
- The report adds the protocol, completion tokens, seconds per task, the
  model file's sha256, the server's measured tokens/s, and success per family.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import Any

from langchain_core.language_models import BaseChatModel

from benchmarks.realserver import MODELS, Server, sha256_of
from reinloop.runs.limits import Limits
from reinloop.models.resolve import resolve_model

from .contestants import RunResult
from .tasks import FAMILIES, Task, family

DEFAULT_TASKS = "first-of-each"
REQUEST_TIMEOUT = 900.0
"""Seconds one model request may take: generous, a busy machine is slow, but a hung server still ends."""

PROTOCOLS = {
    "reinloop": "tool_calling", "reinloop_json": "json", "reinloop_react": "react", "reinloop_auto": "auto",
    "reinloop_json_strict": "json, schema-held replies",
    "reinloop_compact": "json, compact tools", "reinloop_ruled": "tool_calling, answer rules",
    "reinloop_json_ruled": "json, answer rules", "reinloop_compact_ruled": "json, compact tools, answer rules",
    "create_agent": "native tool calls", "create_agent_text_calls": "native tool calls + JSON text calls",
    "bare_loop": "its own JSON",
}


def chat_model(server: Server) -> BaseChatModel:
    """The client every contestant uses: the local endpoint, greedy, one generous timeout, no client retries."""
    return resolve_model("openai:local", base_url=server.base_url, temperature=0, timeout=REQUEST_TIMEOUT)


def loop_options() -> dict[str, Any]:
    """reinloop's ``build_graph`` keywords in the real tier: default limits without the wall clock."""
    return {"limits": Limits(max_seconds=None)}


def describe(name: str, server: Server, threads: int, max_tokens: int, n_ctx: int = 4096) -> str:
    """One line naming the model, its file's sha256 and how it was served."""
    version = metadata.version("llama_cpp_python")
    return (f"{MODELS[name].title} (`{server.model.name}`, sha256 `{sha256_of(server.model)}`), served by "
            f"`benchmarks/realserver.py` (llama-cpp-python {version}, {threads} thread(s), replies capped at "
            f"{max_tokens} tokens, a context of {n_ctx:,} tokens), temperature 0")


def throughput(stats: dict[str, Any]) -> str:
    """The server's measured speed: what sizes a task subset on a machine of unknown load."""
    return (f"{stats.get('requests', 0)} model requests; prompt {stats.get('prompt_tokens', 0):,} tokens "
            f"({stats.get('prompt_tokens_evaluated', 0):,} evaluated after prefix-cache reuse, "
            f"{stats.get('prompt_tokens_per_s')} tokens/s), generated {stats.get('tokens_generated', 0):,} tokens "
            f"({stats.get('generation_tokens_per_s')} tokens/s); finish reasons {stats.get('finish_reasons', {})}")


def protocol_column(lines: list[str], names: Sequence[str]) -> list[str]:
    """The contestant table with a protocol column after the contestant's name."""
    out = [lines[0].replace("| contestant |", "| contestant | protocol |"), lines[1] + " --- |"]
    for name, line in zip(names, lines[2:]):
        out.append(line.replace(f"| {name} |", f"| {name} | {PROTOCOLS.get(name, '')} |", 1))
    return out


def family_table(results: dict[str, list[tuple[RunResult, bool]]], tasks: Sequence[Task],
                 families: dict[str, str] = FAMILIES) -> str:
    """Correct answers per task family (of the set's ``families``) and contestant, and over all tasks."""
    names = list(results)
    lines = ["| family | " + " | ".join(names) + " |", "| --- | " + " | ".join("---" for _ in names) + " |"]
    for letter, what in families.items():
        rows = [i for i, task in enumerate(tasks) if family(task.id) == letter]
        if rows:
            cells = [_solved(results[n], rows) for n in names]
            lines.append(f"| {letter}: {what} | " + " | ".join(cells) + " |")
    lines.append("| all | " + " | ".join(_solved(results[n], range(len(tasks))) for n in names) + " |")
    return "\n".join(lines)


def _solved(runs: list[tuple[RunResult, bool]], rows: Sequence[int] | range) -> str:
    done = [runs[i][1] for i in rows if i < len(runs)]
    return f"{sum(done)}/{len(done)}"
