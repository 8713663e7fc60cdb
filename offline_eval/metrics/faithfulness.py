"""Faithfulness: is everything the answer claims supported by the retrieved context?

Judge: split the answer into at most ``max_claims`` claims (1 call, no context), then one verdict per
claim against the joined context (1 call per context window). Score = supported ÷ claims *sent*, so a
judge that dropped a verdict could not change the denominator (the grammar makes that impossible too).
No context retrieved: every claim is unsupported, score 0 (details say "no contexts retrieved").
"""

from __future__ import annotations

from offline_eval.config import EvalConfig
from offline_eval.metrics.base import ClaimCoverage, check_sample
from offline_eval.sample import Sample


class Faithfulness(ClaimCoverage):
    name = "faithfulness"
    source = "answer"
    labels = ("supported", "unsupported")

    def text(self, sample: Sample) -> str:
        return sample.answer

    def max_claims(self, config: EvalConfig) -> int:
        return config.max_claims

    def precheck(self, sample: Sample) -> str | None:
        return check_sample(sample, need_answer=True)
