"""Faithfulness: is everything the answer says supported by the retrieved context?

``faithfulness`` (the default): every sentence of the answer is checked as written against the joined
context, each in its own call (1 call per sentence and context window; a sentence of one or two
content words is checked after its question). Score = supported ÷ sentences.

No extraction call, and no claim writer between the answer and the check: on AttributionBench dev (40
items drawn across its four sources) the sentences as written separated attributable from
unattributable answers with ROC AUC 0.805 where extracted claims reached 0.708, in half the time (ARES
dev: 0.844 against 0.804; OCNLI dev, Chinese: 0.873 against 0.825); the claim writer reworded ("This
approach" became "Punishment procedures"), split a sentence into halves the context supports only
together, and added what the answer never said (README, "Agreement with people").

One sentence a call rather than all keyed in one: on ARES dev (30 items, answers of several
sentences) AUC 0.897 against 0.844, in 558 s against 602 s. The context is evaluated once and each
call adds only its sentence, and no verdict is read after the judge's own earlier ones.

A sentence that states a number the context holds nowhere is asked about with a note saying so
(``claims.unstated_numbers``); the judge still decides. On AttributionBench dev (80 items drawn across
its sources) AUC 0.860 against 0.836 without the notes: the 9 answers given a note were all
unattributable, and the judge had supported some of them ("…the average weight of an American male is
around 198 pounds", P 0.63 before the note, 0.05 with it).

A context of more than ``evidence_sentences`` (12) sentences is shown to each answer sentence as the 12
that share most of its words and its question's (``evidence.focus``), where those blocks together are
shorter than the context (``claim_coverage.focused_blocks``), since the 1.5B judge decides worse the
longer it reads (AttributionBench dev, by thirds of context length: AUC 1.000, 0.830, 0.750). On 60
long-context AttributionBench dev items AUC 0.709 against 0.680, in about a third of the time; ARES
dev unchanged (0.897). The number notes still look through the whole context.

``faithfulness_ragas`` (run when named; the RAGAS definition, for comparing with RAGAS): split the answer
into at most max(``max_claims``, its number of sentences) claims (1 call, no context); every sentence
those claims do not cover joins them as written; then one verdict per claim, all keyed in one call
per context window. Score = supported ÷ claims *sent*, so a judge that dropped a verdict could not
change the denominator.

Either way, no context retrieved: nothing is supported, score 0 (details say "no contexts retrieved").
"""

from __future__ import annotations

from dataclasses import dataclass

from offline_eval.metrics.base import ScoreSpec, param, register
from offline_eval.metrics.claim_coverage import ClaimCoverage
from offline_eval.sample import Sample

_RISK = "hallucination risk: the answer states things the context does not support"


@dataclass(frozen=True)
class SentenceCheckParams:
    evidence_sentences: int = param(12, minimum=0, help="Context sentences each answer sentence is checked "
                                    "against when the context has more and that reads less: those sharing "
                                    "most of its words (0: the whole context).")


@register
class Faithfulness(ClaimCoverage):
    name = "faithfulness"
    scores = (ScoreSpec("faithfulness", 0.80, _RISK, "supported sentences ÷ sentences"),)
    requires = ("answer",)
    source = "answer"
    checks = "sentences"
    each_alone = True
    labels = ("supported", "unsupported")
    claim_label = "sentence"
    Params = SentenceCheckParams

    def evidence_sentences(self) -> int:
        return self.params.evidence_sentences

    def text(self, sample: Sample) -> str:
        return sample.answer


@dataclass(frozen=True)
class FaithfulnessParams:
    max_claims: int = param(10, minimum=1, help="Most claims taken from an answer.")


@register
class FaithfulnessRagas(Faithfulness):
    name = "faithfulness_ragas"
    scores = (ScoreSpec("faithfulness_ragas", 0.80, _RISK, "supported claims ÷ claims"),)
    default = False
    Params = FaithfulnessParams
    checks = "claims"
    each_alone = False
    claim_label = "claim"

    def max_claims(self) -> int:
        return self.params.max_claims

    def evidence_sentences(self) -> int:
        return 0  # claims keyed in one call read the whole context
