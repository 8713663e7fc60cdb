"""Context recall: does the retrieved context hold what the reference answer needs?

Judge: split the reference into at most ``max_reference_claims`` claims (1 call), then one verdict per
claim against the context (1 call per context window). Score = covered ÷ claims. Needs a reference.
No context retrieved: nothing is covered, score 0 (details say "no contexts retrieved").
"""

from __future__ import annotations

from offline_eval.config import EvalConfig
from offline_eval.metrics.base import ClaimCoverage, check_sample
from offline_eval.sample import Sample


class ContextRecall(ClaimCoverage):
    name = "context_recall"
    source = "reference"
    labels = ("covered", "not_covered")

    def text(self, sample: Sample) -> str:
        return sample.reference_answer or ""

    def max_claims(self, config: EvalConfig) -> int:
        return config.max_reference_claims

    def precheck(self, sample: Sample) -> str | None:
        return check_sample(sample, need_reference=True)
