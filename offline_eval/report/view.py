"""The one reader of report.json (schema_version 1): every rendering, ``compare``, ``agreement``, the
Python ``Report``, the console summary and ``assert_quality`` read a report through these functions.

They are forgiving where rendering is concerned (a missing or malformed part reads as empty, so an
older or hand-made report still renders) and strict where numbers are compared (``validate`` checks
the contract ``compare`` and ``agreement`` rely on). Nothing here names a metric: the order of the
scores, which metric a score's evidence sits under and what a failure means come from the metric
registry, and a sample's evidence is the generic ``findings`` and ``summary`` each metric writes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from offline_eval.gate import explanation, reported
from offline_eval.metrics import score_owner, score_spec, score_specs
from offline_eval.report.text import fmt_count, is_number, text_of

SCHEMA_VERSION = 1


class ReportError(ValueError):
    """A file or dict that does not follow the report.json contract; the message says where."""


# --------------------------------------------------------------------------------------------------
# Loading and validating
# --------------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (report.json never contains NaN or Infinity)")


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a report.json; any problem is a ReportError naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read report: {' '.join(str(exc.strerror or exc).split())}") from None
    try:
        report = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:
        raise ReportError(f"{path}: {exc}") from None
    try:
        validate(report)
    except ReportError as exc:
        raise ReportError(f"{path}: not an offline-eval report: {exc}") from None
    return report


def validate(report: Any) -> list[dict]:
    """Check the parts of the contract that comparisons rely on; return the samples.

    Requires a JSON object with ``schema_version`` 1 (when present) and a ``samples`` list whose
    items are objects with a non-empty, unique string ``sample_id`` and a ``scores`` object whose
    values are numbers or null. Raises :class:`ReportError` naming the offending place.
    """
    if not isinstance(report, dict):
        raise ReportError(f"expected a JSON object, got {type(report).__name__}")
    version = report.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ReportError(f"unsupported schema_version {version!r} (this tool reads version {SCHEMA_VERSION})")
    samples = report.get("samples")
    if not isinstance(samples, list):
        raise ReportError("missing 'samples' list")
    seen: dict[str, int] = {}
    for i, sample in enumerate(samples):
        where = f"samples[{i}]"
        if not isinstance(sample, dict):
            raise ReportError(f"{where}: expected an object, got {type(sample).__name__}")
        sid = sample.get("sample_id")
        if not isinstance(sid, str) or not sid:
            raise ReportError(f"{where}: 'sample_id' must be a non-empty string, got {sid!r}")
        if sid in seen:
            raise ReportError(f"{where}: duplicate sample_id {sid!r} (also samples[{seen[sid]}])")
        seen[sid] = i
        scores = sample.get("scores")
        if not isinstance(scores, dict):
            raise ReportError(f"{where} ({sid}): missing 'scores' object")
        for metric, value in scores.items():
            if value is not None and not is_number(value):
                raise ReportError(f"{where} ({sid}): scores.{metric} must be a number or null, got {value!r}")
    return samples


def samples_by_id(report: Mapping[str, Any]) -> dict[str, dict]:
    """Validated samples keyed by ``sample_id``, in report order."""
    return {s["sample_id"]: s for s in validate(report)}


# --------------------------------------------------------------------------------------------------
# Parts of a report
# --------------------------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def samples_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in _list(report.get("samples")) if isinstance(s, Mapping)]


def metric_names(*reports: Mapping[str, Any]) -> list[str]:
    """Scores present in any of the reports: registered ones in their order, then others sorted."""
    names: set[str] = set()
    for report in reports:
        names.update(m for m in _list(run_of(report).get("metrics")) if isinstance(m, str))
        names.update(_mapping(report.get("aggregate")).keys())
        for sample in samples_of(report):
            names.update(_mapping(sample.get("scores")).keys())
            names.update(_mapping(sample.get("not_computable")).keys())
    names = {n for n in names if isinstance(n, str)}
    order = [spec.name for spec in score_specs()]
    return [m for m in order if m in names] + sorted(names - set(order))


def categories_of(report: Mapping[str, Any]) -> list[str]:
    return sorted(str(c) for c in _mapping(report.get("by_category")).keys())


def run_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(report.get("run"))


def run_part(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """One mapping inside the report's ``run`` ("data", "judge", "usage", ...); {} when absent."""
    return _mapping(run_of(report).get(key))


