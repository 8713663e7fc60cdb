"""Focusing a long context on the sentences one claim is about, before the judge reads it.

The 1.5B judge separates supported from unsupported sentences worse the longer the context: on
AttributionBench dev's 80 items, ROC AUC 1.000, 0.830 and 0.750 over the thirds by context length.
Checking each sentence against the context sentences that share the most of its words (rare words
count more) and the question's, in the context's order, reads less and decides better (README,
"Faithfulness checks the answer's sentences as written"). Lexical, so it needs no embedder, works on
Chinese through character bigrams, and is the same on every machine.

The same weighting measures how much of a question and its reference a retrieved chunk holds
(``query_coverage``), which context precision mixes into the judge's P(relevant).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from offline_eval.claims import content_units

# Sentence ends and line breaks; the pieces between are the sentences (Chinese puts no space after 。).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")


def context_sentences(contexts: Sequence[str]) -> list[tuple[int, str]]:
    """(rank, sentence) for every sentence of every chunk, ranks from 1; fragments of three
    characters or fewer (list markers, stray punctuation) are left out."""
    return [(rank, piece.strip()) for rank, chunk in enumerate(contexts, 1)
            for piece in _SENTENCE_END.split(chunk) if len(piece.strip()) > 3]


def _held_units(sentence_units: Sequence[set[str]], query: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Which of the query's units each sentence holds (sentences × units), and each unit's weight
    log(1 + n / df(u)), df counted over the ``n`` sentences (at least 1, for a unit none holds)."""
    units = sorted(query)
    holds = np.array([[u in have for u in units] for have in sentence_units], dtype=bool)
    holds = holds.reshape(len(sentence_units), len(units))
    return holds, np.log1p(len(sentence_units) / np.maximum(holds.sum(axis=0), 1))


def overlap_scores(sentence_units: Sequence[set[str]], query: set[str]) -> np.ndarray:
    """Each sentence's idf-weighted count of the query's units it holds: Σ log(1 + n / df(u)) over the
    shared units u, df counted over the ``n`` sentences."""
    holds, weights = _held_units(sentence_units, query)
    return holds @ weights


def query_coverage(texts: Sequence[str], query: str) -> np.ndarray:
    """Each text's share of the query's content units, weighted as in ``overlap_scores`` (df over the
    texts given): 1.0 when a text holds every unit, 0.0 when it holds none or the query has none.
    Absolute, unlike the focusing rank: a chunk's share does not rise because the others hold less."""
    holds, weights = _held_units([content_units(text) for text in texts], content_units(query))
    total = weights.sum()
    return holds @ weights / total if total > 0 else np.zeros(len(texts))


@dataclass(frozen=True)
class ContextSentences:
    """A sample's context split into sentences once, each with its content units, so that every
    answer sentence is focused without splitting the context again."""

    sentences: list[tuple[int, str]]  # (rank, sentence), as ``context_sentences`` gives them
    units: list[set[str]]

    @classmethod
    def of(cls, contexts: Sequence[str]) -> ContextSentences:
        sentences = context_sentences(contexts)
        return cls(sentences, [content_units(text) for _, text in sentences])

    def __len__(self) -> int:
        return len(self.sentences)


def focus(context: ContextSentences, claim: str, question: str, k: int) -> list[tuple[int, str]] | None:
    """The ``k`` context sentences that share the most with ``claim`` and ``question``, as (rank, text)
    chunks in the context's order (a chunk's kept sentences joined by spaces); None when the context
    has no more than ``k`` sentences, so it is read whole. Ties go to the earlier sentence."""
    if k <= 0 or len(context) <= k:
        return None
    scores = overlap_scores(context.units, content_units(claim) | content_units(question))
    kept = sorted(np.argsort(-scores, kind="stable")[:k])
    chunks: list[tuple[int, str]] = []
    for i in kept:
        rank, text = context.sentences[i]
        if chunks and chunks[-1][0] == rank:
            chunks[-1] = (rank, f"{chunks[-1][1]} {text}")
        else:
            chunks.append((rank, text))
    return chunks
