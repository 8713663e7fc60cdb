#!/usr/bin/env python3
"""Judge micro-benchmark: seconds per call, grammar overhead, cache speed-up. Prints a table, writes JSON.

    .venv/bin/python scripts/bench_judge.py [--judges qwen2.5-coder-1.5b,fast] [--repeats 3] [--out FILE]

For each judge, on a typical verdict prompt (a 3-chunk context, 4 claims):
- cold: a call with the context not yet evaluated (prefix + suffix);
- shared prefix: the same context, other claims (only the suffix is evaluated);
- drafted vs one token a pass: the same call with the fixed JSON after each verdict drafted and checked in
  one batch (``JudgeOptions(draft=True)``, off by default), and decoded one token per forward pass (the
  default; same tokens, checked);
- lazy vs full grammar vs free: the same call decoded with the grammar applied lazily, with the grammar
  masking the vocabulary every step (same bytes, checked), and unconstrained;
- cache: the same call answered from the SQLite cache.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

from offline_eval import prompts
from offline_eval.config import EvalConfig
from offline_eval.judge import JudgeRequest
from offline_eval.judge.llama import RecentHeads
from offline_eval.judge.load import load_judge
from offline_eval.metrics.claim_coverage import VerifyClaims

CONTEXT = [
    (1, "The Golden Gate Bridge opened to traffic on May 28, 1937. Its main span is 1,280 metres long, "
        "and it was the longest suspension bridge main span in the world until 1964."),
    (2, "The bridge is painted in a colour called International Orange, chosen to stand out in fog."),
    (3, "San Francisco's cable cars are the last manually operated cable car system in the world."),
]
CLAIM_SETS = [
    ["The bridge opened in 1937.", "Its main span is 1,280 metres.", "It is painted blue.", "It opened in May."],
    ["The bridge is orange.", "The main span was the longest until 1964.", "It has two decks.", "Fog is common."],
    ["Cable cars are manual.", "The bridge opened in 1950.", "The span is 2 km.", "The colour stands out in fog."],
]


def request(claims: list[str], lang: str = "en") -> JudgeRequest:
    return VerifyClaims(tuple(claims)).request(lang, prompts.context_block(CONTEXT, lang), "faithfulness")


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench(name: str, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        judge = load_judge(EvalConfig(judge=name, cache_path=Path(tmp) / "c.sqlite", n_ctx=4096))
        llama = judge.backend  # the llama.cpp backend, for its internals
        llm = llama._llm
        results: dict[str, float] = {}
        outputs: dict = {}
        cold, warm = [], []
        for r in range(repeats):
            llama._saved_prefixes = RecentHeads()
            llama._saved_stems.clear()
            judge.cache = None
            cold.append(timed(lambda: judge.judge(request(CLAIM_SETS[r % 3]))))
            warm.append(timed(lambda: judge.judge(request(CLAIM_SETS[(r + 1) % 3]))))
        results["cold_call_s"] = statistics.median(cold)
        results["shared_prefix_call_s"] = statistics.median(warm)

        # The same call decoded three ways, same prompt and budget: the grammar applied lazily (only when
        # it rejects the greedy token: the default), the grammar masking the vocabulary at every step,
        # and no grammar at all (the floor). The two grammar decodings must give the same bytes.
        req = request(CLAIM_SETS[0])
        schema_json = req.schema_json()
        tokens = llama._tokens(llama.render_split(req))

        def decode(lazy: bool, draft: bool = False):
            llama.options = dataclasses.replace(llama.options, draft=draft)
            llama._decoder.lazy = lazy
            return llama._generate(tokens, req, schema_json, req.max_tokens)[0]

        drafted_s = []
        for _ in range(repeats):
            drafted_s.append(timed(lambda: outputs.__setitem__("drafted", decode(True, draft=True))))
        lazy_s, full_s, free_s = [], [], []
        for _ in range(repeats):
            lazy_s.append(timed(lambda: outputs.__setitem__("lazy", decode(True))))
            full_s.append(timed(lambda: outputs.__setitem__("full", decode(False))))
            llama._restore_prefix(tokens)
            n_gen = len(outputs["lazy"].tokens)
            free_s.append(timed(lambda: llm.create_completion(prompt=tokens.head + tokens.tail, max_tokens=n_gen,
                                                              temperature=0.0)))
        llama._decoder.lazy = True
        if outputs["drafted"].tokens != outputs["lazy"].tokens:
            raise SystemExit(f"drafted and token-by-token decoding differ: {outputs['drafted'].text!r} vs "
                             f"{outputs['lazy'].text!r}")
        if outputs["lazy"].text != outputs["full"].text:
            raise SystemExit(f"lazy and full grammar decoding differ: {outputs['lazy'].text!r} vs {outputs['full'].text!r}")
        results["generated_tokens"] = len(outputs["lazy"].tokens)
        results["drafted_s"] = statistics.median(drafted_s)
        results["drafted_passes"] = outputs["drafted"].passes
        results["lazy_grammar_decode_s"] = statistics.median(lazy_s)
        results["full_grammar_decode_s"] = statistics.median(full_s)
        results["free_decode_s"] = statistics.median(free_s)
        results["drafted_speedup_vs_token_by_token"] = results["lazy_grammar_decode_s"] / results["drafted_s"]
        results["lazy_speedup_vs_full"] = results["full_grammar_decode_s"] / results["lazy_grammar_decode_s"]
        results["lazy_overhead_vs_free"] = results["lazy_grammar_decode_s"] / results["free_decode_s"]
        results["full_masks_in_lazy"] = outputs["lazy"].full_masks

        from offline_eval.judge.cache import JudgeCache

        judge.cache = JudgeCache(Path(tmp) / "c2.sqlite")
        miss = timed(lambda: judge.judge(req))
        hit = statistics.median(timed(lambda: judge.judge(req)) for _ in range(max(repeats, 5)))
        results["uncached_call_s"] = miss
        results["cache_hit_s"] = hit
        results["cache_speedup"] = miss / hit
        return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judges", default="qwen2.5-coder-1.5b,fast")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench-out/judge.json"))
    args = parser.parse_args()
    table = {name: bench(name, args.repeats) for name in args.judges.split(",")}
    keys = list(next(iter(table.values())))
    print(f"{'':<24}" + "".join(f"{n:>22}" for n in table))
    for key in keys:
        print(f"{key:<24}" + "".join(f"{table[n][key]:>22.4g}" for n in table))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
