"""Context recall: does the retrieved context hold what the reference answer needs?

Judge: split the reference into at most ``max_reference_claims`` claims (1 call), then one verdict per
claim against the context (1 call per context window). Score = covered ÷ claims. Needs a reference.
No context retrieved: nothing is covered, score 0 (details say "no contexts retrieved").
"""

from __future__ import annotations

from dataclasses import dataclass

from offline_eval.metrics.base import ScoreSpec, param, register
from offline_eval.metrics.claim_coverage import ClaimCoverage
from offline_eval.sample import Sample


@dataclass(frozen=True)
class ContextRecallParams:
    max_reference_claims: int = param(8, minimum=1, help="Most claims taken from a reference answer.")


@register
class ContextRecall(ClaimCoverage):
    name = "context_recall"
    scores = (ScoreSpec("context_recall", 0.70, "retrieval misses information the reference answer needs",
                        "covered reference claims ÷ reference claims"),)
    requires = ("reference",)
    Params = ContextRecallParams
    source = "reference"
    labels = ("covered", "not_covered")
    claim_label = "reference claim"

    def text(self, sample: Sample) -> str:
        return sample.reference_answer or ""

    def max_claims(self) -> int:
        return self.params.max_reference_claims
