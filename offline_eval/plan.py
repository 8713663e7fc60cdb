"""``offline-eval evaluate --dry-run``: what a run would cost, found without judging.

The run's own code makes every call: the data and the settings are loaded and checked as for a run,
and each sample's metrics collect their evidence through a ``Judge`` whose backend prepares each
prompt exactly as the configured judge would (its chat template and tokenizer) but, instead of
decoding, answers with the task's estimate (``Task.estimate``). So the dry run counts every call and
every prompt token the run would send, and the prompt tokens llama.cpp would evaluate once prompts
share their prefix (the same account of saved heads as ``LlamaJudge``).

What is estimated, and how: the calls that follow from what the judge says. A text's claims are
estimated as one per clause, up to the claim cap (the judge is held to about that many by the
schema); the claim checks are then sized from those claims; generated questions are a dozen words
each; every verdict is "yes" (a verdict's length does not depend on it). The number of calls depends
on the judge's answers only where a text yields no claim at all (no check is made) or an output is
cut and retried.

Time = evaluated prompt tokens × seconds per prompt token + generated tokens × seconds per generated
token, both measured on this machine with this judge (``measure_speed``: a few real calls, stored in
``judge-speed.json`` in the offline-eval home and reused until the judge, the llama.cpp build or the
threads change).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from offline_eval import modelstore
from offline_eval.config import EvalConfig, check_against_data
from offline_eval.judge import Completion, Judge, JudgeRequest, Prepared
from offline_eval.judge.llama import PromptTokens, RecentHeads
from offline_eval.prompts import schema_estimate
from offline_eval.sample import Sample

SPEED_FILE = "judge-speed.json"


@dataclass
class MetricCost:
    """What one metric's calls would cost over the whole dataset."""

    judge_calls: int = 0
    estimated_calls: int = 0  # calls whose prompt holds an estimated answer (claims to check)
    prompt_tokens: int = 0  # sent: the naive sum of prompt lengths
    evaluated_tokens: int = 0  # evaluated by llama.cpp after prefix sharing
    generated_tokens: int = 0  # expected output tokens

    def add(self, other: MetricCost) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Plan:
    """A dry run's count: per metric and in total."""

    n_samples: int
    metrics: tuple[str, ...]
    by_metric: dict[str, MetricCost]

    @property
    def total(self) -> MetricCost:
        out = MetricCost()
        for cost in self.by_metric.values():
            out.add(cost)
        return out


class PlanningBackend:
    """A judge backend that prepares every prompt with a real backend (its template and tokenizer) and
    answers with the task's estimate instead of decoding, keeping the account of the calls."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name, self.sha256, self.identity, self.n_ctx = inner.name, inner.sha256, inner.identity, inner.n_ctx
        self.costs: dict[str, MetricCost] = defaultdict(MetricCost)
        self._stems: set[Any] = set()
        self._heads = RecentHeads()
        self._estimated: list[str] = []  # texts the estimates made up (claims): the calls holding them are sized by them

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def room_for_shared(self, request: JudgeRequest) -> int:
        return self.inner.room_for_shared(request)

    def prepare(self, request: JudgeRequest) -> Prepared:
        return self.inner.prepare(request)

    def _parts(self, prepared: Prepared, request: JudgeRequest) -> tuple[tuple[Any, int], tuple[Any, int], int]:
        """(stem key, size), (head key, shared size), tail size of a call, as llama.cpp would split it."""
        if isinstance(prepared.payload, PromptTokens):
            tokens = prepared.payload
            stem = tuple(tokens.stem)
            return (stem, len(tokens.stem)), ((stem, tuple(tokens.shared)), len(tokens.shared)), len(tokens.tail)
        count = self.inner.count_tokens  # a backend without a split: cut where the request's parts end
        return ((request.system, count(request.system)), ((request.system, request.shared), count(request.shared)),
                count(request.task))

    def _evaluated(self, prepared: Prepared, request: JudgeRequest) -> int:
        """The prompt tokens this call evaluates: the stem once per run, a head when not among the recent
        ones, the tail always (``LlamaJudge._restore_prefix``)."""
        (stem, n_stem), (head, n_shared), n_tail = self._parts(prepared, request)
        evaluated = n_tail
        if stem not in self._stems:
            self._stems.add(stem)
            evaluated += n_stem
        if n_shared:
            if head not in self._heads:
                self._heads.put(head, None)
                evaluated += n_shared
            self._heads.use(head)
        return evaluated

    def complete(self, prepared: Prepared, request: JudgeRequest, max_tokens: int) -> Completion:
        value = request.estimate() if request.estimate else schema_estimate(request.schema)
        text = json.dumps(value, ensure_ascii=False)
        generated = min(self.inner.count_tokens(text) + 1, max_tokens)  # + the end-of-turn token
        cost = self.costs[request.metric]
        cost.judge_calls += 1
        cost.estimated_calls += any(made in request.task for made in self._estimated)
        cost.prompt_tokens += prepared.n_prompt
        cost.evaluated_tokens += self._evaluated(prepared, request)
        cost.generated_tokens += generated
        self._estimated += [v for values in value.values() if isinstance(values, list) for v in values]
        return Completion(text, "stop", generated, 0)


def plan_samples(samples: Sequence[Sample], config: EvalConfig, backend: Any) -> Plan:
    """Every call the run would make on ``samples``, counted with ``backend``'s prompts and tokenizer."""
    from offline_eval.runner import SampleWork, build_metrics, judge_sample, sample_language

    planner = PlanningBackend(backend)
    judge = Judge(planner)  # no cache: the dry run counts a cold run
    metrics = build_metrics(config)
    for sample in samples:
        planner._estimated = []  # one sample's estimates size only that sample's calls
        judge_sample(SampleWork(sample, sample_language(sample, config)), metrics, judge)
    return Plan(len(samples), tuple(config.metrics), {m: planner.costs[m] for m in config.metrics
                                                      if m in planner.costs})


