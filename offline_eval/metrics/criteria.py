"""Custom criteria: the user's own yes/no question about each answer ("Does the answer cite a source?").

A criterion is defined in the settings (``--criterion NAME="question"``, or a ``[criteria.NAME]`` table
in the TOML config with ``question``, ``threshold`` and ``context``) and becomes a metric named NAME,
registered here when the settings are read: gated, reported and compared like any other metric, with
no other file naming it.

Judge: one call per sample and criterion. The judge sees the question and the answer and, when the
criterion asks for it (``context = true``), the retrieved context, then the user's question, and says
"yes" or "no". Without the context the question and the answer are the shared prefix (answer
relevancy's judge form evaluates it too); with it, the context is (faithfulness's). Score = the judge's P(yes) under probability
scoring, 1 or 0 under hard scoring. A context longer than the judge's window is judged window by
window, and the criterion is met if any window meets it (as a claim is supported if any window
supports it). An empty answer is not computable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from offline_eval.metrics.base import (
    REGISTRY,
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
    unregister,
)
from offline_eval.metrics.windows import ask_over_context
from offline_eval.prompts import YesNoTask, defuse, question_answer_block
from offline_eval.sample import Sample

DEFAULT_THRESHOLD = 0.8  # the gate passes when answers meet the criterion 80% of the time (mean P(yes))
_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
_KEYS = {"question", "threshold", "context"}


class CriterionError(ValueError):
    """A criterion that cannot be defined: the message names it and says what is wrong."""


@dataclass(frozen=True)
class CriterionSpec:
    """A criterion as the user wrote it. ``threshold`` None: the default gate threshold (unless one is set
    for the name elsewhere); ``context``: whether the judge sees the retrieved context."""

    name: str
    question: str
    threshold: float | None = None
    context: bool = False

    def describe(self) -> dict[str, Any]:
        """What ``run.params`` records of it: what was asked and whether the context was shown."""
        return {"question": self.question, "context": self.context}


@dataclass(frozen=True)
class JudgeCriterion(YesNoTask):
    """The user's yes/no question about the answer. Without the context, the question and the answer are
    the shared text before this task; with it, the context is, and they follow it here."""

    question: str  # the sample's question
    answer: str
    criterion: str  # the user's question about the answer
    with_context: bool

    @property
    def keys(self) -> list[str]:
        return ["verdict"]

    def text(self, lang: str) -> str:
        question = defuse(self.question)
        if lang == "zh":
            if self.with_context:
                return (f"用户的问题和系统的回答：\n<question>\n{question}\n</question>\n<answer>\n{defuse(self.answer)}"
                        "\n</answer>\n\n针对这段回答判断下面这一点，是答 \"yes\"，否答 \"no\"；"
                        f"凡涉及检索到的资料，一律以上面的资料为准：\n{self.criterion}")
            return f"针对上面这段回答判断下面这一点，是答 \"yes\"，否答 \"no\"：\n{self.criterion}"
        if self.with_context:
            return (f"The question and the answer to evaluate:\n<question>\n{question}\n</question>\n<answer>\n"
                    f"{defuse(self.answer)}\n</answer>\n\nAnswer this question about the answer above with \"yes\" or \"no\"; where it refers to "
                    f"the retrieved context, judge by the context above:\n{self.criterion}")
        return f"Answer this question about the answer above with \"yes\" or \"no\":\n{self.criterion}"


class Criterion(Metric):
    """One custom criterion; ``define_criterion`` makes a subclass per criterion name."""

    spec: ClassVar[CriterionSpec]
    requires = ("answer",)
    default = False  # runs when the settings define it

    def collect(self, ctx: SampleContext) -> Evidence:
        reason = self.missing_input(ctx.sample)
        if reason:
            return Evidence(not_computable=reason)
        sample, spec = ctx.sample, self.spec
        task = JudgeCriterion(sample.question, sample.answer, spec.question, spec.context)

        def step() -> Evidence:
            if spec.context:
                verdicts, truncated = ask_over_context(ctx, task)
            else:
                verdicts, truncated = ctx.ask(task, question_answer_block(sample.question, sample.answer, ctx.lang)), []
            return Evidence({"verdict": verdicts[0], "truncated_chunks": truncated})

        return judged(step)

    def score(self, samples: Sequence[Sample], evidence: Sequence[Evidence], embed: EmbedFn | None = None
              ) -> list[Outcome]:
        values, _ = self.verdict_values([[e.data["verdict"]] if not e.not_computable else [] for e in evidence])
        outcomes = []
        for row, ev in enumerate(evidence):
            if ev.not_computable:
                outcomes.append(self.not_computable(ev.not_computable))
                continue
            verdict = ev.data["verdict"]
            met = "met" if verdict.yes else "not met"
            details: dict[str, Any] = {"criterion": self.spec.question, "context_shown": self.spec.context,
                                       "met": verdict.yes}
            if ev.data["truncated_chunks"]:
                details["truncated_chunks"] = ev.data["truncated_chunks"]
            summary = f"criterion {met}" + ("; score = the judge's probability of yes" if self.soft else "")
            findings = [Finding("criterion", self.spec.question, met, verdict.yes, verdict.p_yes)]
            outcomes.append(Outcome({self.name: float(values[row, 0])}, None,
                                    reported_details(findings, summary, **details)))
        return outcomes


def parse_criteria(value: Any) -> dict[str, CriterionSpec]:
    """Criteria from a setting: ``{NAME: "question"}`` or ``{NAME: {question, threshold, context}}``."""
    if not isinstance(value, Mapping):
        raise CriterionError("criteria must be a table of NAME = \"question\" or NAME = { question = ..., "
                             "threshold = ..., context = true|false }")
    specs = {}
    for name, entry in value.items():
        table = {"question": entry} if isinstance(entry, str) else entry
        if not isinstance(table, Mapping):
            raise CriterionError(f"criterion {name!r}: expected a question or a table, not {entry!r}")
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise CriterionError(f"criterion {name!r}: unknown key(s) {', '.join(unknown)}; use question, threshold, "
                                 "context")
        question, threshold, context = table.get("question"), table.get("threshold"), table.get("context", False)
        if not isinstance(question, str) or not question.strip():
            raise CriterionError(f"criterion {name!r}: needs a question the judge answers yes or no")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not 0.0 <= float(threshold) <= 1.0):
            raise CriterionError(f"criterion {name!r}: threshold must be a number in [0, 1], not {threshold!r}")
        if not isinstance(context, bool):
            raise CriterionError(f"criterion {name!r}: context must be true or false, not {context!r}")
        specs[str(name)] = CriterionSpec(str(name), question.strip(),
                                         None if threshold is None else float(threshold), context)
    return specs


def check_name(name: str) -> None:
    """A criterion's name is a metric and score name of its own: lower-case, and no built-in's."""
    if not _NAME.fullmatch(name):
        raise CriterionError(f"criterion {name!r}: a name is lower-case letters, digits and _, starting with a "
                             "letter (at most 48 characters)")
    for cls in REGISTRY.values():
        if not issubclass(cls, Criterion) and name in {cls.name, *cls.score_names()}:
            raise CriterionError(f"criterion {name!r}: the name of a built-in metric or score; choose another")


def define_criterion(spec: CriterionSpec) -> type[Metric]:
    """Register the metric of a criterion (replacing an earlier definition of the same criterion)."""
    check_name(spec.name)
    cls = type(f"Criterion[{spec.name}]", (Criterion,), {
        "name": spec.name,
        "spec": spec,
        # The gate threshold is set in the run's settings (config), so none is left behind in the registry.
        "scores": (ScoreSpec(spec.name, None, f"answers fail the criterion: {spec.question}",
                             f"P(yes) for: {spec.question}"),),
    })
    unregister(spec.name)
    return register(cls)


def is_criterion(name: str) -> bool:
    return isinstance(REGISTRY.get(name), type) and issubclass(REGISTRY[name], Criterion)
