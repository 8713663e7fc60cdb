"""offline_eval.testing: the quality-gate assertion, the scripted judge and the hashing embedder that
users test their own metrics with."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from offline_eval import evaluate
from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.testing import FakeJudge, HashingEmbedder, QualityGateError, assert_quality, hashing_embedders

FIXTURE = Path(__file__).parent / "fixtures" / "report_sample.json"


def test_assert_quality_lists_failed_gates_and_worst_samples():
    data = json.loads(FIXTURE.read_text("utf-8"))
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


def test_assert_quality_takes_a_report_object():
    records = [{"question": "Is it blue?", "contexts": ["It is blue."], "answer": "It is blue."}]
    report = evaluate(records, judge_instance=FakeJudge(lambda r: {"claims": ["It is blue."]} if "claims" in
                                                        r.schema["properties"] else {k: "no" for k in
                                                                                     r.schema["properties"]}),
                      embedders=hashing_embedders(), metrics=("faithfulness",), n_resamples=10)
    with pytest.raises(QualityGateError, match=r"faithfulness: 0.000 < 0.80"):
        assert_quality(report)


def test_the_fake_judge_is_strict_about_its_window():
    judge = FakeJudge(n_ctx=50)
    request = JudgeRequest("one two", "", "three", {"type": "object", "properties": {}}, 48)
    with pytest.raises(JudgeError, match="overflow 50"):
        judge.judge(request)  # 3 prompt tokens fit, but not with 48 to generate


def test_the_hashing_embedder_gives_unit_vectors_that_share_words():
    vectors = HashingEmbedder(64).embed(["refund within 30 days", "refund after 30 days", "the sky is blue", ""])
    assert vectors.shape == (4, 64)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0) and not vectors[3].any()
    assert vectors[0] @ vectors[1] > 0.5 > vectors[0] @ vectors[2]
    assert np.array_equal(vectors, HashingEmbedder(64).embed(["refund within 30 days", "refund after 30 days",
                                                              "the sky is blue", ""]))
