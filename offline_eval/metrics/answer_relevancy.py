"""Answer relevancy: does the answer address the question that was asked?

``answer_relevancy`` (the default): two short calls. The judge is shown the question and the answer and
asked whether the answer responds to what was asked, right or wrong; and, from the answer alone, whether
it is evasive (noncommittal). Score = the judge's P(addresses) (or the verdict, under hard scoring); an
evasive answer scores 0, as in RAGAS, and so does an empty answer, without a call. No embedder.

``answer_relevancy_ragas`` (run when named; the RAGAS definition, for comparing with RAGAS): from the
answer alone, generate ``n_questions`` questions it would answer, and ask whether it is evasive. Score =
mean cosine(question, generated_i) with the sample's embedder; 0 if evasive.

Why the judge form is the default, measured on ARES dev (13 off-topic, 13 on-topic answers, README): ROC
AUC 0.817 and balanced accuracy 0.885 at 0.7, against 0.698 and 0.500 at 0.75 for the RAGAS form, whose
cosines of good answers sit at 0.3-0.8 with all-MiniLM-L6-v2 (the multilingual embedder did no better).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offline_eval import scoring
from offline_eval.judge import JudgeResult
from offline_eval.metrics.base import (
    EmbedFn,
    Evidence,
    Finding,
    Metric,
    Outcome,
    SampleContext,
    ScoreSpec,
    judged,
    param,
    register,
    reported_details,
)
from offline_eval.prompts import (
    Task,
    Verdict,
    YesNoTask,
    answer_block,
    defuse,
    option_probability,
    question_answer_block,
    string_list_schema,
)
from offline_eval.sample import Sample


@dataclass(frozen=True)
class GenerateQuestions(Task[list[str]]):
    """Questions the answer above would answer (from the answer alone, never the real question).

    A small judge sometimes repeats a question; a repeat would weigh its similarity twice, so repeats
    and blanks go.
    """

    n_questions: int

    def text(self, lang: str) -> str:
        n_questions = self.n_questions
        if lang == "zh":
            return (
                f"请写出 {n_questions} 个不同的问题，使上面这段回答正好能回答它们。每个问题都必须是以“？”结尾的"
                "疑问句，问的是回答里给出的信息，不要照抄回答。用中文提问。"
            )
        return (
            f"Write {n_questions} different questions that the answer above answers directly. Each must be a "
            "real question ending with a question mark that asks for the information the answer gives; do not "
            "copy the answer. Ask them in English."
        )

    @property
    def schema(self) -> dict[str, Any]:
        return string_list_schema("questions", self.n_questions, self.n_questions)

    @property
    def max_tokens(self) -> int:
        return 60 * self.n_questions + 32

    def estimate(self) -> dict[str, Any]:
        """Questions of a typical length (about a dozen words)."""
        return {"questions": ["What does the answer above say about the subject that it covers here?"]
                * self.n_questions}

    def parse(self, result: JudgeResult) -> list[str]:
        return list(dict.fromkeys(q.strip() for q in result.value["questions"] if q.strip()))


@dataclass(frozen=True)
class ClassifyAnswer(Task[Verdict]):
    """Is the answer above evasive (noncommittal) or informative? A call of its own: asked in the same
    call as the questions, the 1.5B judge flagged plain informative answers as noncommittal."""

    def text(self, lang: str) -> str:
        if lang == "zh":
            return (
                "判断上面这段回答的类型 answer_kind：如果回答说“不知道”、拒绝回答，或者没有给出任何具体信息，"
                "就是 \"evasive\"；如果回答给出了具体信息（不论对错），就是 \"informative\"。"
            )
        return (
            "Classify the answer above. \"informative\": it states at least one concrete fact, step or number "
            "(right or wrong). \"evasive\": it only says it does not know, refuses, or stays vague."
        )

    @property
    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer_kind": {"type": "string", "enum": ["informative", "evasive"]}},
            "required": ["answer_kind"],
            "additionalProperties": False,
        }

    @property
    def max_tokens(self) -> int:
        return 16

    def parse(self, result: JudgeResult) -> Verdict:
        """Is the answer evasive? (yes: evasive), with the judge's P(evasive)."""
        return Verdict(result.value["answer_kind"] == "evasive", option_probability(result, "answer_kind", "evasive"))


