"""report.md: a summary of report.json sized for a pull-request comment (GitHub-flavoured Markdown)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from offline_eval.report.formats import register
from offline_eval.report.text import NONE, fmt_ci, fmt_count, fmt_num, md_text, text_of
from offline_eval.report.view import (
    aggregate_for,
    below_threshold,
    categories_of,
    check_label,
    error_rate_rows,
    evidence,
    failed_and_skipped_checks,
    failed_by_value,
    failed_explanation,
    find_check,
    gate_of,
    gate_value_label,
    has_ppi,
    header_facts,
    metric_names,
    not_computable_reason,
    ppi_for,
    review_summary,
    run_of,
    run_part,
    samples_of,
    score_of,
    threshold_for,
    worst_samples,
)

WORST_N = 5
MAX_EVIDENCE = 5  # evidence items per sample in the worst-samples tables
MAX_TEXT = 200  # characters of user text per cell
MAX_SKIPPED = 50

STATUS = {"passed": "✅ passed", "failed": "❌ failed", "skipped": "⚠️ skipped"}


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _status(check: Mapping[str, Any] | None) -> str:
    if check is None:
        return NONE
    status = text_of(check.get("status"))
    return STATUS.get(status, md_text(status) or NONE)


def _header(report: Mapping[str, Any]) -> list[str]:
    passed = gate_of(report).get("passed")
    if passed is True:
        title = "## ✅ offline-eval: gate passed"
    elif passed is False:
        title = "## ❌ offline-eval: gate failed"
    else:
        title = "## offline-eval report"
    facts = header_facts(report, md_text, "data {}", ", {} skipped")
    return [title, "", " · ".join(facts), ""]


def _summary(report: Mapping[str, Any], metrics: list[str]) -> list[str]:
    ppi = has_ppi(report)
    head = ["metric", "mean", "95% CI"] + (["PPI mean", "PPI 95% CI", "reviewed"] if ppi else [])
    lines = [
        _row(head + ["n computable", "not computable", "threshold", "status"]),
        "|---|---:|---|" + ("---:|---|---:|" if ppi else "") + "---:|---:|---:|---|",
    ]
    for metric in metrics:
        agg = aggregate_for(report, metric)
        corrected = ppi_for(report, metric)
        extra = [fmt_num(corrected.get("value")), fmt_ci(corrected), fmt_count(corrected.get("n_labelled"))] \
            if ppi else []
        lines.append(
            _row(
                [
                    md_text(metric),
                    fmt_num(agg.get("mean")),
                    fmt_ci(agg),
                    *extra,
                    fmt_count(agg.get("n")),
                    fmt_count(agg.get("n_not_computable")),
                    fmt_num(threshold_for(report, metric)),
                    _status(find_check(report, metric)),
                ]
            )
        )
    if ppi:
        lines += ["", f"PPI mean: the judge's mean corrected by reviewed items — {md_text(review_summary(report))}."]
    return lines + [""]


def _review_section(report: Mapping[str, Any]) -> list[str]:
    rows = error_rate_rows(report)
    if not rows:
        return []
    lines = ["### Judge error rate on reviewed items", "",
             _row(["metric", "kind", "reviewed", "judge wrong", "error rate", "95% CI (Wilson)"]),
             "|---|---|---:|---:|---:|---|"]
    for row in rows:
        rate = row.get("error_rate") if isinstance(row.get("error_rate"), Mapping) else {}
        lines.append(_row([md_text(row.get("metric")), md_text(row.get("kind")), fmt_count(row.get("n_reviewed")),
                           fmt_count(row.get("n_wrong")), fmt_num(rate.get("value")), fmt_ci(rate)]))
    return lines + [""]


def _gate_section(report: Mapping[str, Any]) -> list[str]:
    failed, skipped = failed_and_skipped_checks(report)
    lines: list[str] = []
    if failed:
        lines += ["### Failed gates", ""]
        value_label = gate_value_label(report)
        for check in failed:
            what = f"**{md_text(check_label(check))}**"
            if failed_by_value(check):
                what += f": {value_label} {fmt_num(check.get('value'))} < threshold {fmt_num(check.get('threshold'))}"
            lines.append(f"- ❌ {what} — {md_text(failed_explanation(check))}")
        lines.append("")
    if skipped:
        lines += ["### Skipped gate checks", ""]
        for check in skipped:
            reason = md_text(check.get("reason")) or "not computable"
            lines.append(f"- ⚠️ **{md_text(check_label(check))}**: {reason}")
        lines.append("")
    return lines


def _category_section(report: Mapping[str, Any], metrics: list[str]) -> list[str]:
    categories = categories_of(report)
    if not categories:
        return []
    lines = [
        "### By category",
        "",
        "Mean (n computable); ✅/❌ mark categories with their own gate threshold.",
        "",
        _row(["category"] + [md_text(m) for m in metrics]),
        "|---|" + "---:|" * len(metrics),
    ]
    for category in categories:
        cells = [md_text(category)]
        for metric in metrics:
            agg = aggregate_for(report, metric, category)
            cell = f"{fmt_num(agg.get('mean'))} ({fmt_count(agg.get('n'))})" if agg else NONE
            check = find_check(report, metric, category)
            if check is not None and check.get("status") in ("passed", "failed"):
                icon = "✅" if check.get("status") == "passed" else "❌"
                cell = f"{icon} {cell} · gate {fmt_num(check.get('threshold'))}"
            cells.append(cell)
        lines.append(_row(cells))
    return lines + [""]


def _evidence_cell(sample: Mapping[str, Any], metric: str) -> str:
    items = evidence(sample, metric)
    if not items:
        return NONE
    shown = [f"{md_text(label)}: {md_text(text, MAX_TEXT)}" for label, text in items[:MAX_EVIDENCE]]
    if len(items) > MAX_EVIDENCE:
        shown.append(f"… and {len(items) - MAX_EVIDENCE} more")
    return "<br>".join(shown)


def _worst_section(report: Mapping[str, Any], metrics: list[str]) -> list[str]:
    lines: list[str] = []
    for metric in metrics:
        worst = worst_samples(report, metric, WORST_N)
        if not worst:
            continue
        threshold = threshold_for(report, metric)
        lines += [
            f"#### {md_text(metric)}",
            "",
            _row(["sample", "category", "score", "question", "evidence"]),
            "|---|---|---:|---|---|",
        ]
        for sample in worst:
            score = score_of(sample, metric)
            shown = fmt_num(score)
            if below_threshold(score, threshold):
                shown = f"❌ {shown}"
            lines.append(
                _row(
                    [
                        md_text(sample.get("sample_id")) or NONE,
                        md_text(sample.get("category")) or NONE,
                        shown,
                        md_text(sample.get("question"), MAX_TEXT) or NONE,
                        _evidence_cell(sample, metric),
                    ]
                )
            )
        lines.append("")
    if lines:
        lines = [f"### Worst {WORST_N} samples per metric", ""] + lines
    return lines


def _not_computable_section(report: Mapping[str, Any], metrics: list[str]) -> list[str]:
    rows = []
    for sample in samples_of(report):
        for metric in metrics:
            reason = not_computable_reason(sample, metric)
            if reason is not None:
                rows.append(
                    _row([md_text(sample.get("sample_id")) or NONE, md_text(metric), md_text(reason, MAX_TEXT)])
                )
    if not rows:
        return []
    return ["### Not computable", "", _row(["sample", "metric", "reason"]), "|---|---|---|", *rows, ""]


def _skipped_section(report: Mapping[str, Any]) -> list[str]:
    records = [r for r in report.get("skipped_records") or [] if isinstance(r, Mapping)]
    if not records:
        return []
    lines = [f"### Skipped records ({len(records)})", "", _row(["location", "problems"]), "|---|---|"]
    for record in records[:MAX_SKIPPED]:
        problems = [md_text(p, MAX_TEXT) for p in record.get("problems") or []]
        lines.append(_row([md_text(record.get("location")) or NONE, "<br>".join(problems) or NONE]))
    if len(records) > MAX_SKIPPED:
        lines.append(f"\n… and {len(records) - MAX_SKIPPED} more (see report.json)")
    return lines + [""]


def _footer(report: Mapping[str, Any]) -> list[str]:
    run = run_of(report)
    parts = []
    if run.get("tool") or run.get("version"):
        parts.append(md_text(f"{run.get('tool') or 'offline-eval'} {run.get('version') or ''}".strip()))
    judge = run_part(report, "judge")
    if judge.get("sha256"):
        parts.append(f"judge sha256 {md_text(str(judge.get('sha256'))[:12])}…")
    if "seed" in run:
        parts.append(f"seed {md_text(run.get('seed'))}")
    usage = run_part(report, "usage")
    if "judge_calls" in usage:
        parts.append(f"{fmt_count(usage.get('judge_calls'))} judge calls")
    return [f"<sub>{' · '.join(parts)}</sub>"] if parts else []


@register("md", "report.md")
def render_markdown(report: Mapping[str, Any]) -> str:
    """report.md's text for ``report`` (a report.json dict). Deterministic: no clock, sorted where unordered."""
    metrics = metric_names(report)
    lines: list[str] = []
    lines += _header(report)
    lines += _summary(report, metrics)
    lines += _gate_section(report)
    lines += _review_section(report)
    lines += _category_section(report, metrics)
    lines += _worst_section(report, metrics)
    lines += _not_computable_section(report, metrics)
    lines += _skipped_section(report)
    lines += _footer(report)
    return "\n".join(lines).rstrip("\n") + "\n"
