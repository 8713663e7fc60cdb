"""Faithfulness, model-free: scripted verdicts and probabilities, the edges, and both verdict scorings.

``faithfulness`` checks the answer's sentences as written; ``faithfulness_ragas`` extracts claims first
(most of the edges below are about the claims, so they run that form)."""

from __future__ import annotations

import pytest

from tests.metrics.common import ANSWER, CONTEXT, run, sample, scripted

OTHER = "Customers can get store credit after 30 days."


def test_supported_claims_score_their_share_with_findings_and_probabilities():
    report = run([sample("s", answer=f"{ANSWER} {OTHER}")], scripted([ANSWER, OTHER], "yes", p_yes=0.8),
                 "faithfulness_ragas", verdict_scoring="hard")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness_ragas": 1.0}
    details = row["details"]["faithfulness_ragas"]
    assert details["n_supported"] == 2 and details["n_claims"] == 2
    assert details["findings"] == [
        {"label": "claim", "text": ANSWER, "verdict": "supported", "ok": True, "probability": 0.8},
        {"label": "claim", "text": OTHER, "verdict": "supported", "ok": True, "probability": 0.8},
    ]
    assert details["summary"] == "2 of 2 claims supported"


def test_probability_scoring_takes_the_mean_probability_of_support():
    samples = [sample("s")]
    hard = run(samples, scripted(verdict="yes", p_yes=0.7), "faithfulness_ragas", verdict_scoring="hard")
    soft = run(samples, scripted(verdict="yes", p_yes=0.7), "faithfulness_ragas", verdict_scoring="probability")
    assert hard["samples"][0]["scores"]["faithfulness_ragas"] == 1.0
    assert soft["samples"][0]["scores"]["faithfulness_ragas"] == pytest.approx(0.7)
    assert soft["run"]["params"]["verdict_scoring"] == "probability"
    assert hard["run"]["params"]["verdict_scoring"] == "hard"
    assert soft["samples"][0]["details"]["faithfulness_ragas"]["summary"] == (
        "1 of 1 claims supported; score = the mean probability that a claim is supported")


def test_probability_scoring_falls_back_to_the_hard_verdict_without_probabilities():
    report = run([sample("s")], scripted(verdict="no"), "faithfulness_ragas", verdict_scoring="probability")
    row = report["samples"][0]
    assert row["scores"]["faithfulness_ragas"] == 0.0
    assert row["details"]["faithfulness_ragas"]["findings"][0]["probability"] is None


def test_no_contexts_scores_zero_with_the_reason():
    judge = scripted([ANSWER])
    report = run([sample("empty", ())], judge, "faithfulness_ragas")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness_ragas": 0.0}
    assert row["not_computable"] == {}
    details = row["details"]["faithfulness_ragas"]
    assert details["reason"] == "no contexts retrieved"
    assert details["claims"] == [{"text": ANSWER, "verdict": "unsupported"}]
    assert details["n_claims"] == 1
    assert [r.metric for r in judge.requests] == ["faithfulness_ragas"]  # extracted, nothing verified against nothing


def test_empty_answer_stays_not_computable():
    report = run([sample("empty", (CONTEXT,), answer="")], scripted(), "faithfulness_ragas")
    assert report["samples"][0]["not_computable"]["faithfulness_ragas"] == "empty answer"


def test_dropped_claims_are_reported_and_the_answer_is_checked_as_written():
    invented = "Zebras migrate across the Serengeti every winter."
    report = run([sample("s")], scripted([invented], "no"), "faithfulness_ragas")
    (row,) = report["samples"]
    assert row["scores"]["faithfulness_ragas"] == 0.0
    details = row["details"]["faithfulness_ragas"]
    assert details["dropped_claims"] == [invented]
    # no kept claim covers the answer's one sentence: it is checked as it stands
    assert details["unclaimed_sentences"] == [ANSWER] and details["coverage"] == 0.0
    assert details["findings"][0]["label"] == "claim (a sentence no claim covered, checked as written)"


