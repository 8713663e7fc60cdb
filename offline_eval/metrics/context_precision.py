"""Context precision: are the retrieved chunks useful, and are the useful ones ranked first?

Judge: one call per chunk, in rank order, each given the question and the reference answer (or the
answer when there is no reference) as a shared prefix, then the chunk, whole. Two scores:
``context_precision`` = rank-aware average precision (the RAGAS meaning) and
``context_relevant_ratio`` = relevant ÷ total chunks (the noise ratio). Under probability scoring
each chunk counts as its P(relevant), a soft relevance.

One chunk per call, not all chunks in one: on the hand-labelled set the 1.5B judge, shown three
chunks at once, answered yes/no/yes whatever their content; judged one at a time it ranks them right.
The calls share their prefix, so each costs only its chunk's tokens.

A chunk that states the reference answer word for word (``states_reference``) is relevant without a
judge call. The 1.5B judge underrated exactly these: on HotpotQA dev it gave the paragraph saying
Shirley Temple "served as Chief of Protocol of the United States", for the question whose reference
answer is "Chief of Protocol", P(relevant) 0.34.

Under probability scoring a judged chunk counts as (1 − w)·P(relevant) + w·its word coverage: the
share of the question's and reference's (or answer's) content words it holds, rare ones counting more
(``evidence.query_coverage``), w = ``chunk_word_percent`` / 100 (20 by default). The judge's P reads
a paragraph about the question's bridge entity as barely relevant, and its words say otherwise: on
HotpotQA dev's first 30 questions (300 paragraphs) the chunks' ROC AUC went from 0.933 to 0.945 at
w = 0.2, chosen there, and on dev's next 50 (500 paragraphs, not used to choose) from 0.904 to 0.929;
on ARES dev (60 items, 30/30, one documentation page each) context relevance from 0.658 to 0.719.
Chinese chunks count as their P alone: no labelled Chinese set has measured the mix for chunks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offline_eval import scoring
from offline_eval.claims import content_units
from offline_eval.evidence import query_coverage
from offline_eval.judge import JudgeError
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
from offline_eval.metrics.windows import longest_fitting_prefix
from offline_eval.prompts import Verdict, YesNoTask, defuse
from offline_eval.sample import Sample

_PREVIEW = 160


# Answers that a chunk can contain without stating them: a yes/no question's reference.
_BARE_ANSWERS = frozenset({"yes", "no", "true", "false", "是", "否", "不是", "对", "不对", "有", "没有"})


def states_reference(chunk: str, reference: str, question: str) -> bool:
    """Whether ``chunk`` contains the reference answer word for word (case and spacing aside; whole
    words where it begins or ends with a letter or digit), and the reference says something the
    question does not.

    A short reference found in a chunk ("Chief of Protocol", "3,677 seated") is that chunk stating the
    answer. A reference made of the question's own words ("Terry Richardson" for "Who is older, Annie
    Morton or Terry Richardson?") or a bare yes/no is not: every chunk on the topic holds it. On
    HotpotQA dev (30 questions, 300 paragraphs) this holds for 34 of the 60 gold paragraphs and 7 of the
    240 distractors; counting those chunks relevant took the AUC of chunk relevance from 0.879 to 0.933
    and its balanced accuracy at P ≥ 0.5 from 0.558 to 0.802.
    """
    ref = " ".join(reference.split()).strip(" .。")
    if not ref or ref.lower() in _BARE_ANSWERS or not (content_units(ref) - content_units(question)):
        return False
    start = r"(?<![\w])" if ref[0].isascii() and ref[0].isalnum() else ""
    end = r"(?![\w])" if ref[-1].isascii() and ref[-1].isalnum() else ""
    return re.search(start + re.escape(ref) + end, " ".join(chunk.split()), re.IGNORECASE) is not None


def chunk_question(question: str, basis: str, lang: str, *, basis_is_reference: bool) -> str:
    """The shared part of a sample's chunk-relevance calls: the question and what a good answer says."""
    tag = "reference" if basis_is_reference else "answer"
    head = "问题和答案：" if lang == "zh" else "Question and answer:"
    return f"{head}\n<question>\n{defuse(question)}\n</question>\n<{tag}>\n{defuse(basis)}\n</{tag}>\n\n"


