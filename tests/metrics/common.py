"""Helpers for the model-free metric tests: scripted judges and a run over a few samples."""

from __future__ import annotations

from typing import Any

from offline_eval.config import EvalConfig, apply_settings
from offline_eval.runner import evaluate_samples
from offline_eval.sample import Sample
from offline_eval.testing import FakeJudge, default_answer, hashing_embedders

QUESTION = "How long do customers have to request a refund?"
ANSWER = "Customers can request a refund within 30 days."
CONTEXT = "Refunds: customers can request a refund within 30 days."


def sample(sample_id: str, contexts: tuple[str, ...] = (CONTEXT,), answer: str = ANSWER,
           reference: str | None = ANSWER) -> Sample:
    return Sample(sample_id, QUESTION, answer, contexts, reference_answer=reference)


def scripted(claims: list[str] | None = None, verdict: str = "yes", p_yes: float | None = None,
             answer_kind: str = "informative", p_evasive: float | None = None) -> FakeJudge:
    """A judge that extracts ``claims``, gives every yes/no item ``verdict`` with P(yes) = ``p_yes``, and
    classifies every answer as ``answer_kind`` with P(evasive) = ``p_evasive``."""
    def answer(request) -> Any:
        props = request.schema["properties"]
        if "claims" in props:
            return {"claims": claims if claims is not None else [ANSWER]}
        if "questions" in props:
            return default_answer(request)
        if "answer_kind" in props:
            probabilities = {} if p_evasive is None else \
                {"answer_kind": {"evasive": p_evasive, "informative": 1 - p_evasive}}
            return {"answer_kind": answer_kind}, probabilities
        probabilities = {} if p_yes is None else {key: {"yes": p_yes, "no": 1 - p_yes} for key in props}
        return {key: verdict for key in props}, probabilities

    return FakeJudge(answer)


def run(samples: list[Sample], judge: FakeJudge, *metrics: str, **settings: Any) -> dict:
    config = apply_settings(EvalConfig(), {"metrics": metrics, "n_resamples": 50, **settings}, "test")
    return evaluate_samples(samples, config, judge=judge, embedders=hashing_embedders()).report
