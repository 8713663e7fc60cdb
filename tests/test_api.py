"""The Python API with the real tiny judge (pipeline, not quality)."""

from __future__ import annotations

import json

import pytest

from offline_eval import evaluate
from offline_eval.data import DatasetError

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


def test_unknown_option_and_bad_records_are_refused(tiny_judge):
    with pytest.raises(TypeError, match="max_claim"):
        evaluate(RECORDS, judge_instance=tiny_judge, max_claim=3)
    with pytest.raises(DatasetError, match="contexts"):
        evaluate([{"question": "q", "answer": "a", "contexts": "not a list"}], judge_instance=tiny_judge)
