"""Metrics of the form: split a text into claims, check each against the retrieved context, score the share.

Faithfulness checks the answer's claims ("supported"); context recall the reference's ("covered").
The two judge tasks they ask, and the steps around them, live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from offline_eval import prompts, scoring
from offline_eval.claims import (
    claim_budget,
    clauses,
    content_units,
    grounded,
    sentences,
    uncovered_sentences,
    unstated_numbers,
)
from offline_eval.evidence import ContextSentences, focus
from offline_eval.judge import JudgeResult
from offline_eval.metrics.base import (
    NO_CONTEXTS,
    EmbedFn,
    Evidence,
    Finding,
    Metric,
    Outcome,
    SampleContext,
    judged,
    reported_details,
)
from offline_eval.metrics.windows import ask_over_context
from offline_eval.prompts import Task, Verdict, YesNoTask, claim_keys, defuse, string_list_schema
from offline_eval.sample import Sample


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"claim_{i}: {defuse(item)}" for i, item in enumerate(items, 1))


@dataclass(frozen=True)
class ExtractClaims(Task[tuple[list[str], list[str]]]):
    """Split an answer (``source='answer'``) or a reference answer (``'reference'``) into claims.

    The answer is (claims, dropped): exact repeats and blank strings go, and ``dropped`` are claims not
    grounded in the text (see ``offline_eval.claims``), reported but never scored.
    """

    source_text: str
    question: str
    max_claims: int
    source: str  # "answer" | "reference"

    def text(self, lang: str) -> str:
        text, question, max_claims, source = self.source_text, self.question, self.max_claims, self.source
        if lang == "zh":
            what = "回答" if source == "answer" else "参考答案"
            return (
                f"<question>\n{defuse(question)}\n</question>\n<{source}>\n{defuse(text)}\n</{source}>\n\n"
                f"请把上面的{what}拆分成最多 {max_claims} 条简短、独立的事实陈述。只能用{what}里写了的内容，"
                "不要添加任何其他事实，哪怕是正确的。每条都要单独读得懂"
                "（把“它”“这个”等指代换成具体对象），只保留可以核对真假的事实；寒暄、客套、"
                f"表示不确定的话不算，也不要写关于{what}本身的话（如“{what}提到……”）。"
                f"如果{what}没有任何事实陈述，返回空列表。用中文写。"
            )
        what = "answer" if source == "answer" else "reference answer"
        return (
            f"<question>\n{defuse(question)}\n</question>\n<{source}>\n{defuse(text)}\n</{source}>\n\n"
            f"Break the {what} above into at most {max_claims} short, self-contained factual claims. Use only "
            f"what the {what} itself states: never add facts, even true ones. Each claim must make sense on "
            "its own (replace pronouns with what they refer to) and state one checkable fact. Leave out greetings, hedges and statements with no factual content, and never "
            f"write claims about the {what} itself (such as \"the {what} says...\"). If the {what} makes no "
            "factual claim, return an empty list. Write the claims in English."
        )

    @property
    def schema(self) -> dict[str, Any]:
        return string_list_schema("claims", 0, self.max_claims)

    @property
    def max_tokens(self) -> int:
        return 64 * self.max_claims + 32

    def estimate(self) -> dict[str, Any]:
        """One claim per clause, up to the cap: the judge's own extractions are about that many."""
        return {"claims": [c[:160] for c in clauses(self.source_text)][: self.max_claims]}

    def parse(self, result: JudgeResult) -> tuple[list[str], list[str]]:
        unique = list(dict.fromkeys(c.strip() for c in result.value["claims"] if c.strip()))
        kept = [c for c in unique if grounded(c, self.source_text, question=self.question)]
        return kept, [c for c in unique if c not in kept]


# What a claim is checked against: the shared text before the task. (zh, en) names of it.
_SOURCES = {
    "context": ("资料", "context"),
    "reference": ("参考答案", "reference answer"),
    "answer": ("回答", "answer"),
}


