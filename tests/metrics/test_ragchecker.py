"""RAGChecker's diagnostics, model-free: one claim × chunk matrix gives the five shares of the paper,
reusing the other metrics' calls; the edges; direction in the gate and in compare; the HTML matrix."""

from __future__ import annotations

import numpy as np
import pytest

from offline_eval import scoring
from offline_eval.compare import compare_reports
from offline_eval.config import ConfigError, EvalConfig, apply_settings
from offline_eval.report.html import render_html
from offline_eval.sample import Sample
from offline_eval.testing import FakeJudge
from tests.metrics.common import run

QUESTION = "What is the refund policy?"
RELEVANT = "Refunds are possible within 30 days. Shipping costs 5 EUR."
IRRELEVANT = "The office is in Berlin."
A_CLAIMS = ["Refunds are possible within 30 days.",  # correct, in the relevant chunk
            "Shipping costs 5 EUR.",  # incorrect, in the relevant chunk: noise (relevant)
            "The office is in Berlin.",  # incorrect, in the irrelevant chunk: noise (irrelevant)
            "Returns need a receipt.",  # incorrect, in no chunk: hallucination
            "Store credit is given after 30 days."]  # correct, in no chunk: self-knowledge
R_CLAIMS = ["Refunds are possible within 30 days.", "Store credit is given after 30 days."]
CORRECT = {A_CLAIMS[0], A_CLAIMS[4]}
ALL = ("faithfulness_ragas", "context_recall", "answer_correctness", "ragchecker")


def diagnostics_judge() -> FakeJudge:
    def answer(request):
        props = request.schema["properties"]
        if "claims" in props:
            return {"claims": A_CLAIMS if "<answer>" in request.task else R_CLAIMS}
        claims = [line.split(": ", 1)[1] for line in request.task.split("\n") if line.startswith("claim_")]
        if "<reference>" in request.shared:
            found = [c in CORRECT for c in claims]
        elif "<answer>" in request.shared:
            found = [True] * len(claims)
        else:  # a context block: a claim is there when its sentence is
            found = [c in request.shared for c in claims]
        return {f"claim_{i}": "yes" if f else "no" for i, f in enumerate(found, 1)}

    return FakeJudge(answer)


def checked_sample(contexts=(RELEVANT, IRRELEVANT), reference=" ".join(R_CLAIMS)) -> Sample:
    return Sample("s", QUESTION, " ".join(A_CLAIMS), tuple(contexts), reference_answer=reference)


def test_the_five_shares_of_the_paper_from_the_matrix():
    report = run([checked_sample()], diagnostics_judge(), *ALL, verdict_scoring="hard")
    scores = report["samples"][0]["scores"]
    assert {k: scores[k] for k in ("context_utilization", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant",
                                   "hallucination", "self_knowledge")} == {
        "context_utilization": 1.0, "noise_sensitivity_relevant": 0.2, "noise_sensitivity_irrelevant": 0.2,
        "hallucination": 0.2, "self_knowledge": 0.2}
    details = report["samples"][0]["details"]["ragchecker"]
    assert [f["verdict"] for f in details["findings"][:5]] == [
        "correct, from the context", "noise from a relevant chunk (incorrect)",
        "noise from an irrelevant chunk (incorrect)", "hallucination (incorrect, in no chunk)",
        "self-knowledge (correct, in no chunk)"]
    assert [f["verdict"] for f in details["findings"][5:]] == ["retrieved and used", "not retrieved, in the answer"]
    matrix = details["matrix"]
    assert matrix["columns"] == ["chunk 1 (relevant)", "chunk 2"] and details["relevant_chunks"] == [1]
    assert [[c["yes"] for c in row["cells"]] for row in matrix["rows"]] == [
        [True, False], [True, False], [False, True], [False, False], [False, False], [True, False], [False, False]]
    assert details["summary"] == ("5 answer and 2 reference claims × 2 chunks (1 relevant): 1 hallucinated, "
                                  "2 from noise, 1 from self-knowledge")


def test_the_matrix_costs_two_calls_a_chunk_over_the_other_metrics_and_none_for_one_chunk():
    judge = diagnostics_judge()
    one_chunk = Sample("one", QUESTION, " ".join(A_CLAIMS), (RELEVANT,), reference_answer=" ".join(R_CLAIMS))
    report = run([checked_sample(), one_chunk], judge, *ALL)
    by_metric = report["run"]["usage"]["by_metric"]
    assert by_metric["ragchecker"]["judge_calls"] == 4  # 2 chunks × 2 calls; the 1-chunk sample: all reused
    alone = diagnostics_judge()
    run([checked_sample()], alone, "ragchecker")
    assert len(alone.requests) == 2 + 2 + 4  # extractions, correctness checks, matrix
    shared = [r.shared for r in alone.requests if "Retrieved context" in r.shared]
    assert len(set(shared)) == 2 and shared[0] == shared[1]  # both claim sets after the same chunk


