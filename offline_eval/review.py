"""People check the judge: per-item labels from report.html's review mode, the judge's measured error
rate, and prediction-powered (PPI) means.

A **labels file** (``labels.jsonl``, what report.html's *Export labels* writes) has one row per
reviewed item::

    {"sample_id": "refund-window", "item": "faithfulness/finding/2", "label": "wrong",
     "verdict": "supported", "reviewer": "ana", "time": "2026-12-04T15:02:11Z"}

``item`` is a review item id (``offline_eval.report.view``: ``<score>/score`` or
``<metric>/finding/<k>``); ``label`` is ``right`` or ``wrong`` (was the judge right?), or, for a score
item, the correct score as a number in [0, 1]; ``verdict`` (optional) is the judge's verdict the
label was given for, checked against the report so that labels made on another run's verdicts are
refused instead of silently flipping; ``reviewer`` and ``time`` are kept for the record. JSON Lines,
a JSON array or CSV with those columns.

From the labels:

* **Error rate**: per metric and kind (verdict / score), the share of right/wrong-labelled items the
  judge got wrong, with a Wilson 95% interval (``stats.proportion_ci``), and for verdicts Cohen's
  kappa between the judge's verdicts and the reviewer's.
* **PPI mean**: a sample's *true* score for a metric is what the metric's formula gives over the
  reviewer's verdicts (``Metric.truth_scores``), once every verdict of that metric in the sample is
  labelled; a number labelled on the score item is taken as it is, and a score item marked right
  keeps the judge's score. The judge's score is the prediction; samples with a true score are the
  labelled set, the others the unlabelled set, and ``stats.ppi_mean_ci`` corrects the judge's mean by
  its measured bias (Angelopoulos et al., 2023). The interval is valid when the reviewed samples are a
  random subset of the report's: review in report.html's random order for that, not "most worth
  checking" first, which picks the samples the judge is least sure of.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from offline_eval import stats
from offline_eval.agreement import LabelsError
from offline_eval.metrics import REGISTRY, score_owner
from offline_eval.report.text import NONE, md_text
from offline_eval.report.view import (
    ReviewItem,
    aggregate_of,
    categories_of,
    detail_for,
    metric_names,
    parse_item_id,
    review_items,
    samples_of,
    score_of,
)
from offline_eval.table import TableError, read_rows, read_text

__all__ = [
    "ItemLabel",
    "LabelsError",
    "attach_review",
    "is_item_labels",
    "item_agreement",
    "load_item_labels",
    "render_item_agreement_markdown",
]

RIGHT, WRONG = "right", "wrong"
LEVEL = 0.95
_OPTIONAL_TEXT = ("verdict", "reviewer", "time")


@dataclass(frozen=True)
class ItemLabel:
    """One row of a labels file, checked for form (not yet against a report)."""

    sample_id: str
    item: str
    label: str | float  # "right" | "wrong" | the correct score in [0, 1] (score items only)
    verdict: str | None
    reviewer: str | None
    time: str | None
    location: str  # "line 3" / "record 2"

    @property
    def key(self) -> tuple[str, str]:
        return self.sample_id, self.item


@dataclass(frozen=True)
class LabelFile:
    path: str
    sha256: str
    labels: list[ItemLabel]


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _fail(path: Any, location: str, field: str | None, message: str) -> LabelsError:
    where = f"{path} {location}" + (f": field {field!r}" if field else "")
    return LabelsError(f"{where}: {message}")


def _read_table(path: str | os.PathLike[str]):
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
        return text, read_rows(text, fmt)
    except TableError as exc:
        raise LabelsError(f"{p}{' ' + exc.location if exc.location else ''}: {exc.message}") from None


def is_item_labels(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first readable row is a per-item label (has an ``item`` field)."""
    _, rows = _read_table(path)
    first = next((r.value for r in rows if not r.problem and isinstance(r.value, Mapping)), None)
    return first is not None and "item" in first


