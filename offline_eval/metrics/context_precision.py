"""Context precision: are the retrieved chunks useful, and are the useful ones ranked first?

Judge: one verdict per chunk, in rank order, given the question and the reference answer (or the
answer when there is no reference): 1 call per context window, chunks given whole. Two scores:
``context_precision`` = rank-aware average precision (the RAGAS meaning) and
``context_relevant_ratio`` = relevant ÷ total chunks (the noise ratio).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from offline_eval import prompts, scoring
from offline_eval.judge import JudgeRequest
from offline_eval.metrics.base import Evidence, Outcome, SampleContext, check_sample, context_windows, judged
from offline_eval.sample import Sample

_PREVIEW = 160


class ContextPrecision:
    name = "context_precision"
    scores = ("context_precision", "context_relevant_ratio")

    def collect(self, ctx: SampleContext) -> Evidence:
        sample = ctx.sample
        reason = check_sample(sample, need_contexts=True)
        reference = (sample.reference_answer or "").strip()
        if not reason and not reference and not sample.answer.strip():
            reason = "no reference answer and an empty answer: nothing shows what is useful"
        if reason:
            return Evidence(not_computable=reason)
        basis = sample.reference_answer if reference else sample.answer

        def request(shared: str, ranks: Sequence[int]) -> JudgeRequest:
            return JudgeRequest(
                system=prompts.SYSTEM[ctx.lang],
                shared=shared,
                task=prompts.judge_chunks(sample.question, basis, ranks, ctx.lang, basis_is_reference=bool(reference)),
                schema=prompts.verdicts_schema(len(ranks)),
                max_tokens=4 * len(ranks) + 24,
                metric=self.name,
            )

        def step() -> Evidence:
            relevant: list[bool] = []
            truncated: list[int] = []
            all_ranks = range(1, len(sample.contexts) + 1)
            for window in context_windows(ctx, request("", all_ranks)):
                ranks = [rank for rank, _ in window.chunks]
                verdicts = ctx.ask(request(window.block(ctx.lang), ranks))["verdicts"]
                relevant += [v == "yes" for v in verdicts]
                truncated += window.truncated
            return Evidence({"relevant": relevant, "truncated_chunks": truncated,
                             "basis": "reference" if reference else "answer"})

        return judged(self.name, step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: Any = None) -> list[Outcome]:
        relevant, mask = scoring.pad([e.data.get("relevant", []) for e in evidence], dtype=bool)
        ap, computable = scoring.average_precision(relevant, mask)
        ratio, _ = scoring.fraction_true(relevant, mask)
        outcomes = []
        for sample, ev, a, r, ok in zip(samples, evidence, ap, ratio, computable):
            if ev.not_computable or not ok:
                outcomes.append(Outcome({n: None for n in self.scores}, ev.not_computable or "no contexts", {}))
                continue
            chunks = [{"rank": k, "relevant": bool(v), "preview": text[:_PREVIEW]}
                      for k, (v, text) in enumerate(zip(ev.data["relevant"], sample.contexts), 1)]
            details: dict[str, Any] = {"chunks": chunks, "average_precision": float(a), "relevant_ratio": float(r),
                                       "judged_against": ev.data["basis"]}
            if ev.data["truncated_chunks"]:
                details["truncated_chunks"] = ev.data["truncated_chunks"]
            outcomes.append(Outcome({"context_precision": float(a), "context_relevant_ratio": float(r)}, None, details))
        return outcomes
