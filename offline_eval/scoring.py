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


def mix_word_coverage(values: np.ndarray, coverage: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(1 − w)·value + w·coverage, cell by cell: what a judged item counts as once its word coverage is
    mixed in. A cell with w = 0 keeps its value exactly."""
    return (1 - weights) * values + weights * coverage


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


def f1(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """The harmonic mean 2PR ÷ (P + R), 0 where both are 0."""
    total = precision + recall
    return np.divide(2 * precision * recall, total, out=np.zeros_like(total, dtype=np.float64), where=total > 0)


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


def claim_chunk_diagnostics(answer_chunks: np.ndarray, reference_chunks: np.ndarray, answer_in_reference: np.ndarray,
                            reference_in_answer: np.ndarray) -> dict[str, float | None]:
    """RAGChecker's diagnostic shares (arXiv 2408.08067, §3) from one sample's claim × chunk matrix.

    ``answer_chunks`` (n_a, k) and ``reference_chunks`` (n_r, k): does chunk j entail claim i;
    ``answer_in_reference`` (n_a,): is the answer claim in the reference answer (correct);
    ``reference_in_answer`` (n_r,): is the reference claim in the answer. Values are 1/0 verdicts or
    soft P(yes); the set algebra is NOT p = 1 − p, AND = product, "in some chunk" = max over chunks, so
    that 1/0 verdicts give the paper's counts exactly. A chunk is relevant when it entails a reference
    claim (max over reference claims). An incorrect claim entailed by both a relevant and an irrelevant
    chunk is noise from the relevant one only (as RAGChecker's own code counts it), so the two noise
    shares, hallucination, self-knowledge and the correct claims from the context add up to 1.
    None where a share has nothing to divide by.
    """
    n_a, k = answer_chunks.shape
    relevant = reference_chunks.max(axis=0) if reference_chunks.size else np.zeros(k)
    in_context = answer_chunks.max(axis=1) if k else np.zeros(n_a)
    in_relevant = (answer_chunks * relevant).max(axis=1) if k else np.zeros(n_a)
    in_irrelevant = (answer_chunks * (1 - relevant)).max(axis=1) * (1 - in_relevant) if k else np.zeros(n_a)
    wrong = 1 - answer_in_reference
    retrieved = reference_chunks.max(axis=1) if k else np.zeros(len(reference_in_answer))

    def share(values: np.ndarray, weights: np.ndarray | None = None) -> float | None:
        total = float(values.size if weights is None else weights.sum())
        return float((values if weights is None else values * weights).sum() / total) if total > 0 else None

    return {
        "context_utilization": share(reference_in_answer, retrieved),
        "noise_sensitivity_relevant": share(wrong * in_relevant),
        "noise_sensitivity_irrelevant": share(wrong * in_irrelevant),
        "hallucination": share(wrong * (1 - in_context)),
        "self_knowledge": share(answer_in_reference * (1 - in_context)),
    }


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
