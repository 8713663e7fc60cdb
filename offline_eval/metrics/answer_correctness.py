"""Answer correctness: does the answer say what the reference answer says, and nothing else?

Judge: the answer's claims (faithfulness's: extracted, plus every sentence no claim covers, as
written) are checked against the reference answer (1 call), and the reference's claims (context
recall's) against the answer (1 call). The claims are extracted once per sample: when faithfulness or
context recall run too, their extractions are reused without a call (``SampleContext.ask``), and the
claim caps are their settings (``max_claims``, ``max_reference_claims``).

Claim precision P = answer claims found in the reference ÷ answer claims; claim recall R = reference
claims found in the answer ÷ reference claims; the score is F1 = 2PR ÷ (P + R), P and R are in the
details (RAGChecker's overall precision / recall / F1; RAGAS ``factual_correctness`` in F1 mode).
Under probability scoring each verdict counts as the judge's P(yes).

Not computable without a reference answer, when the reference or the answer yields no claim, or on
a judge failure. An empty answer scores 0 without a call: it states none of the reference's claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from offline_eval import scoring
from offline_eval.metrics.base import (
    EmbedFn,
    Evidence,
    Finding,
    Metric,
    Outcome,
    SampleContext,
    ScoreSpec,
    judged,
    register,
    reported_details,
)
from offline_eval.metrics.claim_coverage import ClaimSet, VerifyClaims, claim_set
from offline_eval.metrics.context_recall import ContextRecallParams
from offline_eval.metrics.faithfulness import FaithfulnessParams
from offline_eval.prompts import Verdict, answer_block, reference_block
from offline_eval.sample import Sample

EMPTY_ANSWER = "empty answer: it states none of the reference answer's claims"


@dataclass(frozen=True)
class AnswerCorrectnessParams(FaithfulnessParams, ContextRecallParams):
    """Faithfulness's and context recall's claim caps: the same settings give the same claims."""


@dataclass(frozen=True)
class Correctness:
    """A sample's claims both ways: the answer's checked against the reference, the reference's against
    the answer."""

    answer: ClaimSet
    reference: ClaimSet
    in_reference: list[Verdict]  # per answer claim
    in_answer: list[Verdict]  # per reference claim


def check_correctness(ctx: SampleContext, max_claims: int, max_reference_claims: int) -> Correctness | str:
    """The two claim sets and both checks for one sample (with a reference and an answer), or why not."""
    sample = ctx.sample
    reference = sample.reference_answer or ""
    answer_claims = claim_set(ctx, sample.answer, source="answer", max_claims=max_claims)
    reference_claims = claim_set(ctx, reference, source="reference", max_claims=max_reference_claims)
    if not reference_claims.claims:
        return "no claims extracted from the reference answer"
    if not answer_claims.claims:
        return "no claims extracted from the answer"
    in_reference = ctx.ask(VerifyClaims(tuple(answer_claims.claims), "reference"), reference_block(reference, ctx.lang))
    in_answer = ctx.ask(VerifyClaims(tuple(reference_claims.claims), "answer"), answer_block(sample.answer, ctx.lang))
    return Correctness(answer_claims, reference_claims, in_reference, in_answer)


def _claim_label(claims: ClaimSet, i: int, label: str) -> str:
    return label if i < claims.n_extracted else f"{label} (a sentence no claim covered, checked as written)"


@register
class AnswerCorrectness(Metric):
    name = "answer_correctness"
    scores = (ScoreSpec("answer_correctness", None, "wrong answers: the answer's claims disagree with the reference "
                        "answer or miss its facts", "F1 of claim precision (answer claims in the reference) and "
                        "claim recall (reference claims in the answer)"),)
    requires = ("reference",)
    Params = AnswerCorrectnessParams
    default = False

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = self.missing_input(ctx.sample)
        if reason:
            return Evidence(not_computable=reason)
        if not ctx.sample.answer.strip():
            return Evidence({"reason": EMPTY_ANSWER})

        def step() -> Evidence:
            checked = check_correctness(ctx, self.params.max_claims, self.params.max_reference_claims)
            return Evidence(not_computable=checked) if isinstance(checked, str) else Evidence({"checked": checked})

        return judged(step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        checked = [e.data.get("checked") for e in evidence]
        precision, _ = scoring.fraction_true(*self.verdict_values([c.in_reference if c else [] for c in checked]))
        recall, _ = scoring.fraction_true(*self.verdict_values([c.in_answer if c else [] for c in checked]))
        f1 = scoring.f1(precision, recall)
        outcomes = []
        for ev, c, p, r, f in zip(evidence, checked, precision, recall, f1):
            if ev.not_computable:
                outcomes.append(self.not_computable(ev.not_computable))
                continue
            if c is None:  # an empty answer
                outcomes.append(Outcome({self.name: 0.0}, None, reported_details(
                    [], "empty answer: scored 0", reason=ev.data["reason"], precision=None, recall=0.0)))
                continue
            answer_found = [v.yes for v in c.in_reference]
            reference_found = [v.yes for v in c.in_answer]
            details: dict[str, Any] = {
                "precision": round(float(p), 6), "recall": round(float(r), 6),
                "answer_claims": [{"text": t, "in_reference": y} for t, y in zip(c.answer.claims, answer_found)],
                "reference_claims": [{"text": t, "in_answer": y} for t, y in zip(c.reference.claims, reference_found)],
            }
            findings = [Finding(_claim_label(c.answer, i, "answer claim"), t,
                                "in the reference" if v.yes else "not in the reference", v.yes, v.p_yes)
                        for i, (t, v) in enumerate(zip(c.answer.claims, c.in_reference))]
            findings += [Finding(_claim_label(c.reference, i, "reference claim"), t,
                                 "in the answer" if v.yes else "missing from the answer", v.yes, v.p_yes)
                         for i, (t, v) in enumerate(zip(c.reference.claims, c.in_answer))]
            summary = (f"precision {p:.3f} ({sum(answer_found)} of {len(answer_found)} answer claims in the reference), "
                       f"recall {r:.3f} ({sum(reference_found)} of {len(reference_found)} reference claims in the "
                       "answer)")
            if self.soft:
                summary += "; each verdict counts as the judge's probability of yes"
            outcomes.append(Outcome({self.name: float(f)}, None, reported_details(findings, summary, **details)))
        return outcomes