def test_a_sentence_the_extraction_left_out_is_checked_as_written():
    hallucinated = "The average annual temperature is 61°F."
    judge = scripted([ANSWER], "yes")
    report = run([sample("s", answer=f"{ANSWER} {hallucinated}")], judge, "faithfulness_ragas", verdict_scoring="hard")
    details = report["samples"][0]["details"]["faithfulness_ragas"]
    assert [f["text"] for f in details["findings"]] == [ANSWER, hallucinated]
    assert details["coverage"] == 0.5 and details["n_sentences"] == 2 and details["n_claims"] == 2
    assert details["summary"] == "2 of 2 claims supported (1 checked as written: no extracted claim covered them)"
    verify = [r for r in judge.requests if "claim_2" in r.schema_json()]
    assert verify and hallucinated in verify[0].task


def test_the_claim_cap_grows_with_the_answer():
    answer = " ".join(f"Fact number {i} concerns item {i}." for i in range(14))
    judge = scripted([], "yes")
    run([sample("s", answer=answer)], judge, "faithfulness_ragas")
    extract = next(r for r in judge.requests if "claims" in r.schema.get("properties", {}))
    assert extract.schema["properties"]["claims"]["maxItems"] == 14  # not the fixed 10


def test_a_judge_failure_is_a_stated_reason():
    def broken(request):
        return {"claims": "not a list"}

    from offline_eval.testing import FakeJudge

    report = run([sample("s")], FakeJudge(broken), "faithfulness_ragas")
    assert report["samples"][0]["not_computable"]["faithfulness_ragas"].startswith(
        "judge failure: judge output does not match the schema")


def test_each_sentence_is_checked_as_written_in_its_own_call_without_an_extraction_call():
    hallucinated = "The average annual temperature is 61°F."

    def answer(request):
        # Unsupported only when the hallucinated sentence is the one asked about: a verdict must land on
        # its own sentence, and no call may hold both.
        (key,) = request.schema["properties"]
        p_yes = 0.2 if hallucinated in request.task else 0.9
        return {key: "yes" if p_yes > 0.5 else "no"}, {key: {"yes": p_yes, "no": 1 - p_yes}}

    from offline_eval.testing import FakeJudge

    judge = FakeJudge(answer)
    report = run([sample("s", answer=f"{ANSWER} {hallucinated}")], judge, "faithfulness", verdict_scoring="hard")
    (row,) = report["samples"]
    assert row["scores"] == {"faithfulness": 0.5}
    details = row["details"]["faithfulness"]
    assert [(f["label"], f["text"], f["verdict"], f["probability"]) for f in details["findings"]] == [
        ("sentence", ANSWER, "supported", 0.9), ("sentence", hallucinated, "unsupported", 0.2)]
    assert details["summary"] == "1 of 2 sentences supported" and details["coverage"] == 1.0
    assert "unclaimed_sentences" not in details
    # Two verification calls, one per sentence, after the same context; nothing extracted.
    assert [r.metric for r in judge.requests] == ["faithfulness", "faithfulness"]
    first, second = judge.requests
    assert first.shared == second.shared and CONTEXT in first.shared
    assert ANSWER in first.task and hallucinated not in first.task
    assert hallucinated in second.task and ANSWER not in second.task


def test_faithfulness_ragas_checks_its_claims_keyed_in_one_call():
    judge = scripted([ANSWER, OTHER], "yes")
    run([sample("s", answer=f"{ANSWER} {OTHER}")], judge, "faithfulness_ragas")
    checks = [r for r in judge.requests if "claims" not in r.schema["properties"]]
    assert len(checks) == 1 and list(checks[0].schema["properties"]) == ["claim_1", "claim_2"]


def test_a_bare_answer_is_checked_after_its_question():
    judge = scripted(verdict="no")
    report = run([sample("s", answer="Thirty days.")], judge, "faithfulness")
    (finding,) = report["samples"][0]["details"]["faithfulness"]["findings"]
    assert finding["text"] == "How long do customers have to request a refund? Thirty days."


def test_sentences_without_contexts_score_zero_without_a_call():
    judge = scripted()
    row = run([sample("empty", ())], judge, "faithfulness")["samples"][0]
    assert row["scores"] == {"faithfulness": 0.0} and judge.requests == []
    assert row["details"]["faithfulness"]["reason"] == "no contexts retrieved"


def test_the_judge_is_told_which_numbers_the_context_never_gives():
    judge = scripted(verdict="no")
    run([sample("s", answer="Customers can request a refund within 45 days. They need a receipt.")], judge,
        "faithfulness")
    numbered, plain = judge.requests
    assert numbered.task.endswith("Note: the context above nowhere gives the number 45 that claim_1 states.")
    assert "Note:" not in plain.task
