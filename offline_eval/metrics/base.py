"""What a metric is, and the judge steps that several metrics share.

A metric works in two phases so that the run can be fast and the math stays pure:

1. ``collect`` — per sample, the judge calls, returning ``Evidence`` (or a reason it is not
   computable). Calls that need the retrieved context come last, so the context-heavy calls of one
   sample (faithfulness, recall, precision) run back to back and share the evaluated context.
2. ``score`` — over the whole batch at once: NumPy on padded verdict matrices (``scoring``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from offline_eval import prompts
from offline_eval.claims import claim_budget, grounded
from offline_eval.config import EvalConfig
from offline_eval.judge import Judge, JudgeError, JudgeRequest
from offline_eval.sample import Sample


@dataclass
class Usage:
    """Judge cost of one metric over a run. ``seconds``/``cache_hits``/``evaluated`` vary run to run."""

    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int = 0
    cache_hits: int = 0
    seconds: float = 0.0


@dataclass
class SampleContext:
    """What a metric needs to judge one sample."""

    sample: Sample
    lang: str
    judge: Judge
    config: EvalConfig
    usage: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))

    def ask(self, request: JudgeRequest) -> Any:
        """One judge call, accounted to ``request.metric``. Raises JudgeError; metrics record it."""
        result = self.judge.judge(request)
        u = self.usage[request.metric]
        u.judge_calls += 1
        u.prompt_tokens += result.prompt_tokens
        u.completion_tokens += result.completion_tokens
        u.evaluated_tokens += result.evaluated_tokens
        u.cache_hits += int(result.cached)
        u.seconds += 0.0 if result.cached else result.seconds
        return result.value


@dataclass
class Evidence:
    """A metric's findings for one sample: the data to score, or why there is none."""

    data: dict[str, Any] = field(default_factory=dict)
    not_computable: str | None = None


@dataclass
class Outcome:
    """Scores (None where not computable), the reason, and the evidence for the report."""

    scores: dict[str, float | None]
    not_computable: str | None
    details: dict[str, Any]


class Metric(Protocol):
    name: str
    scores: tuple[str, ...]  # the score names this metric reports

    def collect(self, ctx: SampleContext) -> Evidence: ...

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: Any) -> list[Outcome]: ...


def not_computable(name: str, reason: str) -> Outcome:
    return Outcome({name: None}, reason, {})


# ------------------------------------------------------------------ shared judge steps


def extract_claims(ctx: SampleContext, text: str, *, source: str, max_claims: int,
                   metric: str) -> tuple[list[str], list[str]]:
    """Split an answer or a reference into claims (no context needed).

    Returns (claims, dropped): ``dropped`` are extracted claims not grounded in the text (see
    ``offline_eval.claims``); they are reported but never scored.
    """
    max_claims = claim_budget(text, max_claims)
    request = JudgeRequest(
        system=prompts.SYSTEM[ctx.lang],
        shared="",
        task=prompts.extract_claims(text, ctx.sample.question, max_claims, ctx.lang, source=source),
        schema=prompts.claims_schema(max_claims),
        max_tokens=64 * max_claims + 32,
        metric=metric,
    )
    # Exact repeats and blank strings go; the count of claims *sent* on is what scores divide by.
    unique = list(dict.fromkeys(c.strip() for c in ctx.ask(request)["claims"] if c.strip()))
    kept = [c for c in unique if grounded(c, text, question=ctx.sample.question)]
    return kept, [c for c in unique if c not in kept]


@dataclass
class Window:
    """Part of a sample's context that fits the judge beside one task: (rank, text) pairs."""

    chunks: list[tuple[int, str]]
    truncated: list[int]  # ranks of chunks cut to fit on their own

    def block(self, lang: str) -> str:
        return prompts.context_block(self.chunks, lang)


