"""The one run path: data → judge calls, sample by sample → batch scoring → report.

``run`` is what ``offline-eval evaluate`` and ``evaluate()`` both call: it loads and checks the data,
loads the judge and the embedders (before any judging, so a missing model fails fast), evaluates and
builds the report. ``evaluate_samples`` is the evaluation itself: each sample is judged by
``judge_sample``, which returns that sample's evidence and its own judge cost, so samples can be
handed to any ``Executor``: this process, one sample after another, by default; threads over a judge
server (``concurrency``); or llama.cpp workers on Ray (``workers``, ``ray_workers.py``). A sample's
calls always run together, so its context-heavy calls reuse its evaluated context, and the results
are assembled in dataset order. Every call goes through the SQLite cache, so an interrupted run
started again picks up where it stopped and ends with the same report.
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from offline_eval import __version__
from offline_eval.config import EvalConfig, check_against_data, check_complete
from offline_eval.data import LoadResult, load_samples, samples_from_records
from offline_eval.embed import EmbedderSet
from offline_eval.judge import Judge, Usage
from offline_eval.judge.load import load_judge
from offline_eval.lang import detect_language
from offline_eval.metrics import REGISTRY, Evidence, Metric, Outcome, SampleContext, score_specs
from offline_eval.report import build_report, view
from offline_eval.sample import Sample

Data = str | Path | Iterable[Mapping[str, Any] | Sample]


@dataclass
class Progress:
    """What a progress display needs after each sample."""

    done: int
    total: int
    judge_calls: int
    cache_hits: int
    elapsed: float


@dataclass
class RunResult:
    report: dict[str, Any]
    timing: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what went wrong without stopping the run

    @property
    def passed(self) -> bool:
        return bool(view.passed(self.report))


# ------------------------------------------------------------------ per sample


@dataclass(frozen=True)
class SampleWork:
    """One sample to judge, in its language."""

    sample: Sample
    lang: str


@dataclass
class SampleJudged:
    """One sample's evidence per metric, and what judging it cost, per metric."""

    evidence: dict[str, Evidence]
    usage: dict[str, Usage]


def judge_sample(work: SampleWork, metrics: Sequence[Metric], judge: Judge) -> SampleJudged:
    """Every metric's judge calls for one sample. Touches nothing shared but the judge."""
    usage: dict[str, Usage] = defaultdict(Usage)
    answers: dict = {}  # one sample's judge answers, shared by its metrics: no question is asked twice
    evidence = {m.name: m.collect(SampleContext(work.sample, work.lang, judge, m.name, usage, answers))
                for m in metrics}
    return SampleJudged(evidence, dict(usage))


class WorkerError(RuntimeError):
    """An executor's workers cannot judge this run (another llama.cpp build, all of them died...)."""


class Executor(Protocol):
    """Judges the samples: yields ``(position, result)`` for each sample as it is done, in any order.

    ``judge`` is this process's judge; an executor that judges elsewhere still reports under its
    identity. ``describe`` says how the run was spread, for timing.json (never the report: the same
    samples give the same report however they were spread).
    """

    def judge(self, work: Sequence[SampleWork], metrics: Sequence[Metric],
              judge: Judge) -> Iterator[tuple[int, SampleJudged]]: ...

    def describe(self) -> dict[str, Any]: ...


class InProcess:
    """The default executor: this process, one sample after another."""

    def judge(self, work: Sequence[SampleWork], metrics: Sequence[Metric],
              judge: Judge) -> Iterator[tuple[int, SampleJudged]]:
        for i, item in enumerate(work):
            yield i, judge_sample(item, metrics, judge)

    def describe(self) -> dict[str, Any]:
        return {"executor": "in-process"}


class Threads:
    """``n`` samples at a time in threads of this process, over one judge that takes concurrent calls:
    a judge server (``concurrency``), which then has ``n`` requests in flight. Daemon threads, so a
    Ctrl-C leaves at once instead of waiting for the requests in flight."""

    def __init__(self, n: int):
        self.n = n

    def judge(self, work: Sequence[SampleWork], metrics: Sequence[Metric],
              judge: Judge) -> Iterator[tuple[int, SampleJudged]]:
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(work)):
            todo.put(i)
        done: queue.SimpleQueue[tuple[int, SampleJudged | None, BaseException | None]] = queue.SimpleQueue()
        stop = threading.Event()

        def worker() -> None:
            while not stop.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((i, judge_sample(work[i], metrics, judge), None))
                except BaseException as exc:  # handed to the caller, which raises it
                    done.put((i, None, exc))

        for _ in range(min(self.n, len(work))):
            threading.Thread(target=worker, daemon=True, name="offline-eval-judge").start()
        try:
            for _ in range(len(work)):
                i, judged, error = done.get()
                if error is not None:
                    raise error
                yield i, judged
        finally:
            stop.set()

    def describe(self) -> dict[str, Any]:
        return {"executor": "threads", "concurrency": self.n}


