"""Context recall, model-free: the reference's claims covered by the context."""

from __future__ import annotations

import pytest

from tests.metrics.common import ANSWER, CONTEXT, run, sample, scripted


def test_uncovered_reference_claims_are_findings_against_the_score():
    report = run([sample("s")], scripted([ANSWER], "no", p_yes=0.25), "context_recall", verdict_scoring="hard")
    row = report["samples"][0]
    assert row["scores"]["context_recall"] == 0.0
    details = row["details"]["context_recall"]
    assert details["claims"] == [{"text": ANSWER, "verdict": "not_covered"}] and details["n_covered"] == 0
    assert details["findings"] == [{"label": "reference claim", "text": ANSWER, "verdict": "not covered",
                                    "ok": False, "probability": 0.25}]
    assert details["summary"] == "0 of 1 reference claims covered"


def test_probability_scoring():
    report = run([sample("s")], scripted([ANSWER], "no", p_yes=0.25), "context_recall",
                 verdict_scoring="probability")
    assert report["samples"][0]["scores"]["context_recall"] == pytest.approx(0.25)


def test_no_reference_is_not_computable():
    report = run([sample("s", reference=None)], scripted(), "context_recall")
    assert report["samples"][0]["not_computable"]["context_recall"] == "no reference answer"


def test_no_contexts_scores_zero_and_half_retrieval_gives_one_half():
    report = run([sample("hit", (CONTEXT,)), sample("miss", ())], scripted([ANSWER]), "context_recall")
    assert [s["scores"]["context_recall"] for s in report["samples"]] == [1.0, 0.0]
    assert report["samples"][1]["details"]["context_recall"]["reason"] == "no contexts retrieved"
    assert report["aggregate"]["context_recall"]["mean"] == 0.5
    assert report["aggregate"]["context_recall"]["n"] == 2