@dataclass(frozen=True)
class VerifyClaims(YesNoTask):
    """For each claim: does the text before the task support it? The retrieved context (faithfulness,
    context recall), the reference answer or the answer (answer correctness)."""

    claims: tuple[str, ...]
    against: str = "context"  # "context" | "reference" | "answer"
    # Per claim, the numbers it states that the text it is checked against holds nowhere
    # (``unstated_numbers``): said to the judge, which still decides (a sum or a conversion may be right).
    unstated: tuple[tuple[str, ...], ...] = ()

    @property
    def keys(self) -> list[str]:
        return claim_keys(len(self.claims))

    def _notes(self, lang: str) -> str:
        zh, en = _SOURCES[self.against]
        notes = [(f"注意：上面的{zh}里没有出现 {key} 中的数字 {'、'.join(numbers)}。" if lang == "zh" else
                  f"Note: the {en} above nowhere gives the number{'s' if len(numbers) > 1 else ''} "
                  f"{', '.join(numbers)} that {key} states.")
                 for key, numbers in zip(self.keys, self.unstated) if numbers]
        return "".join(f"\n{note}" for note in notes)

    def text(self, lang: str) -> str:
        claims = self.claims
        zh, en = _SOURCES[self.against]
        if lang == "zh":
            return (
                f"<claims>\n{_numbered(claims)}\n</claims>\n\n"
                f"请逐条判断每个 claim_N：上面{zh}里明确写了或能直接推出这条陈述，答 \"yes\"；"
                f"{zh}与之矛盾或根本没有提到，答 \"no\"。只依据{zh}判断，不要用你自己的知识。" + self._notes(lang)
            )
        return (
            f"<claims>\n{_numbered(claims)}\n</claims>\n\n"
            f"For each claim_N: answer \"yes\" if the {en} above states it or directly implies it; answer "
            f"\"no\" if the {en} contradicts it or does not mention it. Judge only against the {en}, "
            "not your own knowledge." + self._notes(lang)
        )


def extract_claims(ctx: SampleContext, text: str, *, source: str, max_claims: int) -> tuple[list[str], list[str]]:
    """Split an answer or a reference into claims (no context needed): (claims, dropped).

    At most one claim per clause (``claim_budget``); the count of claims *sent* on is what scores divide by.
    """
    return ctx.ask(ExtractClaims(text, ctx.sample.question, claim_budget(text, max_claims), source))


@dataclass(frozen=True)
class ClaimSet:
    """The claims of a text as every claim metric checks them: the extracted claims, then each sentence
    they do not cover, as written. ``dropped`` are extractions not grounded in the text (never scored)."""

    claims: list[str]
    dropped: list[str]
    n_extracted: int
    n_sentences: int
    n_missed: int  # sentences no extracted claim covers (each checked as written, unless extracted verbatim)

    @property
    def coverage(self) -> float:
        """The share of the text's sentences the extracted claims covered."""
        return round(1 - self.n_missed / self.n_sentences, 6) if self.n_sentences else 1.0


def claim_set(ctx: SampleContext, text: str, *, source: str, max_claims: int) -> ClaimSet:
    """The claims of an answer or a reference. One extraction call, made once per sample whatever
    metrics ask (faithfulness and answer correctness share the answer's; context recall the reference's)."""
    text_sentences = sentences(text)
    # The cap grows with the text: a twelve-sentence answer may hold twelve claims.
    extracted, dropped = extract_claims(ctx, text, source=source, max_claims=max(max_claims, len(text_sentences)))
    # Coverage before accuracy: a sentence that no extracted claim covers is checked as written, so a
    # hallucination the extraction left out is still caught.
    missed = [text_sentences[i]
              for i in uncovered_sentences(text_sentences, extracted, question=ctx.sample.question)]
    return ClaimSet(extracted + [s for s in missed if s not in extracted], dropped, len(extracted),
                    len(text_sentences), len(missed))


def sentence_set(text: str, question: str) -> ClaimSet:
    """Every sentence of a text, each checked as written: no extraction call, and no claim writer to
    reword, add to or leave out what the text says. A sentence of one or two content units ("Billie
    Jean King.") states nothing without its question, so it is checked after it."""
    checked = [s if len(content_units(s)) > 2 else f"{question.strip()} {s}" for s in sentences(text)]
    return ClaimSet(checked, [], len(checked), len(checked), 0)


