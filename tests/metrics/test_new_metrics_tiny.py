"""The new metric families with the real tiny judge (SmolLM2-135M, chance-level: mechanics, not quality):
custom criteria, answer correctness, RAGChecker's diagnostics. Each: two cold runs (fresh judge, no
cache) give byte-identical reports, English and Chinese samples, no NaN, every missing score with its
reason. And the dry run's prefix-sharing account equals what llama.cpp evaluated."""

from __future__ import annotations

import json
import math

import pytest

from offline_eval import evaluate
from offline_eval.metrics import REGISTRY, unregister
from offline_eval.metrics.criteria import is_criterion
from offline_eval.testing import hashing_embedders
from tests.conftest import make_judge

pytestmark = pytest.mark.slow

RECORDS = [
    {"sample_id": "en", "question": "How long do customers have to request a refund?",
     "contexts": ["Refund policy: customers can request a full refund within 30 days of purchase.",
                  "Our support team is available Monday to Friday."],
     "answer": "Customers can request a full refund within 30 days. Shipping is always free.",
     "reference_answer": "Within 30 days of purchase customers get a full refund."},
    {"sample_id": "zh", "question": "退款期限是多久？",
     "contexts": ["退款政策：购买后 30 天内可以申请全额退款。"],
     "answer": "购买后 30 天内可以申请全额退款。",
     "reference_answer": "30 天内可以全额退款。"},
    {"sample_id": "no-reference", "question": "Where is the office?", "contexts": ["The office is in Berlin."],
     "answer": "The office is in Berlin."},
]


@pytest.fixture(autouse=True)
def forget_criteria():
    yield
    for name in [n for n in REGISTRY if is_criterion(n)]:
        unregister(name)


def _two_cold_runs(**options) -> tuple[str, dict]:
    texts = []
    for _ in range(2):
        judge = make_judge("tiny", None, n_ctx=4096)  # a fresh judge each time, no cache: both runs are cold
        texts.append(evaluate(RECORDS, judge_instance=judge, embedders=hashing_embedders(), n_resamples=50,
                              **options).to_json())
    assert texts[0] == texts[1]
    report = json.loads(texts[0], parse_constant=lambda name: pytest.fail(f"{name} in the report"))
    for sample in report["samples"]:
        for score, value in sample["scores"].items():
            assert value is None or (math.isfinite(value) and 0.0 <= value <= 1.0), (score, value)
            if value is None:
                owner = "ragchecker" if score in REGISTRY["ragchecker"].score_names() else score
                assert sample["not_computable"].get(score) or sample["not_computable"].get(owner)
    return texts[0], report


def test_custom_criteria_with_the_tiny_judge():
    _, report = _two_cold_runs(metrics=("faithfulness",), criteria={
        "polite": "Is the answer polite?",
        "grounded": {"question": "Does the answer only state what the context says?", "context": True}})
    for sample in report["samples"]:
        for name in ("polite", "grounded"):
            (finding,) = sample["details"][name]["findings"]
            assert finding["verdict"] in ("met", "not met") and 0 <= finding["probability"] <= 1
    assert report["run"]["usage"]["by_metric"]["polite"]["judge_calls"] == 3


def test_answer_correctness_with_the_tiny_judge():
    _, report = _two_cold_runs(metrics=("faithfulness_ragas", "context_recall", "answer_correctness"), max_claims=3)
    by_id = {s["sample_id"]: s for s in report["samples"]}
    assert by_id["no-reference"]["not_computable"]["answer_correctness"] == "no reference answer"
    for sid in ("en", "zh"):
        details = by_id[sid]["details"].get("answer_correctness")
        if details:  # the tiny judge may extract nothing: then it says so instead
            assert 0 <= details["precision"] <= 1 and 0 <= details["recall"] <= 1
        else:
            assert by_id[sid]["not_computable"]["answer_correctness"]
    # The claims were extracted by faithfulness_ragas and context recall: correctness only checks them.
    assert report["run"]["usage"]["by_metric"]["answer_correctness"]["judge_calls"] <= 4


def test_ragchecker_with_the_tiny_judge():
    _, report = _two_cold_runs(metrics=("ragchecker",), max_claims=3)
    en = report["samples"][0]
    if "ragchecker" not in en["not_computable"]:
        matrix = en["details"]["ragchecker"]["matrix"]
        assert len(matrix["columns"]) == 2 and all(len(row["cells"]) == 2 for row in matrix["rows"])


def test_the_dry_run_counts_the_prompt_tokens_llama_cpp_evaluates():
    """Replay a real run's calls through the dry run's account of saved heads: the same counts."""
    from offline_eval.config import EvalConfig, apply_settings
    from offline_eval.data import samples_from_records
    from offline_eval.plan import PlanningBackend
    from offline_eval.runner import evaluate_samples

    judge = make_judge("tiny", None, n_ctx=4096)
    backend = judge.backend
    calls = []
    real_complete = backend.complete

    def recording(prepared, request, max_tokens):
        completion = real_complete(prepared, request, max_tokens)
        calls.append((prepared, request, completion.evaluated_tokens))
        return completion

    backend.complete = recording
    config = apply_settings(EvalConfig(), {"metrics": ("faithfulness", "context_recall", "context_precision",
                                                       "answer_correctness"), "max_claims": 3, "n_resamples": 10}, "t")
    evaluate_samples(samples_from_records(RECORDS).samples, config, judge=judge, embedders=hashing_embedders())
    planner = PlanningBackend(backend)
    assert len(calls) > 10
    assert [planner._evaluated(p, r) for p, r, _ in calls] == [evaluated for _, _, evaluated in calls]
