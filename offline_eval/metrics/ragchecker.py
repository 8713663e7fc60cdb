"""RAGChecker's diagnostics (Ru et al., arXiv 2408.08067, §3): retriever or generator, which failed?

One claim × chunk matrix per sample: every answer claim and every reference claim (answer
correctness's claims, with its two checks: is the answer claim in the reference, is the reference
claim in the answer) checked against each retrieved chunk on its own. Per chunk, two calls share the
chunk as their prefix (evaluated once): the answer's claims, then the reference's. With a single
chunk those are exactly faithfulness's and context recall's checks and are answered without a call.

With "in a chunk" meaning that chunk entails the claim, "relevant chunk" one that entails some
reference claim, and "correct" an answer claim the reference answer entails:

- ``context_utilization`` = reference claims in some chunk and in the answer ÷ reference claims in some
  chunk (how much of what was retrieved and needed the generator used; higher is better);
- ``noise_sensitivity_relevant`` = incorrect answer claims entailed by a relevant chunk ÷ answer claims;
- ``noise_sensitivity_irrelevant`` = incorrect answer claims entailed by an irrelevant chunk and by no
  relevant one ÷ answer claims (the generator repeated retrieval noise; lower is better; exclusive of
  the relevant kind, as in RAGChecker's code, so each answer claim has one kind);
- ``hallucination`` = incorrect answer claims in no chunk ÷ answer claims (made up; lower is better);
- ``self_knowledge`` = correct answer claims in no chunk ÷ answer claims (right from the model's own
  knowledge; neither better high nor low: it depends on whether answers should come from the context).

Under probability scoring each verdict counts as the judge's P(yes), with NOT p = 1 − p, AND = product
and "in some chunk" = max over chunks; hard verdicts give the paper's counts. Not computable without a
reference answer, for an empty answer, or when either text yields no claim; context utilization alone
is not computable when no reference claim is in any chunk. With no chunk retrieved every answer claim
is in no chunk: the generator scores are still defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from offline_eval import scoring
from offline_eval.metrics.answer_correctness import AnswerCorrectnessParams, Correctness, check_correctness
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
from offline_eval.metrics.claim_coverage import VerifyClaims
from offline_eval.metrics.windows import chunk_windows
from offline_eval.prompts import Verdict
from offline_eval.sample import Sample

_NOT_RETRIEVED = "no reference claim is in any retrieved chunk"


def claim_chunk_matrix(ctx: SampleContext, checked: Correctness) -> tuple[list[list[Verdict]], list[list[Verdict]],
                                                                          list[int]]:
    """Each chunk's verdicts on the answer's claims and on the reference's: (answer claims × chunks,
    reference claims × chunks, ranks of chunks cut to fit the judge's window)."""
    answer_task = VerifyClaims(tuple(checked.answer.claims))
    reference_task = VerifyClaims(tuple(checked.reference.claims))
    by_chunk_answer, by_chunk_reference, truncated = [], [], []
    for window in chunk_windows(ctx, [ctx.request(answer_task), ctx.request(reference_task)]):
        block = window.block(ctx.lang)
        by_chunk_answer.append(ctx.ask(answer_task, block))
        by_chunk_reference.append(ctx.ask(reference_task, block))
        truncated += window.truncated
    transpose = lambda columns, n: [[column[i] for column in columns] for i in range(n)]  # noqa: E731
    return (transpose(by_chunk_answer, len(checked.answer.claims)),
            transpose(by_chunk_reference, len(checked.reference.claims)), truncated)


def _answer_claim_kind(correct: bool, in_relevant: bool, in_irrelevant: bool) -> str:
    if not (in_relevant or in_irrelevant):
        return "self-knowledge (correct, in no chunk)" if correct else "hallucination (incorrect, in no chunk)"
    if correct:
        return "correct, from the context"
    return "noise from a relevant chunk (incorrect)" if in_relevant else "noise from an irrelevant chunk (incorrect)"


