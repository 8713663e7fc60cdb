"""offline_eval.stats against textbook values, hand counts and seeded simulations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from offline_eval import stats


def _expand(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.repeat(x, counts.astype(int))


# ------------------------------------------------------------------------------------ helpers


def test_to_optional() -> None:
    assert stats.to_optional(np.float64("nan")) is None
    assert stats.to_optional(float("inf")) is None
    assert stats.to_optional(None) is None
    assert stats.to_optional(np.float64(0.25)) == 0.25
    assert type(stats.to_optional(np.float32(1.0))) is float


def test_resample_counts_shape_sum_and_determinism() -> None:
    c = stats.resample_counts(7, n_resamples=50, seed=3)
    assert c.shape == (50, 7)
    assert np.all(c.sum(axis=1) == 7)
    assert np.array_equal(c, stats.resample_counts(7, n_resamples=50, seed=3))
    assert not np.array_equal(c, stats.resample_counts(7, n_resamples=50, seed=4))


def test_percentile_interval_matches_numpy_quantile_and_drops_nan() -> None:
    rng = np.random.default_rng(0)
    r = rng.normal(size=(501, 3))
    low, high = stats.percentile_interval(r, 0.9)
    assert np.allclose(low, np.quantile(r, 0.05, axis=0))
    assert np.allclose(high, np.quantile(r, 0.95, axis=0))
    r[::2, 1] = np.nan
    r[:, 2] = np.nan
    low, high = stats.percentile_interval(r, 0.9)
    assert math.isclose(low[1], np.quantile(r[1::2, 1], 0.05))
    assert np.isnan(low[2]) and np.isnan(high[2])


# ---------------------------------------------------------------------------------- bootstrap


def test_bootstrap_ci_contains_true_mean_and_narrows_with_n() -> None:
    rng = np.random.default_rng(42)
    widths = []
    for n in (25, 100, 400):
        x = rng.normal(loc=0.6, scale=0.2, size=n)
        low, high = stats.bootstrap_mean_ci(x, seed=1)
        assert low is not None and high is not None
        assert low < 0.6 < high
        assert low < x.mean() < high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    # Width shrinks like 1/sqrt(n): quadrupling n roughly halves it.
    assert 1.5 < widths[0] / widths[1] < 2.7


def test_bootstrap_ci_coverage_over_seeded_trials() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    trials = 100
    for t in range(trials):
        x = rng.exponential(scale=1.0, size=60)  # skewed, true mean 1
        low, high = stats.bootstrap_mean_ci(x, n_resamples=1000, seed=t)
        covered += low <= 1.0 <= high
    assert covered >= 85  # nominal 95; percentile bootstrap undercovers a little when skewed


def test_bootstrap_seeded_reproducibility_same_bytes() -> None:
    x = np.random.default_rng(0).random((30, 4))
    mask = x > 0.2
    a = stats.bootstrap_means_ci(x, mask, seed=5)
    b = stats.bootstrap_means_ci(x, mask, seed=5)
    c = stats.bootstrap_means_ci(x, mask, seed=6)
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
    assert a[0].tobytes() != c[0].tobytes()
    assert stats.bootstrap_mean_ci(x[:, 0], seed=9) == stats.bootstrap_mean_ci(x[:, 0], seed=9)
    assert stats.sign_flip_pvalue(x[:, 0] - 0.5, seed=9) == stats.sign_flip_pvalue(x[:, 0] - 0.5, seed=9)


def test_bootstrap_degenerate_inputs() -> None:
    assert stats.bootstrap_mean_ci([]) == (None, None)
    assert stats.bootstrap_mean_ci([np.nan, np.nan]) == (None, None)
    assert stats.bootstrap_mean_ci([0.1]) == (0.1, 0.1)
    assert stats.bootstrap_mean_ci([0.3, 0.3, 0.3]) == (0.3, 0.3)
    assert stats.bootstrap_mean_ci([0.1, 0.9], mask=[False, True]) == (0.9, 0.9)
    assert stats.bootstrap_mean_ci([1.0, 2.0], mask=[False, False]) == (None, None)


def test_bootstrap_means_batched_matches_single_and_masks() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((40, 3))
    mask = np.ones_like(x, dtype=bool)
    mask[:10, 1] = False
    mask[:, 2] = False
    mask[5, 2] = True
    low, high = stats.bootstrap_means_ci(x, mask, n_resamples=500, seed=2)
    single = stats.bootstrap_mean_ci(x[:, 1], mask[:, 1], n_resamples=500, seed=2)
    assert (low[1], high[1]) == single  # the same rows resampled, the same rule
    assert low[2] == high[2] == x[5, 2]  # one computable value
    assert low[0] <= x[:, 0].mean() <= high[0]
    # The masked column's interval is about the computable entries only.
    assert low[1] <= x[10:, 1].mean() <= high[1]
    # NaN entries are never computable, with or without a mask.
    y = x.copy()
    y[:, 2] = np.nan
    lo, hi = stats.bootstrap_means_ci(y, n_resamples=200)
    assert np.isnan(lo[2]) and np.isnan(hi[2])
    assert stats.to_optional(lo[2]) is None


def test_resample_means_are_the_means_of_the_resampled_rows() -> None:
    x = np.array([0.0, 1.0, 2.0, 10.0])
    counts = stats.resample_counts(4, n_resamples=20, seed=0)
    for r in range(20):
        expanded = _expand(x, counts[r])
        assert math.isclose(counts[r] @ x / 4, expanded.mean())


def test_paired_bootstrap_ci() -> None:
    rng = np.random.default_rng(3)
    base = rng.random(80)
    new = base + 0.05 + rng.normal(0, 0.02, 80)  # small but consistent improvement
    low, high = stats.paired_bootstrap_ci(new - base)
    assert 0 < low < 0.05 < high
    # Unpaired intervals would be far wider than the paired one.
    lb, hb = stats.bootstrap_mean_ci(base)
    assert (hb - lb) > 5 * (high - low)


# ---------------------------------------------------------------------------- sign-flip test


def test_sign_flip_exact_matches_hand_counts_n4() -> None:
    # d = [1, 2, 3, 4]: |sum| = 10 only for all-plus and all-minus -> 2 of 16 patterns.
    assert stats.sign_flip_pvalue([1, 2, 3, 4]) == 2 / 16
    # d = [1, 1, 1, -1]: sums of four +-1 are -4,-2,0,2,4 with counts 1,4,6,4,1; |sum| >= 2 -> 10.
    assert stats.sign_flip_pvalue([1, 1, 1, -1]) == 10 / 16
    # d = [1, 1, 2, -1]: observed 3. Flipping a subset with sum S gives 3 - 2S, so |.| >= 3 iff
    # S <= 0 ({}, {-1}, {1a,-1}, {1b,-1}) or S >= 3 ({1a,2}, {1b,2}, {1,1,2}, all): 8 of 16.
    assert stats.sign_flip_pvalue([1, 1, 2, -1]) == 8 / 16
    d = [0.5, 1.0, 1.5, 3.0]
    brute = sum(
        abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= abs(sum(d)) - 1e-12
        for signs in itertools.product((1, -1), repeat=4)
    )
    assert stats.sign_flip_pvalue(d) == brute / 16


def test_sign_flip_clear_difference_and_symmetric_noise() -> None:
    rng = np.random.default_rng(11)
    clear = rng.normal(0.3, 0.1, size=40)
    p = stats.sign_flip_pvalue(clear, n_permutations=10000, seed=0)
    assert p < 0.01
    assert p == 1 / 10001  # nothing as extreme: (0 + 1) / (n + 1), the observed counts once
    noise = rng.normal(0.0, 1.0, size=40)
    noise = np.concatenate([noise, -noise])  # exactly symmetric: observed sum is 0
    assert stats.sign_flip_pvalue(noise, seed=0) > 0.2
    small_noise = rng.normal(0, 1, size=12)  # exact path
    assert 0 < stats.sign_flip_pvalue(small_noise) <= 1


def test_sign_flip_exact_clear_difference_and_degenerate() -> None:
    assert stats.sign_flip_pvalue([0.2] * 10) == 2 / 1024
    assert stats.sign_flip_pvalue([]) is None
    assert stats.sign_flip_pvalue([0.0, 0.0, 0.0]) == 1.0
    with pytest.raises(ValueError):
        stats.sign_flip_pvalue([0.1, np.nan])


def test_sign_flip_monte_carlo_agrees_with_exact_for_moderate_n() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(0.2, 1.0, size=16)
    exact = stats.sign_flip_pvalue(d)
    # Force the Monte Carlo path on the same data by appending zeros (they change nothing).
    mc = stats.sign_flip_pvalue(np.concatenate([d, np.zeros(4)]), n_permutations=20000, seed=1)
    assert abs(exact - mc) < 0.02


# --------------------------------------------------------------------------- binary agreement


def test_cohen_kappa_textbook_tables() -> None:
    # Wikipedia "Cohen's kappa", example 1: 50 proposals, yes/yes 20, yes/no 5, no/yes 10,
    # no/no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(0.4)
    # Example 2 there: 45 / 15 / 25 / 15 of 100: p_o = 0.60, p_e = 0.54, kappa = 0.1304.
    a = [1] * 60 + [0] * 40
    b = [1] * 45 + [0] * 15 + [1] * 25 + [0] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(0.06 / 0.46)
    assert stats.cohen_kappa(a, a) == pytest.approx(1.0)


def test_cohen_kappa_multiclass_and_degenerate() -> None:
    # 3 categories; confusion [[2,1,0],[0,2,1],[0,0,3]] over 9 items: p_o = 7/9,
    # rows (3,3,3)/9, cols (2,3,4)/9 -> p_e = (6+9+12)/81 = 1/3 -> kappa = (7/9-1/3)/(2/3) = 2/3.
    a = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    b = ["a", "a", "b", "b", "b", "c", "c", "c", "c"]
    assert stats.cohen_kappa(a, b) == pytest.approx(2 / 3)
    assert stats.cohen_kappa(["x"] * 5, ["x"] * 5) is None  # p_e = 1
    assert stats.cohen_kappa([], []) is None
    assert stats.cohen_kappa(["x"] * 3, ["y"] * 3) == 0.0


def test_roc_auc_hand_counted_pairs_with_ties() -> None:
    scores = [0.9, 0.6, 0.6, 0.3, 0.6, 0.2, 0.1]
    labels = [1, 1, 1, 1, 0, 0, 0]
    # Positives 0.9, 0.6, 0.6, 0.3 vs negatives 0.6, 0.2, 0.1 (12 pairs):
    # 0.9 beats all 3; each 0.6 beats 2 and ties 1 (2.5 each); 0.3 beats 2. (3+2.5+2.5+2)/12.
    assert stats.roc_auc(scores, labels) == pytest.approx(10 / 12)
    assert stats.roc_auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert stats.roc_auc([0.5, 0.5, 0.5], [0, 1, 1]) == 0.5
    assert stats.roc_auc([0.1, 0.9], [1, 1]) is None
    assert stats.roc_auc([0.1, 0.9], [True, False]) == 0.0


def test_balanced_accuracy_and_best_threshold() -> None:
    # TPR 3/4, TNR 1/2 -> 0.625.
    y = [1, 1, 1, 1, 0, 0]
    p = [1, 1, 1, 0, 0, 1]
    assert stats.balanced_accuracy(y, p) == pytest.approx(0.625)
    assert stats.balanced_accuracy([1, 1, 1, 0], [1, 1, 1, 1]) == 0.5  # always-yes is chance
    assert stats.balanced_accuracy([1, 1], [1, 0]) is None  # one class
    ba, t = stats.best_threshold_balanced_accuracy([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
    assert (ba, t) == (1.0, 0.8)
    # Scores 0.1..0.6, labels 0 1 0 1 1 1: t = 0.4 -> TPR 3/4... check by brute force.
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    y = np.array([0, 1, 0, 1, 1, 1])
    brute = max(
        ((stats.balanced_accuracy(y, (s >= t).astype(int)), -t) for t in s), key=lambda v: (v[0], v[1])
    )
    ba, t = stats.best_threshold_balanced_accuracy(s, y)
    assert ba == pytest.approx(brute[0]) and t == -brute[1]
    assert stats.best_threshold_balanced_accuracy([0.3, 0.4], [1, 1]) == (None, None)


def test_binary_inputs_are_validated() -> None:
    with pytest.raises(ValueError):
        stats.roc_auc([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError):
        stats.roc_auc([0.1, np.nan], [0, 1])
    with pytest.raises(ValueError):
        stats.roc_auc([0.1, 0.2, 0.3], [0, 1])


# --------------------------------------------------------------------------- graded agreement


def test_spearman_and_kendall_hand_computed_with_ties() -> None:
    x = [1, 2, 2, 3]
    y = [1, 3, 2, 4]
    # Average ranks x: 1, 2.5, 2.5, 4; y: 1, 3, 2, 4. Centred: (-1.5, 0, 0, 1.5) and
    # (-1.5, .5, -.5, 1.5): cov 4.5, var_x 4.5, var_y 5 -> rho = 4.5 / sqrt(22.5).
    assert stats.spearman(x, y) == pytest.approx(4.5 / math.sqrt(22.5))
    # Pairs: 5 concordant, 0 discordant, 1 tied in x only; untied x = 5, untied y = 6.
    assert stats.kendall_tau_b(x, y) == pytest.approx(5 / math.sqrt(30))
    # Ties on both sides: x = (1,1,2,3), y = (1,2,2,1).
    # Pairs: (12) tie x; (13) C; (14) tie y; (23) tie y; (24) D; (34) D -> C-D = -1,
    # untied x = 5, untied y = 4 -> -1 / sqrt(20).
    assert stats.kendall_tau_b([1, 1, 2, 3], [1, 2, 2, 1]) == pytest.approx(-1 / math.sqrt(20))
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert stats.kendall_tau_b([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    # Perfect agreement with ties still reaches 1 (the "-b" correction).
    assert stats.kendall_tau_b([1, 1, 2, 2], [5, 5, 9, 9]) == pytest.approx(1.0)


def test_rank_statistics_degenerate() -> None:
    assert stats.spearman([1, 1, 1], [1, 2, 3]) is None
    assert stats.kendall_tau_b([1, 2, 3], [4, 4, 4]) is None
    assert stats.spearman([], []) is None
    assert stats.kendall_tau_b([1.0], [2.0]) is None


def _brute_kendall(x: np.ndarray, y: np.ndarray) -> float:
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        c += sx * sy > 0
        d += sx * sy < 0
        tx += sx != 0
        ty += sy != 0
    return (c - d) / math.sqrt(tx * ty)


def test_weighted_kernels_equal_the_statistic_on_the_expanded_resample() -> None:
    rng = np.random.default_rng(2)
    n = 25
    x = rng.integers(0, 5, n).astype(float)
    y = x + rng.integers(0, 3, n)
    labels = (y > 3).astype(int)
    scores = x / 5
    pred = (scores >= 0.5).astype(int)
    w = stats.resample_counts(n, n_resamples=8, seed=4)
    k = stats.kendall_tau_b_weighted(x, y, w)
    s = stats.spearman_weighted(x, y, w)
    a = stats.roc_auc_weighted(scores, labels, w)
    kap = stats.cohen_kappa_weighted(labels, pred, w)
    ba = stats.balanced_accuracy_weighted(labels, pred, w)
    best, _ = stats.best_threshold_balanced_accuracy_weighted(scores, labels, w)
    for r in range(8):
        idx = np.repeat(np.arange(n), w[r].astype(int))
        assert k[r] == pytest.approx(_brute_kendall(x[idx], y[idx]))
        assert s[r] == pytest.approx(stats.spearman(x[idx], y[idx]))
        assert a[r] == pytest.approx(stats.roc_auc(scores[idx], labels[idx]))
        assert kap[r] == pytest.approx(stats.cohen_kappa(labels[idx], pred[idx]))
        assert ba[r] == pytest.approx(stats.balanced_accuracy(labels[idx], pred[idx]))
        assert best[r] == pytest.approx(stats.best_threshold_balanced_accuracy(scores[idx], labels[idx])[0])


def test_bootstrap_ci_for_a_kernel() -> None:
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 80)
    s = np.clip(y * 0.4 + rng.random(80) * 0.6, 0, 1)
    auc = stats.roc_auc(s, y)
    low, high = stats.bootstrap_ci(lambda w: stats.roc_auc_weighted(s, y, w), 80, seed=1)
    assert low < auc < high <= 1.0
    assert stats.bootstrap_ci(lambda w: stats.roc_auc_weighted([], [], w), 0) == (None, None)


# ------------------------------------------------------------------------------------------ PPI


def test_ppi_formula_by_hand() -> None:
    f_l = [1.0, 1.0, 0.0, 1.0]
    y_l = [1.0, 0.0, 0.0, 1.0]
    f_u = [1.0, 0.0, 1.0, 1.0, 1.0]
    theta, low, high = stats.ppi_mean_ci(f_l, y_l, f_u)
    # mean(f_u) = 0.8, rectifier (0, 1, 0, 0) mean 0.25 -> 0.55.
    assert theta == pytest.approx(0.55)
    a, b = np.var(f_u, ddof=1) / 5, np.var([0, 1, 0, 0], ddof=1) / 4  # 0.04, 0.0625
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a**2 / 4 + b**2 / 3)  # Welch-Satterthwaite: 6.17, rounded down to 6
    assert 6 < df < 7
    assert high - theta == pytest.approx(2.4469118511449786 * se)  # t(0.975, 6), not z = 1.96
    assert theta - low == pytest.approx(high - theta)
    assert stats.ppi_mean_ci([], [], [0.5, 0.5]) == (None, None, None)
    assert stats.ppi_mean_ci([0.5], [1.0], [0.5, 0.5]) == (1.0, None, None)  # 0.5 - (0.5 - 1)


def test_ppi_covers_truth_where_the_biased_judge_mean_does_not() -> None:
    truth = 0.6
    covered = naive_hits = 0
    widths_ppi, widths_classical = [], []
    trials = 200
    for t in range(trials):
        rng = np.random.default_rng(1000 + t)
        y_l = (rng.random(150) < truth).astype(float)
        y_u = (rng.random(3000) < truth).astype(float)

        def judge(y: np.ndarray, rng: np.random.Generator = rng) -> np.ndarray:
            # A generous judge: says yes to 95% of true positives and 40% of true negatives.
            return np.where(y == 1, rng.random(y.size) < 0.95, rng.random(y.size) < 0.4).astype(float)

        f_l, f_u = judge(y_l), judge(y_u)
        _theta, low, high = stats.ppi_mean_ci(f_l, y_l, f_u)
        covered += low <= truth <= high
        naive_low, naive_high = stats.mean_t_ci(f_u)[1:]
        naive_hits += naive_low <= truth <= naive_high
        widths_ppi.append(high - low)
        classical = stats.mean_t_ci(y_l)
        widths_classical.append(classical[2] - classical[1])
    assert covered >= 180  # nominal 95%: expect ~190 of 200
    assert naive_hits == 0  # the judge's own mean (~0.73) is confidently wrong
    assert np.mean(widths_ppi) < np.mean(widths_classical)  # and PPI beats labels alone


def test_holm_adjust_worked_example_and_order():
    assert stats.holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm_adjust([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert stats.holm_adjust([0.9, 0.8]) == [1.0, 1.0]
    assert stats.holm_adjust([]) == []


@pytest.mark.parametrize(
    ("level", "df", "expected"),
    [(0.95, 1, 12.706204736174707), (0.95, 2, 4.302652729749464), (0.95, 9, 2.2621571627982053),
     (0.99, 30, 2.749995653567271), (0.9, 100, 1.6602343260657506), (0.95, 101, 1.9837310029665818),
     (0.95, 1000, 1.9623390808264078), (0.95, 2.9, 4.302652729749464)],
)
def test_t_quantile_matches_the_tables(level, df, expected):
    assert stats.t_quantile(level, df) == pytest.approx(expected, rel=1e-6)


def test_labels_only_interval_uses_t_with_few_labels():
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]  # 10 labels
    mean, low, high = stats.mean_t_ci(values)
    sd_of_mean = math.sqrt(np.var(values, ddof=1) / 10)
    assert mean == 0.7
    assert high - mean == pytest.approx(2.2621571627982053 * sd_of_mean)  # t(0.975, 9), not 1.96
    assert stats.mean_t_ci([0.5]) == (0.5, None, None)


def test_ppi_interval_with_no_spread_is_the_point():
    assert stats.ppi_mean_ci([1.0, 1.0], [1.0, 1.0], [1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)