def test_no_chunk_retrieved_leaves_context_utilization_not_computable_with_its_reason():
    report = run([checked_sample(contexts=())], diagnostics_judge(), "ragchecker", verdict_scoring="hard")
    (row,) = report["samples"]
    assert row["scores"] == {"context_utilization": None, "noise_sensitivity_relevant": 0.0,
                             "noise_sensitivity_irrelevant": 0.0, "hallucination": 0.6, "self_knowledge": 0.4}
    assert row["not_computable"] == {"context_utilization": "no reference claim is in any retrieved chunk"}
    assert row["details"]["ragchecker"]["reason"].startswith("no contexts retrieved")
    assert report["aggregate"]["context_utilization"]["n"] == 0


def test_without_a_reference_every_share_is_not_computable():
    report = run([checked_sample(reference=None)], diagnostics_judge(), "ragchecker")
    (row,) = report["samples"]
    assert set(row["scores"].values()) == {None}
    assert row["not_computable"] == {"ragchecker": "no reference answer"}


def test_soft_set_algebra_reduces_to_the_counts_and_uses_probabilities():
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    r = np.array([[1.0, 0.0]])
    hard = scoring.claim_chunk_diagnostics(a, r, np.array([1.0, 0.0, 0.0]), np.array([1.0]))
    assert hard == {"context_utilization": 1.0, "noise_sensitivity_relevant": 0.0,
                    "noise_sensitivity_irrelevant": pytest.approx(1 / 3), "hallucination": pytest.approx(1 / 3),
                    "self_knowledge": 0.0}
    soft = scoring.claim_chunk_diagnostics(np.array([[0.8, 0.3]]), np.array([[0.9, 0.2]]), np.array([0.4]),
                                           np.array([0.5]))
    assert soft["hallucination"] == pytest.approx(0.6 * (1 - 0.8))
    assert soft["noise_sensitivity_relevant"] == pytest.approx(0.6 * max(0.8 * 0.9, 0.3 * 0.2))
    # Irrelevant noise excludes what a relevant chunk entails: P(in an irrelevant chunk) × P(in no relevant one).
    assert soft["noise_sensitivity_irrelevant"] == pytest.approx(0.6 * max(0.8 * 0.1, 0.3 * 0.8)
                                                                 * (1 - max(0.8 * 0.9, 0.3 * 0.2)))
    # A wrong claim entailed by a relevant and an irrelevant chunk is relevant noise, counted once.
    both = scoring.claim_chunk_diagnostics(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]]), np.zeros(1), np.ones(1))
    assert (both["noise_sensitivity_relevant"], both["noise_sensitivity_irrelevant"]) == (1.0, 0.0)
    assert soft["context_utilization"] == pytest.approx(0.5)
    assert scoring.claim_chunk_diagnostics(np.zeros((1, 0)), np.zeros((1, 0)), np.ones(1), np.ones(1))[
        "self_knowledge"] == 1.0


def test_a_lower_is_better_share_cannot_be_gated_and_compares_the_right_way():
    for score in ("hallucination", "self_knowledge"):
        with pytest.raises(ConfigError, match=f"{score} is a diagnostic where higher is not better"):
            apply_settings(EvalConfig(), {"thresholds": {score: 0.1}}, "test")

    def report(hallucination: float, self_knowledge: float) -> dict:
        samples = [{"sample_id": str(i), "scores": {"hallucination": hallucination + i / 1000,
                                                    "self_knowledge": self_knowledge}} for i in range(12)]
        return {"samples": samples}

    result = compare_reports(report(0.1, 0.1), report(0.5, 0.6), n_resamples=200, n_permutations=200)
    verdicts = {m["metric"]: m["verdict"] for m in result["metrics"]}
    assert verdicts == {"hallucination": "regressed", "self_knowledge": "increased"}
    assert result["regressed"] == ["hallucination"]


def test_the_html_report_shows_the_matrix_once_coloured_by_verdict():
    data = run([checked_sample()], diagnostics_judge(), "ragchecker")
    html = render_html(data)
    assert html.count('<table class="mx">') == 1
    assert '<th>chunk 1 (relevant)</th><th>chunk 2</th>' in html
    assert html.count('<td class="c yes">yes</td>') == 4 and html.count('<td class="c no">no</td>') == 10
    assert "evidence under context_utilization" in html