@dataclass(frozen=True)
class JudgeChunk(YesNoTask):
    """One retrieved chunk: is it relevant to the question above? (One chunk per call: a small judge
    asked about several chunks at once answered in a yes/no rhythm regardless of content.)

    "Relevant: states the answer, or a fact about what the question or answer is about" rather than
    "contains information the answer gives": on HotpotQA dev (4 questions, 40 paragraphs) the 1.5B
    judge's P(yes) separated gold from distractor paragraphs with AUC 0.945 against 0.832, since a
    multi-hop question's bridge paragraph holds no word of the answer.
    """

    chunk: str

    @property
    def keys(self) -> list[str]:
        return ["relevant"]

    def text(self, lang: str) -> str:
        chunk = self.chunk
        if lang == "zh":
            return (
                f"检索到的资料片段：\n<chunk>\n{defuse(chunk)}\n</chunk>\n\n"
                "这个片段和上面的问题相关吗？如果它写出了答案，或者写了问题或答案所涉及的人、事物或事件的情况"
                "（是通向答案的一步），答 \"yes\"；如果讲的是别的事情，答 \"no\"。"
            )
        return (
            f"Retrieved chunk:\n<chunk>\n{defuse(chunk)}\n</chunk>\n\n"
            "Is this chunk relevant to the question above? \"yes\" if it states the answer, or a fact about a "
            "person, thing or event the question or the answer is about (a step towards the answer); \"no\" if it "
            "is about something else."
        )


@dataclass(frozen=True)
class ContextPrecisionParams:
    chunk_word_percent: int = param(20, minimum=0, maximum=100, help="Percent of a judged chunk's relevance "
                                    "taken from the share of the question's and reference's words it holds "
                                    "(probability scoring; 0: the judge's P(relevant) alone).")


