"""Write the report files (report.json, report.md, report.html, junit.xml) atomically.

This module also holds the small helpers the three renderers share, so that they all read a
report.json (schema_version 1) the same way: metric order, thresholds, gate checks, number
formatting, and the plain-text evidence for a sample's score. It imports only the standard library
at module level; the renderers are imported when ``write_reports`` runs, so they can import from here.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from offline_eval.config import SCORES
from offline_eval.gate import EXPLANATIONS, SCORE_METRIC, reported  # the product's wording and rules

FORMATS = ("json", "md", "html", "junit")
FILENAMES = {"json": "report.json", "md": "report.md", "html": "report.html", "junit": "junit.xml"}

METRIC_ORDER = SCORES  # the order metrics appear in every rendering

# Which part of a sample's ``details`` explains each metric's score.
DETAIL_KEY = SCORE_METRIC

NONE = "—"


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------


def render_json(report: Mapping[str, Any]) -> str:
    """report.json's exact text: strict JSON (NaN/Infinity raise ValueError), sorted keys, UTF-8."""
    return json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _renderers() -> dict[str, Any]:
    from offline_eval.report.html import render_html
    from offline_eval.report.junit import render_junit
    from offline_eval.report.markdown import render_markdown

    return {"json": render_json, "md": render_markdown, "html": render_html, "junit": render_junit}


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` via a temp file in the same folder + os.replace."""
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be read by CI and people
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_reports(report: dict, out_dir: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``report`` to ``out_dir`` in each of ``formats`` (among FORMATS); return the paths written.

    Every format is rendered before anything is written, so an invalid report (an unknown format, a
    NaN score: ValueError) leaves ``out_dir`` untouched. Each file is replaced atomically.
    """
    if isinstance(formats, str):
        formats = [formats]
    wanted: list[str] = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
        if fmt not in wanted:
            wanted.append(fmt)
    renderers = _renderers()
    rendered = [(FILENAMES[fmt], renderers[fmt](report)) for fmt in wanted]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in rendered:
        path = out_dir / name
        _write_atomic(path, text)
        paths.append(path)
    return paths


# --------------------------------------------------------------------------------------------------
# Reading a report (shared by the renderers)
# --------------------------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def samples_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in _list(report.get("samples")) if isinstance(s, Mapping)]


def metric_names(report: Mapping[str, Any]) -> list[str]:
    """Metrics present in the report: the known ones in their canonical order, then others sorted."""
    names: set[str] = set()
    names.update(m for m in _list(_mapping(report.get("run")).get("metrics")) if isinstance(m, str))
    names.update(_mapping(report.get("aggregate")).keys())
    for sample in samples_of(report):
        names.update(_mapping(sample.get("scores")).keys())
        names.update(_mapping(sample.get("not_computable")).keys())
    names = {n for n in names if isinstance(n, str)}
    return [m for m in METRIC_ORDER if m in names] + sorted(names - set(METRIC_ORDER))


def categories_of(report: Mapping[str, Any]) -> list[str]:
    return sorted(str(c) for c in _mapping(report.get("by_category")).keys())


def run_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(report.get("run"))


def run_part(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """One mapping inside the report's ``run`` ("data", "judge", "usage", ...); {} when absent."""
    return _mapping(run_of(report).get(key))


def gate_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(report.get("gate"))


def gate_checks(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in _list(gate_of(report).get("checks")) if isinstance(c, Mapping)]


def failed_and_skipped_checks(
    report: Mapping[str, Any],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The gate checks that failed and those that were skipped. A report without checks (older or
    hand-made) has only the list of failed names ("metric" or "category/metric"): those become
    checks with just a metric and a category."""
    checks = gate_checks(report)
    failed = [c for c in checks if c.get("status") == "failed"]
    skipped = [c for c in checks if c.get("status") == "skipped"]
    if not checks:
        names = [n for n in gate_of(report).get("failed") or [] if isinstance(n, str)]
        failed = [
            {"metric": n.rsplit("/", 1)[-1], "category": n.rsplit("/", 1)[0] if "/" in n else None} for n in names
        ]
    return failed, skipped


def threshold_for(report: Mapping[str, Any], metric: str) -> float | None:
    value = _mapping(gate_of(report).get("thresholds")).get(metric)
    return value if is_number(value) else None


def find_check(report: Mapping[str, Any], metric: str, category: str | None = None) -> Mapping[str, Any] | None:
    for check in gate_checks(report):
        if check.get("metric") == metric and check.get("category") == category:
            return check
    return None


def check_label(check: Mapping[str, Any]) -> str:
    metric = str(check.get("metric", "?"))
    category = check.get("category")
    return metric if category is None else f"{category}/{metric}"


def gate_value_label(report: Mapping[str, Any]) -> str:
    return "95% CI lower bound" if gate_of(report).get("gate_on") == "lower" else "mean"


def explanation(metric: str) -> str:
    return EXPLANATIONS.get(metric, "scores below the threshold")


def failed_by_value(check: Mapping[str, Any]) -> bool:
    """A failed check that compared a value with its threshold (not one that had nothing to compare)."""
    return is_number(check.get("value")) and is_number(check.get("threshold"))


def failed_explanation(check: Mapping[str, Any]) -> str:
    """What a failed gate check means: the check's own reason (the gate writes the explanation there),
    else the product's sentence for its metric."""
    reason = check.get("reason")
    return str(reason) if reason else explanation(str(check.get("metric", "")))


def header_facts(report: Mapping[str, Any], esc: Callable[[Any], str], path_fmt: str, skipped_fmt: str) -> list[str]:
    """The facts under a report's title, in order: the data file, how many records were evaluated
    (or, without those counts, how many samples), the judge, and what the gate compares.

    ``esc`` makes user text safe for the format; ``path_fmt`` shows the (escaped) data path and
    ``skipped_fmt`` the number of skipped records, each through ``str.format`` with one ``{}``.
    """
    data = run_part(report, "data")
    judge = run_part(report, "judge")
    facts = []
    if data.get("path"):
        facts.append(path_fmt.format(esc(data.get("path"))))
    if "n_evaluated" in data:
        fact = f"{fmt_count(data.get('n_evaluated'))} of {fmt_count(data.get('n_records'))} records evaluated"
        if data.get("n_skipped"):
            fact += skipped_fmt.format(fmt_count(data.get("n_skipped")))
        facts.append(fact)
    else:
        facts.append(f"{len(samples_of(report))} samples")
    if judge.get("name"):
        facts.append(f"judge {esc(judge.get('name'))}")
    if gate_of(report).get("gate_on"):
        facts.append(f"gate on {esc(gate_value_label(report))}")
    return facts


def aggregate_for(report: Mapping[str, Any], metric: str, category: str | None = None) -> Mapping[str, Any]:
    if category is None:
        return _mapping(_mapping(report.get("aggregate")).get(metric))
    return _mapping(_mapping(_mapping(report.get("by_category")).get(category)).get(metric))


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fmt_num(value: Any, digits: int = 3) -> str:
    """A score to ``digits`` decimals; None (or anything not a number) as an em dash."""
    if not is_number(value):
        return NONE
    if not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}f}"


def fmt_ci(agg: Mapping[str, Any]) -> str:
    low, high = agg.get("ci_low"), agg.get("ci_high")
    if not (is_number(low) and is_number(high)):
        return NONE
    return f"[{fmt_num(low)}, {fmt_num(high)}]"


def fmt_count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else NONE


def score_of(sample: Mapping[str, Any], metric: str) -> float | None:
    value = _mapping(sample.get("scores")).get(metric)
    return value if is_number(value) else None


def not_computable_reason(sample: Mapping[str, Any], metric: str) -> str | None:
    """Why ``metric`` has no score for ``sample`` (None when it has one)."""
    if score_of(sample, metric) is not None:
        return None
    reason = _mapping(sample.get("not_computable")).get(metric)
    return str(reason) if reason else "not computable"


def below_threshold(score: float | None, threshold: float | None) -> bool:
    """Compared at the printed precision, as the gate compares (a 0.7999999 score is not "0.800 < 0.80")."""
    return score is not None and threshold is not None and reported(score) < threshold


def detail_for(sample: Mapping[str, Any], metric: str) -> Mapping[str, Any]:
    return _mapping(_mapping(sample.get("details")).get(DETAIL_KEY.get(metric, metric)))


def text_of(value: Any) -> str:
    return "" if value is None else str(value)


def clip(text: Any, limit: int) -> str:
    s = text_of(text)
    return s if len(s) <= limit else s[: max(0, limit - 1)].rstrip() + "…"


def claims_of(detail: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in _list(detail.get("claims")) if isinstance(c, Mapping)]


def questions_of(detail: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [q for q in _list(detail.get("generated_questions")) if isinstance(q, Mapping)]


def chunks_of(detail: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    chunks = [c for c in _list(detail.get("chunks")) if isinstance(c, Mapping)]
    return sorted(chunks, key=lambda c: c.get("rank") if is_number(c.get("rank")) else math.inf)


def evidence(sample: Mapping[str, Any], metric: str) -> list[tuple[str, str]]:
    """What explains a low ``metric`` score for ``sample``, as (label, text) pairs, plain text.

    faithfulness: the unsupported claims; context_recall: the reference claims not covered;
    answer_relevancy: the questions generated back from the answer (and whether it was noncommittal);
    context_precision / context_relevant_ratio: the chunks judged irrelevant, by rank.
    """
    reason = not_computable_reason(sample, metric)
    if reason is not None:
        return [("not computable", reason)]
    detail = detail_for(sample, metric)
    # A score set by rule (no contexts retrieved, an empty answer) says so first.
    out: list[tuple[str, str]] = [("reason", text_of(detail["reason"]))] if detail.get("reason") else []
    if metric == "faithfulness":
        out += [
            ("unsupported claim", text_of(c.get("text"))) for c in claims_of(detail) if c.get("verdict") != "supported"
        ]
    elif metric == "context_recall":
        out += [("uncovered claim", text_of(c.get("text"))) for c in claims_of(detail) if c.get("verdict") != "covered"]
    elif metric == "answer_relevancy":
        if detail.get("noncommittal"):
            out.append(("noncommittal", "the answer is evasive or noncommittal"))
        for q in questions_of(detail):
            out.append((f"generated question (similarity {fmt_num(q.get('similarity'))})", text_of(q.get("text"))))
    elif metric in ("context_precision", "context_relevant_ratio"):
        for c in chunks_of(detail):
            if not c.get("relevant"):
                out.append((f"irrelevant chunk at rank {text_of(c.get('rank'))}", text_of(c.get("preview"))))
    return out


def worst_samples(report: Mapping[str, Any], metric: str, limit: int = 5) -> list[Mapping[str, Any]]:
    """The ``limit`` samples with the lowest computable ``metric`` score (ties: input order)."""
    scored = [(score_of(s, metric), i, s) for i, s in enumerate(samples_of(report))]
    scored = [t for t in scored if t[0] is not None]
    scored.sort(key=lambda t: (t[0], t[1]))
    return [s for _, _, s in scored[:limit]]
