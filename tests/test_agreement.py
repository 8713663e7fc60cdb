"""offline_eval.agreement, the labels loader and the ``agreement`` command on hand-built data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from offline_eval import stats
from offline_eval.agreement import (
    LabelsError,
    agreement,
    load_labels,
    parse_label,
    ppi,
    render_agreement_markdown,
)
from offline_eval.cli_stats import agreement_cmd
from offline_eval.compare import ReportError


def report_with(scores: dict[str, dict[str, float | None]]) -> dict:
    return {
        "schema_version": 1,
        "run": {"metrics": ["faithfulness", "answer_relevancy"]},
        "samples": [
            {
                "sample_id": sid,
                "question": "q",
                "answer": "a",
                "scores": sc,
                "not_computable": {},
                "details": {},
            }
            for sid, sc in scores.items()
        ],
    }


# Eight labelled samples with hand-checkable statistics, plus two unlabelled ones.
FAITH = {
    "s1": 0.9,
    "s2": 0.8,
    "s3": 0.7,
    "s4": 0.3,
    "s5": 0.6,
    "s6": 0.2,
    "s7": 0.1,
    "s8": 0.4,
    "u1": 0.5,
    "u2": 0.95,
}
REL = {
    "s1": 0.9,
    "s2": 0.7,
    "s3": 0.8,
    "s4": 0.2,
    "s5": 0.5,
    "s6": 0.5,
    "s7": 0.1,
    "s8": None,
    "u1": 0.3,
    "u2": 0.6,
}
LABELS = [
    {"sample_id": "s1", "faithful": "yes", "relevance": 5},
    {"sample_id": "s2", "faithful": "yes", "relevance": 4},
    {"sample_id": "s3", "faithful": "yes", "relevance": 4},
    {"sample_id": "s4", "faithful": "yes", "relevance": 2},
    {"sample_id": "s5", "faithful": "no", "relevance": 3},
    {"sample_id": "s6", "faithful": "no", "relevance": 3},
    {"sample_id": "s7", "faithful": "no", "relevance": 1},
    {"sample_id": "s8", "faithful": "no", "relevance": None},
    {"sample_id": "ghost", "faithful": "yes", "relevance": 2},
]


@pytest.fixture()
def report() -> dict:
    return report_with({sid: {"faithfulness": FAITH[sid], "answer_relevancy": REL[sid]} for sid in FAITH})


def test_binary_agreement_matches_direct_statistics(report: dict) -> None:
    res = agreement(report, LABELS, {"faithfulness": "faithful"}, n_resamples=500)
    assert res["n_joined"] == 8 and res["labels_without_sample"] == ["ghost"]
    m = res["metrics"][0]
    assert m["kind"] == "binary" and m["n"] == 8 and (m["n_positive"], m["n_negative"]) == (4, 4)
    st = m["stats"]
    # Positives 0.9 .8 .7 .3, negatives .6 .2 .1 .4: 0.3 loses to .6 and .4 -> 14 of 16 pairs.
    assert st["roc_auc"]["value"] == pytest.approx(14 / 16)
    # At 0.5: predicted yes = .9 .8 .7 .6 -> TPR 3/4, TNR 3/4 -> 0.75; kappa (p_o .75, p_e .5) = 0.5.
    assert st["balanced_accuracy_fixed"]["value"] == pytest.approx(0.75)
    assert st["balanced_accuracy_fixed"]["threshold"] == 0.5
    assert st["cohen_kappa"]["value"] == pytest.approx(0.5)
    # Best threshold 0.7: TPR 3/4, TNR 1 -> 0.875 (0.3 gives TPR 1, TNR 2/4 -> 0.75).
    assert st["balanced_accuracy_best"]["value"] == pytest.approx(0.875)
    assert st["balanced_accuracy_best"]["threshold"] == 0.7
    for name, s in st.items():
        assert s["ci_low"] <= s["value"] <= s["ci_high"], name
    assert st["roc_auc"]["ci_high"] <= 1.0
    json.dumps(res, allow_nan=False)


def test_fixed_threshold_per_metric_is_each_metrics_gate(report: dict) -> None:
    mapping = {"faithfulness": "faithful", "answer_relevancy": "faithful"}
    res = agreement(report, LABELS, mapping, fixed_threshold={"faithfulness": 0.7, "answer_relevancy": 0.5},
                    n_resamples=200)
    faith, rel = res["metrics"]
    assert (faith["fixed_threshold"], rel["fixed_threshold"]) == (0.7, 0.5)
    # faithfulness at 0.7: predicted yes = .9 .8 .7 -> TPR 3/4, TNR 1 -> 0.875 (0.75 at 0.5).
    assert faith["stats"]["balanced_accuracy_fixed"]["value"] == pytest.approx(0.875)
    assert "| 0.7 |" in render_agreement_markdown(res)
    with pytest.raises(ValueError, match="answer_relevancy"):
        agreement(report, LABELS, mapping, fixed_threshold={"faithfulness": 0.7})


def test_graded_agreement_and_not_computable(report: dict) -> None:
    res = agreement(report, LABELS, {"answer_relevancy": "relevance"}, n_resamples=500, seed=1)
    m = res["metrics"][0]
    assert m["kind"] == "graded"
    # s8 has no relevance label (None = missing); its score is also None.
    assert m["n"] == 7 and m["n_missing_label"] == 1 and m["n_not_computable"] == 0
    ids = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    x = [REL[i] for i in ids]
    y = [next(r["relevance"] for r in LABELS if r["sample_id"] == i) for i in ids]
    assert m["stats"]["spearman"]["value"] == pytest.approx(stats.spearman(x, y))
    assert m["stats"]["kendall_tau_b"]["value"] == pytest.approx(stats.kendall_tau_b(x, y))
    assert m["stats"]["spearman"]["value"] > 0.8
    lo, hi = m["stats"]["kendall_tau_b"]["ci_low"], m["stats"]["kendall_tau_b"]["ci_high"]
    assert -1 <= lo <= m["stats"]["kendall_tau_b"]["value"] <= hi <= 1


def test_not_computable_score_is_counted(report: dict) -> None:
    res = agreement(report, LABELS, {"answer_relevancy": "faithful"}, n_resamples=200)
    m = res["metrics"][0]
    assert m["kind"] == "binary" and m["n"] == 7 and m["n_not_computable"] == 1  # s8 score is None


def test_agreement_is_reproducible(report: dict) -> None:
    mapping = {"faithfulness": "faithful", "answer_relevancy": "relevance"}
    a = json.dumps(agreement(report, LABELS, mapping, seed=4, n_resamples=300), sort_keys=True)
    b = json.dumps(agreement(report, LABELS, mapping, seed=4, n_resamples=300), sort_keys=True)
    assert a == b


def test_degenerate_labels_give_none_with_a_note(report: dict) -> None:
    labels = [{"sample_id": s, "faithful": True} for s in ("s1", "s2", "s3")]
    m = agreement(report, labels, {"faithfulness": "faithful"}, n_resamples=100)["metrics"][0]
    assert m["kind"] == "binary" and m["n"] == 3
    assert all(s["value"] is None and s["ci_low"] is None for s in m["stats"].values())
    assert "one class" in m["note"]
    labels = [{"sample_id": s, "grade": g} for s, g in (("s1", 1), ("s2", 2), ("s3", 3))]
    const = report_with({s: {"faithfulness": 0.5} for s in ("s1", "s2", "s3")})
    m = agreement(const, labels, {"faithfulness": "grade"}, n_resamples=100)["metrics"][0]
    assert m["stats"]["spearman"]["value"] is None and "constant" in m["note"]


def test_mapping_errors(report: dict) -> None:
    with pytest.raises(ReportError, match="metric 'nope'"):
        agreement(report, LABELS, {"nope": "faithful"})
    with pytest.raises(LabelsError, match="label field 'missing'"):
        agreement(report, LABELS, {"faithfulness": "missing"})
    with pytest.raises(LabelsError, match="mixes yes/no"):
        agreement(
            report, [{"sample_id": "s1", "f": "yes"}, {"sample_id": "s2", "f": 3}], {"faithfulness": "f"}
        )
    with pytest.raises(LabelsError, match=r"'s1'.*'f'.*maybe"):
        agreement(report, [{"sample_id": "s1", "f": "maybe"}], {"faithfulness": "f"})


def test_parse_label() -> None:
    assert parse_label("Yes") == (1.0, "bool")
    assert parse_label(" false ") == (0.0, "bool")
    assert parse_label(True) == (1.0, "bool")
    assert parse_label("4") == (4.0, "number")
    assert parse_label(0) == (0.0, "number")
    assert parse_label("") == (None, None)
    assert parse_label("NA") == (None, None)
    assert parse_label(None) == (None, None)
    with pytest.raises(LabelsError):
        parse_label("perhaps")
    with pytest.raises(LabelsError):
        parse_label([1])


# ------------------------------------------------------------------------------------------ PPI


def test_ppi_section(report: dict) -> None:
    res = agreement(
        report,
        LABELS,
        {"faithfulness": "faithful", "answer_relevancy": "relevance"},
        n_resamples=100,
        include_ppi=True,
    )
    p_bin, p_graded = res["ppi"]
    assert p_bin["n_labelled"] == 8 and p_bin["n_unlabelled"] == 2
    f_l = [FAITH[f"s{i}"] for i in range(1, 9)]
    y_l = [1, 1, 1, 1, 0, 0, 0, 0]
    theta, low, high = stats.ppi_mean_ci(f_l, y_l, [FAITH["u1"], FAITH["u2"]])
    assert p_bin["ppi"] == {"value": theta, "ci_low": max(0.0, low), "ci_high": 1.0}  # clipped to a share
    assert high > 1.0
    assert p_bin["labelled_mean"]["value"] == 0.5
    assert p_bin["judge_mean"] == pytest.approx(np.mean(list(FAITH.values())))
    assert p_graded["ppi"]["value"] is None and "not binary" in p_graded["note"]
    assert ppi(report, LABELS, {"faithfulness": "faithful"}) == [p_bin]
    assert agreement(report, LABELS, {"faithfulness": "faithful"}, n_resamples=50)["ppi"] is None


def test_ppi_recovers_truth_from_a_biased_judge() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    truth = (rng.random(n) < 0.3).astype(int)
    score = np.clip(np.where(truth == 1, 0.9, 0.6) + rng.normal(0, 0.1, n), 0, 1)  # inflated
    rep = report_with({f"s{i}": {"faithfulness": float(score[i])} for i in range(n)})
    labels = [{"sample_id": f"s{i}", "ok": int(truth[i])} for i in range(200)]
    p = ppi(rep, labels, {"faithfulness": "ok"})[0]
    true_mean = truth[200:].mean()
    assert abs(p["judge_mean"] - true_mean) > 0.3  # the naive mean is far off
    assert p["ppi"]["ci_low"] <= true_mean <= p["ppi"]["ci_high"]


# -------------------------------------------------------------------------------------- loader


def test_load_labels_jsonl_and_csv(tmp_path: Path) -> None:
    j = tmp_path / "labels.jsonl"
    j.write_text(
        '{"sample_id": "s1", "faithful": "yes"}\n\n{"sample_id": 2, "faithful": 0}\n', encoding="utf-8"
    )
    assert load_labels(j) == [{"sample_id": "s1", "faithful": "yes"}, {"sample_id": "2", "faithful": 0}]
    c = tmp_path / "labels.csv"
    c.write_text("\ufeffsample_id,faithful,relevance\ns1,yes,4\ns2,no,\n", encoding="utf-8")
    assert load_labels(c) == [
        {"sample_id": "s1", "faithful": "yes", "relevance": "4"},
        {"sample_id": "s2", "faithful": "no", "relevance": ""},
    ]
    a = tmp_path / "labels.json"
    a.write_text('[{"sample_id": "s1", "ok": true}]', encoding="utf-8")
    assert load_labels(a) == [{"sample_id": "s1", "ok": True}]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("l.jsonl", '{"sample_id": "s1"}\n{"sample_id": \n', " line 2: invalid JSON"),
        ("l.jsonl", '{"sample_id": "s1"}\n[1]\n', " line 2: expected a JSON object"),
        ("l.jsonl", '{"sample_id": "s1"}\n{"faithful": 1}\n', " line 2: missing 'sample_id'"),
        (
            "l.jsonl",
            '{"sample_id": "s1"}\n{"sample_id": "s1"}\n',
            " line 2: duplicate sample_id 's1' (first at line 1)",
        ),
        ("l.json", '[{"sample_id": "s1"}, 3]', " record 2: expected a JSON object"),
        ("l.csv", "id,faithful\ns1,yes\n", " line 1: no 'sample_id' column"),
        ("l.csv", "sample_id,faithful\ns1,yes\ns2,no,extra\n", " line 3: expected 2 cells"),
        ("l.csv", "sample_id,faithful\ns1,yes\n,no\n", " line 3: missing 'sample_id'"),
        ("l.csv", "", "the file is empty"),
        ("l.jsonl", "\n\n", "the file is empty"),
        ("l.csv", "sample_id,faithful\n,\n", "no label rows"),
    ],
)
def test_load_labels_errors_name_file_and_line(tmp_path: Path, name: str, content: str, message: str) -> None:
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    with pytest.raises(LabelsError) as info:
        load_labels(p)
    assert str(info.value).startswith(str(p))
    assert message in str(info.value)


def test_load_labels_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="file not found"):
        load_labels(tmp_path / "nope.csv")


def test_labels_are_read_like_datasets(tmp_path: Path) -> None:
    """The same table reader as datasets: a raw U+2028 inside a JSON string stays in its line, and NaN
    (pandas' missing value) is a missing label."""
    p = tmp_path / "labels.jsonl"
    p.write_text('{"sample_id": "s\u2028x", "note": "a\u2028b", "faithful": NaN}\n', encoding="utf-8")
    (row,) = load_labels(p)
    assert row["sample_id"] == "s\u2028x" and row["note"] == "a\u2028b"
    assert parse_label(row["faithful"]) == (None, None)


def test_render_agreement_markdown(report: dict) -> None:
    res = agreement(
        report,
        LABELS,
        {"faithfulness": "faithful", "answer_relevancy": "relevance"},
        n_resamples=200,
        include_ppi=True,
    )
    md = render_agreement_markdown(res)
    assert "### Binary labels" in md and "### Graded labels" in md and "### Prediction-powered" in md
    assert "| faithfulness | faithful | 8 (4/4) | 0.875 [" in md
    assert "| answer_relevancy | relevance | 7 |" in md
    assert "\n| metric | label | n | Spearman ρ | Kendall τ-b |\n|---|---|---:|---|---|\n" in md
    assert "labels without a report sample: 1" in md


# ------------------------------------------------------------------------------------------ CLI


def _files(tmp_path: Path, report: dict) -> tuple[str, str]:
    r = tmp_path / "report.json"
    r.write_text(json.dumps(report), encoding="utf-8")
    lab = tmp_path / "labels.csv"
    lab.write_text(
        "sample_id,faithful,relevance\n"
        + "".join(
            f"{row['sample_id']},{row['faithful']},{row['relevance'] if row['relevance'] is not None else ''}\n"
            for row in LABELS
        ),
        encoding="utf-8",
    )
    return str(r), str(lab)


def test_cli_agreement_ok(tmp_path: Path, report: dict) -> None:
    r, lab = _files(tmp_path, report)
    out = tmp_path / "agree.json"
    res = CliRunner().invoke(
        agreement_cmd,
        [
            r,
            "--labels",
            lab,
            "--map",
            "faithfulness=faithful",
            "--map",
            "answer_relevancy=relevance",
            "--ppi",
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "### Binary labels" in res.stdout and "### Prediction-powered" in res.stdout
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["metrics"][0]["stats"]["roc_auc"]["value"] == pytest.approx(14 / 16)
    assert saved["labels_path"] == lab


@pytest.mark.parametrize(
    "args, message",
    [
        (["--map", "faithfulness"], "expected METRIC=LABEL_FIELD"),
        (["--map", "nope=faithful"], "metric 'nope' is not in the report"),
        (["--map", "faithfulness=absent"], "label field 'absent'"),
        (["--map", "faithfulness=faithful", "--map", "faithfulness=relevance"], "mapped twice"),
        (["--map", "faithfulness=faithful", "--threshold", "nan"], "--threshold"),
    ],
)
def test_cli_agreement_bad_input(tmp_path: Path, report: dict, args: list[str], message: str) -> None:
    r, lab = _files(tmp_path, report)
    res = CliRunner().invoke(agreement_cmd, [r, "--labels", lab, *args])
    assert res.exit_code == 2
    assert isinstance(res.exception, SystemExit)
    err = res.stderr.strip()
    assert message in err and len(err.splitlines()) == 1


def test_cli_agreement_bad_files(tmp_path: Path, report: dict) -> None:
    r, lab = _files(tmp_path, report)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "s1"}\n{oops\n', encoding="utf-8")
    res = CliRunner().invoke(agreement_cmd, [r, "--labels", str(bad), "--map", "faithfulness=faithful"])
    assert res.exit_code == 2 and f"{bad} line 2: invalid JSON" in res.stderr
    res = CliRunner().invoke(agreement_cmd, [str(tmp_path / "none.json"), "--labels", lab, "--map", "a=b"])
    assert res.exit_code == 2 and "none.json: cannot read report" in res.stderr
    res = CliRunner().invoke(agreement_cmd, [r, "--map", "faithfulness=faithful"])  # no --labels
    assert res.exit_code == 2


def test_binary_agreement_of_items_that_are_not_samples():
    from offline_eval.agreement import binary_agreement

    result = binary_agreement([0.9, 0.8, 0.3, 0.6, 0.1], [1, 1, 0, 0, 0], n_resamples=200)
    assert (result["n"], result["n_positive"], result["n_negative"]) == (5, 2, 3)
    assert result["stats"]["roc_auc"]["value"] == 1.0
    assert result["stats"]["balanced_accuracy_fixed"]["value"] == pytest.approx((1.0 + 2 / 3) / 2)
    low, high = result["stats"]["roc_auc"]["ci_low"], result["stats"]["roc_auc"]["ci_high"]
    assert low is not None and low <= 1.0 <= high
