"""Answer relevancy: does the answer address the question that was asked?

Judge: from the answer alone, generate ``n_questions`` questions it would answer (1 call), and ask
whether it is noncommittal (1 short call sharing the answer as prefix). Score = mean cosine(question,
generated_i) with the sample's embedder; a noncommittal answer ("I don't know", "我不知道", evasions)
scores 0, and so does an empty answer (it addresses nothing), without a judge call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from offline_eval import prompts, scoring
from offline_eval.judge import JudgeRequest
from offline_eval.metrics.base import Evidence, Outcome, SampleContext, check_sample, judged
from offline_eval.sample import Sample

# embed(texts, languages) -> unit vectors; the runner routes each text to its language's embedder.
EmbedFn = Callable[[Sequence[str], Sequence[str]], np.ndarray]


class AnswerRelevancy:
    name = "answer_relevancy"
    scores = ("answer_relevancy",)

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = check_sample(ctx.sample, need_answer=True)
        if reason:
            return Evidence({"reason": reason})  # an empty answer addresses nothing: 0, as an evasive one
        n = ctx.config.n_questions
        shared = prompts.answer_block(ctx.sample.answer, ctx.lang)

        def step() -> Evidence:
            generated = ctx.ask(JudgeRequest(prompts.SYSTEM[ctx.lang], shared, prompts.generate_questions(n, ctx.lang),
                                             prompts.questions_schema(n), 60 * n + 32, self.name))
            kind = ctx.ask(JudgeRequest(prompts.SYSTEM[ctx.lang], shared, prompts.classify_answer(ctx.lang),
                                        prompts.ANSWER_KIND_SCHEMA, 16, self.name))
            # A small judge sometimes repeats a question; a repeat would weigh its similarity twice.
            questions = list(dict.fromkeys(q.strip() for q in generated["questions"] if q.strip()))
            if not questions:
                return Evidence(not_computable="the judge generated no question")
            return Evidence({"questions": questions, "noncommittal": kind["answer_kind"] == "evasive",
                             "lang": ctx.lang})

        return judged(step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn) -> list[Outcome]:
        ok = [i for i, e in enumerate(evidence) if not e.not_computable and "reason" not in e.data]
        outcomes = [Outcome({self.name: 0.0}, None, {"reason": e.data["reason"]}) if "reason" in e.data
                    else Outcome({self.name: None}, e.not_computable, {}) for e in evidence]
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
        noncommittal = np.array([evidence[i].data["noncommittal"] for i in ok])
        # A negative mean cosine says "unrelated", as 0 does: scores stay in [0, 1].
        values = np.where(noncommittal, 0.0, np.clip(means, 0.0, 1.0))
        for row, i in enumerate(ok):
            details = {
                "noncommittal": bool(noncommittal[row]),
                "generated_questions": [{"text": q, "similarity": round(float(s), 6)}
                                        for q, s in zip(generated[row], sims[row])],
            }
            outcomes[i] = Outcome({self.name: float(values[row])}, None, details)
        return outcomes
