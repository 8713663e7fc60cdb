"""Compare two report.json files sample by sample: did a change improve or regress a metric?

Two runs over the same data set (say, before and after changing the retriever) are compared on
the samples they share, matched by ``sample_id``. For each metric the samples computable in at least
one report count; a score missing from one report counts as 0 there, so a sample that stops being
computable (a judge failure, a lost reference) is a regression signal instead of silently leaving
the comparison. The question is whether the mean per-sample difference ``new - base`` is
distinguishable from zero:

* the **paired bootstrap interval** of the mean difference (level ``1 - alpha``) says how large the
  change plausibly is;
* the **sign-flip p-value** says how surprising the observed change would be if the change did
  nothing (see :mod:`offline_eval.stats`), **Holm-corrected** for the number of metrics compared:
  tested one by one at ``alpha``, five metrics that did not change would flag one of them far more
  often than ``alpha``.

A metric is "improved" or "regressed" only when both agree (Holm-adjusted ``p < alpha`` *and* the
interval excludes 0); otherwise "no significant change". All metrics are higher-is-better. For each metric
the samples that moved most are listed with the judge's evidence from both reports (unsupported
claims, uncovered reference claims, ...) so that a regression can be read, not just seen.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from offline_eval import stats

__all__ = [
    "CANONICAL_METRICS",
    "ReportError",
    "compare_reports",
    "computable_score",
    "metric_names",
    "regressed",
    "render_compare_markdown",
    "sample_index",
    "validate_report",
]

CANONICAL_METRICS = (
    "faithfulness",
    "answer_relevancy",
    "context_recall",
    "context_precision",
    "context_relevant_ratio",
)
N_MOVERS = 5
_MAX_TEXT = 160  # characters of a claim or question shown in markdown


class ReportError(ValueError):
    """A dict that does not follow the report.json contract; the message says where."""


# --------------------------------------------------------------------------------------------
# Reading reports
# --------------------------------------------------------------------------------------------


def validate_report(report: Any) -> list[dict]:
    """Check the parts of the report.json contract this module relies on; return the samples.

    Requires a JSON object with ``schema_version`` 1 (when present) and a ``samples`` list whose
    items are objects with a non-empty, unique string ``sample_id`` and a ``scores`` object whose
    values are numbers or null. Raises :class:`ReportError` naming the offending place.
    """
    if not isinstance(report, dict):
        raise ReportError(f"expected a JSON object, got {type(report).__name__}")
    version = report.get("schema_version", 1)
    if version != 1:
        raise ReportError(f"unsupported schema_version {version!r} (this tool reads version 1)")
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
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ReportError(f"{where} ({sid}): scores.{metric} must be a number or null, got {value!r}")
    return samples


def sample_index(report: dict) -> dict[str, dict]:
    """Validated samples keyed by ``sample_id``, in report order."""
    return {s["sample_id"]: s for s in validate_report(report)}


def computable_score(sample: dict, metric: str) -> float | None:
    """The sample's finite score for ``metric``, or ``None`` when absent, null or not finite."""
    value = (sample.get("scores") or {}).get(metric)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def metric_names(*reports: dict) -> list[str]:
    """Metrics named by any report (``run.metrics`` or any sample's ``scores``), canonical first."""
    found: set[str] = set()
    for report in reports:
        run_metrics = (
            (report.get("run") or {}).get("metrics") if isinstance(report.get("run"), dict) else None
        )
        if isinstance(run_metrics, list):
            found.update(m for m in run_metrics if isinstance(m, str))
        for sample in report.get("samples") or []:
            found.update((sample.get("scores") or {}).keys())
    canonical = [m for m in CANONICAL_METRICS if m in found]
    return canonical + sorted(found.difference(CANONICAL_METRICS))