@register
class ContextPrecision(Metric):
    name = "context_precision"
    scores = (
        ScoreSpec("context_precision", 0.65, "too much retrieval noise: relevant chunks are missing or ranked low",
                  "average precision over the ranks of the relevant chunks"),
        ScoreSpec("context_relevant_ratio", None, "too much retrieval noise: many retrieved chunks are irrelevant",
                  "relevant chunks ÷ all chunks"),
    )
    requires = ("contexts",)
    Params = ContextPrecisionParams

    def collect(self, ctx: SampleContext) -> Evidence:
        sample = ctx.sample
        reason = self.missing_input(sample)
        reference = (sample.reference_answer or "").strip()
        if not reason and not reference and not sample.answer.strip():
            reason = "no reference answer and an empty answer: nothing shows what is useful"
        if reason:
            return Evidence(not_computable=reason)
        shared = chunk_question(sample.question, sample.reference_answer if reference else sample.answer,
                                ctx.lang, basis_is_reference=bool(reference))

        def step() -> Evidence:
            relevant: list[Verdict] = []
            truncated: list[int] = []
            stated: list[int] = []  # ranks of the chunks that state the reference answer: no judge call
            shared_tokens = ctx.judge.count_tokens(shared)  # the same for every chunk of the sample

            def fits(chunk: str) -> bool:
                return ctx.judge.room_for_shared(ctx.request(JudgeChunk(chunk), shared)) >= shared_tokens

            for rank, chunk in enumerate(sample.contexts, 1):
                if reference and states_reference(chunk, reference, sample.question):
                    relevant.append(Verdict(True))
                    stated.append(rank)
                    continue
                if not fits(chunk):
                    # The chunk alone overflows the judge's window: judge as much of it as fits, and say so.
                    chunk = longest_fitting_prefix(chunk, fits)
                    if not chunk:
                        raise JudgeError(f"the judge's window ({ctx.judge.n_ctx} tokens) leaves no room for a chunk")
                    truncated.append(rank)
                relevant += ctx.ask(JudgeChunk(chunk), shared)
            return Evidence({"relevant": relevant, "truncated_chunks": truncated, "states_reference": stated,
                             "basis": "reference" if reference else "answer", "lang": ctx.lang})

        return judged(step)

    @classmethod
    def truth_scores(cls, details: Mapping[str, Any], ok: Sequence[bool]) -> dict[str, float] | None:
        """Average precision and relevant ratio over a reviewer's relevance verdicts, chunks in rank order."""
        if not ok:
            return None
        relevant, mask = scoring.pad([[bool(v) for v in ok]], dtype=bool)
        ap, _ = scoring.average_precision(relevant, mask)
        ratio, _ = scoring.fraction_true(relevant, mask)
        return {"context_precision": float(ap[0]), "context_relevant_ratio": float(ratio[0])}

    def word_weight(self, ev: Evidence) -> float:
        """The share of a judged chunk's relevance that its word coverage gives: none under hard verdicts,
        and none in Chinese, where no labelled set has measured it for chunks (the same kind of mix,
        tried on faithfulness, lowered OCNLI dev's AUC from 0.873 to 0.868)."""
        if not self.soft or ev.data.get("lang") == "zh":
            return 0.0
        return self.params.chunk_word_percent / 100

    def relevance(self, samples: Sequence[Sample], evidence: Sequence[Evidence]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(relevance, word coverage, mask), samples × chunks in rank order: what each chunk counts as —
        its verdict or P(relevant), mixed with its word coverage where the judge decided it."""
        relevance, mask = self.verdict_values([e.data.get("relevant", []) for e in evidence])
        coverage_rows, weight_rows = [], []
        for sample, ev in zip(samples, evidence):
            n, w = len(ev.data.get("relevant", [])), self.word_weight(ev)
            basis = sample.reference_answer if ev.data.get("basis") == "reference" else sample.answer
            coverage_rows.append(query_coverage(sample.contexts[:n], f"{sample.question}\n{basis}") if w
                                 else [0.0] * n)
            stated = set(ev.data.get("states_reference", []))
            weight_rows.append([0.0 if rank in stated else w for rank in range(1, n + 1)])
        (coverage, _), (weights, _) = scoring.pad(coverage_rows), scoring.pad(weight_rows)
        return scoring.mix_word_coverage(relevance, coverage, weights), coverage, mask

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        relevance, coverage, mask = self.relevance(samples, evidence)
        ap, computable = scoring.average_precision(relevance, mask)
        ratio, _ = scoring.fraction_true(relevance, mask)
        outcomes = []
        for i, (sample, ev, a, r, ok) in enumerate(zip(samples, evidence, ap, ratio, computable)):
            if ev.not_computable or not ok:
                outcomes.append(self.not_computable(ev.not_computable or "no contexts"))
                continue
            stated = set(ev.data.get("states_reference", []))
            w = self.word_weight(ev)
            chunks = [{"rank": k, "relevant": v.yes, "preview": text[:_PREVIEW]} | (
                      {"states_reference": True} if k in stated else {}) | (
                      {"word_coverage": float(coverage[i, k - 1]), "relevance": float(relevance[i, k - 1])}
                      if w else {})
                      for k, (v, text) in enumerate(zip(ev.data["relevant"], sample.contexts), 1)]
            details: dict[str, Any] = {"chunks": chunks, "average_precision": float(a), "relevant_ratio": float(r),
                                       "judged_against": ev.data["basis"]}
            if ev.data["truncated_chunks"]:
                details["truncated_chunks"] = ev.data["truncated_chunks"]
            findings = [Finding(f"chunk at rank {c['rank']}", c["preview"],
                                "relevant: states the reference answer" if c.get("states_reference") else
                                "relevant" if c["relevant"] else "irrelevant", c["relevant"], v.p_yes)
                        for c, v in zip(chunks, ev.data["relevant"])]
            n_relevant = sum(c["relevant"] for c in chunks)
            summary = (f"{n_relevant} of {len(chunks)} chunks relevant to the {ev.data['basis']}; "
                       f"relevant ratio {float(r):.3f}")
            if w:
                summary += (f"; a judged chunk counts as {1 - w:.2f} × P(relevant) + {w:.2f} × the share of the "
                            f"question's and {ev.data['basis']}'s words it holds")
            outcomes.append(Outcome({"context_precision": float(a), "context_relevant_ratio": float(r)}, None,
                                    reported_details(findings, summary, **details)))
        return outcomes