@dataclass(frozen=True)
class AddressesQuestion(YesNoTask):
    """Does the answer above respond to the question above, whatever its correctness?

    The instruction is English for Chinese samples too (the question and the answer are shown as written,
    after Chinese labels): under each of four Chinese wordings the 1.5B judge gave plainly on-topic Chinese
    answers P(yes) 0.2-0.5, the off-topic ones about as much; under this one, 0.84-0.88 against 0.43-0.63.
    """

    @property
    def keys(self) -> list[str]:
        return ["addresses"]

    def text(self, lang: str) -> str:
        return ("Does the answer address the question: does it respond to what was asked and give the kind of "
                "information the question asks for, whether or not that information is correct? \"yes\" if it does; "
                "\"no\" if it talks about something else, dodges the question, refuses, or only says it does not know.")


@register
class AnswerRelevancy(Metric):
    name = "answer_relevancy"
    # 0.7: on ARES dev (13 off-topic, 13 on-topic answers) the best balanced accuracy falls at 0.68-0.72, and
    # the 1.5B judge keeps P(addresses) of on-topic answers at 0.7-0.9.
    scores = (ScoreSpec("answer_relevancy", 0.7, "off-topic answers: the answer does not address the question",
                        "the judge's P(the answer addresses the question); 0 if evasive or empty"),)

    def collect(self, ctx: SampleContext) -> Evidence:
        if not ctx.sample.answer.strip():
            return Evidence({"reason": "empty answer"})  # it addresses nothing
        asked = question_answer_block(ctx.sample.question, ctx.sample.answer, ctx.lang)
        alone = answer_block(ctx.sample.answer, ctx.lang)  # evasiveness as the RAGAS form asks it: one answer
        return judged(lambda: Evidence({"addresses": ctx.ask(AddressesQuestion(), asked),
                                        "evasive": ctx.ask(ClassifyAnswer(), alone)}))

    @classmethod
    def truth_scores(cls, details: Mapping[str, Any], ok: Sequence[bool]) -> dict[str, float] | None:
        """1 when a reviewer found that the answer addresses the question and is not evasive, else 0
        (the findings: the addresses verdict, then the evasiveness verdict, ok when informative)."""
        if len(ok) != 2:
            return None
        return {cls.name: float(all(ok))}

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        values, _ = self.verdict_values([e.data.get("addresses", []) for e in evidence])
        outcomes = []
        for ev, row in zip(evidence, values):
            if ev.not_computable:
                outcomes.append(self.not_computable(ev.not_computable))
                continue
            if "reason" in ev.data:
                outcomes.append(Outcome({self.name: 0.0}, None, {"reason": ev.data["reason"]}))
                continue
            (addresses,), evasive = ev.data["addresses"], ev.data["evasive"]
            findings = [
                Finding("answer", "the answer addresses the question" if addresses.yes else
                        "the answer does not address the question",
                        "addresses" if addresses.yes else "off-topic", addresses.yes, addresses.p_yes),
                _evasiveness_finding(evasive),
            ]
            if evasive.yes:
                value, summary = 0.0, EVASIVE_SUMMARY
            else:
                value = float(row[0])
                summary = ("the answer addresses the question" if addresses.yes else
                           "the answer does not address the question")
                if self.soft:
                    summary += "; score = the judge's probability that it does"
            outcomes.append(Outcome({self.name: value}, None, reported_details(
                findings, summary, addresses=addresses.yes, noncommittal=evasive.yes)))
        return outcomes


# Both forms score an evasive answer 0, whatever the verdict scoring: its P(evasive) is reported, not used
# (as a factor it would also discount answers the judge found informative).
EVASIVE_SUMMARY = "evasive answer: scored 0"


def _evasiveness_finding(verdict: Verdict) -> Finding:
    """The evasiveness verdict as a finding (ok: the answer gives information), with P(evasive)."""
    return Finding("answer", "the answer is evasive or noncommittal" if verdict.yes else "the answer gives information",
                   "evasive" if verdict.yes else "informative", not verdict.yes, verdict.p_yes)


@dataclass(frozen=True)
class AnswerRelevancyRagasParams:
    n_questions: int = param(3, minimum=1, help="Questions generated for answer_relevancy_ragas.")


