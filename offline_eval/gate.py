"""The quality gate: compare aggregates with thresholds and say, per check, passed / failed / skipped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from offline_eval.metrics import score_owner, score_spec

# Scores are printed with this many decimals, and the gate compares what is printed: a mean of
# 0.7999999999999999 is the 0.800 the user reads, and passes a 0.80 threshold.
REPORTED_DIGITS = 3
_MAX_REASON = 120


def explanation(score: str) -> str:
    """What a failed score means for the RAG system, in the words users act on (its metric says)."""
    spec = score_spec(score)
    return spec.failure if spec else "below threshold"


def reported(value: float) -> float:
    """A score at the precision reports print it."""
    return round(value, REPORTED_DIGITS)


def fmt_threshold(threshold: float) -> str:
    """A threshold as the user wrote it: two decimals (0.80) unless it has more (0.825)."""
    text = f"{threshold:.2f}"
    return text if float(text) == threshold else f"{threshold:g}"


def empty_reason(samples: Sequence[Mapping[str, Any]], score: str) -> str:
    """Why no sample has a score: the samples' not-computable reasons, most common first."""
    if not samples:
        return "no sample"
    metric = score_owner(score)  # a second view of a metric (the noise ratio) has that metric's reasons
    reasons = Counter(str((s.get("not_computable") or {}).get(metric) or "not computable") for s in samples)
    listed = "; ".join(f"{r if len(r) <= _MAX_REASON else r[:_MAX_REASON - 1] + '…'} (×{k})"
                       for r, k in reasons.most_common(3))
    more = f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    return f"all {len(samples)} samples not computable: {listed}{more}"


def _check(metric: str, category: str | None, stats: dict[str, Any] | None, threshold: float, gate_on: str,
           allow_empty: bool, samples: Sequence[Mapping[str, Any]]) -> dict:
    n = int((stats or {}).get("n") or 0)
    ppi = (stats or {}).get("ppi") or {}
    value = ppi.get("value") if gate_on == "ppi" else (stats or {}).get("ci_low" if gate_on == "lower" else "mean")
    check: dict[str, Any] = {"metric": metric, "category": category, "threshold": threshold, "value": value}
    if n and gate_on == "ppi" and value is None:
        # Gating on the corrected mean with no review of this metric must not fall back to the judge's mean.
        why = ppi.get("note") or "no labels were given: review samples in report.html, pass the export with --labels"
        check.update(status="failed", reason=f"no PPI-corrected mean ({why})")
    elif not n or value is None:
        # Nothing scored is not a pass: a broken judge or a missing field must not turn CI green.
        reason = f"no computable sample ({empty_reason(samples, metric)})"
        if allow_empty:
            check.update(status="skipped", reason=f"{reason}; allowed by allow_empty", value=None)
        else:
            hint = "fix the cause, leave the metric out, or allow it with --allow-empty-metric"
            check.update(status="failed", reason=f"{reason}; {hint}", value=None)
    elif gate_on == "lower" and n < 2:
        # One sample is its own interval: its "lower bound" says nothing about confidence.
        check.update(status="failed", value=None,
                     reason=f"gating on the 95% interval's lower bound needs at least 2 computable samples, got {n}")
    elif reported(value) >= threshold:
        check.update(status="passed", reason="")
    else:
        check.update(status="failed", reason=explanation(metric))
    return check


def apply_gate(
    aggregate: dict[str, dict[str, Any]],
    by_category: dict[str, dict[str, dict[str, Any]]],
    thresholds: dict[str, float],
    category_thresholds: dict[str, dict[str, float]] | None = None,
    gate_on: str = "mean",
    *,
    allow_empty: bool = False,
    samples: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Gate on the overall aggregates, and on categories that have their own thresholds.

    ``gate_on='lower'`` judges the 95% interval's lower bound instead of the mean: the gate passes
    only when the metric is above the threshold with confidence, which needs n ≥ 2. ``gate_on='ppi'``
    judges the prediction-powered mean from reviewed items (each aggregate's ``ppi.value``,
    ``offline_eval.review``); a metric without one fails. Values are
    compared at the precision they are reported at (``REPORTED_DIGITS``). A metric that was not run
    is not checked; a gated metric with no computable sample fails, with the samples' reasons
    (``samples``, the report's rows), unless ``allow_empty``: then it is skipped, and says so.
    """
    def rows(category: str | None) -> list[Mapping[str, Any]]:
        return [s for s in samples if category is None or s.get("category") == category]

    checks = [_check(m, None, aggregate.get(m), t, gate_on, allow_empty, rows(None))
              for m, t in sorted(thresholds.items()) if m in aggregate]
    for category, cat_thresholds in sorted((category_thresholds or {}).items()):
        for metric, threshold in sorted(cat_thresholds.items()):
            if metric in aggregate:
                checks.append(_check(metric, category, by_category.get(category, {}).get(metric), threshold,
                                     gate_on, allow_empty, rows(category)))
    failed = [c["metric"] if c["category"] is None else f"{c['category']}/{c['metric']}"
              for c in checks if c["status"] == "failed"]
    return {
        "passed": not failed,
        "gate_on": gate_on,
        "thresholds": {m: t for m, t in sorted(thresholds.items()) if m in aggregate},
        "category_thresholds": category_thresholds or {},
        "checks": checks,
        "failed": failed,
    }


def describe_failure(check: Mapping[str, Any]) -> str:
    """A failed check in one line: the value against the threshold when that is why, else the reason."""
    value, threshold = check.get("value"), check.get("threshold")
    reason = check.get("reason") or explanation(str(check.get("metric")))
    if isinstance(value, (int, float)) and isinstance(threshold, (int, float)):
        return f"{value:.{REPORTED_DIGITS}f} < {fmt_threshold(threshold)} — {reason}"
    return str(reason)


def unknown_categories(category_thresholds: Mapping[str, Any], categories: set[str | None]) -> list[str]:
    """Categories that have a threshold but no sample: a typo, or the wrong data file."""
    return sorted(c for c in category_thresholds if c not in categories)
