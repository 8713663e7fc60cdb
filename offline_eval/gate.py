"""The quality gate: compare aggregates with thresholds and say, per check, passed / failed / skipped."""

from __future__ import annotations

from typing import Any

# What a failed metric means for the RAG system, in the words users act on.
EXPLANATIONS = {
    "faithfulness": "hallucination risk: the answer states things the context does not support",
    "answer_relevancy": "off-topic answers: the answer does not address the question",
    "context_recall": "retrieval misses information the reference answer needs",
    "context_precision": "too much retrieval noise: relevant chunks are missing or ranked low",
    "context_relevant_ratio": "too much retrieval noise: many retrieved chunks are irrelevant",
}


def _check(metric: str, category: str | None, stats: dict[str, Any] | None, threshold: float, gate_on: str) -> dict:
    value = None
    if stats:
        value = stats.get("ci_low") if gate_on == "lower" else stats.get("mean")
    check: dict[str, Any] = {"metric": metric, "category": category, "threshold": threshold, "value": value}
    if value is None:
        check.update(status="skipped", reason="no computable sample")
    elif value >= threshold:
        check.update(status="passed", reason="")
    else:
        check.update(status="failed", reason=EXPLANATIONS.get(metric, "below threshold"))
    return check


def apply_gate(
    aggregate: dict[str, dict[str, Any]],
    by_category: dict[str, dict[str, dict[str, Any]]],
    thresholds: dict[str, float],
    category_thresholds: dict[str, dict[str, float]] | None = None,
    gate_on: str = "mean",
) -> dict[str, Any]:
    """Gate on the overall aggregates, and on categories that have their own thresholds.

    ``gate_on='lower'`` judges the 95% interval's lower bound instead of the mean: the gate passes
    only when the metric is above the threshold with confidence. A metric that was not run or has
    no computable sample is skipped, and says so; skips do not fail the gate.
    """
    checks = [_check(m, None, aggregate.get(m), t, gate_on) for m, t in sorted(thresholds.items()) if m in aggregate]
    for category, cat_thresholds in sorted((category_thresholds or {}).items()):
        for metric, threshold in sorted(cat_thresholds.items()):
            if metric in aggregate:
                checks.append(_check(metric, category, by_category.get(category, {}).get(metric), threshold, gate_on))
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