def executor_for(config: EvalConfig) -> Executor:
    """The executor the settings ask for: Ray workers, threads over a judge server, or this process."""
    if config.workers is not None or config.ray_address is not None:
        from offline_eval.ray_workers import RayExecutor  # only here: the default run imports no Ray

        return RayExecutor(config)
    if config.concurrency > 1:
        return Threads(config.concurrency)
    return InProcess()


# ------------------------------------------------------------------ the run


def load_data(data: Data, *, skip_invalid: bool = False) -> LoadResult:
    """A dataset file, or in-memory records / Samples, validated (``DatasetError`` listing every problem)."""
    if isinstance(data, (str, Path)):
        return load_samples(data, skip_invalid=skip_invalid)
    return samples_from_records(list(data), skip_invalid=skip_invalid)


def sample_language(sample: Sample, config: EvalConfig) -> str:
    """The forced language, or the one detected from the question and answer."""
    return detect_language(sample.question, sample.answer) if config.language == "auto" else config.language


def build_metrics(config: EvalConfig) -> list[Metric]:
    """The configured metrics, each with its parameters from the settings."""
    return [REGISTRY[name](config.metric_params(REGISTRY[name]), verdict_scoring=config.verdict_scoring)
            for name in config.metrics]


def run(
    data: Data,
    config: EvalConfig,
    *,
    skip_invalid: bool = False,
    judge: Judge | None = None,
    embedders: EmbedderSet | None = None,
    say: Callable[[str], None] = lambda _: None,
    warn: Callable[[str], None] = lambda _: None,
    on_progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
    source: str = "evaluate()",
) -> RunResult:
    """Load, check, judge, score and report: the whole evaluation, for the CLI and the Python API.

    The data (``DatasetError``), the settings against it (``ConfigError``, naming ``source``) and the
    labels file's form (``LabelsError``) are checked before any model loads; then the judge
    (``CacheError``, ``ModelError``, ``JudgeServerError``) and the embedders the metrics need. Labels
    that do not match the report's items raise ``LabelsError`` once it is built. ``say`` gets progress
    messages, ``warn`` the records skipped. ``executor`` defaults to the one the settings ask for
    (``executor_for``).
    """
    check_complete(config, source)
    labels = None
    if config.labels is not None:
        from offline_eval.review import load_item_labels

        labels = load_item_labels(config.labels)  # LabelsError (file, line, field) before any judging
    loaded = load_data(data, skip_invalid=skip_invalid)
    for skipped in loaded.skipped:
        warn(f"skipping {skipped.location}: {'; '.join(skipped.problems)}")
    check_against_data(config, loaded.samples, source)
    say(f"{len(loaded.samples)} samples from {data if isinstance(data, (str, Path)) else 'memory'} "
        f"({len(loaded.skipped)} skipped); metrics: {', '.join(config.metrics)}")
    executor = executor or executor_for(config)
    judge = judge or load_judge(config, echo=say)
    embedders = embedders or EmbedderSet(config.embedder)
    if any(REGISTRY[name].needs_embedder for name in config.metrics):
        for lang in sorted({sample_language(s, config) for s in loaded.samples}):
            embedders.for_language(lang)  # load (and verify) up front: fail before hours of judging
    info: dict[str, Any] = {"n_records": loaded.n_records, "n_evaluated": len(loaded.samples),
                            "n_skipped": len(loaded.skipped)}
    if isinstance(data, (str, Path)):
        info = file_info(Path(data), **info)
    result = evaluate_samples(
        loaded.samples, config, judge=judge, embedders=embedders, data_info=info,
        skipped_records=[{"location": s.location, "problems": list(s.problems)} for s in loaded.skipped],
        on_progress=on_progress, executor=executor, labels=labels,
    )
    problem = getattr(judge.cache, "problem", None)
    if problem:
        result.warnings.append(problem)
    return result


