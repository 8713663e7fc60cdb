"""Unit tests for offline_eval.scoring: the batch metric math, against hand-computed values.

Pure NumPy; no judge, no embedder.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from offline_eval import scoring


def _finite(*arrays) -> None:
    for a in arrays:
        assert np.all(np.isfinite(np.asarray(a, dtype=float))), a


# ------------------------------------------------------------------------------------------ pad


def test_pad_ragged_rows_values_and_mask():
    values, mask = scoring.pad([[1, 0, 1], [0, 1], [], [1]])
    assert values.shape == mask.shape == (4, 3)
    assert values.dtype == np.float64 and mask.dtype == bool
    np.testing.assert_array_equal(values, [[1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(
        mask, [[True, True, True], [True, True, False], [False, False, False], [True, False, False]]
    )


def test_pad_bool_dtype_and_no_rows():
    values, mask = scoring.pad([[True, False], [True]], dtype=bool)
    assert values.dtype == bool
    np.testing.assert_array_equal(values, [[True, False], [True, False]])
    np.testing.assert_array_equal(mask, [[True, True], [True, False]])

    values, mask = scoring.pad([])
    assert values.shape == mask.shape == (0, 0)


# ------------------------------------------------------------------------------------------ fraction_true


def test_fraction_true_hand_computed():
    verdicts, mask = scoring.pad([[True, False, True, True], [False, False], [True], []], dtype=bool)
    scores, computable = scoring.fraction_true(verdicts, mask)
    np.testing.assert_allclose(scores, [3 / 4, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(computable, [True, True, True, False])
    _finite(scores)
    assert scores.dtype == np.float64


def test_fraction_true_empty_row_scores_zero_not_nan():
    verdicts, mask = scoring.pad([[]], dtype=bool)
    scores, computable = scoring.fraction_true(verdicts, mask)
    assert scores.tolist() == [0.0]
    assert computable.tolist() == [False]
    _finite(scores)


def test_fraction_true_denominator_is_items_sent_not_verdicts_returned():
    # 4 claims were sent, the judge answered for only 2 (both yes): 2/4, not 2/2.
    sent = 4
    returned = [True, True]
    verdicts = np.zeros((1, sent), dtype=bool)
    verdicts[0, : len(returned)] = returned
    mask = np.ones((1, sent), dtype=bool)
    scores, computable = scoring.fraction_true(verdicts, mask)
    assert scores.tolist() == [0.5]
    assert computable.tolist() == [True]


def test_fraction_true_ignores_true_cells_outside_the_mask():
    verdicts = np.array([[True, True, True]])
    mask = np.array([[True, False, False]])
    scores, _ = scoring.fraction_true(verdicts, mask)
    assert scores.tolist() == [1.0]
    mask = np.array([[False, True, False]])
    verdicts = np.array([[True, False, True]])
    scores, _ = scoring.fraction_true(verdicts, mask)
    assert scores.tolist() == [0.0]


def test_fraction_true_no_rows():
    verdicts, mask = scoring.pad([], dtype=bool)
    scores, computable = scoring.fraction_true(verdicts, mask)
    assert scores.shape == computable.shape == (0,)


# ------------------------------------------------------------------------------------------ average_precision


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ([1, 0, 1], (1 + 2 / 3) / 2),
        ([0, 1], 0.5),
        ([0, 0], 0.0),
        ([1], 1.0),
        ([0], 0.0),
        ([1, 1, 1, 1], 1.0),
        ([0, 1, 1], (1 / 2 + 2 / 3) / 2),
        ([1, 1, 0], 1.0),
        ([0, 0, 1], 1 / 3),
        ([1, 0, 0, 1], (1 + 2 / 4) / 2),
    ],
)
def test_average_precision_single_row(row, expected):
    relevant, mask = scoring.pad([row], dtype=bool)
    ap, computable = scoring.average_precision(relevant, mask)
    assert ap[0] == pytest.approx(expected, abs=1e-12)
    assert computable.tolist() == [True]
    _finite(ap)


def test_average_precision_empty_row_not_computable():
    relevant, mask = scoring.pad([[]], dtype=bool)
    ap, computable = scoring.average_precision(relevant, mask)
    assert computable.tolist() == [False]
    assert ap.tolist() == [0.0]
    _finite(ap)


def test_average_precision_ragged_batch():
    rows = [[1, 0, 1], [0, 1], [0, 0], [1], [], [1, 1, 1, 1, 1]]
    relevant, mask = scoring.pad(rows, dtype=bool)
    ap, computable = scoring.average_precision(relevant, mask)
    np.testing.assert_allclose(ap, [(1 + 2 / 3) / 2, 0.5, 0.0, 1.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_array_equal(computable, [True, True, True, True, False, True])
    _finite(ap)


def test_average_precision_rank_order_matters():
    early, m1 = scoring.pad([[1, 0, 0]], dtype=bool)
    late, m2 = scoring.pad([[0, 0, 1]], dtype=bool)
    assert scoring.average_precision(early, m1)[0][0] > scoring.average_precision(late, m2)[0][0]


def test_average_precision_ignores_relevant_flags_in_padding():
    relevant = np.array([[False, True, True]])  # the third cell is padding
    mask = np.array([[True, True, False]])
    ap, computable = scoring.average_precision(relevant, mask)
    assert ap[0] == pytest.approx(0.5)
    assert computable.tolist() == [True]


def test_average_precision_no_rows():
    relevant, mask = scoring.pad([], dtype=bool)
    ap, computable = scoring.average_precision(relevant, mask)
    assert ap.shape == computable.shape == (0,)


# ------------------------------------------------------------------------------------------ mean_cosine


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_mean_cosine_hand_built_vectors_with_masked_slot():
    query = np.array([[1.0, 0.0], [0.0, 1.0]])
    generated = np.zeros((2, 3, 2))
    # row 0: identical (1), orthogonal (0), 60 degrees (0.5)
    generated[0, 0] = [1.0, 0.0]
    generated[0, 1] = [0.0, 1.0]
    generated[0, 2] = _unit([0.5, math.sqrt(3) / 2])
    # row 1: opposite (-1), identical (1), and a masked slot holding junk that must not count
    generated[1, 0] = [0.0, -1.0]
    generated[1, 1] = [0.0, 1.0]
    generated[1, 2] = [5.0, 5.0]
    mask = np.array([[True, True, True], [True, True, False]])

    means, sims = scoring.mean_cosine(query, generated, mask)
    np.testing.assert_allclose(sims, [[1.0, 0.0, 0.5], [-1.0, 1.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(means, [(1 + 0 + 0.5) / 3, 0.0], atol=1e-12)
    assert sims[1, 2] == 0.0  # zero where masked
    _finite(means, sims)


def test_mean_cosine_45_degrees():
    query = np.array([[1.0, 0.0, 0.0]])
    generated = np.array([[_unit([1, 1, 0]), _unit([1, 0, 1])]])
    mask = np.ones((1, 2), dtype=bool)
    means, sims = scoring.mean_cosine(query, generated, mask)
    np.testing.assert_allclose(sims, [[math.sqrt(0.5), math.sqrt(0.5)]], atol=1e-12)
    assert means[0] == pytest.approx(math.sqrt(0.5))


def test_mean_cosine_clips_rounding_overshoot():
    query = np.array([[1.0 + 1e-9, 0.0]])
    generated = np.array([[[1.0 + 1e-9, 0.0]]])
    means, sims = scoring.mean_cosine(query, generated, np.ones((1, 1), dtype=bool))
    assert sims[0, 0] == 1.0 and means[0] == 1.0


def test_mean_cosine_fully_masked_row_is_zero_not_nan():
    query = np.array([[1.0, 0.0], [1.0, 0.0]])
    generated = np.zeros((2, 2, 2))
    generated[0, 0] = [1.0, 0.0]
    mask = np.array([[True, False], [False, False]])
    means, sims = scoring.mean_cosine(query, generated, mask)
    np.testing.assert_allclose(means, [1.0, 0.0])
    _finite(means, sims)


def test_mean_cosine_no_generated_questions():
    query = np.array([[1.0, 0.0]])
    generated = np.zeros((1, 0, 2))
    mask = np.zeros((1, 0), dtype=bool)
    means, sims = scoring.mean_cosine(query, generated, mask)
    assert means.tolist() == [0.0]
    assert sims.shape == (1, 0)
    _finite(means, sims)


# ------------------------------------------------------------------------------------------ masked_mean


def test_masked_mean_none_when_nothing_computable():
    assert scoring.masked_mean(np.array([0.0, 0.0]), np.array([False, False])) == (None, 0)
    assert scoring.masked_mean(np.array([]), np.array([], dtype=bool)) == (None, 0)


def test_masked_mean_over_computable_only():
    mean, n = scoring.masked_mean(np.array([1.0, 0.0, 0.5, 0.25]), np.array([True, False, True, True]))
    assert n == 3
    assert mean == pytest.approx((1.0 + 0.5 + 0.25) / 3)
    assert isinstance(mean, float) and isinstance(n, int)


def test_pipeline_from_ragged_rows_has_no_nan():
    """fraction_true / average_precision → masked_mean, as the metrics use them."""
    rows = [[True, False, True], [], [False, False], [True]]
    verdicts, mask = scoring.pad(rows, dtype=bool)
    ratio, computable = scoring.fraction_true(verdicts, mask)
    ap, ap_computable = scoring.average_precision(verdicts, mask)
    np.testing.assert_array_equal(computable, ap_computable)
    _finite(ratio, ap)
    mean, n = scoring.masked_mean(ratio, computable)
    assert n == 3
    assert mean == pytest.approx((2 / 3 + 0 + 1) / 3)
    mean_ap, n_ap = scoring.masked_mean(ap, ap_computable)
    assert n_ap == 3
    assert mean_ap == pytest.approx(((1 + 2 / 3) / 2 + 0 + 1) / 3)


# ================================================================================== soft verdicts


def test_pad_optional_marks_missing_values_unknown():
    values, known = scoring.pad_optional([[0.25, None], [], [0.5]])
    assert values.tolist() == [[0.25, 0.0], [0.0, 0.0], [0.5, 0.0]]
    assert known.tolist() == [[True, False], [False, False], [True, False]]


def test_verdict_values_hard_or_probability_with_the_hard_verdict_standing_in():
    hard = np.array([[True, False, True]])
    probability = np.array([[0.9, 0.2, 0.0]])
    known = np.array([[True, True, False]])
    assert scoring.verdict_values(hard, probability, known, soft=False).tolist() == [[1.0, 0.0, 1.0]]
    assert scoring.verdict_values(hard, probability, known, soft=True).tolist() == [[0.9, 0.2, 1.0]]


def test_fraction_true_of_soft_verdicts_is_their_mean_over_items_sent():
    values = np.array([[0.9, 0.2, 0.7], [0.5, 0.0, 0.0]])
    mask = np.array([[True, True, True], [True, False, False]])
    scores, computable = scoring.fraction_true(values, mask)
    assert scores == pytest.approx([0.6, 0.5]) and computable.all()


def test_soft_average_precision_by_hand():
    """AP = Σ_k precision@k · v_k ÷ Σ_k v_k with precision@k = mean(v_1..v_k)."""
    v = [0.2, 0.9, 0.4]
    precision_at = [0.2, 0.55, 0.5]
    expected = sum(p * x for p, x in zip(precision_at, v)) / sum(v)
    ap, computable = scoring.average_precision(np.array([v, [0.0, 0.0, 0.0]]), np.ones((2, 3), dtype=bool))
    assert ap[0] == pytest.approx(expected) and ap[1] == 0.0 and computable.all()
    # with 0/1 relevance it is the classic average precision
    hard, _ = scoring.average_precision(np.array([[0.0, 1.0, 1.0]]), np.ones((1, 3), dtype=bool))
    assert hard[0] == pytest.approx((1 / 2 + 2 / 3) / 2)
