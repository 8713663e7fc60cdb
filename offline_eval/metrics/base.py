"""What a metric is, and the registry of metrics.

A metric is one module holding one ``Metric`` subclass decorated with ``@register``. The class declares
everything the rest of offline-eval needs to know about it, so that the configuration, the gate, the
reports and ``compare`` never name a metric:

- ``scores``: the scores it reports (``ScoreSpec``: name, default threshold, what a failure means);
- ``requires``: the sample fields without which it is not computable (answer / contexts / reference);
- ``Params``: a small dataclass of its parameters (settings, CLI flags and ``run.params`` come from it);
- ``needs_embedder``: whether it embeds text.

It works in two phases so that the run can be fast and the math stays pure:

1. ``collect`` — per sample, the judge calls, returning ``Evidence`` (or a reason it is not
   computable). Calls that need the retrieved context come last, so the context-heavy calls of one
   sample (faithfulness, recall, precision) run back to back and share the evaluated context.
2. ``score`` — over the whole batch at once: NumPy on padded verdict matrices (``scoring``). Each
   ``Outcome`` carries the scores and the evidence for the report: metric-specific details plus the
   generic ``findings`` (label, text, verdict, probability) and a one-line ``summary`` that every
   report format shows.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

from offline_eval import scoring
from offline_eval.judge import Judge, JudgeError, Usage
from offline_eval.prompts import Task, Verdict
from offline_eval.sample import Sample

T = TypeVar("T")

# embed(texts, languages) -> unit vectors; the runner routes each text to its language's embedder.
EmbedFn = Callable[[Sequence[str], Sequence[str]], np.ndarray]
VERDICT_SCORING = ("hard", "probability")
PROBABILITY_DIGITS = 6


@dataclass(frozen=True)
class ScoreSpec:
    """One score a metric reports."""

    name: str
    threshold: float | None  # the default gate threshold; None: reported, not gated unless asked
    failure: str  # what a score below its threshold means for the RAG system, in the words users act on
    description: str = ""  # how the score is computed, in one line
    # True: higher is better (every gated score). False: lower is better (hallucination); None: neither
    # (a share that describes, like self-knowledge). Only higher-is-better scores can be gated.
    higher_is_better: bool | None = True


@dataclass(frozen=True)
class NoParams:
    """A metric without parameters."""


def param(default: int, *, minimum: int, help: str, maximum: int | None = None) -> Any:
    """A metric parameter: an integer setting (``--flag``, TOML key, ``evaluate()`` keyword) with its floor
    and, where it has one, its ceiling."""
    return field(default=default, metadata={"minimum": minimum, "maximum": maximum, "help": help})


@dataclass(frozen=True)
class Finding:
    """One item the judge decided on, as every report shows it.

    ``ok`` says whether the item counts for the score (True), against it (False), or is graded
    rather than decided (None: a similarity). A decided item is a yes/no verdict of the judge and
    carries ``probability``, the judge's P(yes) for its question (None where the backend reports none).
    """

    label: str  # what the item is: "claim", "chunk at rank 2", "generated question"
    text: str
    verdict: str  # "supported", "irrelevant", "similarity 0.410"
    ok: bool | None
    probability: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "text": self.text, "verdict": self.verdict, "ok": self.ok}
        if self.ok is not None:
            out["probability"] = None if self.probability is None else round(self.probability, PROBABILITY_DIGITS)
        return out


@dataclass
class SampleContext:
    """What a metric needs to judge one sample, and the judge cost of that sample (its own, per metric).

    ``answers`` is shared by every metric of the sample: a question already asked for this sample (the
    same task after the same shared text) is answered from it, without a judge call. So answer
    correctness reuses the claims faithfulness and context recall extracted, and the cost of each call
    is accounted to the metric that made it.
    """

    sample: Sample
    lang: str
    judge: Judge
    metric: str = ""
    usage: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))
    answers: dict[tuple[Task[Any], str], Any] = field(default_factory=dict)

    def request(self, task: Task[Any], shared: str = ""):
        """The judge call asking ``task`` after ``shared`` text for this sample and metric."""
        return task.request(self.lang, shared, self.metric)

    def ask(self, task: Task[T], shared: str = "") -> T:
        """One judge call, accounted to this metric, parsed by its task; a question this sample already
        asked is answered again without a call. Raises JudgeError; metrics record it."""
        key = (task, shared)
        if key not in self.answers:
            result = self.judge.judge(self.request(task, shared))
            self.usage[self.metric].record(result)
            self.answers[key] = task.parse(result)
        return self.answers[key]


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
    # Why one score of a metric is missing while the others were computed ({score: reason}).
    score_reasons: dict[str, str] = field(default_factory=dict)


def reported_details(findings: Sequence[Finding], summary: str, **details: Any) -> dict[str, Any]:
    """A sample's details for the report: the metric's own keys plus the generic findings and summary."""
    return {**details, "findings": [f.to_dict() for f in findings], "summary": summary}


NO_CONTEXTS = "no contexts retrieved"
_MISSING = {
    "answer": lambda s: "empty answer" if not s.answer.strip() else None,
    "contexts": lambda s: "no contexts" if not s.contexts else None,
    "reference": lambda s: "no reference answer" if not (s.reference_answer or "").strip() else None,
}


def judged(step: Callable[[], Evidence]) -> Evidence:
    """Run a metric's judge step, turning a judge failure into a stated not-computable reason."""
    try:
        return step()
    except JudgeError as exc:
        return Evidence(not_computable=f"judge failure: {exc}")


