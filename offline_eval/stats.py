"""Statistics for offline evaluation: how sure are we, and do the judge and the humans agree?

Pure NumPy, no I/O. Everything here answers one of three questions.

1. **How precise is a mean score?** A mean over 40 samples is an estimate, not a fact. The
   *percentile bootstrap* (:func:`bootstrap_mean_ci`, :func:`bootstrap_means_ci`) pretends the
   samples we have *are* the population, draws ``n_resamples`` new data sets of the same size from
   them with replacement, recomputes the mean on each, and reports the middle ``level`` share of
   those means as the interval.

2. **Did a change really move a metric?** When the same samples are scored twice (before and
   after a change) the per-sample *differences* carry the signal and the between-sample spread
   cancels out. :func:`paired_bootstrap_ci` gives an interval for the mean difference and
   :func:`sign_flip_pvalue` a permutation p-value: if the change did nothing, each difference was
   equally likely to come out with either sign, so we flip signs at random and ask how often the
   flipped mean is at least as far from zero as the one observed.

3. **Does the judge agree with people?** Given human labels for some samples:
   :func:`balanced_accuracy`, :func:`best_threshold_balanced_accuracy`, :func:`roc_auc` and
   :func:`cohen_kappa` for yes/no labels; :func:`spearman` and :func:`kendall_tau_b` for graded
   labels; and :func:`ppi_mean_ci` (prediction-powered inference) to estimate the *true* mean of a
   label from a few human labels plus judge scores on everything.

Conventions
-----------
* **Degenerate input gives ``None``, never NaN.** A statistic that is undefined on its input (one
  class only, a constant vector, nothing computable) returns ``None`` and the docstring says when.
  The vectorised "weighted" kernels use ``np.nan`` internally (one value per resample); use
  :func:`to_optional` to turn a NumPy scalar into ``float | None`` at the boundary.
* **One resample matrix.** Every bootstrap draws a single ``(n_resamples, n)`` matrix of row
  indices with ``numpy.random.default_rng(seed)`` and turns it into a matrix of *counts*
  (:func:`resample_counts`): entry ``[r, i]`` says how many times sample ``i`` appears in resample
  ``r``. A statistic on a resample is then the same statistic computed with those counts as
  weights, so all resamples are evaluated at once with array operations; there is no Python loop
  over resamples. The same ``seed`` and ``n`` always give the same matrix, hence byte-identical
  results.
* **Weighted kernels.** Each agreement statistic is implemented once as a kernel taking a weight
  matrix ``W`` of shape ``(R, n)`` and returning ``R`` values (``*_weighted``). The plain function
  is the kernel with ``W = None`` (one row of ones), so point estimates and bootstrap replicates
  can never disagree about the definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "balanced_accuracy",
    "balanced_accuracy_weighted",
    "best_threshold_balanced_accuracy",
    "best_threshold_balanced_accuracy_weighted",
    "bootstrap_ci",
    "bootstrap_mean_ci",
    "bootstrap_means_ci",
    "cohen_kappa",
    "cohen_kappa_weighted",
    "holm_adjust",
    "kendall_tau_b",
    "kendall_tau_b_weighted",
    "mean_t_ci",
    "paired_bootstrap_ci",
    "percentile_interval",
    "ppi_mean_ci",
    "proportion_ci",
    "resample_counts",
    "roc_auc",
    "roc_auc_weighted",
    "sign_flip_pvalue",
    "spearman",
    "spearman_weighted",
    "t_quantile",
    "to_optional",
]

# Upper bound on the elements of any temporary matrix built in one piece (about 32 MiB of float64).
_BLOCK_ELEMENTS = 1 << 22
# Sign-flip tests enumerate all 2**n sign patterns up to this n (65,536 patterns), else sample.
_EXACT_MAX_N = 16


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def to_optional(x: Any) -> float | None:
    """Return ``x`` as a Python float, or ``None`` when it is ``None``, NaN or infinite.

    The boundary between NumPy (where "undefined" is ``nan``) and JSON reports (where it is
    ``null``): ``to_optional(np.float64("nan")) is None``; ``to_optional(np.float64(0.5)) == 0.5``.
    """
    if x is None:
        return None
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _check_level(level: float) -> None:
    if not (0.0 < float(level) < 1.0):
        raise ValueError(f"level must be between 0 and 1 (exclusive), got {level!r}")


def _finite_vector(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _binary(labels: ArrayLike, name: str = "labels") -> np.ndarray:
    """Boolean vector from booleans or 0/1 numbers; anything else is a ValueError."""
    arr = np.asarray(labels)
    if arr.dtype == bool:
        return arr.ravel()
    try:
        f = arr.astype(float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be booleans or 0/1 numbers") from None
    if not np.all((f == 0.0) | (f == 1.0)):
        raise ValueError(f"{name} must be booleans or 0/1 numbers")
    return f == 1.0


def _same_length(*arrays: np.ndarray) -> int:
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"inputs must have the same length, got {sorted(lengths)}")
    return lengths.pop()


def _weights(weights: ArrayLike | None, n: int) -> np.ndarray:
    """Weight matrix (R, n); ``None`` means one row of ones (the point estimate)."""
    if weights is None:
        return np.ones((1, n))
    w = np.asarray(weights, dtype=float)
    if w.ndim == 1:
        w = w[None, :]
    if w.ndim != 2 or w.shape[1] != n:
        raise ValueError(f"weights must have shape (n_resamples, {n}), got {w.shape}")
    return w


def _group_sum(w: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum the columns of ``w`` (R, n) that share a code: result (R, n_groups).

    ``out[r, g] = sum(w[r, i] for i where codes[i] == g)``, done with one sort and
    ``np.add.reduceat`` instead of a one-hot matrix product.
    """
    out = np.zeros((w.shape[0], n_groups))
    if codes.size == 0:
        return out
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out[:, sorted_codes[starts]] = np.add.reduceat(w[:, order], starts, axis=1)
    return out