@register
class AnswerRelevancyRagas(Metric):
    name = "answer_relevancy_ragas"
    # RAGAS's own threshold-free form; 0.75 is the seed's gate. With all-MiniLM-L6-v2 good answers sit at
    # 0.3-0.8, so compare runs with each other rather than gate on it (README).
    scores = (ScoreSpec("answer_relevancy_ragas", 0.75, "off-topic answers: the answer does not address the question",
                        "mean cosine between the question and questions generated from the answer; 0 if evasive"),)
    Params = AnswerRelevancyRagasParams
    needs_embedder = True
    default = False

    def collect(self, ctx: SampleContext) -> Evidence:
        if not ctx.sample.answer.strip():
            return Evidence({"reason": "empty answer"})  # it addresses nothing: 0, as an evasive answer
        shared = answer_block(ctx.sample.answer, ctx.lang)

        def step() -> Evidence:
            questions = ctx.ask(GenerateQuestions(self.params.n_questions), shared)
            evasive = ctx.ask(ClassifyAnswer(), shared)
            if not questions:
                return Evidence(not_computable="the judge generated no question")
            return Evidence({"questions": questions, "evasive": evasive, "lang": ctx.lang})

        return judged(step)

    @classmethod
    def truth_scores(cls, details: Mapping[str, Any], ok: Sequence[bool]) -> dict[str, float] | None:
        """0 when a reviewer found the answer evasive, else the reported mean similarity (clipped to [0, 1]):
        the one yes/no verdict is the evasiveness; the similarities are the embedder's, not a verdict."""
        if len(ok) != 1:
            return None
        if not ok[0]:
            return {cls.name: 0.0}
        sims = [q.get("similarity") for q in details.get("generated_questions") or [] if isinstance(q, Mapping)]
        sims = [float(x) for x in sims if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if not sims:
            return None
        return {cls.name: min(1.0, max(0.0, sum(sims) / len(sims)))}

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn) -> list[Outcome]:
        ok = [i for i, e in enumerate(evidence) if not e.not_computable and "reason" not in e.data]
        outcomes = [Outcome({self.name: 0.0}, None, {"reason": e.data["reason"]}) if "reason" in e.data
                    else self.not_computable(e.not_computable or "") for e in evidence]
        if not ok:
            return outcomes
        # One embedding pass for the whole batch: every question and every generated question.
        questions = [samples[i].question for i in ok]
        generated = [evidence[i].data["questions"] for i in ok]
        langs = [evidence[i].data["lang"] for i in ok]
        flat = [q for qs in generated for q in qs]
        flat_langs = [lang for lang, qs in zip(langs, generated) for _ in qs]
        vectors = embed(questions + flat, langs + flat_langs)
        query = vectors[: len(questions)]
        width = max(len(g) for g in generated)
        gen = np.zeros((len(ok), width, vectors.shape[1]), dtype=vectors.dtype)
        _, mask = scoring.pad([[1.0] * len(g) for g in generated])
        gen[mask] = vectors[len(questions):]
        means, sims = scoring.mean_cosine(query, gen, mask)
        verdicts = [evidence[i].data["evasive"] for i in ok]
        # A noncommittal answer scores 0 by definition, whatever the verdict scoring (see EVASIVE_SUMMARY).
        evasive = np.array([v.yes for v in verdicts], dtype=bool)
        # A negative mean cosine says "unrelated", as 0 does: scores stay in [0, 1].
        values = np.where(evasive, 0.0, np.clip(means, 0.0, 1.0))
        for row, i in enumerate(ok):
            verdict = verdicts[row]
            details = {
                "noncommittal": verdict.yes,
                "generated_questions": [{"text": q, "similarity": round(float(s), 6)}
                                        for q, s in zip(generated[row], sims[row])],
            }
            findings = [_evasiveness_finding(verdict)]
            findings += [Finding("generated question", q["text"], f"similarity {q['similarity']:.3f}", None)
                         for q in details["generated_questions"]]
            summary = f"mean similarity of {len(generated[row])} questions generated from the answer"
            if verdict.yes:
                summary = EVASIVE_SUMMARY
            outcomes[i] = Outcome({self.name: float(values[row])}, None, reported_details(findings, summary, **details))
        return outcomes
