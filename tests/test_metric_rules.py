"""Scores that follow their formulas at the edges: no contexts, an empty answer, every claim dropped.

Model-free: a scripted FakeJudge stands in for llama.cpp, and no embedder is loaded.
"""

from __future__ import annotations

import numpy as np
import pytest

from offline_eval.config import EvalConfig
from offline_eval.metrics import REGISTRY, SampleContext
from offline_eval.runner import EmbedderSet, evaluate_samples
from offline_eval.sample import Sample
from tests.fake_judge import FakeJudge, default_answer

QUESTION = "How long do customers have to request a refund?"
ANSWER = "Customers can request a refund within 30 days."


def claims_judge(claims: list[str], verdict: str = "yes") -> FakeJudge:
    def answer(request):
        if "claims" in request.schema["properties"]:
            return {"claims": claims}
        if "answer_kind" in request.schema["properties"] or "questions" in request.schema["properties"]:
            return default_answer(request)
        return {key: verdict for key in request.schema["properties"]}

    return FakeJudge(answer)


def sample(sample_id: str, contexts: tuple[str, ...], answer: str = ANSWER) -> Sample:
    return Sample(sample_id, QUESTION, answer, contexts, reference_answer=ANSWER)


def run(samples: list[Sample], judge: FakeJudge, *metrics: str) -> dict:
    config = EvalConfig(metrics=metrics, n_resamples=50)
    return evaluate_samples(samples, config, judge=judge, embedders=EmbedderSet()).report


def test_no_contexts_scores_faithfulness_and_recall_zero_with_the_reason():
    judge = claims_judge([ANSWER])
    report = run([sample("empty", ())], judge, "faithfulness", "context_recall")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness": 0.0, "context_recall": 0.0}
    assert row["not_computable"] == {}
    for metric, verdict in (("faithfulness", "unsupported"), ("context_recall", "not_covered")):
        details = row["details"][metric]
        assert details["reason"] == "no contexts retrieved"
        assert details["claims"] == [{"text": ANSWER, "verdict": verdict}]
        assert details["n_claims"] == 1
    # Claims are extracted (the denominator), nothing is verified against nothing.
    assert [r.metric for r in judge.requests] == ["faithfulness", "context_recall"]


def test_half_perfect_retrieval_and_half_nothing_gives_recall_one_half():
    report = run([sample("hit", ("Refunds: customers can request a refund within 30 days.",)), sample("miss", ())],
                 claims_judge([ANSWER]), "context_recall")
    assert report["aggregate"]["context_recall"]["mean"] == 0.5
    assert report["aggregate"]["context_recall"]["n"] == 2


def test_no_contexts_leaves_context_precision_not_computable():
    report = run([sample("empty", ())], claims_judge([ANSWER]), "context_precision")
    (row,) = report["samples"]
    assert row["scores"] == {"context_precision": None, "context_relevant_ratio": None}
    assert row["not_computable"]["context_precision"] == "no contexts"


def test_empty_answer_scores_answer_relevancy_zero_without_a_judge_call():
    judge = FakeJudge()
    metric = REGISTRY["answer_relevancy"]()
    empty = sample("empty", ("Refunds within 30 days.",), answer="  ")
    evidence = metric.collect(SampleContext(sample=empty, lang="en", judge=judge, config=EvalConfig()))
    assert judge.requests == []

    def no_embedding(texts, langs):
        raise AssertionError("nothing to embed for an empty answer")

    (outcome,) = metric.score([empty], [evidence], no_embedding)
    assert outcome.scores == {"answer_relevancy": 0.0}
    assert outcome.not_computable is None
    assert outcome.details == {"reason": "empty answer"}


def test_empty_answer_stays_not_computable_for_faithfulness():
    report = run([sample("empty", ("Refunds within 30 days.",), answer="")], FakeJudge(), "faithfulness")
    assert report["samples"][0]["not_computable"]["faithfulness"] == "empty answer"


def test_empty_answer_scores_zero_next_to_scored_answers():
    metric = REGISTRY["answer_relevancy"]()
    judge = FakeJudge()
    samples = [sample("good", ("c",)), sample("empty", ("c",), answer="")]
    evidence = [metric.collect(SampleContext(sample=s, lang="en", judge=judge, config=EvalConfig())) for s in samples]

    def same_vector(texts, langs):
        return np.ones((len(texts), 2)) / np.sqrt(2)

    good, empty = metric.score(samples, evidence, same_vector)
    assert good.scores["answer_relevancy"] == pytest.approx(1.0)
    assert empty.scores["answer_relevancy"] == 0.0


def test_dropped_claims_are_reported_when_every_claim_is_dropped():
    invented = "Zebras migrate across the Serengeti every winter."
    report = run([sample("s", ("Refunds within 30 days.",))], claims_judge([invented]), "faithfulness")
    (row,) = report["samples"]
    assert row["scores"]["faithfulness"] is None
    assert row["not_computable"]["faithfulness"] == "no claims extracted from the answer"
    assert row["details"]["faithfulness"] == {"dropped_claims": [invented]}
