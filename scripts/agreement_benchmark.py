#!/usr/bin/env python3
"""Agreement of offline-eval's scores with human labels on a shared benchmark's split.

    .venv/bin/python scripts/agreement_benchmark.py ares --split dev --judge qwen2.5-coder-1.5b \\
        --limit 30 --balanced --out bench-out/ares-dev-default

Converts the benchmark (scripts/bench_adapters.py), evaluates it with the chosen judge (the judge
cache makes a rerun instant), prints the agreement table (ROC AUC; balanced accuracy and kappa at each
metric's gate threshold; bootstrap intervals) and writes it, with the run's seconds per item, to
``OUT/agreement.json``; ``scripts/agreement_table.py`` puts several runs in one table. ``--balanced``
picks the items by label only — every negative first, then positives up to ``--limit`` — so that a
small run still has both classes; ``--sample-seed S`` draws them from the whole split, shuffled by S,
instead of in file order (file order can be one sub-dataset: see ``select``). Tune on dev; report on
test.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_adapters  # noqa: E402

from offline_eval import evaluate  # noqa: E402
from offline_eval.agreement import agreement, binary_agreement, render_agreement_markdown  # noqa: E402
from offline_eval.metrics import default_metrics  # noqa: E402

# Which of our metrics each benchmark's labels speak to.
_ATTRIBUTION = {"faithfulness": "attributable", "faithfulness_ragas": "attributable"}
MAPPINGS = {
    "ares": {"faithfulness": "faithfulness", "answer_relevancy": "answer_relevancy",
             "context_precision": "context_relevance", "answer_relevancy_ragas": "answer_relevancy",
             "faithfulness_ragas": "faithfulness"},
    "attributionbench": _ATTRIBUTION,
    "attributionbench-ood": _ATTRIBUTION,  # the same labels, on sources dev does not have
    "hotpotqa": {"context_precision": "context_precision"},
    "ocnli": {"faithfulness": "entailed", "faithfulness_ragas": "entailed"},
    "qags": {"faithfulness": "supported", "faithfulness_ragas": "supported"},
    # Utility mixes relevance with correctness and completeness: a wrong answer on the topic is not useful
    # but does address its question, so answer relevancy is not expected to match it as closely as ARES.
    "alce": {"answer_relevancy": "useful", "answer_relevancy_ragas": "useful"},
    "halueval": {"answer_correctness": "correct"},  # labels by construction: a sanity check, not agreement
}


def select(items: list, mapping: dict[str, str], limit: int | None, balanced: bool,
           sample_seed: int | None = None) -> list:
    """The first ``limit`` items, or with ``balanced`` up to half negatives (any label 0), in file order;
    with ``sample_seed``, the same drawn from the split shuffled by that seed.

    File order can hide a split's mix: AttributionBench's files open with 74 (dev) and 72 (test)
    AttributedQA items, so its first 60 balanced items are all one-phrase AttributedQA answers and none
    of the ExpertQA, Stanford-GenSearch and LFQA ones that make up most of it. A seeded sample stands
    for the whole split, and the same seed draws the same items."""
    if sample_seed is not None:
        items = random.Random(sample_seed).sample(items, len(items))
    if not balanced or limit is None:
        return items[:limit]
    fields = list(mapping.values())
    is_negative = [any(labels.get(f) == 0 for f in fields) for _, labels in items]
    negatives = [i for i, neg in enumerate(is_negative) if neg][: limit // 2]
    positives = [i for i, neg in enumerate(is_negative) if not neg][: limit - len(negatives)]
    return [items[i] for i in sorted(negatives + positives)]  # in the (shuffled) order


def add_item_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments that choose the benchmark, its items and the judge: shared with ``ragas_agreement.py``,
    so the same arguments draw the same items for both tools."""
    parser.add_argument("name", choices=sorted(MAPPINGS))
    parser.add_argument("--split", choices=["dev", "test"], default="dev")
    parser.add_argument("--judge", default="qwen2.5-coder-1.5b")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--balanced", action="store_true")
    parser.add_argument("--sample-seed", type=int, help="draw the items from the whole split, shuffled by this "
                        "seed, instead of taking them in file order")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_item_arguments(parser)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--metrics", help="comma-separated: only these of the benchmark's metrics (the default: "
                        "those on in a default run, else all)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="any evaluate() setting, e.g. embedder=use-multilingual-v3 (JSON values: "
                             "max_claims=12); a rerun with another scoring setting is answered from the cache")
    args = parser.parse_args(argv)
    settings = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set takes KEY=VALUE, not {item!r}")
        try:
            settings[key.strip()] = json.loads(value)
        except ValueError:
            settings[key.strip()] = value

    mapping = MAPPINGS[args.name]
    # By default the metrics a default run has; a benchmark for an opt-in metric only (HaluEval) runs that.
    chosen = (args.metrics.split(",") if args.metrics
              else [m for m in mapping if m in default_metrics()] or list(mapping))
    unknown = [m for m in chosen if m not in mapping]
    if unknown:
        parser.error(f"{args.name} has labels for {', '.join(mapping)}, not {', '.join(unknown)}")
    mapping = {m: mapping[m] for m in chosen}
    items = select(bench_adapters.convert(args.name, args.split), mapping, args.limit, args.balanced,
                   args.sample_seed)
    samples_path, labels_path = bench_adapters.write(items, args.out)
    started = time.perf_counter()
    report = evaluate(samples_path, judge=args.judge, metrics=tuple(mapping), n_ctx=args.n_ctx, **settings)
    seconds = time.perf_counter() - started
    report.write(args.out, ("json", "md"))
    labels = [json.loads(line) for line in labels_path.read_text("utf-8").splitlines()]
    # Balanced accuracy and kappa at each metric's gate threshold: what a user's gate decides with.
    # A metric with no gate threshold (answer_correctness) is taken at 0.5.
    gate = report.data["gate"]["thresholds"]
    result = agreement(report.data, labels, mapping, fixed_threshold={m: gate.get(m, 0.5) for m in mapping})
    if any("gold_flags" in row for row in labels):
        result["chunks"] = chunk_agreement(report.data, labels)
    result["benchmark_run"] = {
        "benchmark": args.name, "split": args.split, "judge": args.judge, "n_items": len(items),
        "sample_seed": args.sample_seed,
        "seconds": round(seconds, 1), "seconds_per_item": round(seconds / max(len(items), 1), 1),
        "judge_calls": report.timing.get("judge_calls"), "cache_hits": report.timing.get("cache_hits"),
        "settings": settings,
    }
    (args.out / "agreement.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args.name} {args.split}: {len(items)} items, judge {args.judge}, {seconds:.0f}s, settings {settings} "
          f"({report.timing.get('judge_calls')} judge calls, {report.timing.get('cache_hits')} cached)")
    print(render_agreement_markdown(result))
    print_chunk_agreement(result)
    return 0