def longest_fitting_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of ``text`` that ``fits`` (binary search on the cut point); "" if none does.

    Token counts grow with the prefix (a merge at the cut can move them by a token, which the search
    absorbs: the prefix returned was itself checked), so the tokenizer, not a character ratio, decides.
    """
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(text[:mid]):
            low = mid
        else:
            high = mid - 1
    return text[:low]


def context_windows(ctx: SampleContext, probe: JudgeRequest) -> list[Window]:
    """Pack the ranked chunks into as few windows as fit beside ``probe``'s task (usually one).

    A context longer than the judge's window is not an error: the caller judges each window and
    combines (a claim is supported if any window supports it; each chunk is judged in its window).
    Whether a window fits is decided by counting the tokens of its packed block, exactly as it will
    be sent; a chunk too large for a window on its own is cut to the longest prefix that fits.
    """
    room = ctx.judge.room_for_shared(probe)

    def fits(chunks: list[tuple[int, str]]) -> bool:
        return ctx.judge.count_tokens(prompts.context_block(chunks, ctx.lang)) <= room

    chunks = list(enumerate(ctx.sample.contexts, 1))
    if fits(chunks):
        return [Window(chunks, [])]
    cut: set[int] = set()
    for i, (rank, text) in enumerate(chunks):
        if not fits([(rank, text)]):
            kept = longest_fitting_prefix(text, lambda t, r=rank: fits([(r, t)]))
            if not kept:
                raise JudgeError(f"the judge's window ({ctx.judge.n_ctx} tokens) leaves no room for any context")
            chunks[i] = (rank, kept)
            cut.add(rank)
    windows: list[Window] = []
    current: list[tuple[int, str]] = []
    for chunk in chunks:
        if current and not fits(current + [chunk]):
            windows.append(Window(current, [r for r, _ in current if r in cut]))
            current = []
        current.append(chunk)
    windows.append(Window(current, [r for r, _ in current if r in cut]))
    return windows


def verify_claims(ctx: SampleContext, claims: Sequence[str], *, metric: str) -> tuple[list[bool], list[int]]:
    """Is each claim supported by the sample's context? One call per context window, OR-combined.

    Returns the verdicts (by claim position) and the ranks of chunks that had to be truncated.
    """
    def request(shared: str) -> JudgeRequest:
        return JudgeRequest(
            system=prompts.SYSTEM[ctx.lang],
            shared=shared,
            task=prompts.verify_claims(claims, ctx.lang),
            schema=prompts.verdicts_schema(keys),
            max_tokens=prompts.verdict_budget(len(claims)),
            metric=metric,
        )

    keys = prompts.claim_keys(len(claims))
    supported = [False] * len(claims)
    truncated: list[int] = []
    for window in context_windows(ctx, request("")):
        verdicts = prompts.read_verdicts(ctx.ask(request(window.block(ctx.lang))), keys)
        supported = [s or v for s, v in zip(supported, verdicts, strict=True)]
        truncated += window.truncated
    return supported, truncated


def judged(step: Callable[[], Evidence]) -> Evidence:
    """Run a metric's judge step, turning a judge failure into a stated not-computable reason."""
    try:
        return step()
    except JudgeError as exc:
        return Evidence(not_computable=f"judge failure: {exc}")


NO_CONTEXTS = "no contexts retrieved"


def check_sample(sample: Sample, *, need_answer: bool = False, need_contexts: bool = False,
                 need_reference: bool = False) -> str | None:
    """The reason a sample cannot be scored by a metric, before any judge call; None if it can."""
    if need_answer and not sample.answer.strip():
        return "empty answer"
    if need_contexts and not sample.contexts:
        return "no contexts"
    if need_reference and not (sample.reference_answer or "").strip():
        return "no reference answer"
    return None


class ClaimCoverage:
    """A metric of the form: split a text into claims, check each against the context, score the share.

    Faithfulness checks the answer's claims ("supported"); context recall the reference's ("covered").
    Subclasses say which text, which cap, and what the two verdicts are called. With no context
    retrieved the claims are still extracted and none is found: the score is 0 ÷ claims, by the formula,
    with the reason in the details (no judge call is needed to find nothing in nothing).
    """

    name: str
    source: str  # "answer" | "reference"
    labels: tuple[str, str]  # (verdict when found in the context, verdict when not)

    @property
    def scores(self) -> tuple[str, ...]:
        return (self.name,)

    def text(self, sample: Sample) -> str:
        raise NotImplementedError

    def max_claims(self, config: EvalConfig) -> int:
        raise NotImplementedError

    def precheck(self, sample: Sample) -> str | None:
        raise NotImplementedError

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = self.precheck(ctx.sample)
        if reason:
            return Evidence(not_computable=reason)

        def step() -> Evidence:
            claims, dropped = extract_claims(ctx, self.text(ctx.sample), source=self.source,
                                             max_claims=self.max_claims(ctx.config), metric=self.name)
            if not claims:
                what = "answer" if self.source == "answer" else "reference answer"
                return Evidence({"dropped_claims": dropped}, not_computable=f"no claims extracted from the {what}")
            if not ctx.sample.contexts:
                return Evidence({"claims": claims, "found": [False] * len(claims), "truncated_chunks": [],
                                 "dropped_claims": dropped, "reason": NO_CONTEXTS})
            found, truncated = verify_claims(ctx, claims, metric=self.name)
            return Evidence({"claims": claims, "found": found, "truncated_chunks": truncated,
                             "dropped_claims": dropped})

        return judged(step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: Any = None) -> list[Outcome]:
        from offline_eval import scoring

        verdicts, mask = scoring.pad([e.data.get("found", []) for e in evidence], dtype=bool)
        values, computable = scoring.fraction_true(verdicts, mask)
        yes, no = self.labels
        outcomes = []
        for ev, value, ok in zip(evidence, values, computable):
            # Dropped claims (extracted, not found in the text) are reported even when none was kept.
            details: dict[str, Any] = {"dropped_claims": ev.data["dropped_claims"]} if ev.data.get("dropped_claims") \
                else {}
            if ev.not_computable or not ok:
                outcomes.append(Outcome({self.name: None}, ev.not_computable or "no claims", details))
                continue
            claims = [{"text": c, "verdict": yes if f else no} for c, f in zip(ev.data["claims"], ev.data["found"])]
            details.update({"claims": claims, f"n_{yes}": int(sum(ev.data["found"])), "n_claims": len(claims)})
            if ev.data["truncated_chunks"]:
                details["truncated_chunks"] = ev.data["truncated_chunks"]
            if ev.data.get("reason"):
                details["reason"] = ev.data["reason"]
            outcomes.append(Outcome({self.name: float(value)}, None, details))
        return outcomes