def aggregate_of(report: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    return _mapping(report.get("aggregate"))


def aggregate_for(report: Mapping[str, Any], metric: str, category: str | None = None) -> Mapping[str, Any]:
    if category is None:
        return _mapping(aggregate_of(report).get(metric))
    return _mapping(_mapping(_mapping(report.get("by_category")).get(category)).get(metric))


def judge_determinism(report: Mapping[str, Any]) -> str | None:
    """Why the judge's outputs can differ run to run, when its backend says they can (a server)."""
    judge = run_part(report, "judge")
    if judge.get("deterministic") is False:
        return text_of(judge.get("determinism")) or "the judge is not byte-deterministic"
    return None


# --------------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------------


def gate_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(report.get("gate"))


def passed(report: Mapping[str, Any]) -> bool | None:
    """Whether the gate passed; None for a report without a verdict."""
    value = gate_of(report).get("passed")
    return value if isinstance(value, bool) else None


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
    return {"lower": "95% CI lower bound", "ppi": "PPI-corrected mean"}.get(gate_of(report).get("gate_on"), "mean")


def failed_by_value(check: Mapping[str, Any]) -> bool:
    """A failed check that compared a value with its threshold (not one that had nothing to compare)."""
    return is_number(check.get("value")) and is_number(check.get("threshold"))


def failed_explanation(check: Mapping[str, Any]) -> str:
    """What a failed gate check means: the check's own reason (the gate writes the explanation there),
    else the metric's sentence."""
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
        facts.append(f"judge {esc(judge.get('name'))}" + (" (not byte-deterministic)" if judge_determinism(report)
                                                            else ""))
    if gate_of(report).get("gate_on"):
        facts.append(f"gate on {esc(gate_value_label(report))}")
    return facts


# --------------------------------------------------------------------------------------------------
# A sample's scores and evidence
# --------------------------------------------------------------------------------------------------


def score_of(sample: Mapping[str, Any], metric: str) -> float | None:
    """The sample's finite score for ``metric``, or None when absent, null or not finite."""
    value = _mapping(sample.get("scores")).get(metric)
    return float(value) if is_number(value) and math.isfinite(value) else None


def contexts_of(sample: Mapping[str, Any]) -> list[str]:
    """The sample's retrieved chunks as reported (an older report keeps only their number)."""
    return [text_of(c) for c in _list(sample.get("contexts"))]


def not_computable_reason(sample: Mapping[str, Any], metric: str) -> str | None:
    """Why ``metric`` has no score for ``sample`` (None when it has one)."""
    if score_of(sample, metric) is not None:
        return None
    reasons = _mapping(sample.get("not_computable"))
    reason = reasons.get(metric) or reasons.get(score_owner(metric))
    return str(reason) if reason else "not computable"


def below_threshold(score: float | None, threshold: float | None) -> bool:
    """Compared at the printed precision, as the gate compares (a 0.7999999 score is not "0.800 < 0.80")."""
    return score is not None and threshold is not None and reported(score) < threshold


def detail_for(sample: Mapping[str, Any], metric: str) -> Mapping[str, Any]:
    """The details of the metric that reports ``metric`` (a second score shares its metric's)."""
    return _mapping(_mapping(sample.get("details")).get(score_owner(metric)))


def findings_of(sample: Mapping[str, Any], metric: str) -> list[Mapping[str, Any]]:
    """The items the judge decided on for this sample's ``metric``: label, text, verdict, ok, probability."""
    return [f for f in _list(detail_for(sample, metric).get("findings")) if isinstance(f, Mapping)]


def matrix_of(sample: Mapping[str, Any], metric: str) -> Mapping[str, Any] | None:
    """The metric's verdict matrix for this sample, if it keeps one: ``columns`` (names), ``rows`` (each a
    finding, label / text / verdict / ok, with ``cells``: one {yes, probability} per column), ``title``."""
    matrix = detail_for(sample, metric).get("matrix")
    if not isinstance(matrix, Mapping) or not isinstance(matrix.get("rows"), list):
        return None
    return matrix


def summary_of(sample: Mapping[str, Any], metric: str) -> str:
    """The metric's one-line summary of this sample's score ("2 of 3 claims supported"); "" if none."""
    return text_of(detail_for(sample, metric).get("summary"))


def score_description(metric: str) -> str:
    """How a score is computed, in one line, as its metric declares ("" for an unknown score)."""
    spec = score_spec(metric)
    return spec.description if spec else ""


def finding_label(finding: Mapping[str, Any]) -> str:
    """A finding's label with its verdict: ``claim (unsupported)``."""
    verdict = text_of(finding.get("verdict"))
    return f"{text_of(finding.get('label'))} ({verdict})" if verdict else text_of(finding.get("label"))


def evidence(sample: Mapping[str, Any], metric: str) -> list[tuple[str, str]]:
    """What explains a low ``metric`` score for ``sample``, as (label, text) pairs, plain text: a score
    set by rule says why first, then every finding that did not count for the score."""
    reason = not_computable_reason(sample, metric)
    if reason is not None:
        return [("not computable", reason)]
    detail = detail_for(sample, metric)
    out: list[tuple[str, str]] = [("reason", text_of(detail["reason"]))] if detail.get("reason") else []
    return out + [(finding_label(f), text_of(f.get("text"))) for f in findings_of(sample, metric)
                  if f.get("ok") is not True]


def worst_samples(report: Mapping[str, Any], metric: str, limit: int = 5,
                  category: str | None = None) -> list[Mapping[str, Any]]:
    """The ``limit`` samples (of ``category``, if given) with the lowest computable score (ties: input order)."""
    scored = [(score_of(s, metric), i, s) for i, s in enumerate(samples_of(report))
              if category is None or s.get("category") == category]
    scored = [t for t in scored if t[0] is not None]
    scored.sort(key=lambda t: (t[0], t[1]))
    return [s for _, _, s in scored[:limit]]


# --------------------------------------------------------------------------------------------------
# Review items: what a person can check, and the PPI-corrected means a review gives
# --------------------------------------------------------------------------------------------------
#
# Every reviewable item of a report has an id, unique within its sample and stable for the same report:
#
#   <score>/score            a sample's computable score ("faithfulness/score", "context_relevant_ratio/score")
#   <metric>/finding/<k>     the k-th (1-based) entry of samples[].details[<metric>].findings that is a
#                            yes/no verdict of the judge (ok true or false): a claim, a chunk, evasiveness
#
# A graded finding (ok null: a generated question's similarity) is not an item: the judge decided nothing.
# report.html's review mode, labels.jsonl, ``offline-eval agreement`` and ``evaluate --labels`` all use
# these ids, and only these functions make them.

class ReviewItem(dict):
    """One reviewable item, as a JSON-ready dict (report.html embeds a list of them):

    ``sample_id``, ``item`` (the id), ``kind`` ("verdict" | "score"), ``metric`` (the score for a score
    item, the metric whose finding it is for a verdict), ``index`` (the finding's 1-based position in
    ``findings``, None for a score), ``label`` ("claim", "chunk at rank 2", "score"), ``text`` (the
    finding's text, or the score's summary), ``verdict`` (the judge's verdict word, or the score at the
    printed precision), ``ok`` (verdict: whether it counts for the score), ``probability`` (the judge's
    P(yes), when known), ``score`` and ``threshold`` (the sample's score for ``metric``, and its gate
    threshold), ``doubt`` (how close the judge was to the other answer: |P(yes) − 0.5| when known, else
    |score − threshold|; smallest first is "most worth checking").
    """

    @property
    def key(self) -> tuple[str, str]:
        return self["sample_id"], self["item"]


def score_item_id(score: str) -> str:
    return f"{score}/score"


def finding_item_id(metric: str, index: int) -> str:
    return f"{metric}/finding/{index}"


def parse_item_id(item: Any) -> tuple[str, str, int | None] | None:
    """``(name, kind, index)`` for a well-formed item id, else None: "faithfulness/finding/3" →
    ("faithfulness", "verdict", 3); "faithfulness/score" → ("faithfulness", "score", None)."""
    if not isinstance(item, str):
        return None
    parts = item.split("/")
    if len(parts) == 2 and parts[0] and parts[1] == "score":
        return parts[0], "score", None
    if len(parts) == 3 and parts[0] and parts[1] == "finding" and parts[2].isdigit():
        index = int(parts[2])
        if index >= 1 and parts[2] == str(index):  # "01" would name the same finding twice
            return parts[0], "verdict", index
    return None


def _doubt(probability: Any, score: float | None, threshold: float | None) -> float:
    if is_number(probability) and math.isfinite(probability):
        return round(abs(float(probability) - 0.5), 6)
    if score is not None:
        return round(abs(score - (threshold if threshold is not None else 0.5)), 6)
    return 0.5


def sample_review_items(report: Mapping[str, Any], sample: Mapping[str, Any]) -> list[ReviewItem]:
    """The sample's reviewable items, metric by metric in report order: the metric's computable score
    items, then its verdicts in the order of its findings."""
    sid = text_of(sample.get("sample_id"))
    by_owner: dict[str, list[str]] = {}
    for score in metric_names(report):
        by_owner.setdefault(score_owner(score), []).append(score)
    items: list[ReviewItem] = []
    for owner, scores in by_owner.items():
        for score in scores:
            value, threshold = score_of(sample, score), threshold_for(report, score)
            if value is not None:
                items.append(ReviewItem(
                    sample_id=sid, item=score_item_id(score), kind="score", metric=score, index=None,
                    label="score", text=summary_of(sample, score), verdict=f"{reported(value):.3f}", ok=None,
                    probability=None, score=value, threshold=threshold, doubt=_doubt(None, value, threshold),
                ))
        main = owner if owner in scores else scores[0]  # the score the metric's verdicts decide first
        owner_score, owner_threshold = score_of(sample, main), threshold_for(report, main)
        for k, finding in enumerate(findings_of(sample, owner), 1):
            if not isinstance(finding.get("ok"), bool):
                continue
            probability = finding.get("probability")
            probability = float(probability) if is_number(probability) and math.isfinite(probability) else None
            items.append(ReviewItem(
                sample_id=sid, item=finding_item_id(owner, k), kind="verdict", metric=owner, index=k,
                label=text_of(finding.get("label")), text=text_of(finding.get("text")),
                verdict=text_of(finding.get("verdict")), ok=finding["ok"], probability=probability,
                score=owner_score, threshold=owner_threshold,
                doubt=_doubt(probability, owner_score, owner_threshold),
            ))
    return items


def review_items(report: Mapping[str, Any]) -> list[ReviewItem]:
    """Every reviewable item of the report, sample by sample in report order."""
    return [item for sample in samples_of(report) for item in sample_review_items(report, sample)]


def review_fingerprint(items: list[ReviewItem]) -> str:
    """A short hash of what was reviewed (ids and the judge's verdicts): report.html keys its saved marks
    by it, so marks survive a re-rendered report and are dropped when the verdicts changed."""
    text = json.dumps([[i["sample_id"], i["item"], i["verdict"]] for i in items], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def ppi_for(report: Mapping[str, Any], metric: str, category: str | None = None) -> Mapping[str, Any]:
    """The prediction-powered estimate of ``metric``'s mean from reviewed items ({} without labels):
    ``value``, ``ci_low``, ``ci_high``, ``n_labelled``, ``n_unlabelled``, ``note``."""
    return _mapping(aggregate_for(report, metric, category).get("ppi"))


def review_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's ``review`` section ({} when it was built without labels): the labels file and the
    judge's error rates on the reviewed items."""
    return _mapping(report.get("review"))


def has_ppi(report: Mapping[str, Any]) -> bool:
    return bool(review_of(report))


def error_rate_rows(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The review's error-rate rows (metric, kind, n_reviewed, n_wrong, error_rate {value, ci_low,
    ci_high}, cohen_kappa); the last one, metric "all", covers every reviewed item."""
    return [r for r in _list(review_of(report).get("error_rates")) if isinstance(r, Mapping)]


def review_summary(report: Mapping[str, Any]) -> str:
    """One line on the review behind the PPI means: "12 of 58 items reviewed (labels.jsonl, by ana);
    the judge was wrong on 2: error rate 0.167 [0.047, 0.448]"; "" without a review."""
    review = review_of(report)
    if not review:
        return ""
    labels = _mapping(review.get("labels"))
    who = ", ".join(str(r) for r in _list(labels.get("reviewers"))) or "reviewer not named"
    line = (f"{fmt_count(review.get('n_reviewed'))} of {fmt_count(review.get('n_items'))} items reviewed "
            f"({text_of(labels.get('path'))}, {who})")
    total = next((r for r in error_rate_rows(report) if r.get("metric") == "all"), None)
    if total and total.get("n_reviewed"):
        rate = _mapping(total.get("error_rate"))
        line += (f"; the judge was wrong on {fmt_count(total.get('n_wrong'))} of {fmt_count(total.get('n_reviewed'))}"
                 f": error rate {_fmt3(rate.get('value'))} [{_fmt3(rate.get('ci_low'))}, {_fmt3(rate.get('ci_high'))}]")
    return line


def _fmt3(value: Any) -> str:
    return f"{value:.3f}" if is_number(value) else "—"
