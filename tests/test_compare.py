"""offline_eval.compare and the ``compare`` command on small hand-built reports (schema_version 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from offline_eval.cli_stats import compare_cmd
from offline_eval.compare import (
    ReportError,
    compare_reports,
    evidence,
    regressed,
    render_compare_markdown,
)


def make_sample(
    sid: str,
    faith: float | None,
    relevancy: float | None = 0.8,
    *,
    unsupported: int = 0,
    recall: float | None = None,
) -> dict:
    n_claims = 4
    claims = [
        {"text": f"{sid} claim {i}", "verdict": "unsupported" if i < unsupported else "supported"}
        for i in range(n_claims)
    ]
    sample = {
        "sample_id": sid,
        "category": None,
        "language": "en",
        "question": f"What about {sid}?",
        "answer": "An answer.",
        "reference_answer": None,
        "n_contexts": 2,
        "scores": {
            "faithfulness": faith,
            "answer_relevancy": relevancy,
            "context_recall": recall,
            "context_precision": 1.0,
            "context_relevant_ratio": 0.5,
        },
        "not_computable": {} if recall is not None else {"context_recall": "no reference answer"},
        "details": {
            "faithfulness": {
                "claims": claims, "n_supported": n_claims - unsupported, "n_claims": n_claims,
                "findings": [{"label": "claim", "text": c["text"], "verdict": c["verdict"],
                              "ok": c["verdict"] == "supported", "probability": None} for c in claims],
                "summary": f"{n_claims - unsupported} of {n_claims} claims supported",
            },
            "answer_relevancy": {
                "noncommittal": False,
                "generated_questions": [{"text": "what?", "similarity": 0.9}],
                "findings": [{"label": "answer", "text": "the answer gives information", "verdict": "informative",
                              "ok": True, "probability": 0.1},
                             {"label": "generated question", "text": "what?", "verdict": "similarity 0.900",
                              "ok": None}],
            },
            "context_precision": {
                "chunks": [
                    {"rank": 1, "relevant": True, "preview": "a"},
                    {"rank": 2, "relevant": False, "preview": "noise"},
                ],
                "average_precision": 1.0,
                "relevant_ratio": 0.5,
                "findings": [{"label": "chunk at rank 1", "text": "a", "verdict": "relevant", "ok": True,
                              "probability": 0.8},
                             {"label": "chunk at rank 2", "text": "noise", "verdict": "irrelevant", "ok": False,
                              "probability": 0.3}],
            },
        },
    }
    if faith is None:
        sample["not_computable"]["faithfulness"] = "no claims"
        sample["details"].pop("faithfulness")
    return sample


def make_report(samples: list[dict], **run: object) -> dict:
    return {
        "schema_version": 1,
        "run": {
            "tool": "offline-eval",
            "version": "0.1.0",
            "judge": {"name": "j", "sha256": "abc"},
            "seed": 0,
            "metrics": ["faithfulness", "answer_relevancy", "context_recall", "context_precision"],
            **run,
        },
        "samples": samples,
        "aggregate": {},
        "by_category": {},
        "gate": {"passed": True, "gate_on": "mean", "thresholds": {}, "checks": [], "failed": []},
        "skipped_records": [],
    }


@pytest.fixture()
def pair() -> tuple[dict, dict]:
    """30 shared samples: faithfulness drops clearly in 'new', relevancy only jitters."""
    rng = np.random.default_rng(0)
    base, new = [], []
    for i in range(30):
        f = float(np.round(rng.uniform(0.75, 1.0), 3))
        drop = float(np.round(rng.uniform(0.1, 0.3), 3))
        r = float(np.round(rng.uniform(0.6, 0.9), 3))
        jitter = float(np.round(rng.normal(0, 0.01), 3))
        base.append(make_sample(f"s{i:02d}", f, r))
        new.append(make_sample(f"s{i:02d}", round(f - drop, 3), round(r + jitter, 3), unsupported=2))
    base.append(make_sample("only-base", 0.5))
    new.append(make_sample("only-new", 0.5))
    base[3]["scores"]["faithfulness"] = None  # not computable in base only
    return make_report(base), make_report(new)


def test_compare_detects_regression_and_pairs_by_id(pair: tuple[dict, dict]) -> None:
    base, new = pair
    new["samples"].reverse()  # pairing is by sample_id, not position
    result = compare_reports(base, new)
    assert result["n_paired"] == 30
    assert result["only_in_base"] == ["only-base"]
    assert result["only_in_new"] == ["only-new"]
    by = {m["metric"]: m for m in result["metrics"]}
    assert [m["metric"] for m in result["metrics"]] == [
        "faithfulness",
        "answer_relevancy",
        "context_recall",
        "context_precision",
        "context_relevant_ratio",
    ]
    f = by["faithfulness"]
    assert f["n"] == 30 and f["n_computable_only_in_new"] == 1  # s03 gained a score: counted from 0
    assert f["verdict"] == "regressed" and f["significant"]
    assert f["mean_diff"] == pytest.approx(f["new_mean"] - f["base_mean"])
    assert f["ci_low"] < f["mean_diff"] < f["ci_high"] < 0
    assert f["p_value"] < 0.001
    assert by["answer_relevancy"]["verdict"] == "no significant change"
    assert by["context_precision"]["verdict"] == "no significant change"
    assert by["context_precision"]["p_value"] == 1.0 and by["context_precision"]["movers"] == []
    assert by["context_recall"]["verdict"] == "not comparable" and by["context_recall"]["n"] == 0
    assert result["regressed"] == ["faithfulness"] and regressed(result)
    json.dumps(result, allow_nan=False)  # strict JSON


def test_movers_carry_evidence_from_both_reports(pair: tuple[dict, dict]) -> None:
    base, new = pair
    result = compare_reports(base, new)
    movers = next(m for m in result["metrics"] if m["metric"] == "faithfulness")["movers"]
    assert len(movers) == 5
    diffs = [abs(m["diff"]) for m in movers]
    assert diffs == sorted(diffs, reverse=True)
    # They are the five largest moves among the paired samples, a missing score counting as 0.
    all_diffs = sorted(
        (abs(n["scores"]["faithfulness"] - (b["scores"]["faithfulness"] or 0.0)))
        for b, n in zip(base["samples"][:30], new["samples"][:30], strict=True)
    )
    assert diffs == pytest.approx(all_diffs[::-1][:5])
    gained = movers[0]
    assert gained["sample_id"] == "s03" and gained["base_score"] is None
    top = movers[1]
    assert "findings" not in top["evidence"]["base"]  # nothing counted against the base score
    assert top["evidence"]["base"]["summary"] == "4 of 4 claims supported"
    assert [(f["text"], f["verdict"]) for f in top["evidence"]["new"]["findings"]] == [
        (f"{top['sample_id']} claim 0", "unsupported"),
        (f"{top['sample_id']} claim 1", "unsupported"),
    ]
    assert top["question"] == f"What about {top['sample_id']}?"


def test_improvement_and_identical_reports(pair: tuple[dict, dict]) -> None:
    base, new = pair
    result = compare_reports(new, base)  # swapped: faithfulness improved
    assert result["improved"] == ["faithfulness"] and not regressed(result)
    same = compare_reports(base, base)
    assert all(m["verdict"] in ("no significant change", "not comparable") for m in same["metrics"])
    assert all(m["movers"] == [] for m in same["metrics"])


def test_compare_is_deterministic(pair: tuple[dict, dict]) -> None:
    base, new = pair
    a = json.dumps(compare_reports(base, new, seed=3), sort_keys=True)
    b = json.dumps(compare_reports(base, new, seed=3), sort_keys=True)
    assert a == b


def test_small_sample_is_not_significant() -> None:
    base = make_report([make_sample("a", 0.9), make_sample("b", 0.8)])
    new = make_report([make_sample("a", 0.5), make_sample("b", 0.4)])
    m = compare_reports(base, new)["metrics"][0]
    # Two samples: the exact sign-flip p is 2/4 = 0.5 however large the drop.
    assert m["p_value"] == 0.5 and m["verdict"] == "no significant change"
    one = compare_reports(make_report([make_sample("a", 0.9)]), make_report([make_sample("a", 0.1)]))
    m = one["metrics"][0]
    assert m["n"] == 1 and m["p_value"] == 1.0 and m["ci_low"] == m["ci_high"] == pytest.approx(-0.8)
    assert m["verdict"] == "no significant change" and m["note"]


def test_samples_that_stop_being_computable_are_a_regression() -> None:
    ids = [f"s{i}" for i in range(10)]
    base = make_report([make_sample(sid, 0.9) for sid in ids])
    new = make_report([make_sample(sid, 0.9 if i < 2 else None) for i, sid in enumerate(ids)])
    result = compare_reports(base, new)
    f = result["metrics"][0]
    assert (f["metric"], f["n"], f["n_computable_only_in_base"]) == ("faithfulness", 10, 8)
    assert f["mean_diff"] == pytest.approx(-0.72) and f["new_mean"] == pytest.approx(0.18)
    assert f["verdict"] == "regressed" and result["regressed"] == ["faithfulness"]
    assert f["movers"][0]["new_score"] is None
    assert "Not computable any more in new: faithfulness 8." in render_compare_markdown(result)


def test_regressions_are_holm_corrected_over_the_metrics_tested() -> None:
    # Six samples all 0.1 lower: the exact sign-flip p is 2/64 = 0.031, below 0.05 on its own, but
    # one of the four metrics tested here (the others did not move: p = 1).
    ids = [f"s{i}" for i in range(6)]
    base = make_report([make_sample(sid, 0.9) for sid in ids])
    new = make_report([make_sample(sid, 0.8) for sid in ids])
    result = compare_reports(base, new)
    f = result["metrics"][0]
    assert f["p_value"] == pytest.approx(2 / 64)
    assert f["p_value_holm"] == pytest.approx(4 * 2 / 64)
    assert (result["correction"], result["n_tests"]) == ("holm", 4)
    assert f["verdict"] == "no significant change" and not regressed(result)
    # The same drop on eight samples survives the correction (4 × 2/256 < 0.05).
    ids = [f"s{i}" for i in range(8)]
    base = make_report([make_sample(sid, 0.9) for sid in ids])
    new = make_report([make_sample(sid, 0.8) for sid in ids])
    assert compare_reports(base, new)["regressed"] == ["faithfulness"]


def test_no_change_comparisons_flag_a_regression_at_most_alpha_of_the_time() -> None:
    rng = np.random.default_rng(7)
    flagged = 0
    for _ in range(200):
        truth = rng.uniform(0.3, 0.9, size=(12, 4))  # judge noise around unchanged scores
        noisy = [np.clip(truth + rng.normal(0, 0.1, truth.shape), 0, 1).round(3) for _ in range(2)]
        reports = [make_report([make_sample(f"s{i}", *row[:2], recall=row[2]) for i, row in enumerate(run)])
                   for run in noisy]
        flagged += regressed(compare_reports(*reports, n_resamples=200))
    assert flagged <= 0.05 * 200


def test_warnings_for_different_runs(pair: tuple[dict, dict]) -> None:
    base, new = pair
    new["run"]["judge"] = {"name": "other", "sha256": "def"}
    warnings = compare_reports(base, new)["warnings"]
    assert any("judge model" in w for w in warnings)


def test_a_malformed_report_is_named() -> None:
    with pytest.raises(ReportError, match="new report"):
        compare_reports(make_report([]), {"samples": "x"})
    with pytest.raises(ReportError, match="base report: .*duplicate sample_id 'a'"):
        compare_reports(make_report([make_sample("a", 0.5), make_sample("a", 0.6)]), make_report([]))


def test_evidence_is_the_summary_and_the_findings_against_the_score() -> None:
    s = make_sample("a", 0.5, unsupported=1)
    assert evidence(s, "faithfulness") == {
        "summary": "3 of 4 claims supported",
        "findings": [{"label": "claim", "text": "a claim 0", "verdict": "unsupported", "ok": False,
                      "probability": None}],
    }
    assert evidence(s, "context_precision")["findings"][0]["label"] == "chunk at rank 2"
    # the second score of a metric reads that metric's evidence
    assert evidence(s, "context_relevant_ratio") == evidence(s, "context_precision")
    assert evidence(s, "answer_relevancy") == {"findings": [
        {"label": "generated question", "text": "what?", "verdict": "similarity 0.900", "ok": None}]}
    assert evidence(s, "context_recall") == {"not_computable": "no reference answer"}
    assert evidence({"sample_id": "x", "scores": {}}, "faithfulness") == {}


def test_render_markdown(pair: tuple[dict, dict]) -> None:
    base, new = pair
    md = render_compare_markdown(compare_reports(base, new))
    assert "| metric | n | base | new | Δ (new − base) | 95% CI of Δ | p | p (Holm) | verdict |" in md
    assert "| faithfulness | 30 |" in md and "**regressed**" in md
    assert "Holm-corrected for the 4 metrics tested" in md
    assert "- s03: not computable → 0.857" in md
    assert "only in base: 1 (only-base)" in md
    assert "### Largest movers" in md and "claim (unsupported): “" in md


# ------------------------------------------------------------------------------------------ CLI


def _write(tmp_path: Path, name: str, data: object) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return str(p)


def test_cli_compare_exit_codes(tmp_path: Path, pair: tuple[dict, dict]) -> None:
    base, new = pair
    b = _write(tmp_path, "base.json", base)
    n = _write(tmp_path, "new.json", new)
    runner = CliRunner()

    res = runner.invoke(compare_cmd, [b, b])
    assert res.exit_code == 0, res.output
    assert "no significant change" in res.stdout

    res = runner.invoke(compare_cmd, [b, n])  # regression, but not asked to fail
    assert res.exit_code == 0
    assert "**regressed**" in res.stdout

    out_md, out_json = tmp_path / "cmp.md", tmp_path / "cmp.json"
    res = runner.invoke(
        compare_cmd, [b, n, "--fail-on-regression", "--out", str(out_md), "--json", str(out_json)]
    )
    assert res.exit_code == 1
    assert "regressed: faithfulness" in res.stderr
    assert out_md.read_text(encoding="utf-8") == res.stdout
    saved = json.loads(out_json.read_text(encoding="utf-8"))
    assert saved["regressed"] == ["faithfulness"] and saved["base_path"] == b

    res = runner.invoke(compare_cmd, [n, b, "--fail-on-regression"])  # improvement passes
    assert res.exit_code == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read report"),
        ("{not json", "not valid JSON"),
        ('{"schema_version": 1, "samples": [{"sample_id": "a", "scores": {"faithfulness": NaN}}]}', "NaN"),
        ("[1, 2]", "not an offline-eval report"),
        ('{"schema_version": 1, "samples": [{"scores": {}}]}', "sample_id"),
    ],
)
def test_cli_compare_bad_input_exits_2_with_one_line(
    tmp_path: Path, pair: tuple[dict, dict], content: str | None, message: str
) -> None:
    good = _write(tmp_path, "good.json", pair[0])
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content, encoding="utf-8")
    res = CliRunner().invoke(compare_cmd, [good, str(bad)])
    assert res.exit_code == 2
    assert isinstance(res.exception, SystemExit)  # no traceback
    err = res.stderr.strip()
    assert err.startswith(f"Error: {bad}:") and message in err
    assert len(err.splitlines()) == 1
    assert res.stdout == ""


def test_cli_compare_bad_alpha(tmp_path: Path, pair: tuple[dict, dict]) -> None:
    b = _write(tmp_path, "base.json", pair[0])
    res = CliRunner().invoke(compare_cmd, [b, b, "--alpha", "1.5"])
    assert res.exit_code == 2