@dataclass(frozen=True)
class FocusedBlock:
    """One claim's context block and its length in the judge's tokens (counted once, when it is chosen)."""

    text: str
    n_tokens: int


def focused_blocks(ctx: SampleContext, claims: Sequence[str], context: ContextSentences, k: int
                   ) -> list[FocusedBlock] | None:
    """Each claim's context block of the ``k`` sentences of ``context`` (the sample's, split once) that
    share most with it and the question (``evidence.focus``); None where the whole context is read
    instead: it has no more than ``k`` sentences, or the claims' blocks together are no shorter than
    the context. The whole context is evaluated once and every claim's call after it shares that
    state, so focusing an answer of many sentences on a context of long ones would read more, not less
    (ARES's documentation pages)."""
    if k <= 0 or len(context) <= k or not claims:
        return None
    shown = [focus(context, claim, ctx.sample.question, k) for claim in claims]
    count = ctx.judge.count_tokens
    texts = [prompts.context_block(chunks, ctx.lang) for chunks in shown]
    blocks = [FocusedBlock(text, count(text)) for text in texts]
    whole = prompts.context_block(list(enumerate(ctx.sample.contexts, 1)), ctx.lang)
    return blocks if sum(block.n_tokens for block in blocks) < count(whole) else None


def verify_claims(ctx: SampleContext, claims: Sequence[str], *, each_alone: bool = False,
                  focused: Sequence[FocusedBlock] | None = None) -> tuple[list[Verdict], list[int]]:
    """Is each claim supported by the sample's context? One call per context window, OR-combined; with
    ``each_alone``, one call per claim and window, each asking about that claim only and telling the
    judge which of its numbers the context never gives; and with ``focused`` blocks as well (one per
    claim, ``focused_blocks``), each claim is shown its own block in one call, where that fits.

    Returns a verdict per claim (yes if any window says yes; its probability the highest any window
    gave, unknown if a window gave none) and the ranks of chunks that had to be truncated.
    """
    if not each_alone:
        return ask_over_context(ctx, VerifyClaims(tuple(claims)))
    found: list[Verdict] = []
    truncated: set[int] = set()
    context = "\n".join(ctx.sample.contexts)
    for i, claim in enumerate(claims):
        # Numbers are looked for in the whole context: one it gives elsewhere is not "nowhere".
        unstated = unstated_numbers(claim, context)
        task = VerifyClaims((claim,), unstated=(tuple(unstated),) if unstated else ())
        block = focused[i] if focused else None
        if block and block.n_tokens <= ctx.judge.room_for_shared(ctx.request(task)):
            found += ctx.ask(task, block.text)
            continue
        # Read whole (in windows if need be): not focused, or kept sentences too long for the window.
        verdicts, cut = ask_over_context(ctx, task)
        found += verdicts
        truncated.update(cut)
    return found, sorted(truncated)


