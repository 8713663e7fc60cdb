"""Faithfulness, model-free: scripted verdicts and probabilities, the edges, and both verdict scorings."""

from __future__ import annotations

import pytest

from tests.metrics.common import ANSWER, CONTEXT, run, sample, scripted

OTHER = "Customers can get store credit after 30 days."


def test_supported_claims_score_their_share_with_findings_and_probabilities():
    report = run([sample("s", answer=f"{ANSWER} {OTHER}")], scripted([ANSWER, OTHER], "yes", p_yes=0.8),
                 "faithfulness")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness": 1.0}
    details = row["details"]["faithfulness"]
    assert details["n_supported"] == 2 and details["n_claims"] == 2
    assert details["findings"] == [
        {"label": "claim", "text": ANSWER, "verdict": "supported", "ok": True, "probability": 0.8},
        {"label": "claim", "text": OTHER, "verdict": "supported", "ok": True, "probability": 0.8},
    ]
    assert details["summary"] == "2 of 2 claims supported"


def test_probability_scoring_takes_the_mean_probability_of_support():
    samples = [sample("s")]
    hard = run(samples, scripted(verdict="yes", p_yes=0.7), "faithfulness")
    soft = run(samples, scripted(verdict="yes", p_yes=0.7), "faithfulness", verdict_scoring="probability")
    assert hard["samples"][0]["scores"]["faithfulness"] == 1.0
    assert soft["samples"][0]["scores"]["faithfulness"] == pytest.approx(0.7)
    assert soft["run"]["params"]["verdict_scoring"] == "probability"
    assert "verdict_scoring" not in hard["run"]["params"]  # a classic report keeps its bytes
    assert soft["samples"][0]["details"]["faithfulness"]["summary"] == (
        "1 of 1 claims supported; score = the mean probability that a claim is supported")


def test_probability_scoring_falls_back_to_the_hard_verdict_without_probabilities():
    report = run([sample("s")], scripted(verdict="no"), "faithfulness", verdict_scoring="probability")
    row = report["samples"][0]
    assert row["scores"]["faithfulness"] == 0.0
    assert row["details"]["faithfulness"]["findings"][0]["probability"] is None


def test_no_contexts_scores_zero_with_the_reason():
    judge = scripted([ANSWER])
    report = run([sample("empty", ())], judge, "faithfulness")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness": 0.0}
    assert row["not_computable"] == {}
    details = row["details"]["faithfulness"]
    assert details["reason"] == "no contexts retrieved"
    assert details["claims"] == [{"text": ANSWER, "verdict": "unsupported"}]
    assert details["n_claims"] == 1
    assert [r.metric for r in judge.requests] == ["faithfulness"]  # extracted, nothing verified against nothing


def test_empty_answer_stays_not_computable():
    report = run([sample("empty", (CONTEXT,), answer="")], scripted(), "faithfulness")
    assert report["samples"][0]["not_computable"]["faithfulness"] == "empty answer"


def test_dropped_claims_are_reported_when_every_claim_is_dropped():
    invented = "Zebras migrate across the Serengeti every winter."
    report = run([sample("s")], scripted([invented]), "faithfulness")
    (row,) = report["samples"]
    assert row["scores"]["faithfulness"] is None
    assert row["not_computable"]["faithfulness"] == "no claims extracted from the answer"
    assert row["details"]["faithfulness"] == {"dropped_claims": [invented]}


def test_a_judge_failure_is_a_stated_reason():
    def broken(request):
        return {"claims": "not a list"}

    from offline_eval.testing import FakeJudge

    report = run([sample("s")], FakeJudge(broken), "faithfulness")
    assert report["samples"][0]["not_computable"]["faithfulness"].startswith(
        "judge failure: judge output does not match the schema")