def print_chunk_agreement(result: dict) -> None:
    """Print the per-chunk statistics of ``result``, where it has them."""
    if "chunks" not in result:
        return
    chunks = result["chunks"]
    print(f"\nchunk relevance, one item per retrieved chunk (n = {chunks['n']}: {chunks['n_positive']} gold, "
          f"{chunks['n_negative']} distractors), score = {chunks['score']}:")
    for name, stat in chunks["stats"].items():
        print(f"  {name}: {stat['value']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"
              if stat["value"] is not None else f"  {name}: undefined")


def chunk_agreement(report: dict, labels: list[dict]) -> dict:
    """Per-chunk agreement: what each chunk counted as in the score — its relevance where the report gives
    one (P(relevant) mixed with word coverage), else its P(relevant), else its verdict — against its gold
    flag (HotpotQA)."""
    flags = {row["sample_id"]: row["gold_flags"] for row in labels if "gold_flags" in row}
    scores, truth, kinds = [], [], set()
    for sample in report["samples"]:
        details = sample["details"].get("context_precision") or {}
        findings = details.get("findings", [])
        if sample["sample_id"] not in flags or not findings:
            continue
        chunks = details.get("chunks") or [{}] * len(findings)
        for finding, chunk, flag in zip(findings, chunks, flags[sample["sample_id"]], strict=True):
            p = finding["probability"]
            if "relevance" in chunk:
                scores.append(chunk["relevance"])
                kinds.add("relevance")
            elif p is not None:
                scores.append(p)
                kinds.add("P(relevant)")
            elif finding["ok"] is not None:
                scores.append(float(finding["ok"]))
            else:
                continue  # no verdict (RAGAS's NaN): the table's n leaves the chunk out
            truth.append(flag)
    # Named for the table: hard verdicts alone (RAGAS's) make AUC equal balanced accuracy, worth seeing.
    # offline-eval's chunks are scored, save the few its reference-answer rule decides (P None, ok).
    score = ("relevance (P(relevant) mixed with word coverage)" if "relevance" in kinds else
             "P(relevant)" if kinds else "verdict")
    return {**binary_agreement(scores, truth), "score": score}


if __name__ == "__main__":
    raise SystemExit(main())
