"""The metric math: pure NumPy over the whole batch, no I/O, no judge.

Verdicts of a batch are a padded matrix ``(n_samples, max_items)`` plus a mask saying which cells are
real: booleans (hard verdicts), or values in [0, 1] (soft verdicts: the judge's P(yes), see
``verdict_values``); every formula below reads both. A row with no real cell is *not computable*;
functions return the scores and a ``computable`` mask, never NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pad(rows: Sequence[Sequence[float | bool]], dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Ragged rows → (values, mask) matrices, padded with zeros."""
    width = max((len(r) for r in rows), default=0)
    values = np.zeros((len(rows), width), dtype=dtype)
    mask = np.zeros((len(rows), width), dtype=bool)
    for i, row in enumerate(rows):
        values[i, : len(row)] = row
        mask[i, : len(row)] = True
    return values, mask


def pad_optional(rows: Sequence[Sequence[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Ragged rows of optional numbers → (values, known): known is False where a value is None or padding."""
    values, mask = pad([[0.0 if v is None else v for v in row] for row in rows])
    known, _ = pad([[v is not None for v in row] for row in rows], dtype=bool)
    return values, known & mask


def verdict_values(hard: np.ndarray, probability: np.ndarray, known: np.ndarray, *, soft: bool) -> np.ndarray:
    """What each verdict counts as: 1.0 / 0.0 for yes / no, or, under soft scoring, the judge's P(yes)
    where it reported one (the hard verdict stands in where it did not)."""
    values = hard.astype(np.float64)
    return np.where(known, probability, values) if soft else values


def fraction_true(verdicts: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the mean verdict over real cells. For yes/no verdicts, true cells ÷ real cells
    (faithfulness, context recall, relevant-chunk ratio); for soft ones, the mean P(yes).

    The denominator is the number of items *sent* to the judge (the mask), never the number of
    verdicts that came back.
    """
    counts = mask.sum(axis=1)
    hits = np.where(mask, verdicts.astype(np.float64), 0.0).sum(axis=1)
    computable = counts > 0
    scores = np.divide(hits, counts, out=np.zeros(len(counts), dtype=np.float64), where=computable)
    return scores, computable


def average_precision(relevant: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-aware context precision: AP = Σ_k precision@k · v_k ÷ Σ_k v_k, rank 1 in column 0, with
    precision@k = mean(v_1..v_k). ``relevant`` may be soft (P(relevant) per chunk): the same formula.

    A row with chunks but none relevant scores 0; a row with no chunks is not computable.
    """
    v = np.where(mask, relevant.astype(np.float64), 0.0)
    ranks = np.arange(1, v.shape[1] + 1, dtype=np.float64)
    precision_at_k = np.cumsum(v, axis=1) / ranks
    n_relevant = v.sum(axis=1)
    computable = mask.any(axis=1)
    ap = np.divide((precision_at_k * v).sum(axis=1), n_relevant,
                   out=np.zeros(len(n_relevant), dtype=np.float64), where=n_relevant > 0)
    return ap, computable


def mean_cosine(query: np.ndarray, generated: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Answer relevancy's core: mean cosine between each question and its generated questions.

    ``query`` is (n, d) unit vectors, ``generated`` (n, k, d) unit vectors, ``mask`` (n, k). Also
    returns the (n, k) similarity matrix, zero where masked.
    """
    sims = np.einsum("nd,nkd->nk", query, generated) if generated.size else np.zeros(mask.shape)
    sims = np.clip(sims, -1.0, 1.0) * mask
    counts = mask.sum(axis=1)
    means = np.divide(sims.sum(axis=1), counts, out=np.zeros(len(counts), dtype=np.float64), where=counts > 0)
    return means, sims


def masked_mean(scores: np.ndarray, computable: np.ndarray) -> tuple[float | None, int]:
    """Mean over computable entries and how many there were; None (not NaN) when there are none."""
    n = int(computable.sum())
    return (float(scores[computable].mean()) if n else None), n