# ------------------------------------------------------------------ the judge's speed on this machine


@dataclass(frozen=True)
class Speed:
    """Seconds per evaluated prompt token and per generated token (grammar, sampling and state restores
    included), and the judge's load time, measured on this machine."""

    prompt_seconds_per_token: float
    generated_seconds_per_token: float
    load_seconds: float
    source: str = ""

    def seconds(self, cost: MetricCost) -> float:
        return cost.evaluated_tokens * self.prompt_seconds_per_token + cost.generated_tokens * \
            self.generated_seconds_per_token


def speed_key(describe: dict[str, Any], n_threads: int | None) -> str:
    """What decides the judge's speed here: the model file, the llama.cpp build, GPU offload, threads."""
    blob = json.dumps({"judge": describe.get("sha256"), "build": describe.get("build"),
                       "n_gpu_layers": describe.get("n_gpu_layers"), "n_threads": n_threads}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def stored_speed(path: Path, key: str) -> Speed | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    try:
        return Speed(**entry) if isinstance(entry, dict) else None
    except TypeError:
        return None


def store_speed(path: Path, key: str, speed: Speed) -> None:
    try:
        table = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        table = {}
    table = table if isinstance(table, dict) else {}
    table[key] = asdict(speed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


_CALIBRATION_CONTEXT = [
    "Refund policy: customers can request a full refund within 30 days of purchase. After 30 days, purchases "
    "are eligible for store credit only. Refunds are paid to the original payment method within 5 to 10 "
    "business days; bank transfers can take longer in some countries.",
    "Shipping: standard delivery takes 3 to 5 business days inside the EU and 7 to 14 days elsewhere. Express "
    "delivery is available in most EU countries for an extra fee, and orders over 50 EUR ship free.",
    "Support is available Monday to Friday, 9:00-17:00 CET, by chat and e-mail. Enterprise customers have a "
    "dedicated account manager and a 4-hour response time on critical issues, around the clock.",
]
_CALIBRATION_ANSWER = ("Customers can get a full refund within 30 days, after which only store credit is given. "
                       "Refunds reach the original payment method in 5 to 10 business days. Orders over 50 EUR "
                       "ship for free, and support answers by chat and e-mail on weekdays.")


def measure_speed(judge: Judge, load_seconds: float) -> Speed:
    """Time a few real calls shaped like a run's (a claim extraction, two claim checks sharing a context,
    one chunk check) with the loaded judge, no cache: seconds per evaluated prompt token from llama.cpp's
    own prompt timer, seconds per generated token from the rest of each call's wall time."""
    import llama_cpp

    from offline_eval.metrics.base import SampleContext
    from offline_eval.metrics.claim_coverage import VerifyClaims, extract_claims
    from offline_eval.metrics.context_precision import JudgeChunk, chunk_question
    from offline_eval.prompts import context_block

    llm = judge.backend._llm
    sample = Sample("calibration", "What are the refund, shipping and support terms?", _CALIBRATION_ANSWER,
                    tuple(_CALIBRATION_CONTEXT), _CALIBRATION_ANSWER)
    ctx = SampleContext(sample, "en", judge, "calibration")
    block = context_block(list(enumerate(sample.contexts, 1)), "en")
    steps: list[Callable[[], Any]] = [
        lambda: extract_claims(ctx, sample.answer, source="answer", max_claims=6),
        lambda: ctx.ask(VerifyClaims(("Refunds are paid within 30 days.", "Orders over 50 EUR ship free.",
                                      "Support is open on weekends.")), block),
        lambda: ctx.ask(VerifyClaims(("Express delivery costs extra.", "Store credit is given after 30 days.")),
                        block),
        lambda: ctx.ask(JudgeChunk(sample.contexts[1]), chunk_question(sample.question, sample.answer, "en",
                                                                         basis_is_reference=True)),
    ]
    prompt_seconds = wall = 0.0
    evaluated = generated = 0
    llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
    for step in steps:
        before = sum(u.completion_tokens for u in ctx.usage.values())
        started = time.perf_counter()
        step()
        wall += time.perf_counter() - started
        generated += sum(u.completion_tokens for u in ctx.usage.values()) - before
    perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
    prompt_seconds = perf.t_p_eval_ms / 1000
    evaluated = sum(u.evaluated_tokens for u in ctx.usage.values())
    per_prompt = prompt_seconds / evaluated if evaluated else 0.0
    per_generated = max(wall - prompt_seconds, 0.0) / generated if generated else 0.0
    return Speed(round(per_prompt, 6), round(per_generated, 6), round(load_seconds, 2),
                 f"measured: {len(steps)} calls, {evaluated} prompt tokens evaluated, {generated} generated, "
                 f"{wall:.1f} s")


def judge_speed(config: EvalConfig, judge: Judge, load_seconds: float, say: Callable[[str], None]) -> Speed | None:
    """The judge's speed on this machine: stored, or measured now with the loaded judge (and stored).
    None for a judge server, whose speed is not this machine's to measure."""
    if config.judge_url:
        return None
    path = modelstore.home() / SPEED_FILE
    key = speed_key(judge.describe(), config.n_threads)
    speed = stored_speed(path, key)
    if speed is None:
        say(f"measuring the judge's speed on this machine (once; stored in {path}) ...")
        speed = measure_speed(judge, load_seconds)
        store_speed(path, key, speed)
    return speed


def dry_run(data: Any, config: EvalConfig, *, skip_invalid: bool = False, say: Callable[[str], None] = print,
            warn: Callable[[str], None] = print, source: str = "evaluate()") -> str:
    """Load and check the data and settings, load the judge (its tokenizer prepares every prompt), count
    every call a run would make and estimate its time. Nothing is judged and nothing is cached."""
    from dataclasses import replace

    from offline_eval.judge.load import load_judge
    from offline_eval.runner import load_data

    loaded = load_data(data, skip_invalid=skip_invalid)
    for skipped in loaded.skipped:
        warn(f"skipping {skipped.location}: {'; '.join(skipped.problems)}")
    check_against_data(config, loaded.samples, source)
    say(f"dry run: {len(loaded.samples)} samples ({len(loaded.skipped)} skipped); metrics: {', '.join(config.metrics)}")
    started = time.perf_counter()
    judge = load_judge(replace(config, use_cache=False), echo=say)
    load_seconds = time.perf_counter() - started
    plan = plan_samples(loaded.samples, config, judge.backend)
    speed = judge_speed(config, judge, load_seconds, say)
    return render_plan(plan, speed, judge.name)


# ------------------------------------------------------------------ the report


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def render_plan(plan: Plan, speed: Speed | None, judge_name: str) -> str:
    """The dry run's table: per metric and in total, calls, tokens and estimated time."""
    head = (f"{'metric':<26}{'calls':>7}{'prompt tok':>12}{'evaluated':>11}{'generated':>11}"
            f"{'est. time':>12}")
    lines = [head, "-" * len(head)]
    rows = [*plan.by_metric.items(), ("total", plan.total)]
    for name, cost in rows:
        when = _duration(speed.seconds(cost)) if speed else "—"
        if name == "total":
            lines.append("-" * len(head))
        lines.append(f"{name:<26}{cost.judge_calls:>7,}{cost.prompt_tokens:>12,}{cost.evaluated_tokens:>11,}"
                     f"{cost.generated_tokens:>11,}{when:>12}")
    total = plan.total
    lines += [
        "",
        f"{plan.n_samples} samples; {total.judge_calls} judge calls with {total.prompt_tokens:,} prompt tokens "
        f"({total.evaluated_tokens:,} evaluated after prefix sharing) and about {total.generated_tokens:,} "
        "generated tokens.",
        f"Estimated: {total.estimated_calls} of the calls check claims the dry run estimated (one per clause of the "
        "text, up to the claim cap); generated tokens are estimated from the expected answers' JSON.",
    ]
    if speed:
        lines.append(f"Estimated time, cold cache: {_duration(speed.seconds(total))} of judging "
                     f"(+ {speed.load_seconds:.0f} s to load the judge) with {judge_name} here: "
                     f"{1 / speed.prompt_seconds_per_token if speed.prompt_seconds_per_token else 0:.0f} prompt "
                     f"tokens/s, {1 / speed.generated_seconds_per_token if speed.generated_seconds_per_token else 0:.1f} "
                     f"generated tokens/s ({speed.source}). Cached calls take milliseconds.")
    else:
        lines.append("No time estimate: a judge server's speed is not measured from here.")
    return "\n".join(lines)

