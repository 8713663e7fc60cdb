"""Answer correctness, model-free: claim precision, recall and F1 both ways, the claims shared with
faithfulness and context recall, and the edges."""

from __future__ import annotations

import pytest

from offline_eval.metrics.claim_coverage import VerifyClaims
from offline_eval.testing import FakeJudge
from tests.metrics.common import run, sample

ANSWER = "Refunds are possible within 30 days. Shipping is free."
REFERENCE = "Refunds are possible within 30 days. Store credit is given after 30 days."
A_CLAIMS = ["Refunds are possible within 30 days.", "Shipping is free."]
R_CLAIMS = ["Refunds are possible within 30 days.", "Store credit is given after 30 days."]
TRUE = {"Refunds are possible within 30 days."}  # in both texts; the others are in one only


def correctness_judge(p_yes: float = 0.9, p_no: float = 0.2) -> FakeJudge:
    """Extracts the claims above; a claim is found in the reference / answer / context when it is in TRUE."""
    def answer(request):
        props = request.schema["properties"]
        if "claims" in props:
            return {"claims": A_CLAIMS if "<answer>" in request.task else R_CLAIMS}
        claims = [line.split(": ", 1)[1] for line in request.task.split("\n") if line.startswith("claim_")]
        value = {f"claim_{i}": "yes" if c in TRUE else "no" for i, c in enumerate(claims, 1)}
        return value, {k: {"yes": p_yes if v == "yes" else p_no} for k, v in value.items()}

    return FakeJudge(answer)


def test_precision_recall_and_f1_with_the_claims_and_verdicts():
    judge = correctness_judge()
    report = run([sample("s", answer=ANSWER, reference=REFERENCE)], judge, "answer_correctness",
                 verdict_scoring="hard")
    (row,) = report["samples"]
    assert row["scores"] == {"answer_correctness": 0.5}  # P = 1/2, R = 1/2
    details = row["details"]["answer_correctness"]
    assert (details["precision"], details["recall"]) == (0.5, 0.5)
    assert details["answer_claims"] == [{"text": A_CLAIMS[0], "in_reference": True},
                                        {"text": A_CLAIMS[1], "in_reference": False}]
    assert details["reference_claims"][1] == {"text": R_CLAIMS[1], "in_answer": False}
    assert [(f["label"], f["verdict"], f["probability"]) for f in details["findings"]] == [
        ("answer claim", "in the reference", 0.9), ("answer claim", "not in the reference", 0.2),
        ("reference claim", "in the answer", 0.9), ("reference claim", "missing from the answer", 0.2)]
    assert details["summary"] == ("precision 0.500 (1 of 2 answer claims in the reference), recall 0.500 "
                                  "(1 of 2 reference claims in the answer)")
    checks = [r for r in judge.requests if "claims" not in r.schema["properties"]]
    assert [r.shared.split("\n")[0] for r in checks] == ["The reference answer:", "The answer to evaluate:"]
    assert "if the reference answer above states it" in checks[0].task
    assert "if the answer above states it" in checks[1].task


def test_probability_scoring_uses_the_probabilities():
    report = run([sample("s", answer=ANSWER, reference=REFERENCE)], correctness_judge(0.9, 0.2),
                 "answer_correctness")
    p = r = (0.9 + 0.2) / 2
    assert report["samples"][0]["scores"]["answer_correctness"] == pytest.approx(2 * p * r / (p + r))


def test_the_claims_of_faithfulness_ragas_and_context_recall_are_reused_not_extracted_again():
    judge = correctness_judge()
    report = run([sample("s", answer=ANSWER, reference=REFERENCE)], judge,
                 "faithfulness_ragas", "context_recall", "answer_correctness")
    extractions = [r for r in judge.requests if "claims" in r.schema["properties"]]
    assert [r.metric for r in extractions] == ["faithfulness_ragas", "context_recall"]
    by_metric = report["run"]["usage"]["by_metric"]
    assert by_metric["answer_correctness"]["judge_calls"] == 2  # the two checks, nothing else
    alone = correctness_judge()
    run([sample("s", answer=ANSWER, reference=REFERENCE)], alone, "answer_correctness")
    assert len(alone.requests) == 4
    assert report["samples"][0]["details"]["answer_correctness"]["answer_claims"][0]["text"] == A_CLAIMS[0]


def test_the_claim_caps_are_faithfulness_and_context_recall_settings():
    judge = correctness_judge()
    report = run([sample("s", answer=ANSWER, reference=REFERENCE)], judge, "answer_correctness",
                 max_claims=1, max_reference_claims=1)
    assert report["run"]["params"]["max_claims"] == 1
    caps = [r.schema["properties"]["claims"]["maxItems"] for r in judge.requests if "claims" in r.schema["properties"]]
    assert caps == [2, 2]  # one per sentence when that is more than the cap, as for faithfulness


def test_no_reference_is_not_computable_and_an_empty_answer_scores_zero_without_a_call():
    judge = correctness_judge()
    report = run([sample("none", answer=ANSWER, reference=None), sample("empty", answer="", reference=REFERENCE)],
                 judge, "answer_correctness")
    none, empty = report["samples"]
    assert none["scores"] == {"answer_correctness": None}
    assert none["not_computable"] == {"answer_correctness": "no reference answer"}
    assert empty["scores"] == {"answer_correctness": 0.0} and empty["not_computable"] == {}
    assert empty["details"]["answer_correctness"]["reason"].startswith("empty answer")
    assert judge.requests == []
    assert report["aggregate"]["answer_correctness"]["n_not_computable"] == 1


def test_a_reference_without_claims_is_not_computable():
    judge = FakeJudge(lambda request: {"claims": []} if "claims" in request.schema["properties"] else
                      {k: "yes" for k in request.schema["properties"]})
    report = run([sample("s", answer=ANSWER, reference="...")], judge, "answer_correctness")
    assert report["samples"][0]["not_computable"] == {
        "answer_correctness": "no claims extracted from the reference answer"}


def test_chinese_checks_name_what_is_checked_against():
    assert "上面参考答案里明确写了" in VerifyClaims(("a",), "reference").text("zh")
    assert "只依据回答判断" in VerifyClaims(("a",), "answer").text("zh")


def test_the_context_check_is_worded_as_before():
    assert VerifyClaims(("x",)).text("en") == (
        "<claims>\nclaim_1: x\n</claims>\n\nFor each claim_N: answer \"yes\" if the context above states it or "
        "directly implies it; answer \"no\" if the context contradicts it or does not mention it. Judge only "
        "against the context, not your own knowledge.")
    assert VerifyClaims(("x",)).text("zh").endswith(
        "请逐条判断每个 claim_N：上面资料里明确写了或能直接推出这条陈述，答 \"yes\"；资料与之矛盾或根本没有提到，"
        "答 \"no\"。只依据资料判断，不要用你自己的知识。")
