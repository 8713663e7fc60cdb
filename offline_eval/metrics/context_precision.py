"""Context precision: are the retrieved chunks useful, and are the useful ones ranked first?

Judge: one call per chunk, in rank order, each given the question and the reference answer (or the
answer when there is no reference) as a shared prefix, then the chunk, whole. Two scores:
``context_precision`` = rank-aware average precision (the RAGAS meaning) and
``context_relevant_ratio`` = relevant ÷ total chunks (the noise ratio).

One chunk per call, not all chunks in one: on the hand-labelled set the 1.5B judge, shown three
chunks at once, answered yes/no/yes whatever their content; judged one at a time it ranks them right.
The calls share their prefix, so each costs only its chunk's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from offline_eval import prompts, scoring
from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.metrics.base import Evidence, Outcome, SampleContext, check_sample, judged, longest_fitting_prefix
from offline_eval.sample import Sample

_PREVIEW = 160
_USEFUL = ["useful"]


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
        shared = prompts.chunk_question(sample.question, sample.reference_answer if reference else sample.answer,
                                        ctx.lang, basis_is_reference=bool(reference))

        def request(chunk: str) -> JudgeRequest:
            return JudgeRequest(system=prompts.SYSTEM[ctx.lang], shared=shared, task=prompts.judge_chunk(chunk, ctx.lang),
                                schema=prompts.verdicts_schema(_USEFUL), max_tokens=prompts.verdict_budget(1),
                                metric=self.name)

        def step() -> Evidence:
            relevant: list[bool] = []
            truncated: list[int] = []
            shared_tokens = ctx.judge.count_tokens(shared)  # the same for every chunk of the sample

            def fits(chunk: str) -> bool:
                return ctx.judge.room_for_shared(request(chunk)) >= shared_tokens

            for rank, chunk in enumerate(sample.contexts, 1):
                if not fits(chunk):
                    # The chunk alone overflows the judge's window: judge as much of it as fits, and say so.
                    chunk = longest_fitting_prefix(chunk, fits)
                    if not chunk:
                        raise JudgeError(f"the judge's window ({ctx.judge.n_ctx} tokens) leaves no room for a chunk")
                    truncated.append(rank)
                relevant += prompts.read_verdicts(ctx.ask(request(chunk)), _USEFUL)
            return Evidence({"relevant": relevant, "truncated_chunks": truncated,
                             "basis": "reference" if reference else "answer"})

        return judged(step)

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