class ClaimCoverage(Metric):
    """Split a text into claims, check each against the context, score the share found (or, under
    probability scoring, the mean P(found)).

    Subclasses say which text, which parameter caps it, and what the two verdicts are called. With no
    context retrieved the claims are still extracted and none is found: the score is 0 ÷ claims, by the
    formula, with the reason in the details (no judge call is needed to find nothing in nothing).
    """

    source: ClassVar[str]  # "answer" | "reference"
    # "claims": claims extracted by the judge, then every sentence they leave uncovered, as written (the
    # RAGAS way); "sentences": every sentence as written, no extraction (``sentence_set``).
    checks: ClassVar[str] = "claims"
    # Each claim asked about in its own call (after the same context, whose evaluated state the judge
    # keeps, so a call costs only the claim's tokens) rather than all of them keyed in one: in one call,
    # the verdicts after the first are read after the judge's own earlier answers.
    each_alone: ClassVar[bool] = False
    labels: ClassVar[tuple[str, str]]  # (verdict when found in the context, verdict when not)
    claim_label: ClassVar[str]  # what a claim is called in the report: "claim", "reference claim"

    def text(self, sample: Sample) -> str:
        raise NotImplementedError

    def max_claims(self) -> int:
        raise NotImplementedError

    def evidence_sentences(self) -> int:
        """Context sentences each claim is shown when the context has more and that reads less (0: the
        whole context; ``focused_blocks``)."""
        return 0

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = self.missing_input(ctx.sample)
        if reason:
            return Evidence(not_computable=reason)

        def step() -> Evidence:
            text = self.text(ctx.sample)
            found_claims = (sentence_set(text, ctx.sample.question) if self.checks == "sentences" else
                            claim_set(ctx, text, source=self.source, max_claims=self.max_claims()))
            claims, dropped = found_claims.claims, found_claims.dropped
            coverage = {"coverage": found_claims.coverage, "n_sentences": found_claims.n_sentences,
                        "n_extracted": found_claims.n_extracted}
            if not claims:
                what = "answer" if self.source == "answer" else "reference answer"
                return Evidence({"dropped_claims": dropped}, not_computable=(
                    f"the {what} has no sentence to check" if self.checks == "sentences" else
                    f"no claims extracted from the {what}"))
            if not ctx.sample.contexts:
                return Evidence({"claims": claims, "found": [Verdict(False)] * len(claims), "truncated_chunks": [],
                                 "dropped_claims": dropped, "reason": NO_CONTEXTS, **coverage})
            k = self.evidence_sentences()
            context = ContextSentences.of(ctx.sample.contexts) if self.each_alone and k else None
            blocks = focused_blocks(ctx, claims, context, k) if context else None
            found, truncated = verify_claims(ctx, claims, each_alone=self.each_alone, focused=blocks)
            focused = {"evidence_sentences": k, "context_sentences": len(context)} if blocks else {}
            return Evidence({"claims": claims, "found": found, "truncated_chunks": truncated,
                             "dropped_claims": dropped, **coverage, **focused})

        return judged(step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        values, computable = scoring.fraction_true(*self.verdict_values([e.data.get("found", []) for e in evidence]))
        yes, no = self.labels
        outcomes = []
        for ev, value, ok in zip(evidence, values, computable):
            # Dropped claims (extracted, not found in the text) are reported even when none was kept.
            details: dict[str, Any] = {"dropped_claims": ev.data["dropped_claims"]} if ev.data.get("dropped_claims") \
                else {}
            if ev.not_computable or not ok:
                outcomes.append(self.not_computable(ev.not_computable or "no claims", details))
                continue
            verdicts = ev.data["found"]
            claims = [{"text": c, "verdict": yes if v.yes else no} for c, v in zip(ev.data["claims"], verdicts)]
            details.update({"claims": claims, f"n_{yes}": sum(v.yes for v in verdicts), "n_claims": len(claims)})
            if ev.data["truncated_chunks"]:
                details["truncated_chunks"] = ev.data["truncated_chunks"]
            if ev.data.get("reason"):
                details["reason"] = ev.data["reason"]
            n_extracted = ev.data["n_extracted"]
            details.update(coverage=ev.data["coverage"], n_sentences=ev.data["n_sentences"])
            if "evidence_sentences" in ev.data:
                details.update(evidence_sentences=ev.data["evidence_sentences"],
                               context_sentences=ev.data["context_sentences"])
            if n_extracted < len(claims):
                details["unclaimed_sentences"] = ev.data["claims"][n_extracted:]
            findings = [Finding(self.claim_label if i < n_extracted else f"{self.claim_label} (a sentence no claim "
                                "covered, checked as written)", c, (yes if v.yes else no).replace("_", " "), v.yes,
                                v.p_yes)
                        for i, (c, v) in enumerate(zip(ev.data["claims"], verdicts))]
            summary = f"{details[f'n_{yes}']} of {len(claims)} {self.claim_label}s {yes}"
            if n_extracted < len(claims):
                summary += f" ({len(claims) - n_extracted} checked as written: no extracted claim covered them)"
            if "evidence_sentences" in ev.data:
                summary += (f"; each checked against the {ev.data['evidence_sentences']} of the context's "
                            f"{ev.data['context_sentences']} sentences that share most with it")
            if self.soft:
                summary += f"; score = the mean probability that a {self.claim_label} is {yes.replace('_', ' ')}"
            outcomes.append(Outcome({self.name: float(value)}, None, reported_details(findings, summary, **details)))
        return outcomes
