"""scripts/ragas_agreement.py: RAGAS's per-chunk verdicts for per-chunk labels (HotpotQA's gold paragraphs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import agreement_benchmark  # noqa: E402
import ragas_agreement  # noqa: E402


def test_each_chunk_becomes_a_sample_of_its_own(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        {"sample_id": "q1", "question": "Who?", "answer": "", "contexts": ["A", "B", "C"], "reference_answer": "x"},
        {"sample_id": "q2", "question": "何时？", "answer": "", "contexts": ["甲", "乙"], "reference_answer": "y"},
    )), encoding="utf-8")
    path = ragas_agreement.one_chunk_per_sample(samples, tmp_path)
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [r["sample_id"] for r in rows] == ["q1#0", "q1#1", "q1#2", "q2#0", "q2#1"]
    assert [r["contexts"] for r in rows] == [["A"], ["B"], ["C"], ["甲"], ["乙"]]
    assert {r["reference_answer"] for r in rows[:3]} == {"x"} and rows[3]["question"] == "何时？"


def test_verdicts_regroup_into_ragas_context_precision_and_per_chunk_agreement() -> None:
    ids = ["q1#0", "q1#1", "q1#2", "q2#0", "q2#1", "q3#0", "q3#1"]
    verdicts = [0.9999999999, 0.0, 0.9999999999, 0.0, 0.0, None, 0.0]
    samples = ragas_agreement.regroup_chunks(ids, verdicts)
    assert [s["sample_id"] for s in samples] == ["q1", "q2", "q3"]
    q1, q2, q3 = (s["scores"]["context_precision"] for s in samples)
    assert q1 == pytest.approx((1 / 1 + 2 / 3) / 2)  # useful at ranks 1 and 3
    assert q2 == 0.0  # RAGAS scores no useful chunk 0, not "undefined"
    assert q3 is None and samples[2]["not_computable"] == {"context_precision": "RAGAS gave NaN"}

    report = {"samples": samples}
    labels = [{"sample_id": "q1", "gold_flags": [1, 0, 0]}, {"sample_id": "q2", "gold_flags": [0, 1]},
              {"sample_id": "q3", "gold_flags": [1, 0]}]
    chunks = agreement_benchmark.chunk_agreement(report, labels)
    # q3's gold chunk has no verdict and is left out: 6 chunks, 2 gold.
    assert (chunks["n"], chunks["n_positive"], chunks["n_negative"]) == (6, 2, 4)
    assert chunks["score"] == "verdict"  # RAGAS gives no probability: the table says so
    # Gold verdicts 1, 0 against distractors 0, 1, 0, 0: AUC = (wins + ties / 2) / pairs = (3 + 4 / 2) / 8.
    assert chunks["stats"]["roc_auc"]["value"] == pytest.approx(5 / 8)


def test_chunk_probabilities_are_named_as_such() -> None:
    """offline-eval's chunks carry P(relevant), save one its reference-answer rule decided (no probability):
    the per-chunk agreement still says the score is a probability."""
    findings = [{"ok": True, "probability": None}, {"ok": True, "probability": 0.8},
                {"ok": False, "probability": 0.3}]
    report = {"samples": [{"sample_id": "q1", "details": {"context_precision": {"findings": findings}}}]}
    chunks = agreement_benchmark.chunk_agreement(report, [{"sample_id": "q1", "gold_flags": [1, 1, 0]}])
    assert chunks["score"] == "P(relevant)" and chunks["n"] == 3
    assert chunks["stats"]["roc_auc"]["value"] == pytest.approx(1.0)


def test_chunks_are_scored_by_what_they_counted_as() -> None:
    """Where the report gives each chunk's relevance (P(relevant) mixed with word coverage), that is what
    the per-chunk agreement ranks, not the judge's bare P."""
    findings = [{"ok": False, "probability": 0.3}, {"ok": False, "probability": 0.4}]
    chunks = [{"rank": 1, "relevance": 0.5}, {"rank": 2, "relevance": 0.35}]
    report = {"samples": [{"sample_id": "q1", "details": {"context_precision": {"findings": findings,
                                                                                 "chunks": chunks}}}]}
    result = agreement_benchmark.chunk_agreement(report, [{"sample_id": "q1", "gold_flags": [1, 0]}])
    assert result["score"] == "relevance (P(relevant) mixed with word coverage)"
    assert result["stats"]["roc_auc"]["value"] == pytest.approx(1.0)  # by P alone it would be 0.0
