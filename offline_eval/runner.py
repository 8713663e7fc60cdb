"""Orchestration: samples → judge calls (sample by sample) → batch scoring → report.

The judge and the embedders are loaded once per run. Samples are judged one after another so that a
sample's context-heavy calls reuse its evaluated context; every call goes through the SQLite cache,
so an interrupted run started again picks up where it stopped and ends with the same report.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from offline_eval import __version__, modelstore
from offline_eval.config import SCORES, EvalConfig
from offline_eval.embed import Embedder, load_embedder
from offline_eval.judge import Judge
from offline_eval.lang import detect_language
from offline_eval.metrics import REGISTRY, Evidence, Outcome, SampleContext, Usage
from offline_eval.registry import default_model
from offline_eval.report import build_report
from offline_eval.sample import Sample


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

    @property
    def passed(self) -> bool:
        return bool(self.report["gate"]["passed"])


def load_judge(config: EvalConfig, echo: Callable[[str], None] = lambda _: None) -> Judge:
    """Resolve, verify and load the configured judge, with the SQLite cache unless disabled.

    Raises ``CacheError`` for a cache file that cannot be used, ``ModelError`` for a missing model.
    """
    from offline_eval.judge.cache import JudgeCache
    from offline_eval.judge.llama import JudgeOptions, LlamaJudge

    cache = None
    if config.use_cache:  # first: an unusable cache (CacheError) is reported before any model work
        cache = JudgeCache(config.cache_path or modelstore.home() / "judge-cache.sqlite")
    model = modelstore.resolve(config.judge, "judge")
    started = time.perf_counter()
    judge = LlamaJudge(
        model.path,
        name=model.name,
        sha256=model.sha256 or "",
        options=JudgeOptions(n_ctx=config.n_ctx, n_threads=config.n_threads, n_gpu_layers=config.n_gpu_layers,
                             seed=config.seed, verbose=config.verbose),
        cache=cache,
    )
    where = "GPU" if config.n_gpu_layers else "CPU"
    echo(f"judge {model.name} loaded on {where} in {time.perf_counter() - started:.1f}s (window {judge.n_ctx} tokens)")
    return judge


class EmbedderSet:
    """Embedders by language, loaded on first use. A forced embedder serves every language."""

    def __init__(self, forced: str | None = None, loaded: dict[str, Embedder] | None = None):
        self.forced = forced
        self._by_name: dict[str, Embedder] = {}
        self._by_lang: dict[str, Embedder] = dict(loaded or {})

    def name_for(self, lang: str) -> str:
        return self.forced or default_model("embedder", lang).name

    def for_language(self, lang: str) -> Embedder:
        if lang not in self._by_lang:
            name = self.name_for(lang)
            if name not in self._by_name:
                self._by_name[name] = load_embedder(modelstore.resolve(name, "embedder"))
            self._by_lang[lang] = self._by_name[name]
        return self._by_lang[lang]

    def embed(self, texts: Sequence[str], langs: Sequence[str]) -> np.ndarray:
        """Embed texts with each one's language's embedder; same order out as in."""
        groups: dict[str, list[int]] = defaultdict(list)
        for i, lang in enumerate(langs):
            groups[lang].append(i)
        parts = {lang: self.for_language(lang).embed([texts[i] for i in idx]) for lang, idx in groups.items()}
        dims = {p.shape[1] for p in parts.values()}
        if len(dims) > 1:
            # Different embedders per language give vectors of different sizes; cosines are only ever
            # taken within one sample (one language), so pad to a common width.
            width = max(dims)
            parts = {k: np.pad(v, ((0, 0), (0, width - v.shape[1]))) for k, v in parts.items()}
        out = np.zeros((len(texts), max(dims) if dims else 0), dtype=np.float32)
        for lang, idx in groups.items():
            out[idx] = parts[lang]
        return out

    def describe(self, langs: Sequence[str]) -> dict[str, Any]:
        out = {}
        for lang in sorted(set(langs)):
            emb = self.for_language(lang)
            out[lang] = {"name": emb.name, "sha256": emb.sha256}
        return out


def sample_language(sample: Sample, config: EvalConfig) -> str:
    """The forced language, or the one detected from the question and answer."""
    return detect_language(sample.question, sample.answer) if config.language == "auto" else config.language


def evaluate_samples(
    samples: Sequence[Sample],
    config: EvalConfig,
    *,
    judge: Judge,
    embedders: EmbedderSet,
    data_info: dict[str, Any] | None = None,
    skipped_records: list[dict[str, Any]] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Score every sample with every configured metric and build the report."""
    started = time.perf_counter()
    metrics = [REGISTRY[name]() for name in config.metrics]
    evidence: dict[str, list[Evidence]] = {m.name: [] for m in metrics}
    usage: dict[str, Usage] = defaultdict(Usage)
    langs: list[str] = []
    for i, sample in enumerate(samples):
        lang = sample_language(sample, config)
        langs.append(lang)
        ctx = SampleContext(sample=sample, lang=lang, judge=judge, config=config, usage=usage)
        for metric in metrics:
            evidence[metric.name].append(metric.collect(ctx))
        if on_progress:
            on_progress(Progress(i + 1, len(samples), sum(u.judge_calls for u in usage.values()),
                                 sum(u.cache_hits for u in usage.values()), time.perf_counter() - started))

    outcomes: dict[str, list[Outcome]] = {m.name: m.score(samples, evidence[m.name], embedders.embed) for m in metrics}
    score_names = [s for s in SCORES if any(s in m.scores for m in metrics)]
    rows = [_sample_row(i, s, langs[i], metrics, outcomes) for i, s in enumerate(samples)]

    run = {
        "tool": "offline-eval",
        "version": __version__,
        "judge": judge.describe(),
        "embedders": embedders.describe(langs) if "answer_relevancy" in config.metrics and samples else {},
        "seed": config.seed,
        "language": config.language,
        "metrics": list(config.metrics),
        "params": {"max_claims": config.max_claims, "max_reference_claims": config.max_reference_claims,
                   "n_questions": config.n_questions, "n_resamples": config.n_resamples},
        "data": data_info or {},
        "usage": {
            "judge_calls": sum(u.judge_calls for u in usage.values()),
            "prompt_tokens": sum(u.prompt_tokens for u in usage.values()),
            "completion_tokens": sum(u.completion_tokens for u in usage.values()),
            "by_metric": {m: {"judge_calls": u.judge_calls, "prompt_tokens": u.prompt_tokens,
                              "completion_tokens": u.completion_tokens} for m, u in sorted(usage.items())},
        },
    }
    report = build_report(run=run, samples=rows, score_names=score_names, thresholds=config.thresholds,
                          category_thresholds=config.category_thresholds, gate_on=config.gate_on,
                          n_resamples=config.n_resamples, seed=config.seed, skipped_records=skipped_records,
                          allow_empty=config.allow_empty)
    elapsed = time.perf_counter() - started
    timing = {
        "seconds": round(elapsed, 3),
        "samples_per_minute": round(60 * len(samples) / elapsed, 3) if elapsed > 0 else None,
        "judge_calls": sum(u.judge_calls for u in usage.values()),
        "cache_hits": sum(u.cache_hits for u in usage.values()),
        "evaluated_prompt_tokens": sum(u.evaluated_tokens for u in usage.values()),
        "by_metric": {m: asdict(u) for m, u in sorted(usage.items())},
    }
    return RunResult(report, timing)


def _sample_row(i: int, sample: Sample, lang: str, metrics, outcomes: dict[str, list[Outcome]]) -> dict[str, Any]:
    scores: dict[str, float | None] = {}
    not_computable: dict[str, str] = {}
    details: dict[str, Any] = {}
    for metric in metrics:
        outcome = outcomes[metric.name][i]
        for name in metric.scores:
            value = outcome.scores.get(name)
            scores[name] = None if value is None or not np.isfinite(value) else round(float(value), 6)
        if outcome.not_computable:
            not_computable[metric.name] = outcome.not_computable
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
        "scores": scores,
        "not_computable": not_computable,
        "details": details,
    }


def file_info(path: Path, n_records: int, n_evaluated: int, n_skipped: int) -> dict[str, Any]:
    return {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "n_records": n_records, "n_evaluated": n_evaluated, "n_skipped": n_skipped}
