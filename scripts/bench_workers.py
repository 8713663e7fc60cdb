#!/usr/bin/env python3
"""Workers benchmark: samples per minute for one llama.cpp process against judge workers on Ray, on
the same samples, and the same report bytes. Prints a table and writes it as JSON.

    .venv/bin/python scripts/bench_workers.py [--bench ares] [--n 12] [--judge qwen2.5-coder-1.5b]
                                              [--workers 2] [--single-thread]

Each configuration is a whole ``runner.run`` on a fresh cache (its own judge load; Ray's start and
the workers' model loads inside the Ray runs), with the embedders loaded once beforehand:

1. ``in-process``: one process, ``--threads`` = all cores (the default run);
2. ``ray``: ``--workers`` workers × cores ÷ workers threads each (locally started Ray);
3. ``ray-warm``: the Ray run again on its now full cache, and ``in-process-warm`` likewise;
4. with ``--single-thread``: one process with 1 thread, to show how one process scales with threads.

``wall_seconds`` is the whole run (loading the driver's judge; for Ray, starting Ray and the workers
and their model loads; judging; scoring). For Ray, ``seconds_judging`` counts from the first sample
dealt to the last result, so the steady rate and the fixed cost can be read apart. Samples come from a benchmark's dev split (scripts/bench_adapters.py),
first N in file order (``--shortest``: the N shortest of the first 100, for a short run). Every report must be byte-identical to the in-process one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_adapters  # noqa: E402

from offline_eval.api import make_config  # noqa: E402
from offline_eval.embed import EmbedderSet  # noqa: E402
from offline_eval.report.json_report import render_json  # noqa: E402
from offline_eval.runner import Progress, run  # noqa: E402


def timed_run(samples: Path, embedders: EmbedderSet, **settings) -> tuple[dict, str]:
    first: list[float] = []

    def on_progress(p: Progress) -> None:
        if not first:
            first.append(time.perf_counter())
        print(f"  {p.done}/{p.total} samples, {p.elapsed:.1f}s", file=sys.stderr, flush=True)

    config = make_config(**settings)
    started = time.perf_counter()
    result = run(samples, config, embedders=embedders, on_progress=on_progress)
    wall = time.perf_counter() - started
    n = result.report["run"]["data"]["n_evaluated"]
    timing = result.timing
    row = {
        "wall_seconds": round(wall, 2),
        "samples_per_minute": round(60 * n / wall, 3),
        "evaluate_seconds": timing["seconds"],  # judging and scoring; for Ray also starting Ray and the workers
        "judge_calls": timing["judge_calls"],
        "cache_hits": timing["cache_hits"],
        "first_sample_after_seconds": round(first[0] - started, 2) if first else None,
        **{k: timing[k] for k in ("executor", "workers", "threads", "nodes", "resubmitted", "seconds_judging",
                                  "calls_stored", "seconds_storing") if k in timing},
    }
    return row, render_json(result.report)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default="ares", choices=["ares", "attributionbench", "hotpotqa"])
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--shortest", action="store_true",
                        help="the N shortest of the split's first 100 items (in file order) instead of the first N")
    parser.add_argument("--judge", default="qwen2.5-coder-1.5b")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--single-thread", action="store_true", help="also time one process with one thread")
    parser.add_argument("--out", type=Path, default=Path("bench-out/workers.json"))
    args = parser.parse_args()

    cores = os.cpu_count() or 1
    rows: dict[str, dict] = {}
    reports: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        items = bench_adapters.convert(args.bench, "dev", limit=100 if args.shortest else args.n)
        if args.shortest:
            size = {id(item): len(json.dumps(item[0], ensure_ascii=False)) for item in items}
            keep = {id(item) for item in sorted(items, key=lambda item: size[id(item)])[:args.n]}
            items = [item for item in items if id(item) in keep]
        samples, _ = bench_adapters.write(items, Path(tmp))
        embedders = EmbedderSet()
        for lang in ("en", "zh"):
            embedders.for_language(lang)
        base = {"judge": args.judge}
        plan = [("in-process", {"n_threads": cores, "cache_path": Path(tmp) / "in-process.sqlite"}),
                ("ray", {"workers": args.workers, "n_threads": max(1, cores // args.workers),
                         "cache_path": Path(tmp) / "ray.sqlite"}),
                ("ray-warm", {"workers": args.workers, "n_threads": max(1, cores // args.workers),
                              "cache_path": Path(tmp) / "ray.sqlite"}),
                ("in-process-warm", {"n_threads": cores, "cache_path": Path(tmp) / "in-process.sqlite"})]
        if args.single_thread:
            plan.append(("in-process-1-thread", {"n_threads": 1, "cache_path": Path(tmp) / "one.sqlite"}))
        for name, settings in plan:
            print(f"{name}: {settings}", file=sys.stderr, flush=True)
            rows[name], reports[name] = timed_run(samples, embedders, **base, **settings)
            rows[name]["threads_per_process"] = settings["n_threads"]
            print(f"{name}: {json.dumps(rows[name])}", file=sys.stderr, flush=True)  # each figure as it comes

    identical = {name: reports[name] == reports["in-process"] for name in reports}
    figures = {
        "bench": args.bench,
        "samples": args.n,
        "selection": "shortest of the first 100" if args.shortest else "first",
        "judge": args.judge,
        "cores": cores,
        "runs": rows,
        "speedup_ray_vs_in_process": round(rows["ray"]["samples_per_minute"] / rows["in-process"]["samples_per_minute"], 3),
        "speedup_ray_judging_only": round(rows["in-process"]["evaluate_seconds"] / rows["ray"]["seconds_judging"], 3),
        "reports_identical": identical,
    }
    print(f"{'run':<22} {'threads':>7} {'wall s':>8} {'samples/min':>11} {'calls':>6} {'cached':>6} {'1st sample s':>12}")
    for name, row in rows.items():
        label = f"{row.get('workers', 1)}×{row['threads_per_process']}"
        print(f"{name:<22} {label:>7} {row['wall_seconds']:>8.1f} {row['samples_per_minute']:>11.2f} "
              f"{row['judge_calls']:>6} {row['cache_hits']:>6} {row['first_sample_after_seconds']!s:>12}")
    print(f"ray vs in-process: ×{figures['speedup_ray_vs_in_process']} samples/min "
          f"(×{figures['speedup_ray_judging_only']} judging only); reports identical: {identical}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if all(identical.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