def _numeric_codes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``x`` and, for each element, the index of its value."""
    uniques, codes = np.unique(x, return_inverse=True)
    return uniques, codes.ravel()


def _categorical_codes(*seqs: ArrayLike) -> tuple[list[np.ndarray], int]:
    """Integer codes over the union of categories of several sequences (any hashable values)."""
    index: dict[Any, int] = {}
    out = []
    for seq in seqs:
        items = seq.ravel().tolist() if isinstance(seq, np.ndarray) else list(seq)  # type: ignore[arg-type]
        out.append(np.array([index.setdefault(v, len(index)) for v in items], dtype=np.int64))
    return out, len(index)


def _divide(num: np.ndarray, den: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``num / den`` where ``ok``, NaN elsewhere, without floating-point warnings."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=ok)
    return out


# --------------------------------------------------------------------------------------------
# The bootstrap machinery
# --------------------------------------------------------------------------------------------


def resample_counts(n: int, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Draw ONE bootstrap index matrix and return it as counts, shape ``(n_resamples, n)``.

    Resample ``r`` picks ``n`` row indices uniformly with replacement; ``counts[r, i]`` is how
    often row ``i`` was picked (each row of ``counts`` sums to ``n``). Turning indices into counts
    makes "statistic of resample r" a weighted statistic, which is a matrix product for a mean:
    ``counts @ values / n``. Deterministic in ``(n, n_resamples, seed)``.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if n == 0:
        return np.zeros((n_resamples, 0))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    flat = idx + (np.arange(n_resamples, dtype=np.int64) * n)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_resamples * n)
    return counts.reshape(n_resamples, n).astype(np.float64)


def percentile_interval(replicates: ArrayLike, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of bootstrap replicates, ignoring NaN (dropped) resamples.

    ``replicates`` is ``(R,)`` or ``(R, m)``; returns ``(low, high)`` as arrays of shape ``()`` or
    ``(m,)`` holding the ``(1-level)/2`` and ``(1+level)/2`` quantiles (linear interpolation, the
    same as ``numpy.quantile``'s default), NaN where a column has no finite replicate.
    """
    _check_level(level)
    s = np.asarray(replicates, dtype=float)
    one_d = s.ndim == 1
    if one_d:
        s = s[:, None]
    if s.ndim != 2:
        raise ValueError("replicates must be a 1-D or 2-D array")
    finite = np.isfinite(s)
    k = finite.sum(axis=0)  # usable replicates per column
    ordered = np.sort(np.where(finite, s, np.inf), axis=0)  # unusable ones sort last
    q = np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0])[:, None]
    pos = q * np.maximum(k - 1, 0)  # (2, m) fractional positions among the usable replicates
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(k - 1, 0))
    frac = pos - lo
    v_lo = np.take_along_axis(ordered, lo, axis=0) if ordered.shape[0] else np.zeros_like(pos)
    v_hi = np.take_along_axis(ordered, hi, axis=0) if ordered.shape[0] else np.zeros_like(pos)
    with np.errstate(invalid="ignore"):
        qs = v_lo + (v_hi - v_lo) * frac
    qs = np.where(k > 0, qs, np.nan)
    if one_d:
        return qs[0, 0], qs[1, 0]
    return qs[0], qs[1]


