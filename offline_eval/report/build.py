"""Assemble report.json (the contract other tools build on) from per-sample outcomes.

Deterministic by construction: no wall-clock time, no cache-hit counts (those vary between a cold
and a warm run and go to timing.json), sorted keys, bootstrap with the run's seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from offline_eval import stats
from offline_eval.gate import apply_gate

SCHEMA_VERSION = 1


def aggregate_scores(rows: Sequence[dict[str, Any]], names: Sequence[str], *, n_resamples: int, seed: int) -> dict:
    """Mean, count, not-computable count and a seeded bootstrap 95% interval per score name."""
    matrix = np.array([[r["scores"].get(n) if r["scores"].get(n) is not None else np.nan for n in names]
                       for r in rows], dtype=float).reshape(len(rows), len(names))
    computable = np.isfinite(matrix)
    low, high = stats.bootstrap_means_ci(matrix, computable, n_resamples=n_resamples, seed=seed)
    out = {}
    for j, name in enumerate(names):
        n = int(computable[:, j].sum())
        out[name] = {
            "mean": float(matrix[computable[:, j], j].mean()) if n else None,
            "n": n,
            "n_not_computable": len(rows) - n,
            "ci_low": stats.to_optional(low[j]),
            "ci_high": stats.to_optional(high[j]),
        }
    return out


def build_report(
    *,
    run: dict[str, Any],
    samples: list[dict[str, Any]],
    score_names: Sequence[str],
    thresholds: dict[str, float],
    category_thresholds: dict[str, dict[str, float]],
    gate_on: str,
    n_resamples: int,
    seed: int,
    skipped_records: list[dict[str, Any]] | None = None,
    allow_empty: bool = False,
    labels: Any = None,
) -> dict[str, Any]:
    """report.json's dict. With ``labels`` (an ``offline_eval.review.LabelFile``) each aggregate gets
    its prediction-powered mean and the report a ``review`` section, before the gate (which may judge
    the PPI mean); labels that do not match the report raise ``LabelsError``."""
    aggregate = aggregate_scores(samples, score_names, n_resamples=n_resamples, seed=seed)
    categories = sorted({s["category"] for s in samples if s.get("category") is not None})
    by_category = {
        c: aggregate_scores([s for s in samples if s.get("category") == c], score_names,
                            n_resamples=n_resamples, seed=seed)
        for c in categories
    }
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "samples": samples,
        "aggregate": aggregate,
        "by_category": by_category,
        "skipped_records": skipped_records or [],
    }
    if labels is not None:
        from offline_eval.review import attach_review  # it reads the report through report.view

        attach_review(report, labels)
    report["gate"] = apply_gate(aggregate, by_category, thresholds, category_thresholds, gate_on,
                                allow_empty=allow_empty, samples=samples)
    return report