def _shorten(text: Any, limit: int = _MAX_TEXT) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def evidence(sample: dict, metric: str) -> dict:
    """The judge's reasons behind one sample's score, summarised from ``details``.

    faithfulness: the unsupported claims; context_recall: the reference claims not covered by the
    context; answer_relevancy: whether the answer was noncommittal and the questions generated from
    it; context_precision / context_relevant_ratio: ranks of relevant chunks and previews of the
    irrelevant ones. Anything missing or malformed is left out (an empty dict at worst).
    """
    details = sample.get("details")
    details = details if isinstance(details, dict) else {}
    source = "context_precision" if metric == "context_relevant_ratio" else metric
    d = details.get(source)
    if not isinstance(d, dict):
        return {}
    out: dict[str, Any] = {}

    def claims_with(verdict: str) -> list[str]:
        claims = d.get("claims")
        if not isinstance(claims, list):
            return []
        return [str(c.get("text", "")) for c in claims if isinstance(c, dict) and c.get("verdict") == verdict]

    if source == "faithfulness":
        out["unsupported_claims"] = claims_with("unsupported")
        for key in ("n_supported", "n_claims"):
            if key in d:
                out[key] = d[key]
    elif source == "context_recall":
        out["not_covered_claims"] = claims_with("not_covered")
        for key in ("n_covered", "n_claims"):
            if key in d:
                out[key] = d[key]
    elif source == "answer_relevancy":
        if "noncommittal" in d:
            out["noncommittal"] = bool(d["noncommittal"])
        questions = d.get("generated_questions")
        if isinstance(questions, list):
            out["generated_questions"] = [
                {"text": str(q.get("text", "")), "similarity": q.get("similarity")}
                for q in questions
                if isinstance(q, dict)
            ]
    elif source == "context_precision":
        chunks = d.get("chunks")
        if isinstance(chunks, list):
            chunks = [c for c in chunks if isinstance(c, dict)]
            out["relevant_ranks"] = [c.get("rank") for c in chunks if c.get("relevant") is True]
            out["irrelevant_chunks"] = [
                {"rank": c.get("rank"), "preview": str(c.get("preview", ""))}
                for c in chunks
                if c.get("relevant") is False
            ]
    else:
        out = dict(d)
    if d.get("reason"):
        out["reason"] = str(d["reason"])  # a score set by rule: no contexts retrieved, an empty answer
    reason = (
        (sample.get("not_computable") or {}).get(metric)
        if isinstance(sample.get("not_computable"), dict)
        else None
    )
    if reason:
        out["not_computable"] = reason
    return out


def _run_warnings(base: dict, new: dict) -> list[str]:
    """Differences in run settings that make a comparison harder to read."""

    def get(report: dict, *path: str) -> Any:
        node: Any = report
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    warnings = []
    checks = [
        (("run", "judge", "sha256"), "judge model"),
        (("run", "judge", "name"), "judge name"),
        (("run", "data", "sha256"), "data file"),
        (("run", "seed"), "seed"),
        (("run", "params"), "metric parameters"),
    ]
    for path, label in checks:
        a, b = get(base, *path), get(new, *path)
        if a is not None and b is not None and a != b:
            warnings.append(f"{label} differs between the reports: {a!r} vs {b!r}")
    return warnings


# --------------------------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------------------------


def _verdict(
    p: float | None, low: float | None, high: float | None, diff: float | None, alpha: float
) -> tuple[bool, str]:
    if p is None or low is None or high is None or diff is None:
        return False, "no significant change"
    significant = p < alpha and (low > 0 or high < 0)
    if not significant:
        return False, "no significant change"
    return True, "improved" if diff > 0 else "regressed"


def _paired_scores(
    base_samples: dict[str, dict], new_samples: dict[str, dict], paired: list[str], metric: str
) -> tuple[list[str], list[float | None], list[float | None]]:
    """Samples computable in at least one report, with each side's score (None: not computable)."""
    ids, b_vals, n_vals = [], [], []
    for sid in paired:
        b = computable_score(base_samples[sid], metric)
        n = computable_score(new_samples[sid], metric)
        if b is not None or n is not None:
            ids.append(sid)
            b_vals.append(b)
            n_vals.append(n)
    return ids, b_vals, n_vals


def _floor(values: list[float | None]) -> np.ndarray:
    """Scores with a missing one as 0, the lowest score: losing a score counts against the report."""
    return np.array([0.0 if v is None else v for v in values], dtype=float)


