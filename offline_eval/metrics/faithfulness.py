"""Faithfulness: is everything the answer claims supported by the retrieved context?

Judge: split the answer into at most max(``max_claims``, its number of sentences) claims (1 call, no
context); every sentence those claims do not cover joins them as written; then one verdict per claim
against the joined context (1 call per context window). Score = supported ÷ claims *sent*, so a
judge that dropped a verdict could not change the denominator (the grammar makes that impossible too).
No context retrieved: every claim is unsupported, score 0 (details say "no contexts retrieved").
"""

from __future__ import annotations

from dataclasses import dataclass

from offline_eval.metrics.base import ScoreSpec, param, register
from offline_eval.metrics.claim_coverage import ClaimCoverage
from offline_eval.sample import Sample


@dataclass(frozen=True)
class FaithfulnessParams:
    max_claims: int = param(10, minimum=1, help="Most claims taken from an answer.")


@register
class Faithfulness(ClaimCoverage):
    name = "faithfulness"
    scores = (ScoreSpec("faithfulness", 0.80, "hallucination risk: the answer states things the context does not "
                        "support", "supported claims ÷ claims"),)
    requires = ("answer",)
    Params = FaithfulnessParams
    source = "answer"
    labels = ("supported", "unsupported")
    claim_label = "claim"

    def text(self, sample: Sample) -> str:
        return sample.answer

    def max_claims(self) -> int:
        return self.params.max_claims