def bootstrap_means_ci(
    matrix: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap intervals for the column means of ``matrix`` (n_samples, n_metrics).

    Rows are samples and are resampled *together*, once, for all metrics (one index matrix), so
    the intervals of different metrics come from the same resampled data sets. ``mask`` (same
    shape, True = computable) marks which entries count; by default every finite entry does, and
    non-finite entries never do. In each resample a metric's mean is taken over its computable
    entries; a resample that drew none of them is dropped for that metric.

    Returns ``(low, high)``, float arrays of length ``n_metrics``, NaN for a metric with no
    computable entry (convert with :func:`to_optional`). A metric with exactly one computable
    value ``v`` gets ``(v, v)``; every interval is clipped to the range of the computable values
    (the mean of a resample can never leave it, up to rounding).
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"matrix must be 2-D (n_samples, n_metrics), got shape {x.shape}")
    computable = np.isfinite(x)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != x.shape:
            raise ValueError(f"mask shape {m.shape} differs from matrix shape {x.shape}")
        computable &= m
    n, n_metrics = x.shape
    _check_level(level)
    low = np.full(n_metrics, np.nan)
    high = np.full(n_metrics, np.nan)
    n_ok = computable.sum(axis=0)
    if n == 0 or not n_ok.any():
        return low, high

    counts = resample_counts(n, n_resamples=n_resamples, seed=seed)
    sums = counts @ np.where(computable, x, 0.0)
    used = counts @ computable.astype(np.float64)
    means = _divide(sums, used, used > 0)
    low, high = percentile_interval(means, level)

    has = n_ok > 0
    vmin = np.where(computable, x, np.inf).min(axis=0)
    vmax = np.where(computable, x, -np.inf).max(axis=0)
    low = np.where(has, np.clip(low, vmin, vmax), np.nan)
    high = np.where(has, np.clip(high, vmin, vmax), np.nan)
    single = n_ok == 1
    low[single] = vmin[single]
    high[single] = vmin[single]
    return low, high