def compare_reports(
    base: dict,
    new: dict,
    *,
    alpha: float = 0.05,
    n_resamples: int = 2000,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict:
    """Compare two report dicts metric by metric on the samples they share.

    Returns a JSON-ready dict (no NaN; ``None`` where undefined)::

        {"alpha", "level", "n_resamples", "n_permutations", "seed",
         "n_base_samples", "n_new_samples", "n_paired",
         "only_in_base": [ids], "only_in_new": [ids], "warnings": [str],
         "correction": "holm", "n_tests",
         "metrics": [{"metric", "n", "n_computable_only_in_base", "n_computable_only_in_new",
                      "base_mean", "new_mean", "mean_diff", "ci_low", "ci_high", "p_value",
                      "p_value_holm", "significant", "verdict", "note",
                      "movers": [{"sample_id", "question", "base_score", "new_score", "diff",
                                  "evidence": {"base": {...}, "new": {...}}}]}],
         "improved": [metric], "regressed": [metric]}

    ``n`` counts samples computable in at least one report; a score missing from one report counts
    as 0 there (``base_score``/``new_score`` of a mover stay None). ``base_mean``/``new_mean`` are
    over those same samples (so they can differ from each report's own aggregate). The interval has
    level ``1 - alpha``. ``p_value_holm`` is ``p_value`` Holm-adjusted over the ``n_tests`` metrics
    that have one, and it is the one compared with ``alpha``. ``verdict`` is "improved",
    "regressed", "no significant change", or "not comparable" when no sample is computable in either
    report. ``movers`` are the ``5`` samples with the largest ``|diff|`` (nonzero only), largest
    first. Raises :class:`ReportError` on malformed input.
    """
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    try:
        base_samples = sample_index(base)
    except ReportError as exc:
        raise ReportError(f"base report: {exc}") from None
    try:
        new_samples = sample_index(new)
    except ReportError as exc:
        raise ReportError(f"new report: {exc}") from None

    paired = [sid for sid in base_samples if sid in new_samples]
    level = 1.0 - alpha
    metrics_out = []
    for metric in metric_names(base, new):
        ids, b_raw, n_raw = _paired_scores(base_samples, new_samples, paired, metric)
        entry: dict[str, Any] = {
            "metric": metric,
            "n": len(ids),
            "n_computable_only_in_base": sum(b is not None and n is None for b, n in zip(b_raw, n_raw)),
            "n_computable_only_in_new": sum(b is None and n is not None for b, n in zip(b_raw, n_raw)),
            "base_mean": None,
            "new_mean": None,
            "mean_diff": None,
            "ci_low": None,
            "ci_high": None,
            "p_value": None,
            "p_value_holm": None,
            "significant": False,
            "verdict": "not comparable",
            "note": None,
            "movers": [],
        }
        if not ids:
            entry["note"] = "no sample is computable in either report"
            metrics_out.append(entry)
            continue
        bv, nv = _floor(b_raw), _floor(n_raw)
        diff = nv - bv
        low, high = stats.paired_bootstrap_ci(diff, n_resamples=n_resamples, level=level, seed=seed)
        entry.update(
            base_mean=float(bv.mean()),
            new_mean=float(nv.mean()),
            mean_diff=float(diff.mean()),
            ci_low=low,
            ci_high=high,
            p_value=stats.sign_flip_pvalue(diff, n_permutations=n_permutations, seed=seed),
            verdict="no significant change",
        )
        if len(ids) == 1:
            entry["note"] = "a single paired sample: no test possible"
        order = sorted(range(len(ids)), key=lambda i: (-abs(diff[i]), ids[i]))
        movers = []
        for i in order[:N_MOVERS]:
            if diff[i] == 0:
                break
            sid = ids[i]
            movers.append(
                {
                    "sample_id": sid,
                    "question": new_samples[sid].get("question") or base_samples[sid].get("question"),
                    "base_score": b_raw[i],
                    "new_score": n_raw[i],
                    "diff": float(diff[i]),
                    "evidence": {
                        "base": evidence(base_samples[sid], metric),
                        "new": evidence(new_samples[sid], metric),
                    },
                }
            )
        entry["movers"] = movers
        metrics_out.append(entry)

    tested = [m for m in metrics_out if m["p_value"] is not None]
    for m, p_holm in zip(tested, stats.holm_adjust([m["p_value"] for m in tested])):
        m["p_value_holm"] = p_holm
        m["significant"], m["verdict"] = _verdict(p_holm, m["ci_low"], m["ci_high"], m["mean_diff"], alpha)

    return {
        "alpha": alpha,
        "level": level,
        "n_resamples": n_resamples,
        "n_permutations": n_permutations,
        "seed": seed,
        "n_base_samples": len(base_samples),
        "n_new_samples": len(new_samples),
        "n_paired": len(paired),
        "only_in_base": [sid for sid in base_samples if sid not in new_samples],
        "only_in_new": [sid for sid in new_samples if sid not in base_samples],
        "warnings": _run_warnings(base, new),
        "correction": "holm",
        "n_tests": len(tested),
        "metrics": metrics_out,
        "improved": [m["metric"] for m in metrics_out if m["verdict"] == "improved"],
        "regressed": [m["metric"] for m in metrics_out if m["verdict"] == "regressed"],
    }


def regressed(result: dict) -> bool:
    """True when any metric in a :func:`compare_reports` result regressed significantly."""
    return any(m.get("verdict") == "regressed" for m in result.get("metrics", []))


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _cell(text: Any) -> str:
    """Text safe inside a markdown table cell or list item (no pipes, no line breaks)."""
    return _shorten(text).replace("|", "\\|")


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _score(x: float | None) -> str:
    return "not computable" if x is None else f"{x:.3f}"


def _pval(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _ids(ids: list[str], limit: int = 10) -> str:
    shown = ", ".join(_cell(i) for i in ids[:limit])
    return shown + (f", … (+{len(ids) - limit})" if len(ids) > limit else "")


def _evidence_text(ev: dict) -> str:
    parts = []
    if ev.get("not_computable"):
        parts.append(f"not computable: {_cell(ev['not_computable'])}")
    if ev.get("reason"):
        parts.append(_cell(ev["reason"]))
    if "unsupported_claims" in ev:
        claims = ev["unsupported_claims"]
        parts.append("unsupported: " + ("; ".join(f"“{_cell(c)}”" for c in claims[:3]) if claims else "none"))
    if "not_covered_claims" in ev:
        claims = ev["not_covered_claims"]
        parts.append("not covered: " + ("; ".join(f"“{_cell(c)}”" for c in claims[:3]) if claims else "none"))
    if ev.get("noncommittal"):
        parts.append("noncommittal answer")
    if "generated_questions" in ev:
        qs = ev["generated_questions"][:2]
        if qs:
            parts.append("generated questions: " + "; ".join(f"“{_cell(q['text'])}”" for q in qs))
    if "relevant_ranks" in ev:
        ranks = ev["relevant_ranks"]
        parts.append("relevant chunk ranks: " + (", ".join(str(r) for r in ranks) if ranks else "none"))
    return " · ".join(parts) if parts else "no details"


def render_compare_markdown(result: dict) -> str:
    """Markdown summary of a :func:`compare_reports` result: a table, then the largest movers."""
    level_pct = f"{round(result['level'] * 100, 2):g}%"
    lines = ["## offline-eval compare: base → new", ""]
    lines.append(
        f"Paired samples: {result['n_paired']} · only in base: {len(result['only_in_base'])}"
        + (f" ({_ids(result['only_in_base'])})" if result["only_in_base"] else "")
        + f" · only in new: {len(result['only_in_new'])}"
        + (f" ({_ids(result['only_in_new'])})" if result["only_in_new"] else "")
    )
    lines.append("")
    for w in result.get("warnings", []):
        lines.append(f"> Warning: {_cell(w)}")
    if result.get("warnings"):
        lines.append("")
    lines.append(
        f"| metric | n | base | new | Δ (new − base) | {level_pct} CI of Δ | p | p (Holm) | verdict |"
    )
    lines.append("|---|---:|---:|---:|---:|---|---:|---:|---|")
    for m in result["metrics"]:
        ci = f"[{_num(m['ci_low'], True)}, {_num(m['ci_high'], True)}]" if m["ci_low"] is not None else "n/a"
        verdict = f"**{m['verdict']}**" if m["verdict"] in ("improved", "regressed") else m["verdict"]
        lines.append(
            f"| {_cell(m['metric'])} | {m['n']} | {_num(m['base_mean'])} | {_num(m['new_mean'])} | "
            f"{_num(m['mean_diff'], True)} | {ci} | {_pval(m['p_value'])} | {_pval(m.get('p_value_holm'))} "
            f"| {verdict} |"
        )
    lines.append("")
    lines.append(
        f"A metric changed significantly when the sign-flip p, Holm-corrected for the "
        f"{result.get('n_tests', len(result['metrics']))} metrics tested, is < {result['alpha']:g} and the "
        f"paired-bootstrap {level_pct} interval of Δ excludes 0. Means are over samples computable in at "
        "least one report; a score missing from one report counts as 0 there."
    )
    lost = [(m["metric"], m["n_computable_only_in_base"]) for m in result["metrics"]
            if m["n_computable_only_in_base"]]
    if lost:
        lines.append("")
        lines.append("Not computable any more in new: " + ", ".join(f"{_cell(k)} {n}" for k, n in lost) + ".")
    movers = [m for m in result["metrics"] if m["movers"]]
    if movers:
        lines += ["", "### Largest movers"]
        for m in movers:
            lines += ["", f"**{_cell(m['metric'])}**", ""]
            for mv in m["movers"]:
                q = f" — {_shorten(mv['question'])}" if mv.get("question") else ""
                lines.append(
                    f"- `{_shorten(mv['sample_id'])}` {_score(mv['base_score'])} → {_score(mv['new_score'])} "
                    f"({mv['diff']:+.3f}){q}"
                )
                lines.append(f"  - base: {_evidence_text(mv['evidence']['base'])}")
                lines.append(f"  - new: {_evidence_text(mv['evidence']['new'])}")
    return "\n".join(lines) + "\n"
