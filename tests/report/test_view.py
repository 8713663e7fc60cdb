"""The one reader of report.json: loading, the contract check, and a sample's scores and evidence."""

from __future__ import annotations

import json

import pytest

from offline_eval.report import view
from offline_eval.report.view import ReportError
from tests.report.common import sample_of


def test_load_names_the_file_for_every_problem(tmp_path):
    cases = {
        "missing.json": (None, "cannot read report"),
        "latin1.json": (b"\xff\xfe", "not UTF-8 text"),
        "broken.json": (b"{", "not valid JSON: Expecting property name"),
        "nan.json": (b'{"samples": [], "x": NaN}', "NaN is not valid JSON"),
        "list.json": (b"[]", "not an offline-eval report: expected a JSON object"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(ReportError) as info:
            view.load(path)
        assert str(info.value).startswith(str(path)) and message in str(info.value), str(info.value)


def test_load_round_trips_a_report(tmp_path, report):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert view.load(path) == report


def test_validate_report_errors():
    def sample(sid="a", score=0.5):
        return {"sample_id": sid, "scores": {"faithfulness": score}}

    with pytest.raises(ReportError, match="JSON object"):
        view.validate([])
    with pytest.raises(ReportError, match="samples"):
        view.validate({"schema_version": 1})
    with pytest.raises(ReportError, match="schema_version"):
        view.validate({"schema_version": 2, "samples": []})
    with pytest.raises(ReportError, match="duplicate sample_id 'a'"):
        view.validate({"samples": [sample(), sample()]})
    with pytest.raises(ReportError, match=r"samples\[0\] \(a\): scores.faithfulness"):
        view.validate({"samples": [sample(score="high")]})
    with pytest.raises(ReportError, match="'sample_id' must be a non-empty string"):
        view.validate({"samples": [sample(sid="")]})


def test_scores_in_registry_order_then_unknown_ones_sorted(report):
    report["samples"][0]["scores"]["zz_custom"] = 0.5
    report["samples"][0]["scores"]["aa_custom"] = 0.5
    assert view.metric_names(report) == ["faithfulness", "answer_relevancy", "context_recall", "context_precision",
                                         "context_relevant_ratio", "aa_custom", "zz_custom"]


def test_a_second_score_reads_its_metrics_details_and_reasons(report):
    sample = sample_of(report, "billing-002")
    assert view.detail_for(sample, "context_relevant_ratio") is sample["details"]["context_precision"]
    assert view.findings_of(sample, "context_relevant_ratio") == sample["details"]["context_precision"]["findings"]
    sample["scores"]["context_relevant_ratio"] = None
    sample["not_computable"]["context_precision"] = "no contexts"
    assert view.not_computable_reason(sample, "context_relevant_ratio") == "no contexts"


def test_evidence_is_the_rule_then_the_findings_against_the_score(report):
    sample = sample_of(report, "billing-002")
    claims = sample["details"]["faithfulness"]["claims"]
    assert view.evidence(sample, "faithfulness") == [
        ("claim (unsupported)", c["text"]) for c in claims if c["verdict"] == "unsupported"]
    sample["details"]["faithfulness"]["reason"] = "no contexts retrieved"
    assert view.evidence(sample, "faithfulness")[0] == ("reason", "no contexts retrieved")
    sample["scores"]["faithfulness"] = None
    assert view.evidence(sample, "faithfulness") == [("not computable", "not computable")]
    assert view.summary_of(sample_of(report, "billing-001"), "faithfulness") == "2 of 2 claims supported"


def test_scores_that_are_not_finite_numbers_read_as_missing():
    for value in (None, "0.5", True, float("nan"), float("inf")):
        assert view.score_of({"scores": {"m": value}}, "m") is None
    assert view.score_of({"scores": {"m": 1}}, "m") == 1.0


def test_worst_samples_by_score_then_input_order_and_by_category(report):
    worst = view.worst_samples(report, "faithfulness", 2)
    assert [s["sample_id"] for s in worst] == ["billing-002", "shipping-002"]
    assert [s["sample_id"] for s in view.worst_samples(report, "faithfulness", 1, category="shipping")] == [
        "shipping-002"]


def test_a_server_judge_says_it_is_not_byte_deterministic(report):
    assert view.judge_determinism(report) is None
    report["run"]["judge"].update(deterministic=False, determinism="not byte-deterministic: 4 slots")
    assert view.judge_determinism(report) == "not byte-deterministic: 4 slots"
    facts = view.header_facts(report, str, "{}", " ({})")
    assert "judge qwen2.5-coder-1.5b (not byte-deterministic)" in facts


def test_a_report_without_gate_checks_reads_its_failed_names():
    failed, skipped = view.failed_and_skipped_checks({"gate": {"failed": ["faithfulness", "billing/context_recall"]}})
    assert failed == [{"metric": "faithfulness", "category": None},
                      {"metric": "context_recall", "category": "billing"}] and skipped == []
    assert view.passed({}) is None and view.passed({"gate": {"passed": False}}) is False