def evaluate_samples(
    samples: Sequence[Sample],
    config: EvalConfig,
    *,
    judge: Judge,
    embedders: EmbedderSet,
    data_info: dict[str, Any] | None = None,
    skipped_records: list[dict[str, Any]] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
    labels: Any = None,
) -> RunResult:
    """Score every sample with every configured metric and build the report (with ``labels``, an
    ``offline_eval.review.LabelFile``, the PPI-corrected means too)."""
    started = time.perf_counter()
    metrics = build_metrics(config)
    langs = [sample_language(s, config) for s in samples]
    usage: dict[str, Usage] = defaultdict(Usage)
    work = [SampleWork(s, lang) for s, lang in zip(samples, langs)]
    executor = executor or InProcess()
    judged: list[SampleJudged | None] = [None] * len(work)
    # Samples may finish in any order (workers); the report is assembled in dataset order.
    with contextlib.closing(executor.judge(work, metrics, judge)) as results:
        for done, (i, one) in enumerate(results, 1):
            judged[i] = one
            for name, cost in one.usage.items():
                usage[name].add(cost)
            if on_progress:
                on_progress(Progress(done, len(samples), sum(u.judge_calls for u in usage.values()),
                                     sum(u.cache_hits for u in usage.values()), time.perf_counter() - started))
    missing = [work[i].sample.sample_id for i, one in enumerate(judged) if one is None]
    if missing:
        raise WorkerError(f"the executor returned no result for sample(s) {', '.join(map(str, missing))}")
    evidence = {m.name: [one.evidence[m.name] for one in judged if one is not None] for m in metrics}

    outcomes: dict[str, list[Outcome]] = {m.name: m.score(samples, evidence[m.name], embedders.embed) for m in metrics}
    reported = {s for m in metrics for s in m.score_names()}
    score_names = [spec.name for spec in score_specs() if spec.name in reported]
    rows = [_sample_row(i, s, langs[i], metrics, outcomes) for i, s in enumerate(samples)]

    params: dict[str, Any] = {**config.all_params(), "n_resamples": config.n_resamples,
                              "verdict_scoring": config.verdict_scoring}
    if config.criteria:  # what each criterion asked (absent without criteria: older reports keep their bytes)
        params["criteria"] = {name: spec.describe() for name, spec in sorted(config.criteria.items())}
    run_info = {
        "tool": "offline-eval",
        "version": __version__,
        "judge": judge.describe(),
        "embedders": embedders.describe(langs) if any(m.needs_embedder for m in metrics) and samples else {},
        "seed": config.seed,
        "language": config.language,
        "metrics": list(config.metrics),
        "params": params,
        "data": data_info or {},
        "usage": {
            "judge_calls": sum(u.judge_calls for u in usage.values()),
            "prompt_tokens": sum(u.prompt_tokens for u in usage.values()),
            "completion_tokens": sum(u.completion_tokens for u in usage.values()),
            "by_metric": {m: {"judge_calls": u.judge_calls, "prompt_tokens": u.prompt_tokens,
                              "completion_tokens": u.completion_tokens} for m, u in sorted(usage.items())},
        },
    }
    report = build_report(run=run_info, samples=rows, score_names=score_names, thresholds=config.thresholds,
                          category_thresholds=config.category_thresholds, gate_on=config.gate_on,
                          n_resamples=config.n_resamples, seed=config.seed, skipped_records=skipped_records,
                          allow_empty=config.allow_empty, labels=labels)
    elapsed = time.perf_counter() - started
    timing = {
        "seconds": round(elapsed, 3),
        "samples_per_minute": round(60 * len(samples) / elapsed, 3) if elapsed > 0 else None,
        "judge_calls": sum(u.judge_calls for u in usage.values()),
        "cache_hits": sum(u.cache_hits for u in usage.values()),
        "evaluated_prompt_tokens": sum(u.evaluated_tokens for u in usage.values()),
        "by_metric": {m: asdict(u) for m, u in sorted(usage.items())},
        **executor.describe(),
    }
    return RunResult(report, timing)


def _sample_row(i: int, sample: Sample, lang: str, metrics: Sequence[Metric],
                outcomes: dict[str, list[Outcome]]) -> dict[str, Any]:
    scores: dict[str, float | None] = {}
    not_computable: dict[str, str] = {}
    details: dict[str, Any] = {}
    for metric in metrics:
        outcome = outcomes[metric.name][i]
        for name in metric.score_names():
            value = outcome.scores.get(name)
            scores[name] = None if value is None or not np.isfinite(value) else round(float(value), 6)
        if outcome.not_computable:
            not_computable[metric.name] = outcome.not_computable
        not_computable.update(outcome.score_reasons)
        if outcome.details:
            details[metric.name] = outcome.details
    return {
        "sample_id": sample.sample_id,
        "category": sample.category,
        "language": lang,
        "question": sample.question,
        "answer": sample.answer,
        "reference_answer": sample.reference_answer,
        "n_contexts": len(sample.contexts),
        "contexts": list(sample.contexts),  # what a reviewer checks a claim against, in report.html
        "scores": scores,
        "not_computable": not_computable,
        "details": details,
    }


def file_info(path: Path, n_records: int, n_evaluated: int, n_skipped: int) -> dict[str, Any]:
    return {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "n_records": n_records, "n_evaluated": n_evaluated, "n_skipped": n_skipped}
