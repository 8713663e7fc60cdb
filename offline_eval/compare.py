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
interval excludes 0); otherwise "no significant change". A score is higher-is-better unless its metric
says otherwise: a significant rise of a lower-is-better one (hallucination) is a regression, and a
score that is neither (self-knowledge) "increased" or "decreased". For each metric
the samples that moved most are listed with the judge's evidence from both reports (each metric's
summary and the findings that counted against its score: unsupported claims, irrelevant chunks...)
so that a regression can be read, not just seen. Reports are read through ``offline_eval.report.view``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offline_eval import stats
from offline_eval.metrics import score_spec
from offline_eval.report import view
from offline_eval.report.text import md_text
from offline_eval.report.view import ReportError, metric_names, score_of

__all__ = [
    "ReportError",
    "compare_reports",
    "evidence",
    "regressed",
    "render_compare_markdown",
]

N_MOVERS = 5
N_FINDINGS = 3  # findings per mover shown in markdown
_MAX_TEXT = 160  # characters of a claim or question shown in markdown


def evidence(sample: dict, metric: str) -> dict:
    """The judge's reasons behind one sample's score: why it is not computable, or the metric's summary,
    the reason for a score set by rule, and the findings that did not count for the score (label,
    verdict, text, probability). Anything missing is left out (an empty dict at worst)."""
    if metric not in (sample.get("scores") or {}):
        return {}
    reason = view.not_computable_reason(sample, metric)
    if reason is not None:
        return {"not_computable": reason}
    detail = view.detail_for(sample, metric)
    out: dict[str, Any] = {}
    if view.summary_of(sample, metric):
        out["summary"] = view.summary_of(sample, metric)
    if detail.get("reason"):
        out["reason"] = str(detail["reason"])  # a score set by rule: no contexts retrieved, an empty answer
    against = [dict(f) for f in view.findings_of(sample, metric) if f.get("ok") is not True]
    if against:
        out["findings"] = against
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
    p: float | None, low: float | None, high: float | None, diff: float | None, alpha: float,
    higher_is_better: bool | None = True,
) -> tuple[bool, str]:
    if p is None or low is None or high is None or diff is None:
        return False, "no significant change"
    significant = p < alpha and (low > 0 or high < 0)
    if not significant:
        return False, "no significant change"
    if higher_is_better is None:
        return True, "increased" if diff > 0 else "decreased"
    return True, "improved" if (diff > 0) == higher_is_better else "regressed"


def _paired_scores(
    base_samples: dict[str, dict], new_samples: dict[str, dict], paired: list[str], metric: str
) -> tuple[list[str], list[float | None], list[float | None]]:
    """Samples computable in at least one report, with each side's score (None: not computable)."""
    ids, b_vals, n_vals = [], [], []
    for sid in paired:
        b = score_of(base_samples[sid], metric)
        n = score_of(new_samples[sid], metric)
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
    "regressed" (by the score's direction), "increased" / "decreased" (a score that is neither better
    high nor low), "no significant change", or "not comparable" when no sample is computable in either
    report. ``movers`` are the ``5`` samples with the largest ``|diff|`` (nonzero only), largest
    first. Raises :class:`ReportError` on malformed input.
    """
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    try:
        base_samples = view.samples_by_id(base)
    except ReportError as exc:
        raise ReportError(f"base report: {exc}") from None
    try:
        new_samples = view.samples_by_id(new)
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
        spec = score_spec(m["metric"])
        m["significant"], m["verdict"] = _verdict(p_holm, m["ci_low"], m["ci_high"], m["mean_diff"], alpha,
                                                  spec.higher_is_better if spec else True)

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
    """Text safe inside a markdown table cell or list item, shortened to one line."""
    return md_text(" ".join(str(text).split()), _MAX_TEXT)


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
    for key in ("reason", "summary"):
        if ev.get(key):
            parts.append(_cell(ev[key]))
    findings = ev.get("findings") or []
    if findings:
        shown = [f"{_cell(view.finding_label(f))}: “{_cell(f.get('text'))}”" for f in findings[:N_FINDINGS]]
        parts.append("; ".join(shown) + (f"; … (+{len(findings) - N_FINDINGS})" if len(findings) > N_FINDINGS else ""))
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
                q = f" — {_cell(mv['question'])}" if mv.get("question") else ""
                lines.append(
                    f"- {_cell(mv['sample_id'])}: {_score(mv['base_score'])} → {_score(mv['new_score'])} "
                    f"({mv['diff']:+.3f}){q}"
                )
                lines.append(f"  - base: {_evidence_text(mv['evidence']['base'])}")
                lines.append(f"  - new: {_evidence_text(mv['evidence']['new'])}")
    return "\n".join(lines) + "\n"