@register
class RagChecker(Metric):
    name = "ragchecker"
    scores = (
        ScoreSpec("context_utilization", None, "the generator leaves out retrieved facts the answer needs",
                  "reference claims in some chunk and in the answer ÷ reference claims in some chunk"),
        ScoreSpec("noise_sensitivity_relevant", None, "the generator repeats wrong details from relevant chunks",
                  "incorrect answer claims entailed by a relevant chunk ÷ answer claims", higher_is_better=False),
        ScoreSpec("noise_sensitivity_irrelevant", None, "the generator repeats irrelevant retrieved text",
                  "incorrect answer claims entailed by an irrelevant chunk (and no relevant one) ÷ answer claims",
                  higher_is_better=False),
        ScoreSpec("hallucination", None, "the generator makes up claims found neither in the context nor the reference",
                  "incorrect answer claims in no chunk ÷ answer claims", higher_is_better=False),
        ScoreSpec("self_knowledge", None, "correct claims come from the model, not the context",
                  "correct answer claims in no chunk ÷ answer claims", higher_is_better=None),
    )
    requires = ("reference", "answer")
    Params = AnswerCorrectnessParams
    default = False

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = self.missing_input(ctx.sample)
        if reason:
            return Evidence(not_computable=reason)

        def step() -> Evidence:
            checked = check_correctness(ctx, self.params.max_claims, self.params.max_reference_claims)
            if isinstance(checked, str):
                return Evidence(not_computable=checked)
            answer_chunks, reference_chunks, truncated = claim_chunk_matrix(ctx, checked)
            return Evidence({"checked": checked, "answer_chunks": answer_chunks, "reference_chunks": reference_chunks,
                             "truncated_chunks": truncated})

        return judged(step)

    def _values(self, verdicts: Sequence[Verdict]) -> np.ndarray:
        values, _ = self.verdict_values([verdicts])
        return values[0] if values.size else np.zeros(0)

    def _matrix(self, rows: list[list[Verdict]], k: int) -> np.ndarray:
        return np.array([self._values(row) for row in rows], dtype=np.float64).reshape(len(rows), k)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        outcomes = []
        for sample, ev in zip(samples, evidence):
            if ev.not_computable:
                outcomes.append(self.not_computable(ev.not_computable))
                continue
            checked: Correctness = ev.data["checked"]
            k = len(sample.contexts)
            answer_chunks, reference_chunks = ev.data["answer_chunks"], ev.data["reference_chunks"]
            shares = scoring.claim_chunk_diagnostics(
                self._matrix(answer_chunks, k), self._matrix(reference_chunks, k),
                self._values(checked.in_reference), self._values(checked.in_answer))
            reasons = {name: _NOT_RETRIEVED for name, value in shares.items() if value is None}
            outcomes.append(Outcome(shares, None, self._details(sample, ev.data, checked, k), reasons))
        return outcomes

    def _details(self, sample: Sample, data: dict[str, Any], checked: Correctness, k: int) -> dict[str, Any]:
        """The matrix as the reports show it, each answer claim's kind and each reference claim's fate."""
        answer_chunks, reference_chunks = data["answer_chunks"], data["reference_chunks"]
        relevant = [any(row[j].yes for row in reference_chunks) for j in range(k)]
        findings, kinds = [], []
        for text, correct, row in zip(checked.answer.claims, checked.in_reference, answer_chunks):
            kind = _answer_claim_kind(correct.yes, any(v.yes and r for v, r in zip(row, relevant)),
                                      any(v.yes and not r for v, r in zip(row, relevant)))
            kinds.append(kind)
            findings.append(Finding("answer claim", text, kind, kind.startswith(("correct", "self")), correct.p_yes))
        for text, used, row in zip(checked.reference.claims, checked.in_answer, reference_chunks):
            retrieved = any(v.yes for v in row)
            fate = ("retrieved and used" if used.yes else "retrieved, not used") if retrieved else \
                ("not retrieved, in the answer" if used.yes else "not retrieved")
            findings.append(Finding("reference claim", text, fate, used.yes if retrieved else None, used.p_yes))

        def row(label: str, text: str, verdict: Verdict, yes: str, no: str, cells: list[Verdict]) -> dict[str, Any]:
            return {"label": label, "text": text, "verdict": yes if verdict.yes else no, "ok": verdict.yes,
                    "cells": [{"yes": c.yes, "probability": None if c.p_yes is None else round(c.p_yes, 6)}
                              for c in cells]}

        matrix = {
            "title": "claims × retrieved chunks: does the chunk entail the claim?",
            "columns": [f"chunk {j + 1}" + (" (relevant)" if relevant[j] else "") for j in range(k)],
            "rows": [row("answer claim", t, v, "correct", "incorrect", cells)
                     for t, v, cells in zip(checked.answer.claims, checked.in_reference, answer_chunks)]
                    + [row("reference claim", t, v, "in the answer", "not in the answer", cells)
                       for t, v, cells in zip(checked.reference.claims, checked.in_answer, reference_chunks)],
        }
        n_hallucinated = sum(kind.startswith("hallucination") for kind in kinds)
        n_noise = sum(kind.startswith("noise") for kind in kinds)
        summary = (f"{len(checked.answer.claims)} answer and {len(checked.reference.claims)} reference claims × {k} "
                   f"chunks ({sum(relevant)} relevant): {n_hallucinated} hallucinated, {n_noise} from noise, "
                   f"{sum(kind.startswith('self') for kind in kinds)} from self-knowledge")
        details: dict[str, Any] = {"matrix": matrix, "relevant_chunks": [j + 1 for j in range(k) if relevant[j]]}
        if data["truncated_chunks"]:
            details["truncated_chunks"] = data["truncated_chunks"]
        if not k:
            details["reason"] = "no contexts retrieved: every answer claim is in no chunk"
        return reported_details(findings, summary, **details)