def bootstrap_mean_ci(
    values: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap ``level`` interval for the mean of the computable ``values``.

    ``values`` is 1-D, one entry per sample; ``mask`` (True = computable) defaults to "finite".
    This is :func:`bootstrap_means_ci` on a single column: the ``n`` samples are resampled with
    one ``(n_resamples, n)`` index matrix, each resample's mean is over its computable entries,
    and resamples with none are dropped.

    Returns ``(None, None)`` when nothing is computable and ``(v, v)`` for a single value ``v``.
    Example: ``bootstrap_mean_ci([0.2, 0.4, 0.9])`` gives an interval around 0.5 within
    ``[0.2, 0.9]``.
    """
    v = np.asarray(values, dtype=float).ravel()
    m = None if mask is None else np.asarray(mask, dtype=bool).ravel()[:, None]
    low, high = bootstrap_means_ci(v[:, None], m, n_resamples=n_resamples, level=level, seed=seed)
    return to_optional(low[0]), to_optional(high[0])


def paired_bootstrap_ci(
    diff: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Bootstrap interval for a mean *paired* difference (``new - base`` per sample).

    Pairing is in the input: resampling the per-sample differences keeps each sample's two scores
    together, so the interval reflects only how the *change* varies across samples, not how hard
    the samples are. Same rules as :func:`bootstrap_mean_ci` (``None`` when empty).
    """
    return bootstrap_mean_ci(diff, mask, n_resamples=n_resamples, level=level, seed=seed)


def bootstrap_ci(
    kernel: Callable[[np.ndarray], np.ndarray],
    n: int,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap interval for any statistic given as a weighted kernel.

    ``kernel(W)`` receives the ``(n_resamples, n)`` count matrix from :func:`resample_counts` and
    must return one value per resample (NaN where the statistic is undefined on that resample;
    those resamples are dropped). Example, the AUC of ``scores`` against ``labels``::

        bootstrap_ci(lambda W: roc_auc_weighted(scores, labels, W), len(scores))

    Returns ``(None, None)`` when ``n == 0`` or no resample gave a finite value.
    """
    if n == 0:
        return None, None
    counts = resample_counts(n, n_resamples=n_resamples, seed=seed)
    low, high = percentile_interval(np.asarray(kernel(counts), dtype=float).ravel(), level)
    return to_optional(low), to_optional(high)


# --------------------------------------------------------------------------------------------
# Paired permutation test
# --------------------------------------------------------------------------------------------


def sign_flip_pvalue(diff: ArrayLike, *, n_permutations: int = 10000, seed: int = 0) -> float | None:
    """Two-sided paired permutation test of "mean difference = 0" by random sign flips.

    Under the null hypothesis the change did nothing, so each per-sample difference ``d_i`` was as
    likely to be ``+|d_i|`` as ``-|d_i|``. The p-value is the share of sign patterns ``s`` whose
    ``|sum(s * d)|`` is at least the observed ``|sum(d)|``:

    * ``n <= 16``: all ``2**n`` patterns are enumerated (exact; the observed pattern is one of
      them). For ``d = [1, 2, 3, 4]`` only all-plus and all-minus reach ``|10|``: ``p = 2/16``.
    * otherwise ``n_permutations`` random patterns are drawn and ``p = (count + 1) /
      (n_permutations + 1)``, counting the observed data as one permutation so that ``p > 0``.

    Zero differences carry no information and do not change the answer. Returns ``None`` for an
    empty ``diff``; all-zero differences give ``p = 1``. Non-finite differences are a ValueError.
    """
    d = _finite_vector(diff, "diff")
    n = d.size
    if n == 0:
        return None
    observed = abs(float(d.sum()))
    # Equal statistics reached by different summation orders must compare equal.
    tol = 1e-10 * float(np.abs(d).sum())
    threshold = observed - tol

    if n <= _EXACT_MAX_N:
        patterns = np.arange(1 << n, dtype=np.int64)
        bits = ((patterns[:, None] >> np.arange(n)) & 1).astype(np.float64)
        stats = d.sum() - 2.0 * (bits @ d)  # sum(s*d) with s = +1 where bit is 0, -1 where 1
        return float(np.count_nonzero(np.abs(stats) >= threshold)) / float(1 << n)

    if n_permutations < 1:
        raise ValueError(f"n_permutations must be at least 1, got {n_permutations}")
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // n)  # bounds memory; one block when n <= 419 at 10k perms
    count = 0
    done = 0
    total = float(d.sum())
    while done < n_permutations:
        b = min(block, n_permutations - done)
        bits = rng.integers(0, 2, size=(b, n)).astype(np.float64)
        stats = total - 2.0 * (bits @ d)
        count += int(np.count_nonzero(np.abs(stats) >= threshold))
        done += b
    return (count + 1) / (n_permutations + 1)


def holm_adjust(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order, for testing several hypotheses at once.

    Rejecting every hypothesis whose adjusted p is below ``alpha`` keeps the chance of *any* false
    rejection at most ``alpha`` (whatever the dependence between the tests), where testing each at
    ``alpha`` alone lets it grow with their number. Sorted ascending, ``p_(k)`` is multiplied by
    ``m - k + 1`` (k from 1), capped at 1 and made non-decreasing: ``[0.01, 0.04, 0.03]`` →
    ``[0.03, 0.06, 0.06]``.
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# --------------------------------------------------------------------------------------------
# Agreement with labels: binary labels
# --------------------------------------------------------------------------------------------


def balanced_accuracy_weighted(
    y_true: ArrayLike, y_pred: ArrayLike, weights: ArrayLike | None = None
) -> np.ndarray:
    """Kernel of :func:`balanced_accuracy`: one value per row of ``weights`` (NaN if < 2 classes)."""
    (t, p), k = _categorical_codes(y_true, y_pred)
    n = _same_length(t, p)
    w = _weights(weights, n)
    num = _group_sum(w * (t == p), t, k)  # weighted correct predictions per true class
    den = _group_sum(w, t, k)  # weighted size of each true class
    present = den > 0
    recall = np.zeros_like(num)
    np.divide(num, den, out=recall, where=present)
    n_present = present.sum(axis=1)
    return _divide(recall.sum(axis=1), n_present.astype(float), n_present >= 2)


def balanced_accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float | None:
    """Mean per-class recall: the accuracy a classifier gets when every class counts equally.

    For yes/no labels it is ``(TPR + TNR) / 2``, so always answering "yes" scores 0.5 however
    skewed the labels are (plain accuracy would reward it). Works for any categorical labels:
    the mean recall over the classes present in ``y_true``.

    Returns ``None`` when ``y_true`` holds fewer than two classes (one recall is undefined).
    """
    return to_optional(balanced_accuracy_weighted(y_true, y_pred, None)[0])


def best_threshold_balanced_accuracy_weighted(
    scores: ArrayLike, labels: ArrayLike, weights: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel of :func:`best_threshold_balanced_accuracy`: ``(ba, threshold)`` per weight row.

    Candidate thresholds are the distinct scores. With scores grouped by value, the positives at
    or above each candidate and the negatives below it are cumulative sums, so every threshold of
    every resample is evaluated in O(R * n) without sorting per resample.
    """
    s = _finite_vector(scores, "scores")
    y = _binary(labels)
    n = _same_length(s, y)
    w = _weights(weights, n)
    r = w.shape[0]
    if n == 0:
        return np.full(r, np.nan), np.full(r, np.nan)
    uniques, codes = _numeric_codes(s)
    pos = _group_sum(w * y, codes, uniques.size)  # (R, U) weighted positives per score value
    neg = _group_sum(w * ~y, codes, uniques.size)
    n_pos = pos.sum(axis=1, keepdims=True)
    n_neg = neg.sum(axis=1, keepdims=True)
    tp = np.cumsum(pos[:, ::-1], axis=1)[:, ::-1]  # positives with score >= threshold
    tn = np.cumsum(neg, axis=1) - neg  # negatives with score < threshold
    ok = (n_pos > 0) & (n_neg > 0)
    ba = 0.5 * (_divide(tp, n_pos, ok) + _divide(tn, n_neg, ok))
    defined = ok[:, 0]
    best = np.argmax(np.where(defined[:, None], ba, -np.inf), axis=1)  # first max: lowest threshold
    value = np.where(defined, ba[np.arange(r), best], np.nan)
    threshold = np.where(defined, uniques[best], np.nan)
    return value, threshold


def best_threshold_balanced_accuracy(
    scores: ArrayLike, labels: ArrayLike
) -> tuple[float | None, float | None]:
    """Best balanced accuracy of the rule "predict yes when score >= t", and that ``t``.

    Tries every distinct score as ``t`` (predicting all-yes or all-no scores 0.5, so the result
    is at least 0.5) and returns the lowest ``t`` among the best. This is the *in-sample* best and
    is optimistic: the threshold was chosen on the same labels it is scored on, so also look at
    the balanced accuracy at a threshold fixed in advance.

    Returns ``(None, None)`` when the labels hold only one class.
    """
    ba, t = best_threshold_balanced_accuracy_weighted(scores, labels, None)
    value = to_optional(ba[0])
    return (value, to_optional(t[0])) if value is not None else (None, None)


def roc_auc_weighted(scores: ArrayLike, labels: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Kernel of :func:`roc_auc`: one AUC per row of ``weights`` (NaN without both classes).

    For each distinct score value the weighted negatives strictly below it and tied with it are
    cumulative sums, so the pair count is O(R * n) instead of O(R * n_pos * n_neg).
    """
    s = _finite_vector(scores, "scores")
    y = _binary(labels)
    n = _same_length(s, y)
    w = _weights(weights, n)
    if n == 0:
        return np.full(w.shape[0], np.nan)
    uniques, codes = _numeric_codes(s)
    pos = _group_sum(w * y, codes, uniques.size)
    neg = _group_sum(w * ~y, codes, uniques.size)
    neg_below = np.cumsum(neg, axis=1) - neg
    wins = (pos * (neg_below + 0.5 * neg)).sum(axis=1)  # a tie is half a win
    pairs = pos.sum(axis=1) * neg.sum(axis=1)
    return _divide(wins, pairs, pairs > 0)


def roc_auc(scores: ArrayLike, labels: ArrayLike) -> float | None:
    """Area under the ROC curve: the chance a random positive outscores a random negative.

    Computed as the Mann-Whitney statistic over all (positive, negative) pairs, a tied pair
    counting 1/2: ``AUC = (wins + ties / 2) / (n_pos * n_neg)``. 1.0 = the judge's score separates
    the classes perfectly, 0.5 = no better than chance, whatever the threshold.

    Returns ``None`` when the labels hold only one class.
    """
    return to_optional(roc_auc_weighted(scores, labels, None)[0])


def cohen_kappa_weighted(a: ArrayLike, b: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Kernel of :func:`cohen_kappa`: one kappa per row of ``weights`` (NaN when p_e = 1)."""
    (ca, cb), k = _categorical_codes(a, b)
    n = _same_length(ca, cb)
    w = _weights(weights, n)
    if n == 0:
        return np.full(w.shape[0], np.nan)
    total = w.sum(axis=1)
    p_o = (w * (ca == cb)).sum(axis=1) / total  # the confusion matrix's diagonal share
    rows = _group_sum(w, ca, k) / total[:, None]  # its margins: rater a's category shares
    cols = _group_sum(w, cb, k) / total[:, None]
    p_e = (rows * cols).sum(axis=1)
    return _divide(p_o - p_e, 1.0 - p_e, (1.0 - p_e) > 1e-12)


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float | None:
    """Cohen's kappa: agreement between two raters beyond what chance alone would give.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed share of agreements and ``p_e``
    the share expected if both raters labelled at random with their own label frequencies. 1 =
    perfect agreement, 0 = chance level, negative = worse than chance. Any hashable categories.

    Returns ``None`` when ``p_e = 1`` (both raters used one and the same category throughout:
    agreement is certain, so "beyond chance" is undefined) or the input is empty.
    """
    return to_optional(cohen_kappa_weighted(a, b, None)[0])


# --------------------------------------------------------------------------------------------
# Agreement with labels: graded labels
# --------------------------------------------------------------------------------------------


def _weighted_ranks(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks of ``x`` in each resample, and the number of distinct values present.

    In a resample where value ``u`` occurs ``c_u`` times (its weight) and ``L_u`` values are
    smaller, every copy of ``u`` gets the average of ranks ``L_u + 1 .. L_u + c_u``, i.e.
    ``L_u + (c_u + 1) / 2``, which is how ties are ranked.
    """
    uniques, codes = _numeric_codes(x)
    counts = _group_sum(w, codes, uniques.size)
    below = np.cumsum(counts, axis=1) - counts
    ranks = (below + (counts + 1.0) / 2.0)[:, codes]
    return ranks, (counts > 0).sum(axis=1)


def spearman_weighted(x: ArrayLike, y: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Kernel of :func:`spearman`: weighted Pearson correlation of per-resample average ranks."""
    xs = _finite_vector(x, "x")
    ys = _finite_vector(y, "y")
    n = _same_length(xs, ys)
    w = _weights(weights, n)
    if n == 0:
        return np.full(w.shape[0], np.nan)
    rx, distinct_x = _weighted_ranks(xs, w)
    ry, distinct_y = _weighted_ranks(ys, w)
    total = w.sum(axis=1, keepdims=True)
    dx = rx - (w * rx).sum(axis=1, keepdims=True) / total
    dy = ry - (w * ry).sum(axis=1, keepdims=True) / total
    cov = (w * dx * dy).sum(axis=1)
    var = (w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1)
    ok = (distinct_x >= 2) & (distinct_y >= 2)
    rho = _divide(cov, np.sqrt(np.where(ok, var, 1.0)), ok)
    return np.clip(rho, -1.0, 1.0)


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties get average ranks).

    1 = the two orderings agree exactly, -1 = exactly reversed, 0 = no monotone relation. Only the
    order matters, so a judge scoring 0..1 can be compared with humans grading 1..5.

    Returns ``None`` when either vector is constant (no ranking) or empty.
    """
    return to_optional(spearman_weighted(x, y, None)[0])


def kendall_tau_b_weighted(x: ArrayLike, y: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Kernel of :func:`kendall_tau_b`: one tau-b per row of ``weights``.

    Counts concordant minus discordant pairs as the quadratic form ``w^T M w`` with
    ``M[a, b] = sign(x_a - x_b) * sign(y_a - y_b)`` over the distinct (x, y) pairs, built in column
    blocks so memory stays bounded; the tie corrections come from per-value weight totals.
    Cost O(R * u^2) for u distinct (x, y) pairs.
    """
    xs = _finite_vector(x, "x")
    ys = _finite_vector(y, "y")
    n = _same_length(xs, ys)
    w = _weights(weights, n)
    r = w.shape[0]
    if n == 0:
        return np.full(r, np.nan)
    ux, cx = _numeric_codes(xs)
    uy, cy = _numeric_codes(ys)
    joint, jcodes = _numeric_codes(cx * uy.size + cy)
    wj = _group_sum(w, jcodes, joint.size)  # (R, u): weight of each distinct (x, y) pair
    px = ux[joint // uy.size]
    py = uy[joint % uy.size]
    u = joint.size
    block = max(1, _BLOCK_ELEMENTS // max(u, r))
    s = np.zeros(r)
    for start in range(0, u, block):  # blocks of pairs, not resamples
        cols = slice(start, start + block)
        m = np.sign(px[:, None] - px[None, cols]) * np.sign(py[:, None] - py[None, cols])
        s += ((wj @ m) * wj[:, cols]).sum(axis=1)
    total = w.sum(axis=1)
    gx = _group_sum(w, cx, ux.size)
    gy = _group_sum(w, cy, uy.size)
    untied_x = total**2 - (gx**2).sum(axis=1)  # ordered pairs with different x
    untied_y = total**2 - (gy**2).sum(axis=1)
    ok = ((gx > 0).sum(axis=1) >= 2) & ((gy > 0).sum(axis=1) >= 2)
    tau = _divide(s, np.sqrt(np.where(ok, untied_x * untied_y, 1.0)), ok)
    return np.clip(tau, -1.0, 1.0)


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float | None:
    """Kendall's tau-b: (concordant - discordant pairs) / sqrt(pairs untied in x * untied in y).

    A pair of samples is concordant when x and y order it the same way, discordant when they
    disagree; pairs tied in either variable are neither, and the "-b" denominator corrects for
    those ties so that perfectly agreeing tied data still reach 1. Read it as "the share of pairs
    ordered alike minus the share ordered oppositely".

    Returns ``None`` when either vector is constant or empty.
    """
    return to_optional(kendall_tau_b_weighted(x, y, None)[0])


# --------------------------------------------------------------------------------------------
# Estimating a true mean: classical and prediction-powered
# --------------------------------------------------------------------------------------------


def _z(level: float) -> float:
    _check_level(level)
    return NormalDist().inv_cdf(0.5 + level / 2.0)


# Above this many degrees of freedom the quantile comes from the Cornish-Fisher expansion (error
# below 1e-6 there), below it from the exact CDF, whose cost grows with the degrees of freedom.
_T_EXACT_MAX_DF = 100


def _t_within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df``: the closed form in theta = atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 c2 + 2*4/(3*5) c2^2 + ...)), df - 3 over 2 terms
        for j in range(1, (df - 1) // 2):
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        return 2 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0))
    for j in range(1, df // 2):  # even: sin (1 + 1/2 c2 + 1*3/(2*4) c2^2 + ...), df / 2 terms
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


def t_quantile(level: float, df: float) -> float:
    """The ``t`` with P(|T| <= t) = ``level`` for Student's t with ``df`` degrees of freedom.

    A non-integer ``df`` (Welch-Satterthwaite) is rounded down, which widens the interval a little:
    the conservative side. ``t_quantile(0.95, 1) = 12.706``; ``t_quantile(0.95, 10) = 2.228``; it
    tends to the normal 1.960 as ``df`` grows.
    """
    z = _z(level)
    k = int(math.floor(df))
    if k < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df!r}")
    if k > _T_EXACT_MAX_DF:
        return (z + (z**3 + z) / (4 * k) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * k**2)
                + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * k**3))
    low, high = z, 2 * z
    while _t_within(high, k) < level:
        low, high = high, 2 * high
    for _ in range(100):  # bisection down to the float's resolution
        mid = (low + high) / 2
        low, high = (mid, high) if _t_within(mid, k) < level else (low, mid)
    return high


