#!/usr/bin/env python3
"""Pipeline benchmark: overhead against llama.cpp's own time, prompt-token reuse, cache speed-up and
embedder throughput. Prints a compact table and writes it as JSON.

    .venv/bin/python scripts/bench_pipeline.py [--bench ares] [--n 20] [--judge qwen2.5-coder-1.5b]

1. overhead: wall time of a cold evaluation (judge already loaded) vs the time llama.cpp spent
   evaluating prompts and generating tokens for the calls made (llama_perf_context). Target ≤ 25%.
2. tokens: prompt tokens actually evaluated vs the naive sum of every call's prompt. Target ≤ 0.6.
3. cache: a warm rerun of the same data vs the cold run. Target ≥ 50×.
4. embedder: sentences per second, batched, for each default embedder.
Samples come from a benchmark's dev split (scripts/bench_adapters.py), first N in file order.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_adapters  # noqa: E402
import llama_cpp  # noqa: E402

from offline_eval.config import EvalConfig  # noqa: E402
from offline_eval.data import load_samples  # noqa: E402
from offline_eval.embed import EmbedderSet  # noqa: E402
from offline_eval.judge.load import load_judge  # noqa: E402
from offline_eval.runner import evaluate_samples  # noqa: E402


def llama_seconds(judge) -> tuple[float, int, int]:
    data = llama_cpp.llama_perf_context(judge.backend._llm.ctx)
    return (data.t_p_eval_ms + data.t_eval_ms) / 1000.0, int(data.n_p_eval), int(data.n_eval)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default="ares", choices=["ares", "attributionbench", "hotpotqa"])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--judge", default="qwen2.5-coder-1.5b")
    parser.add_argument("--out", type=Path, default=Path("bench-out/pipeline.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        items = bench_adapters.convert(args.bench, "dev", limit=args.n)
        samples_path, _ = bench_adapters.write(items, Path(tmp))
        samples = load_samples(samples_path).samples
        config = EvalConfig(judge=args.judge, cache_path=Path(tmp) / "cache.sqlite")
        judge = load_judge(config)
        embedders = EmbedderSet()
        for lang in ("en", "zh"):
            embedders.for_language(lang)
        llama_cpp.llama_perf_context_reset(judge.backend._llm.ctx)

        started = time.perf_counter()
        cold = evaluate_samples(samples, config, judge=judge, embedders=embedders)
        cold_s = time.perf_counter() - started
        llama_s, n_p_eval, n_eval = llama_seconds(judge)

        started = time.perf_counter()
        warm = evaluate_samples(samples, config, judge=judge, embedders=embedders)
        warm_s = time.perf_counter() - started
        assert warm.report == cold.report, "a warm rerun must give the same report"

        texts = [s.question for s in samples] + [s.answer for s in samples]
        texts = (texts * (200 // max(len(texts), 1) + 1))[:200]
        embed_rates = {}
        for lang in ("en", "zh"):
            emb = embedders.for_language(lang)
            emb.embed(texts[:8])
            t0 = time.perf_counter()
            emb.embed(texts)
            embed_rates[emb.name] = len(texts) / (time.perf_counter() - t0)

    usage = cold.report["run"]["usage"]
    figures = {
        "samples": len(samples),
        "judge": args.judge,
        "judge_calls": usage["judge_calls"],
        "cold_seconds": cold_s,
        "llama_cpp_seconds": llama_s,
        "overhead_ratio": cold_s / llama_s - 1.0,
        "samples_per_minute": 60 * len(samples) / cold_s,
        "prompt_tokens_naive": usage["prompt_tokens"],
        "prompt_tokens_evaluated": cold.timing["evaluated_prompt_tokens"],
        "llama_prompt_tokens_evaluated": n_p_eval,
        "tokens_ratio": cold.timing["evaluated_prompt_tokens"] / usage["prompt_tokens"],
        "generated_tokens": n_eval,
        "warm_seconds": warm_s,
        "cache_speedup": cold_s / warm_s,
        "embed_sentences_per_second": embed_rates,
    }
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else json.dumps(value) if isinstance(value, dict) else value
        print(f"{key:<{width}}  {shown}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
