"""The Python API and the pytest helper, with the real tiny judge (pipeline, not quality)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offline_eval import evaluate
from offline_eval.data import DatasetError
from offline_eval.testing import QualityGateError, assert_quality

pytestmark = pytest.mark.slow

RECORDS = [
    {"user_input": "What colour is the sky on a clear day?", "retrieved_contexts": ["On a clear day the sky is blue."],
     "response": "It is blue.", "reference": "Blue.", "sample_id": "sky"},
    {"user_input": "What is 2 + 2?", "retrieved_contexts": [], "response": "", "sample_id": "empty"},
]


def test_evaluate_records_returns_a_report(tiny_judge):
    report = evaluate(RECORDS, judge_instance=tiny_judge, max_claims=2, n_questions=1, n_resamples=100)
    assert [s["sample_id"] for s in report.samples] == ["sky", "empty"]
    empty = report.samples[1]
    assert empty["not_computable"]["faithfulness"] == "empty answer"
    assert empty["not_computable"]["context_precision"] == "no contexts"
    assert empty["scores"]["answer_relevancy"] == 0.0  # an empty answer addresses nothing
    assert empty["details"]["answer_relevancy"] == {"reason": "empty answer"}
    assert all(v is None for m, v in empty["scores"].items() if m != "answer_relevancy")
    assert report.aggregate["faithfulness"]["n_not_computable"] >= 1
    assert json.loads(report.to_json())["gate"]["passed"] == report.passed


def test_assert_quality_lists_failed_gates_and_worst_samples():
    data = json.loads((Path(__file__).parent / "fixtures" / "report_sample.json").read_text("utf-8"))
    failed = [c for c in data["gate"]["checks"] if c["status"] == "failed"]
    assert failed, "the fixture is meant to fail its gate"
    with pytest.raises(QualityGateError) as excinfo:
        assert_quality(data)
    message = str(excinfo.value)
    for check in failed:
        assert f"{check['metric']}: {check['value']:.3f} < {check['threshold']:.2f}" in message
    worst = min((s for s in data["samples"] if s["scores"].get(failed[0]["metric"]) is not None),
                key=lambda s: s["scores"][failed[0]["metric"]])
    assert worst["sample_id"] in message
    data["gate"]["passed"] = True
    assert_quality(data)  # a passing gate raises nothing


def test_unknown_option_and_bad_records_are_refused(tiny_judge):
    with pytest.raises(TypeError, match="max_claim"):
        evaluate(RECORDS, judge_instance=tiny_judge, max_claim=3)
    with pytest.raises(DatasetError, match="contexts"):
        evaluate([{"question": "q", "answer": "a", "contexts": "not a list"}], judge_instance=tiny_judge)
