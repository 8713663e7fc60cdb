#!/usr/bin/env python3
"""Speed of the installed llama.cpp build: prompt evaluation and generation, tokens per second.

    .venv/bin/python scripts/bench_build.py [--judge qwen2.5-coder-1.5b] [--prompt-tokens 512] [--repeats 3]

Run it once per build (set-up profile) to compare them on the same machine: it prints the build's
CPU features and the median of ``--repeats`` runs, and writes them to bench-out/build-<features>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from offline_eval import modelstore
from offline_eval.judge.llama_build import build_identity


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="qwen2.5-coder-1.5b")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--generate", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    args = parser.parse_args()

    from llama_cpp import Llama

    model = modelstore.resolve(args.judge, "judge")
    llm = Llama(model_path=str(model.path), n_ctx=args.prompt_tokens + args.generate + 16, n_batch=512,
                n_threads=args.threads, n_threads_batch=args.threads, verbose=False)
    text = ("The committee reviewed the budget, the schedule and the risks of the project in detail. " * 64)
    prompt = llm.tokenize(text.encode(), add_bos=True)[: args.prompt_tokens]
    prompt_s, gen_s = [], []
    for _ in range(args.repeats):
        llm.reset()
        started = time.perf_counter()
        llm.eval(prompt)
        prompt_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(args.generate):
            token = llm.sample(temp=0.0)
            llm.eval([token])
        gen_s.append(time.perf_counter() - started)
    ident = build_identity()
    features = ident["backends"].get("CPU", [])
    result = {"judge": model.name, "build": ident, "prompt_tokens": len(prompt), "generated_tokens": args.generate,
              "prompt_tokens_per_second": round(len(prompt) / statistics.median(prompt_s), 1),
              "generated_tokens_per_second": round(args.generate / statistics.median(gen_s), 2)}
    print(json.dumps(result, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "-".join(f for f in features if f.startswith(("AVX", "AMX", "FMA", "SSE"))) or "baseline"
    (args.out / f"build-{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
