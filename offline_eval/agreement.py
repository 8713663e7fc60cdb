"""Does the judge agree with people? Judge scores from a report against human labels.

A labels file has one row per labelled sample: a ``sample_id`` and one or more label fields (for
example ``faithful: yes``, ``relevance: 4``). ``mapping`` says which metric each field judges,
e.g. ``{"faithfulness": "faithful"}``. Rows and report samples are joined by ``sample_id``; a pair
counts when the label is present and the metric was computable for that sample.

* **Binary labels** (only 0/1, true/false, yes/no): the judge's score is a classifier of the label.
  Reported: balanced accuracy at the best threshold (optimistic: chosen on these labels) and at a
  threshold fixed in advance (default 0.5), ROC AUC (threshold-free), and Cohen's kappa of
  "score >= fixed threshold" against the label.
* **Graded labels** (numbers with more than two values, e.g. 1-5): Spearman's rho and Kendall's
  tau-b between score and label (order agreement; the scales need not match).

Every statistic comes with a percentile-bootstrap interval over the joined samples: one resample
matrix per mapping, shared by all its statistics (see :mod:`offline_eval.stats`).

**PPI** (optional): with labels for a subset and judge scores for all samples, prediction-powered
inference estimates the true mean of a binary label (say, the share of truly faithful answers)
from the judge's mean on the unlabelled samples corrected by the judge's bias on the labelled ones.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline_eval import stats
from offline_eval.report.text import md_text
from offline_eval.report.view import ReportError, metric_names, samples_by_id, score_of
from offline_eval.table import TableError, Row, read_rows, read_text

__all__ = [
    "LabelsError",
    "agreement",
    "load_labels",
    "parse_label",
    "ppi",
    "render_agreement_markdown",
]

_TRUE_WORDS = {"yes", "true", "y"}
_FALSE_WORDS = {"no", "false", "n"}
_MISSING_WORDS = {"", "na", "n/a", "null", "none"}


class LabelsError(Exception):
    """A labels file or label value that cannot be used; the message names file and line."""


# --------------------------------------------------------------------------------------------
# Loading labels
# --------------------------------------------------------------------------------------------


def _check_row_id(row: dict, where: str, seen: dict[str, str], path: Path) -> None:
    sid = row.get("sample_id")
    if sid is None or isinstance(sid, bool) or (isinstance(sid, str) and not sid.strip()):
        raise LabelsError(f"{path} {where}: missing 'sample_id'")
    if not isinstance(sid, (str, int)):
        raise LabelsError(f"{path} {where}: 'sample_id' must be a string, got {sid!r}")
    sid = str(sid).strip()
    if sid in seen:
        raise LabelsError(f"{path} {where}: duplicate sample_id {sid!r} (first at {seen[sid]})")
    seen[sid] = where
    row["sample_id"] = sid


def _check_header(header: list[str], line: int, path: Path) -> None:
    if "sample_id" not in header:
        raise LabelsError(f"{path} line {line}: no 'sample_id' column (columns: {', '.join(header)})")


def load_labels(path: str | os.PathLike[str]) -> list[dict]:
    """Read human labels from JSON Lines (``.jsonl``/``.ndjson``), a JSON array (``.json``) or CSV.

    Each row is a dict with a ``sample_id`` (returned as a stripped string) and label fields; CSV
    values stay strings and are interpreted later by :func:`parse_label`. Other extensions are
    sniffed: a file starting with ``{`` is JSON Lines, ``[`` a JSON array, anything else CSV. The file
    is read by the same reader as datasets (``offline_eval.table``); blank lines and blank CSV rows
    are skipped. Raises :class:`LabelsError` naming the file and line for an unreadable file, invalid
    JSON/CSV, a row without ``sample_id``, a duplicate ``sample_id``, or no rows.
    """
    p = Path(path)
    try:
        text, _ = read_text(p, extensions=None)
        head, suffix = text.lstrip()[:1], p.suffix.lower()
        if suffix in (".jsonl", ".ndjson") or (suffix == ".json" and head != "["):
            fmt = "jsonl"
        elif suffix == ".csv":
            fmt = "csv"
        else:
            fmt = {"[": "json", "{": "jsonl"}.get(head, "csv")
        table = read_rows(text, fmt, on_csv_header=lambda header, line: _check_header(header, line, p))
    except TableError as exc:
        raise LabelsError(f"{p}{' ' + exc.location if exc.location else ''}: {exc.message}") from None
    rows: list[dict] = []
    seen: dict[str, str] = {}
    for row in table:
        value = _label_row(row, p)
        if value is None:
            continue  # a blank CSV row
        _check_row_id(value, row.location, seen, p)
        rows.append(value)
    if not rows:
        raise LabelsError(f"{p}: no label rows")
    return rows


def _label_row(row: Row, path: Path) -> dict | None:
    if row.problem:
        raise LabelsError(f"{path} {row.location}: {row.problem}")
    if row.from_csv and all(not v.strip() for v in row.value.values()):
        return None
    if not isinstance(row.value, dict):
        raise LabelsError(f"{path} {row.location}: expected a JSON object, got {type(row.value).__name__}")
    return dict(row.value)


def parse_label(value: Any) -> tuple[float | None, str | None]:
    """Interpret one label value: returns ``(number, kind)``.

    ``kind`` is ``"bool"`` for true/false, yes/no (any case) and JSON booleans (number 1.0/0.0),
    ``"number"`` for numbers and numeric strings, and ``None`` with number ``None`` for a missing
    label (null, a NaN number, empty, "NA", "n/a", "null", "none"). Raises :class:`LabelsError` otherwise.
    """
    if value is None:
        return None, None
    if isinstance(value, bool):
        return (1.0 if value else 0.0), "bool"
    if isinstance(value, (int, float)):
        f = float(value)
        if math.isnan(f):
            return None, None  # NaN: pandas' missing value, as for datasets
        if not math.isfinite(f):
            raise LabelsError(f"label {value!r} is not a finite number")
        return f, "number"
    if isinstance(value, str):
        s = value.strip().lower()
        if s in _MISSING_WORDS:
            return None, None
        if s in _TRUE_WORDS:
            return 1.0, "bool"
        if s in _FALSE_WORDS:
            return 0.0, "bool"
        try:
            f = float(s)
        except ValueError:
            raise LabelsError(f"label {value!r} is neither a number nor yes/no/true/false") from None
        if not math.isfinite(f):
            raise LabelsError(f"label {value!r} is not a finite number")
        return f, "number"
    raise LabelsError(f"label {value!r} is neither a number nor yes/no/true/false")


# --------------------------------------------------------------------------------------------
# Joining
# --------------------------------------------------------------------------------------------


def _labels_by_id(labels: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for i, row in enumerate(labels):
        if not isinstance(row, dict):
            raise LabelsError(f"label row {i}: expected a dict, got {type(row).__name__}")
        sid = row.get("sample_id")
        if sid is None or isinstance(sid, bool) or not isinstance(sid, (str, int)):
            raise LabelsError(f"label row {i}: missing or invalid 'sample_id' ({sid!r})")
        sid = str(sid).strip()
        if sid in out:
            raise LabelsError(f"label row {i}: duplicate sample_id {sid!r}")
        out[sid] = row
    return out


def _field_kind(by_id: dict[str, dict], field: str) -> tuple[str, dict[str, float]]:
    """Parse one label field over all rows: ("binary" | "graded" | "empty", {sample_id: value})."""
    values: dict[str, float] = {}
    kinds: set[str] = set()
    present = False
    for sid, row in by_id.items():
        if field not in row:
            continue
        present = True
        try:
            value, kind = parse_label(row[field])
        except LabelsError as exc:
            raise LabelsError(f"sample {sid!r}, field {field!r}: {exc}") from None
        if value is None:
            continue
        values[sid] = value
        kinds.add(kind or "number")
    if not present:
        raise LabelsError(f"label field {field!r} is in no label row")
    distinct = set(values.values())
    if not values:
        return "empty", values
    if distinct <= {0.0, 1.0}:
        return "binary", values
    if "bool" in kinds:
        raise LabelsError(f"label field {field!r} mixes yes/no values with numbers other than 0/1")
    return "graded", values


def _check_mapping(report: dict, mapping: dict[str, str]) -> None:
    if not mapping:
        raise ValueError("mapping is empty: name at least one METRIC=LABEL_FIELD pair")
    known = metric_names(report)
    for metric, field in mapping.items():
        if metric not in known:
            raise ReportError(
                f"metric {metric!r} is not in the report (it has: {', '.join(known) or 'none'})"
            )
        if not isinstance(field, str) or not field:
            raise ValueError(f"label field for metric {metric!r} must be a non-empty string")


def _stat(value: float | None, ci: tuple[float | None, float | None]) -> dict:
    if value is None:
        return {"value": None, "ci_low": None, "ci_high": None}
    return {"value": value, "ci_low": ci[0], "ci_high": ci[1]}


def _interval(replicates: np.ndarray, level: float) -> tuple[float | None, float | None]:
    low, high = stats.percentile_interval(replicates, level)
    return stats.to_optional(low), stats.to_optional(high)


def _binary_stats(s: np.ndarray, y: np.ndarray, w: np.ndarray, threshold: float, level: float) -> dict:
    pred = s >= threshold
    ba_best, t_best = stats.best_threshold_balanced_accuracy(s, y)
    best = _stat(ba_best, _interval(stats.best_threshold_balanced_accuracy_weighted(s, y, w)[0], level))
    best["threshold"] = t_best
    fixed = _stat(
        stats.balanced_accuracy(y, pred), _interval(stats.balanced_accuracy_weighted(y, pred, w), level)
    )
    fixed["threshold"] = threshold
    return {
        "balanced_accuracy_best": best,
        "balanced_accuracy_fixed": fixed,
        "roc_auc": _stat(stats.roc_auc(s, y), _interval(stats.roc_auc_weighted(s, y, w), level)),
        "cohen_kappa": _stat(
            stats.cohen_kappa(y, pred), _interval(stats.cohen_kappa_weighted(y, pred, w), level)
        ),
    }


def binary_agreement(scores: Sequence[float], labels: Sequence[int], *, fixed_threshold: float = 0.5,
                     n_resamples: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Agreement of item scores with 0/1 labels, for items that are not a report's samples (a chunk of a
    sample, say): ``{"n", "n_positive", "n_negative", "stats"}`` with the binary statistics of
    :func:`agreement`."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float) == 1.0
    w = stats.resample_counts(len(s), n_resamples=n_resamples, seed=seed)
    return {"n": len(s), "n_positive": int(y.sum()), "n_negative": int((~y).sum()),
            "stats": _binary_stats(s, y, w, fixed_threshold, level)}


def _graded_stats(s: np.ndarray, y: np.ndarray, w: np.ndarray, level: float) -> dict:
    return {
        "spearman": _stat(stats.spearman(s, y), _interval(stats.spearman_weighted(s, y, w), level)),
        "kendall_tau_b": _stat(
            stats.kendall_tau_b(s, y), _interval(stats.kendall_tau_b_weighted(s, y, w), level)
        ),
    }


def agreement(
    report: dict,
    labels: list[dict],
    mapping: dict[str, str],
    *,
    fixed_threshold: float | Mapping[str, float] = 0.5,
    n_resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    include_ppi: bool = False,
) -> dict:
    """Agreement between judge scores in ``report`` and human ``labels``, per mapped metric.

    ``mapping`` maps a metric name to the label field that judges it. ``fixed_threshold`` is one
    threshold for every metric, or one per metric (e.g. each metric's gate threshold, which is what a
    user's gate decides with). Returns a JSON-ready dict::

        {"n_report_samples", "n_label_rows", "n_joined", "labels_without_sample": [ids],
         "fixed_threshold", "level", "n_resamples", "seed",
         "metrics": [{"metric", "label", "kind": "binary" | "graded" | "empty", "n", "fixed_threshold",
                      "n_missing_label", "n_not_computable", "n_positive", "n_negative",
                      "note", "stats": {name: {"value", "ci_low", "ci_high"[, "threshold"]}}}],
         "ppi": [...] | None}

    Binary ``stats``: ``balanced_accuracy_best`` (with its in-sample ``threshold``),
    ``balanced_accuracy_fixed`` (at ``fixed_threshold``), ``roc_auc``, ``cohen_kappa`` (score >=
    fixed threshold vs label). Graded: ``spearman``, ``kendall_tau_b``. A statistic undefined on
    the data (one class only, constant scores) has ``value`` None and ``note`` says why. With
    ``include_ppi`` the ``ppi`` list comes from :func:`ppi`.

    Raises :class:`ReportError` for a malformed report or an unknown metric, and
    :class:`LabelsError` for a label field in no row or an unreadable label value.
    """
    samples = samples_by_id(report)
    by_id = _labels_by_id(labels)
    _check_mapping(report, mapping)
    thresholds = (dict(fixed_threshold) if isinstance(fixed_threshold, Mapping)
                  else dict.fromkeys(mapping, fixed_threshold))
    for metric in mapping:
        if metric not in thresholds or not math.isfinite(thresholds[metric]):
            raise ValueError(f"fixed_threshold for {metric} must be a finite number, "
                             f"got {thresholds.get(metric)!r}")

    joined = [sid for sid in samples if sid in by_id]
    results = []
    for metric, field in mapping.items():
        kind, values = _field_kind(by_id, field)
        ids, scores, truth = [], [], []
        missing_label = not_computable = 0
        for sid in joined:
            if sid not in values:
                missing_label += 1
                continue
            score = score_of(samples[sid], metric)
            if score is None:
                not_computable += 1
                continue
            ids.append(sid)
            scores.append(score)
            truth.append(values[sid])
        s = np.array(scores, dtype=float)
        y = np.array(truth, dtype=float)
        entry: dict[str, Any] = {
            "metric": metric,
            "label": field,
            "kind": kind,
            "n": len(ids),
            "fixed_threshold": thresholds[metric],
            "n_missing_label": missing_label,
            "n_not_computable": not_computable,
            "n_positive": None,
            "n_negative": None,
            "note": None,
            "stats": {},
        }
        w = stats.resample_counts(len(ids), n_resamples=n_resamples, seed=seed)
        if kind == "binary":
            yb = y == 1.0
            entry["n_positive"] = int(yb.sum())
            entry["n_negative"] = int((~yb).sum())
            entry["stats"] = _binary_stats(s, yb, w, thresholds[metric], level)
            if not ids:
                entry["note"] = "no sample has both this label and a computable score"
            elif yb.all() or not yb.any():
                entry["note"] = "the labels hold one class only: agreement statistics are undefined"
        elif kind == "graded":
            entry["stats"] = _graded_stats(s, y, w, level)
            if not ids:
                entry["note"] = "no sample has both this label and a computable score"
            elif np.unique(y).size < 2:
                entry["note"] = "the labels are constant: rank correlations are undefined"
            elif np.unique(s).size < 2:
                entry["note"] = "the judge scores are constant: rank correlations are undefined"
            elif len(set(values.values())) == 2:
                entry["note"] = "only two label values (not 0/1): treated as graded"
        else:
            entry["note"] = "no label values present"
        if kind == "binary" and ids and entry["note"] is None and np.unique(s).size < 2:
            entry["note"] = "the judge scores are constant: AUC is 0.5 and kappa may be undefined"
        results.append(entry)

    return {
        "n_report_samples": len(samples),
        "n_label_rows": len(by_id),
        "n_joined": len(joined),
        "labels_without_sample": [sid for sid in by_id if sid not in samples],
        "fixed_threshold": fixed_threshold if isinstance(fixed_threshold, (int, float)) else thresholds,
        "level": level,
        "n_resamples": n_resamples,
        "seed": seed,
        "metrics": results,
        "ppi": ppi(report, labels, mapping, level=level) if include_ppi else None,
    }


def _clip01(
    value: float | None, low: float | None, high: float | None
) -> tuple[float | None, tuple[float | None, float | None]]:
    """Project an estimate of a share and its interval onto [0, 1], where the true share lies."""

    def clip(x: float | None) -> float | None:
        return None if x is None else min(1.0, max(0.0, x))

    return clip(value), (clip(low), clip(high))


def ppi(report: dict, labels: list[dict], mapping: dict[str, str], *, level: float = 0.95) -> list[dict]:
    """Prediction-powered estimate of the true mean of each mapped *binary* label.

    The judge's score is the prediction. Labelled set: samples with the label and a computable
    score; unlabelled set: samples with a computable score and no label. Per mapping::

        {"metric", "label", "n_labelled", "n_unlabelled", "note",
         "judge_mean":     mean score over all samples with a computable score (naive),
         "labelled_mean":  {"value", "ci_low", "ci_high"}  labels only, Student-t interval,
         "ppi":            {"value", "ci_low", "ci_high"}  see stats.ppi_mean_ci}

    The PPI interval is valid however biased the judge is, and narrower than the labels-only one
    when the judge tracks the label. Since the true mean of a 0/1 label is a share, the PPI
    estimate and interval are clipped to [0, 1] (clipping can only help coverage). Graded labels
    get None values and a ``note``, as do sets with fewer than two items (interval only).
    """
    samples = samples_by_id(report)
    by_id = _labels_by_id(labels)
    _check_mapping(report, mapping)
    out = []
    for metric, field in mapping.items():
        kind, values = _field_kind(by_id, field)
        f_l, y_l, f_u = [], [], []
        for sid, sample in samples.items():
            score = score_of(sample, metric)
            if score is None:
                continue
            if sid in values:
                f_l.append(score)
                y_l.append(values[sid])
            else:
                f_u.append(score)
        entry: dict[str, Any] = {
            "metric": metric,
            "label": field,
            "n_labelled": len(f_l),
            "n_unlabelled": len(f_u),
            "judge_mean": stats.to_optional(np.mean(f_l + f_u)) if (f_l or f_u) else None,
            "labelled_mean": _stat(None, (None, None)),
            "ppi": _stat(None, (None, None)),
            "note": None,
        }
        if kind != "binary":
            entry["note"] = "PPI here estimates the mean of a binary label; this label is not binary"
            out.append(entry)
            continue
        est, low, high = stats.mean_t_ci(y_l, level=level)
        entry["labelled_mean"] = _stat(est, (low, high))
        theta, low, high = stats.ppi_mean_ci(f_l, y_l, f_u, level=level)
        entry["ppi"] = _stat(*_clip01(theta, low, high))
        if len(f_l) < 2:
            entry["note"] = "fewer than two labelled samples with a computable score"
        elif len(f_u) < 2:
            entry["note"] = (
                "fewer than two unlabelled samples: PPI needs judge scores beyond the labelled ones"
            )
        out.append(entry)
    return out


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _fmt(stat: dict | None) -> str:
    if not stat or stat.get("value") is None:
        return "n/a"
    text = f"{stat['value']:.3f}"
    if stat.get("ci_low") is not None and stat.get("ci_high") is not None:
        text += f" [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"
    return text


def render_agreement_markdown(result: dict) -> str:
    """Markdown summary of an :func:`agreement` result: binary table, graded table, PPI, notes."""
    level_pct = f"{round(result['level'] * 100, 2):g}%"
    lines = ["## offline-eval agreement: judge vs human labels", ""]
    lines.append(
        f"Report samples: {result['n_report_samples']} · label rows: {result['n_label_rows']} · "
        f"joined: {result['n_joined']}"
        + (
            f" · labels without a report sample: {len(result['labels_without_sample'])}"
            if result["labels_without_sample"]
            else ""
        )
    )
    lines += ["", f"Values with {level_pct} bootstrap intervals ({result['n_resamples']} resamples)."]
    binary = [m for m in result["metrics"] if m["kind"] == "binary"]
    graded = [m for m in result["metrics"] if m["kind"] == "graded"]
    if binary:
        lines += [
            "",
            "### Binary labels",
            "",
            "| metric | label | n (yes/no) | balanced acc. @ best t | best t | fixed t | balanced acc. @ fixed t "
            "| ROC AUC | Cohen's κ @ fixed t |",
            "|---|---|---|---|---:|---:|---|---|---|",
        ]
        for m in binary:
            st = m["stats"]
            best = st.get("balanced_accuracy_best") or {}
            thr = f"{best['threshold']:.3f}" if best.get("threshold") is not None else "n/a"
            lines.append(
                f"| {md_text(m['metric'])} | {md_text(m['label'])} | {m['n']} ({m['n_positive']}/{m['n_negative']}) "
                f"| {_fmt(best)} | {thr} | {m['fixed_threshold']:g} | {_fmt(st.get('balanced_accuracy_fixed'))} "
                f"| {_fmt(st.get('roc_auc'))} | {_fmt(st.get('cohen_kappa'))} |"
            )
        lines += [
            "",
            (
                "The best threshold is chosen on these same labels, so its balanced accuracy is "
                "optimistic; the fixed-threshold column is the honest one."
            ),
        ]
    if graded:
        lines += [
            "",
            "### Graded labels",
            "",
            "| metric | label | n | Spearman ρ | Kendall τ-b |",
            "|---|---|---:|---|---|",
        ]
        for m in graded:
            st = m["stats"]
            lines.append(
                f"| {md_text(m['metric'])} | {md_text(m['label'])} | {m['n']} | {_fmt(st.get('spearman'))} "
                f"| {_fmt(st.get('kendall_tau_b'))} |"
            )
    if result.get("ppi"):
        lines += [
            "",
            "### Prediction-powered estimate of the true label mean",
            "",
            "| metric | label | labelled | unlabelled | judge mean (naive) | labels only | PPI |",
            "|---|---|---:|---:|---:|---|---|",
        ]
        for p in result["ppi"]:
            jm = f"{p['judge_mean']:.3f}" if p["judge_mean"] is not None else "n/a"
            lines.append(
                f"| {md_text(p['metric'])} | {md_text(p['label'])} | {p['n_labelled']} | {p['n_unlabelled']} "
                f"| {jm} | {_fmt(p['labelled_mean'])} | {_fmt(p['ppi'])} |"
            )
    notes = [(m["metric"], m["label"], m["note"]) for m in result["metrics"] if m.get("note")]
    notes += [
        (p["metric"], p["label"], "PPI: " + p["note"]) for p in (result.get("ppi") or []) if p.get("note")
    ]
    notes += [
        (
            m["metric"],
            m["label"],
            f"{m['n_not_computable']} labelled sample(s) not computable for this metric",
        )
        for m in result["metrics"]
        if m["n_not_computable"]
    ]
    if notes:
        lines += ["", "Notes:", ""]
        lines += [f"- {md_text(metric)} ↔ {md_text(label)}: {md_text(note)}" for metric, label, note in notes]
    return "\n".join(lines) + "\n"