def _text_field(row: Mapping[str, Any], field: str, path: Any, location: str, *, required: bool) -> str | None:
    value = row.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise _fail(path, location, field, "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _fail(path, location, field, f"expected a string, got {value!r}")
    return str(value).strip()


def _parse_label(value: Any, kind: str, path: Any, location: str) -> str | float:
    expected = '"right" or "wrong"' + (" or the correct score, a number in [0, 1]" if kind == "score" else "")
    if isinstance(value, str):
        text = value.strip().lower()
        if text in (RIGHT, WRONG):
            return text
        if kind == "score":
            try:
                value = float(text)
            except ValueError:
                raise _fail(path, location, "label", f"expected {expected}, got {value!r}") from None
    if kind == "score" and isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and 0.0 <= number <= 1.0:
            return number
        raise _fail(path, location, "label", f"a score must be a number in [0, 1], got {value!r}")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise _fail(path, location, "label", f"missing (expected {expected})")
    raise _fail(path, location, "label", f"expected {expected} for a {kind} item, got {value!r}")


def load_item_labels(path: str | os.PathLike[str]) -> LabelFile:
    """Read and check a labels file for form. Raises :class:`LabelsError` naming the file, the line
    (``line N`` for JSON Lines and CSV, ``record N`` in a JSON array) and the field."""
    text, rows = _read_table(path)
    labels: list[ItemLabel] = []
    seen: dict[tuple[str, str], str] = {}
    for row in rows:
        if row.problem:
            raise _fail(path, row.location, None, row.problem)
        value = row.value
        if row.from_csv and all(not str(v).strip() for v in value.values()):
            continue
        if not isinstance(value, Mapping):
            raise _fail(path, row.location, None, f"expected a JSON object, got {type(value).__name__}")
        sid = _text_field(value, "sample_id", path, row.location, required=True)
        item = _text_field(value, "item", path, row.location, required=True)
        parsed = parse_item_id(item)
        if parsed is None:
            raise _fail(path, row.location, "item", f"{item!r} is not an item id: expected METRIC/score or "
                        "METRIC/finding/N (N from 1), as report.html exports them")
        label = _parse_label(value.get("label"), parsed[1], path, row.location)
        extra = {f: _text_field(value, f, path, row.location, required=False) for f in _OPTIONAL_TEXT}
        key = (sid, item)
        if key in seen:
            raise _fail(path, row.location, "item", f"sample {sid!r} item {item!r} is labelled twice "
                        f"(also {seen[key]}); keep one label per item")
        seen[key] = row.location
        labels.append(ItemLabel(sid, item, label, extra["verdict"], extra["reviewer"], extra["time"], row.location))
    if not labels:
        raise LabelsError(f"{path}: no label rows")
    return LabelFile(str(path), hashlib.sha256(text.encode("utf-8")).hexdigest(), labels)


# --------------------------------------------------------------------------------------------
# Joining with a report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reviewed:
    item: ReviewItem
    label: ItemLabel

    @property
    def wrong(self) -> bool | None:
        """Was the judge wrong? None for a number (a corrected score, not a right/wrong mark)."""
        return None if isinstance(self.label.label, float) else self.label.label == WRONG

    @property
    def true_ok(self) -> bool | None:
        """A verdict item: whether the item truly counts for the score, as the reviewer says."""
        if self.item["kind"] != "verdict" or self.wrong is None:
            return None
        return bool(self.item["ok"]) != self.wrong


def match_labels(report: Mapping[str, Any], labels: LabelFile) -> list[Reviewed]:
    """Each label with the report's item it labels. Raises :class:`LabelsError` naming the labels file,
    the line and the field when a sample or an item is not in the report, or the judge's verdict the
    label was given for is not the report's (labels from another run)."""
    items = {i.key: i for i in review_items(report)}
    sample_ids = {str(s.get("sample_id")) for s in samples_of(report)}
    out = []
    for label in labels.labels:
        if label.sample_id not in sample_ids:
            raise _fail(labels.path, label.location, "sample_id", f"sample {label.sample_id!r} is not in the report")
        item = items.get(label.key)
        if item is None:
            own = [i["item"] for k, i in items.items() if k[0] == label.sample_id]
            shown = ", ".join(own[:12]) + (f", … ({len(own)} in all)" if len(own) > 12 else "")
            raise _fail(labels.path, label.location, "item", f"{label.item!r} is not an item of sample "
                        f"{label.sample_id!r} in the report (its items: {shown or 'none'}); were the labels made "
                        "on another report?")
        if label.verdict is not None and label.verdict != item["verdict"]:
            raise _fail(labels.path, label.location, "verdict", f"the label was given for the judge's verdict "
                        f"{label.verdict!r}, but the report says {item['verdict']!r} for sample "
                        f"{label.sample_id!r} item {label.item!r}: labels made on another run's verdicts")
        out.append(Reviewed(item, label))
    return out


# --------------------------------------------------------------------------------------------
# Error rates
# --------------------------------------------------------------------------------------------


def _error_row(metric: str, kind: str, reviewed: Sequence[Reviewed], level: float) -> dict[str, Any]:
    marked = [r for r in reviewed if r.wrong is not None]
    n_wrong = sum(1 for r in marked if r.wrong)
    rate, low, high = stats.proportion_ci(n_wrong, len(marked), level=level)
    kappa = None
    if kind == "verdict" and marked:
        kappa = stats.cohen_kappa([bool(r.item["ok"]) for r in marked], [bool(r.true_ok) for r in marked])
    return {"metric": metric, "kind": kind, "n_reviewed": len(marked), "n_wrong": n_wrong,
            "n_scores_given": len(reviewed) - len(marked),
            "error_rate": {"value": rate, "ci_low": low, "ci_high": high}, "cohen_kappa": kappa}


def error_rates(report: Mapping[str, Any], reviewed: Sequence[Reviewed], *, level: float = LEVEL) -> list[dict]:
    """Per (metric, kind) in report order, then all items together (metric "all", kind "all")."""
    order = {name: i for i, name in enumerate(metric_names(report))}
    groups: dict[tuple[str, str], list[Reviewed]] = {}
    for r in reviewed:
        groups.setdefault((r.item["metric"], r.item["kind"]), []).append(r)
    keys = sorted(groups, key=lambda k: (order.get(k[0], len(order)), k[0], k[1] != "verdict"))
    rows = [_error_row(metric, kind, groups[(metric, kind)], level) for metric, kind in keys]
    if reviewed:
        rows.append(_error_row("all", "all", reviewed, level))
    return rows


# --------------------------------------------------------------------------------------------
# True scores and PPI
# --------------------------------------------------------------------------------------------


def true_scores(report: Mapping[str, Any], reviewed: Sequence[Reviewed]) -> dict[str, dict[str, float]]:
    """``{score: {sample_id: true score}}`` for the samples whose labels determine a score (see the
    module docstring): a number on the score item, else every verdict of its metric labelled right or
    wrong, else the score item marked right (the judge's score stands)."""
    by_sample: dict[str, dict[str, Reviewed]] = {}
    for r in reviewed:
        by_sample.setdefault(r.item["sample_id"], {})[r.item["item"]] = r
    items_by_sample: dict[str, list[ReviewItem]] = {}
    for item in review_items(report):
        items_by_sample.setdefault(item["sample_id"], []).append(item)
    out: dict[str, dict[str, float]] = {}
    for sample in samples_of(report):
        sid = str(sample.get("sample_id"))
        marks = by_sample.get(sid)
        if not marks:
            continue
        for score in metric_names(report):
            value = score_of(sample, score)
            if value is None:
                continue
            mark = marks.get(f"{score}/score")
            truth: float | None = mark.label.label if mark is not None and isinstance(mark.label.label, float) \
                else None
            if truth is None:
                owner = score_owner(score)
                verdicts = [i for i in items_by_sample.get(sid, []) if i["kind"] == "verdict" and i["metric"] == owner]
                oks = [marks[i["item"]].true_ok if i["item"] in marks else None for i in verdicts]
                metric = REGISTRY.get(owner)
                if verdicts and all(ok is not None for ok in oks) and metric is not None:
                    scores = metric.truth_scores(detail_for(sample, score), [bool(ok) for ok in oks])
                    if scores and score in scores:
                        truth = float(scores[score])
            if truth is None and mark is not None and mark.label.label == RIGHT:
                truth = value
            if truth is not None:
                out.setdefault(score, {})[sid] = truth
    return out


def _stat(value: float | None, low: float | None, high: float | None) -> dict[str, float | None]:
    def clip(x: float | None) -> float | None:
        return None if x is None else min(1.0, max(0.0, float(x)))

    return {"value": clip(value), "ci_low": clip(low), "ci_high": clip(high)}


def ppi_estimate(samples: Iterable[Mapping[str, Any]], score: str, truth: Mapping[str, float], *,
                 level: float = LEVEL) -> dict[str, Any]:
    """The prediction-powered mean of ``score`` over ``samples`` given the true scores ``truth``
    (by sample id): ``value``, ``ci_low``, ``ci_high`` (clipped to [0, 1], where scores lie),
    ``n_labelled``, ``n_unlabelled``, ``labelled_mean`` (the true scores alone, Student-t) and ``note``."""
    f_l, y_l, f_u = [], [], []
    for sample in samples:
        value = score_of(sample, score)
        if value is None:
            continue
        sid = str(sample.get("sample_id"))
        if sid in truth:
            f_l.append(value)
            y_l.append(truth[sid])
        else:
            f_u.append(value)
    entry: dict[str, Any] = {"n_labelled": len(f_l), "n_unlabelled": len(f_u),
                             "labelled_mean": _stat(*stats.mean_t_ci(y_l, level=level)), "note": None}
    if not f_u and f_l:
        # Every scored sample has a true score: the labels are the whole population.
        mean = float(np.mean(y_l))
        entry.update(_stat(mean, mean, mean))
        entry["note"] = "every computable sample is reviewed: the reviewers' mean, exactly"
        return entry
    entry.update(_stat(*stats.ppi_mean_ci(f_l, y_l, f_u, level=level)))
    if not f_l:
        entry["note"] = "no reviewed sample: mark its verdicts (or its score) in report.html and export the labels"
    elif len(f_l) < 2:
        entry["note"] = "one reviewed sample: no interval (review at least two)"
    elif len(f_u) < 2:
        entry["note"] = "fewer than two unreviewed samples: no interval"
    return entry


def attach_review(report: dict[str, Any], labels: LabelFile, *, level: float = LEVEL) -> dict[str, Any]:
    """Add the review to a built report (before its gate is applied): ``aggregate[score].ppi`` and
    ``by_category[c][score].ppi`` (see :func:`ppi_estimate`) beside each judge mean, and a ``review``
    section: the labels file, the counts and the judge's error rates. Raises :class:`LabelsError` when
    the labels do not match the report (see :func:`match_labels`)."""
    reviewed = match_labels(report, labels)
    truth = true_scores(report, reviewed)
    samples = samples_of(report)
    for score, agg in aggregate_of(report).items():
        if isinstance(agg, dict):
            agg["ppi"] = ppi_estimate(samples, score, truth.get(score, {}), level=level)
    for category in categories_of(report):
        in_category = [s for s in samples if s.get("category") == category]
        for score, agg in (report.get("by_category") or {}).get(category, {}).items():
            if isinstance(agg, dict):
                agg["ppi"] = ppi_estimate(in_category, score, truth.get(score, {}), level=level)
    report["review"] = {
        "labels": {"path": labels.path, "sha256": labels.sha256, "n_rows": len(labels.labels),
                   "reviewers": sorted({lab.reviewer for lab in labels.labels if lab.reviewer})},
        "n_items": len(review_items(report)),
        "n_reviewed": len(reviewed),
        "level": level,
        "error_rates": error_rates(report, reviewed, level=level),
    }
    return report


# --------------------------------------------------------------------------------------------
# `offline-eval agreement REPORT --labels labels.jsonl`
# --------------------------------------------------------------------------------------------


def item_agreement(report: dict[str, Any], labels: LabelFile, *, include_ppi: bool = False,
                   level: float = LEVEL) -> dict[str, Any]:
    """The judge against per-item labels: JSON-ready ``{"n_samples", "n_items", "n_reviewed",
    "n_samples_reviewed", "reviewers", "level", "error_rates": [...], "ppi": [...] | None}``; each
    ``ppi`` entry is ``{"metric", "judge_mean", ...ppi_estimate}``. Raises :class:`LabelsError`."""
    reviewed = match_labels(report, labels)
    result: dict[str, Any] = {
        "n_samples": len(samples_of(report)),
        "n_items": len(review_items(report)),
        "n_reviewed": len(reviewed),
        "n_samples_reviewed": len({r.item["sample_id"] for r in reviewed}),
        "reviewers": sorted({r.label.reviewer for r in reviewed if r.label.reviewer}),
        "level": level,
        "error_rates": error_rates(report, reviewed, level=level),
        "ppi": None,
    }
    if include_ppi:
        truth = true_scores(report, reviewed)
        samples = samples_of(report)
        result["ppi"] = [
            {"metric": score, "judge_mean": aggregate_of(report).get(score, {}).get("mean"),
             **ppi_estimate(samples, score, truth.get(score, {}), level=level)}
            for score in metric_names(report)
        ]
    return result


def _num(value: Any) -> str:
    return NONE if value is None else f"{value:.3f}"


def _interval(stat: Mapping[str, Any]) -> str:
    if stat.get("ci_low") is None or stat.get("ci_high") is None:
        return NONE
    return f"[{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def render_item_agreement_markdown(result: Mapping[str, Any]) -> str:
    """What ``offline-eval agreement REPORT --labels labels.jsonl`` prints."""
    pct = f"{round(result['level'] * 100, 2):g}%"
    reviewers = ", ".join(md_text(r) for r in result["reviewers"]) or "not named"
    lines = [
        "## offline-eval agreement: the judge against reviewed items",
        "",
        f"{result['n_reviewed']} of {result['n_items']} reviewable items labelled, in "
        f"{result['n_samples_reviewed']} of {result['n_samples']} samples · reviewers: {reviewers}",
        "",
        f"### Judge error rate ({pct} Wilson interval)",
        "",
        "| metric | kind | reviewed | judge wrong | error rate | 95% CI | Cohen's κ |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for row in result["error_rates"]:
        kappa = _num(row["cohen_kappa"]) if row["kind"] == "verdict" else NONE
        lines.append(f"| {md_text(row['metric'])} | {row['kind']} | {row['n_reviewed']} | {row['n_wrong']} "
                     f"| {_num(row['error_rate']['value'])} | {_interval(row['error_rate'])} | {kappa} |")
    given = sum(r["n_scores_given"] for r in result["error_rates"] if r["kind"] != "all")
    if given:
        lines += ["", f"{given} score item(s) were labelled with a corrected score: used by PPI, not counted above."]
    if result.get("ppi") is not None:
        lines += [
            "",
            f"### Prediction-powered mean ({pct} interval)",
            "",
            "| metric | judge mean | reviewed samples | unreviewed | reviewed only | PPI mean | 95% CI |",
            "|---|---:|---:|---:|---|---:|---|",
        ]
        notes = []
        for p in result["ppi"]:
            only = p["labelled_mean"]
            only_text = _num(only["value"]) + (f" {_interval(only)}" if only.get("ci_low") is not None else "")
            lines.append(f"| {md_text(p['metric'])} | {_num(p['judge_mean'])} | {p['n_labelled']} | "
                         f"{p['n_unlabelled']} | {only_text} | {_num(p['value'])} | {_interval(p)} |")
            if p.get("note"):
                notes.append(f"- {md_text(p['metric'])}: {md_text(p['note'])}")
        lines += ["", "A sample counts as reviewed for a metric when its label fixes the true score: every "
                  "verdict of the metric marked, a corrected score, or the score marked right. The interval "
                  "holds when the reviewed samples are a random subset (report.html's random order)."]
        if notes:
            lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"