def mean_t_ci(
    values: ArrayLike, *, level: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """Mean with the classical Student-t interval ``mean +/- t(n - 1) * sd / sqrt(n)``.

    t, not the normal z: with few values the spread is itself an estimate, and z would claim more
    confidence than ten labels give (z 1.96 against t 2.26 at n = 10).

    Returns ``(estimate, low, high)``; ``(None, None, None)`` when empty and ``(mean, None, None)``
    for a single value (no spread to estimate).
    """
    v = _finite_vector(values, "values")
    if v.size == 0:
        return None, None, None
    mean = float(v.mean())
    if v.size < 2:
        return mean, None, None
    half = t_quantile(level, v.size - 1) * math.sqrt(float(v.var(ddof=1)) / v.size)
    return mean, mean - half, mean + half


def proportion_ci(
    k: int, n: int, *, level: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """A share ``k / n`` with its Wilson score interval (Wilson, 1927): the judge's error rate on ``n``
    reviewed items of which ``k`` were wrong.

    Not the normal "p +/- z sqrt(p(1-p)/n)": with few items, or no error at all, that interval shrinks
    to nothing (0 of 5 wrong would read [0, 0]); Wilson's stays inside [0, 1] and honest,
    0 of 5 giving [0, 0.434]::

        centre = (k + z^2/2) / (n + z^2),  half = z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4)

    Returns ``(k / n, low, high)``; ``(None, None, None)`` for ``n = 0``.
    """
    if isinstance(k, bool) or isinstance(n, bool) or int(k) != k or int(n) != n or not 0 <= k <= n:
        raise ValueError(f"expected whole numbers 0 <= k <= n, got k={k!r}, n={n!r}")
    if n == 0:
        return None, None, None
    z = _z(level)
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4)
    return k / n, max(0.0, centre - half), min(1.0, centre + half)


def ppi_mean_ci(
    pred_labelled: ArrayLike,
    true_labelled: ArrayLike,
    pred_unlabelled: ArrayLike,
    *,
    level: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """Prediction-powered inference (PPI) for the mean of a label (Angelopoulos et al., 2023).

    Setting: a judge predicts the label on many samples (``pred_unlabelled``, N of them), and a
    person labelled a few more (``n`` samples with both ``pred_labelled`` and ``true_labelled``).
    The judge's mean alone is biased if the judge is; the labels alone give an honest but wide
    interval. PPI uses the labelled set to measure the judge's bias and subtracts it:

        rectifier = pred_labelled - true_labelled
        theta = mean(pred_unlabelled) - mean(rectifier)
        se^2  = var(pred_unlabelled) / N + var(rectifier) / n      (sample variances)
        interval = theta +/- t * se,  t = Student's t quantile at (1 + level) / 2

    with the Welch-Satterthwaite degrees of freedom of that sum of two variances: with few labels the
    rectifier's variance is a rough estimate, and the normal z would make the interval too narrow.

    The estimate is unbiased whatever the judge's bias, and the interval is narrower than the
    labels-only one when the judge's errors vary less than the labels do. This is the form ARES
    uses. The two sets should be disjoint random samples of the same population. The estimate is
    not clipped to the label's range.

    Returns ``(theta, low, high)``; ``(None, None, None)`` when either set is empty and
    ``(theta, None, None)`` when either has a single element (no variance to estimate).
    """
    f_l = _finite_vector(pred_labelled, "pred_labelled")
    y_l = _finite_vector(true_labelled, "true_labelled")
    f_u = _finite_vector(pred_unlabelled, "pred_unlabelled")
    n = _same_length(f_l, y_l)
    big_n = f_u.size
    if n == 0 or big_n == 0:
        return None, None, None
    rectifier = f_l - y_l
    theta = float(f_u.mean() - rectifier.mean())
    if n < 2 or big_n < 2:
        return theta, None, None
    parts = (float(f_u.var(ddof=1)) / big_n, float(rectifier.var(ddof=1)) / n)
    se2 = sum(parts)
    if se2 == 0.0:
        return theta, theta, theta  # no spread in either set: nothing to widen
    df = se2**2 / (parts[0] ** 2 / (big_n - 1) + parts[1] ** 2 / (n - 1))
    half = t_quantile(level, df) * math.sqrt(se2)
    return theta, theta - half, theta + half
