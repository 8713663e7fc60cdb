"""The ``compare`` and ``agreement`` commands (registered on the main CLI group by ``cli.py``).

Exit codes follow the main CLI: 0 fine, 1 a significant regression with ``--fail-on-regression``,
2 bad input (unreadable or invalid file, bad option), with a one-line message naming the file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from offline_eval.errors import InputError

__all__ = ["agreement_cmd", "compare_cmd"]

EXIT_REGRESSED = 1


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _load_report(path: str) -> dict:
    """Read and validate a report.json; any problem is an InputError naming the file."""
    from offline_eval.report.view import ReportError, load

    try:
        return load(path)
    except ReportError as exc:
        raise InputError(_one_line(exc)) from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {_one_line(exc.strerror or exc)}") from None


def _json_text(result: dict) -> str:
    return json.dumps(result, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _emit(result: dict, markdown: str, json_path: str | None, out_path: str | None = None) -> None:
    """Print ``markdown`` to stdout; also write it to ``out_path`` and ``result`` as JSON to ``json_path``."""
    click.echo(markdown, nl=False)
    if out_path:
        _write(out_path, markdown)
    if json_path:
        _write(json_path, _json_text(result))


# --------------------------------------------------------------------------------------- compare


@click.command("compare")
@click.argument("base", metavar="BASE")
@click.argument("new", metavar="NEW")
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit with status 1 when any metric regressed significantly, Holm-corrected across metrics (for CI).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level; the interval of the difference has level 1 - alpha.",
)
@click.option("--out", "out_path", metavar="FILE.md", help="Also write the markdown to this file.")
@click.option("--json", "json_path", metavar="FILE", help="Write the full comparison as JSON.")
def compare_cmd(
    base: str, new: str, fail_on_regression: bool, alpha: float, out_path: str | None, json_path: str | None
) -> None:
    """Compare two report.json files sample by sample (BASE before, NEW after a change).

    Samples are paired by sample_id. For each metric, over samples computable in at least one
    report (a score missing from one counts as 0 there, so losing a score is a regression signal):
    the mean difference NEW - BASE, its paired-bootstrap interval, a sign-flip permutation p-value
    Holm-corrected for the number of metrics tested, and a verdict (improved / regressed / no
    significant change), followed by the samples that moved most with the judge's evidence. Prints
    markdown to stdout.

    \b
    Exit codes:
      0  compared (no regression, or --fail-on-regression not given)
      1  a metric regressed and --fail-on-regression was given
      2  a report is unreadable or invalid
    """
    from offline_eval.compare import (
        ReportError,
        compare_reports,
        render_compare_markdown,
    )

    base_report = _load_report(base)
    new_report = _load_report(new)
    try:
        result = compare_reports(base_report, new_report, alpha=alpha)
    except ReportError as exc:  # pragma: no cover - _load_report validated both already
        raise InputError(_one_line(exc)) from None
    result["base_path"] = base
    result["new_path"] = new
    _emit(result, render_compare_markdown(result), json_path, out_path)
    if fail_on_regression and result["regressed"]:
        click.echo(f"regressed: {', '.join(result['regressed'])}", err=True)
        click.get_current_context().exit(EXIT_REGRESSED)


# ------------------------------------------------------------------------------------- agreement


def _parse_maps(maps: tuple[str, ...]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for item in maps:
        metric, sep, field = item.partition("=")
        metric, field = metric.strip(), field.strip()
        if not sep or not metric or not field:
            raise InputError(f"--map {item!r}: expected METRIC=LABEL_FIELD, e.g. faithfulness=faithful")
        if metric in mapping:
            raise InputError(f"--map: metric {metric!r} is mapped twice")
        mapping[metric] = field
    return mapping


@click.command("agreement")
@click.argument("report", metavar="REPORT")
@click.option(
    "--labels",
    "labels_path",
    required=True,
    metavar="FILE",
    help="Human labels: labels.jsonl exported from report.html (one row per reviewed item), or, with --map, "
    "JSON Lines or CSV with a sample_id column and label fields.",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="METRIC=LABEL_FIELD",
    help="Per-sample labels: which label field judges which metric; repeat for several. Without --map the "
    "labels are per-item (report.html's export).",
)
@click.option(
    "--threshold",
    type=float,
    default=0.5,
    show_default=True,
    help="Fixed score threshold for 'judge says yes' (balanced accuracy, kappa).",
)
@click.option(
    "--ppi",
    "with_ppi",
    is_flag=True,
    help="Also estimate each binary label's true mean by prediction-powered inference.",
)
@click.option("--json", "json_path", metavar="FILE", help="Write the full result as JSON.")
def agreement_cmd(
    report: str,
    labels_path: str,
    maps: tuple[str, ...],
    threshold: float,
    with_ppi: bool,
    json_path: str | None,
) -> None:
    """Measure how well the judge's scores in REPORT agree with human labels.

    Per-item labels (labels.jsonl, exported from report.html's review mode): the judge's error
    rate per metric and kind (verdict / score) with a 95% Wilson interval, and Cohen's kappa of its
    verdicts; with --ppi, each metric's prediction-powered mean beside the judge's.

    Per-sample labels (--map METRIC=FIELD): binary labels (0/1, true/false, yes/no) get balanced
    accuracy at the best and at a fixed threshold, ROC AUC and Cohen's kappa; graded labels (e.g.
    1-5) Spearman and Kendall tau-b; each with a 95% bootstrap interval. Prints markdown to stdout.

    \b
    Examples:
      offline-eval agreement out/report.json --labels labels.jsonl --ppi
      offline-eval agreement report.json --labels labels.csv --map faithfulness=faithful

    \b
    Exit codes:
      0  done
      2  bad input (unreadable report or labels, unknown metric or label field)
    """
    from offline_eval.agreement import (
        LabelsError,
        agreement,
        load_labels,
        render_agreement_markdown,
    )
    from offline_eval.report.view import ReportError

    if not math.isfinite(threshold):
        raise InputError(f"--threshold must be a finite number, got {threshold!r}")
    if not maps:
        _item_agreement(report, labels_path, with_ppi, json_path)
        return
    mapping = _parse_maps(maps)
    report_data = _load_report(report)
    try:
        labels = load_labels(labels_path)
    except LabelsError as exc:
        raise InputError(_one_line(exc)) from None
    try:
        result = agreement(report_data, labels, mapping, fixed_threshold=threshold, include_ppi=with_ppi)
    except LabelsError as exc:
        raise InputError(f"{labels_path}: {_one_line(exc)}") from None
    except ReportError as exc:
        raise InputError(f"{report}: {_one_line(exc)}") from None
    except ValueError as exc:
        raise InputError(_one_line(exc)) from None
    result["report_path"] = report
    result["labels_path"] = labels_path
    _emit(result, render_agreement_markdown(result), json_path)


def _item_agreement(report: str, labels_path: str, with_ppi: bool, json_path: str | None) -> None:
    """``agreement`` over per-item labels (report.html's export)."""
    from offline_eval.review import LabelsError, item_agreement, load_item_labels, render_item_agreement_markdown

    report_data = _load_report(report)
    try:
        labels = load_item_labels(labels_path)
    except LabelsError as exc:
        message = _one_line(exc)
        if "field 'item': missing" in message:
            message += " (per-sample label fields need --map METRIC=LABEL_FIELD)"
        raise InputError(message) from None
    try:
        result = item_agreement(report_data, labels, include_ppi=with_ppi)
    except LabelsError as exc:
        raise InputError(_one_line(exc)) from None
    result["report_path"] = report
    result["labels_path"] = labels_path
    _emit(result, render_item_agreement_markdown(result), json_path)