class Metric(ABC):
    """A metric: declare the class attributes, implement ``collect`` and ``score``, decorate with ``@register``."""

    name: ClassVar[str]
    scores: ClassVar[tuple[ScoreSpec, ...]]
    requires: ClassVar[tuple[str, ...]] = ()  # of "answer", "contexts", "reference"
    Params: ClassVar[type] = NoParams
    needs_embedder: ClassVar[bool] = False
    default: ClassVar[bool] = True  # run when no metric list is given (False: only when named)

    def __init__(self, params: Any = None, *, verdict_scoring: str = "hard"):
        self.params = self.Params() if params is None else params
        # "probability": yes/no verdicts count as the judge's P(yes) instead of 1 or 0 where it gave one.
        self.soft = verdict_scoring == "probability"

    @classmethod
    def score_names(cls) -> tuple[str, ...]:
        return tuple(s.name for s in cls.scores)

    def verdict_values(self, rows: Sequence[Sequence[Verdict]]) -> tuple[np.ndarray, np.ndarray]:
        """Per sample, what each yes/no verdict counts as (1 or 0, or the judge's P(yes) under probability
        scoring where it gave one), padded, and the mask of real cells."""
        hard, mask = scoring.pad([[v.yes for v in row] for row in rows], dtype=bool)
        probability, known = scoring.pad_optional([[v.p_yes for v in row] for row in rows])
        return scoring.verdict_values(hard, probability, known, soft=self.soft), mask

    def missing_input(self, sample: Sample) -> str | None:
        """Why a sample cannot be scored by this metric before any judge call; None if it can."""
        return next((reason for need in self.requires if (reason := _MISSING[need](sample))), None)

    def not_computable(self, reason: str, details: dict[str, Any] | None = None) -> Outcome:
        return Outcome({name: None for name in self.score_names()}, reason, details or {})

    @classmethod
    def truth_scores(cls, details: Mapping[str, Any], ok: Sequence[bool]) -> dict[str, float] | None:
        """A sample's scores as a person's verdicts give them: ``ok[i]`` says whether the sample's i-th
        decided finding (a yes/no verdict, in the order of its ``findings``) truly counts for the score,
        as a reviewer decided it. ``details`` is the sample's details for this metric, as reported.

        Hard-verdict formulas (a person's verdict has no probability). None when the verdicts do not
        determine the scores. The default is the share of items that count, for every score (faithfulness,
        context recall); a metric with another formula overrides it. Used by prediction-powered inference
        (``offline_eval.review``) as the "true" value a judge's score is corrected towards.
        """
        if not ok:
            return None
        value = sum(bool(v) for v in ok) / len(ok)
        return {name: value for name in cls.score_names()}

    @abstractmethod
    def collect(self, ctx: SampleContext) -> Evidence:
        """Judge one sample."""

    @abstractmethod
    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn) -> list[Outcome]:
        """Score the whole batch from its evidence."""


# ------------------------------------------------------------------ the registry

REGISTRY: dict[str, type[Metric]] = {}

M = TypeVar("M", bound=type[Metric])


def register(cls: M) -> M:
    """Class decorator: make a metric known to the run, the settings, the gate and every report."""
    taken_scores = {s for other in REGISTRY.values() if other is not cls for s in other.score_names()}
    taken_params = {f.name: f for other in REGISTRY.values() if other is not cls
                    for f in dataclasses.fields(other.Params)}
    # A parameter may be shared (a metric that reuses faithfulness's claims inherits its Params, so one
    # --max-claims drives both); a different parameter under a taken name is a clash.
    clash = (set(cls.score_names()) & taken_scores) | {
        f.name for f in dataclasses.fields(cls.Params)
        if f.name in taken_params and (f.default, dict(f.metadata)) != (taken_params[f.name].default,
                                                                        dict(taken_params[f.name].metadata))}
    if clash or (cls.name in REGISTRY and REGISTRY[cls.name] is not cls):
        raise ValueError(f"metric {cls.name!r}: {', '.join(sorted(clash)) or cls.name} already registered")
    unknown = set(cls.requires) - set(_MISSING)
    if unknown:
        raise ValueError(f"metric {cls.name!r}: unknown inputs {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(_MISSING)}")
    REGISTRY[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Forget a metric (a test's own toy metric, once the test is done)."""
    REGISTRY.pop(name, None)


def metric_names() -> tuple[str, ...]:
    """Registered metrics, in registration order (the order of every report)."""
    return tuple(REGISTRY)


def default_metrics() -> tuple[str, ...]:
    """The metrics a run evaluates when none are named: the registered ones that are on by default."""
    return tuple(name for name, cls in REGISTRY.items() if cls.default)


def score_specs() -> tuple[ScoreSpec, ...]:
    """Every registered score, in report order."""
    return tuple(spec for cls in REGISTRY.values() for spec in cls.scores)


def score_spec(score: str) -> ScoreSpec | None:
    return next((spec for spec in score_specs() if spec.name == score), None)


def score_owner(score: str) -> str:
    """The metric that reports ``score`` (its details and not-computable reasons are under that name)."""
    return next((cls.name for cls in REGISTRY.values() if score in cls.score_names()), score)


def default_thresholds() -> dict[str, float]:
    return {spec.name: spec.threshold for spec in score_specs() if spec.threshold is not None}


def param_names(cls: type[Metric]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls.Params))


def param_fields() -> dict[str, dataclasses.Field]:
    """Every registered metric's parameters by name (a name shared by two metrics is one parameter)."""
    return {f.name: f for cls in REGISTRY.values() for f in dataclasses.fields(cls.Params)}
