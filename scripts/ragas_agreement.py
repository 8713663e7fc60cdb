#!/usr/bin/env python3
"""RAGAS 0.4.3's agreement with human labels on a shared benchmark's split, judged by the same GGUF.

    .venv/bin/python scripts/ragas_agreement.py ocnli --split test --limit 60 --balanced \\
        --out bench-out/ocnli-test-ragas

The RAGAS column of the README's agreement table: the same items as ``agreement_benchmark.py`` with the
same ``--split/--limit/--balanced/--sample-seed`` (so the rows compare item for item), scored by RAGAS's classic metric
of the same name through ``scripts/ragas_side.py`` in its own environment (``bench_ragas.py`` sets it up),
with the GGUF served on loopback by llama-cpp-python's server. A NaN from RAGAS counts as not computable,
and the table's n says how many were left. Writes ``OUT/agreement.json`` in ``agreement_benchmark.py``'s
shape, for ``scripts/agreement_table.py``. Balanced accuracy and kappa use offline-eval's gate threshold
for the metric, so both tools' gates are judged at the same bar.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agreement_benchmark  # noqa: E402
import bench_adapters  # noqa: E402
import bench_ragas  # noqa: E402

from offline_eval.agreement import agreement, render_agreement_markdown  # noqa: E402
from offline_eval.metrics import default_thresholds  # noqa: E402
from offline_eval.modelstore import resolve  # noqa: E402

# RAGAS has these of our metrics (answer relevancy is its own embedding form).
RAGAS_HAS = ("faithfulness", "answer_relevancy", "context_precision")


def one_chunk_per_sample(samples_path: Path, out: Path) -> Path:
    """The samples again, one per retrieved chunk (``ID#k``). RAGAS's context precision judges each
    chunk in its own call but reports only their average precision; a sample of one chunk gives that
    chunk's verdict back, for agreement with per-chunk labels (HotpotQA's gold paragraphs)."""
    lines = []
    for line in samples_path.read_text("utf-8").splitlines():
        record = json.loads(line)
        for k, context in enumerate(record["contexts"]):
            lines.append(json.dumps({**record, "sample_id": f"{record['sample_id']}#{k}", "contexts": [context]},
                                    ensure_ascii=False))
    path = out / "samples-one-chunk.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ragas_average_precision(verdicts: list[float | None]) -> float | None:
    """RAGAS's context precision of a sample from its chunks' verdicts: 0 where no chunk is useful,
    NaN (None) where any verdict is."""
    if any(v is None for v in verdicts):
        return None
    return bench_adapters.average_precision([int(v >= 0.5) for v in verdicts]) or 0.0


def regroup_chunks(sample_ids: list[str], verdicts: list[float | None]) -> list[dict]:
    """Per-chunk RAGAS verdicts (``ID#k``) back into one report sample per ID, each chunk a finding."""
    by_sample: dict[str, list] = {}
    for chunk_id, verdict in zip(sample_ids, verdicts, strict=True):
        by_sample.setdefault(chunk_id.rpartition("#")[0], []).append(verdict)
    samples = []
    for sample_id, chunk_verdicts in by_sample.items():
        score = ragas_average_precision(chunk_verdicts)
        samples.append({
            "sample_id": sample_id, "scores": {"context_precision": score},
            "details": {"context_precision": {"findings": [{"probability": None, "ok": v} for v in chunk_verdicts]}},
            "not_computable": {} if score is not None else {"context_precision": "RAGAS gave NaN"}})
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    agreement_benchmark.add_item_arguments(parser)
    parser.add_argument("--metrics", default="faithfulness", help="comma-separated, of " + ", ".join(RAGAS_HAS))
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    full = agreement_benchmark.MAPPINGS[args.name]
    chosen = [m for m in args.metrics.split(",") if m]
    unusable = [m for m in chosen if m not in full or m not in RAGAS_HAS]
    if unusable:
        parser.error(f"RAGAS on {args.name}: {', '.join(unusable)} has no label here or no RAGAS metric")
    mapping = {m: full[m] for m in chosen}
    items = agreement_benchmark.select(bench_adapters.convert(args.name, args.split), mapping, args.limit,
                                       args.balanced, args.sample_seed)
    samples_path, labels_path = bench_adapters.write(items, args.out)
    labels = [json.loads(line) for line in labels_path.read_text("utf-8").splitlines()]
    per_chunk = any("gold_flags" in row for row in labels)
    ragas_input = one_chunk_per_sample(samples_path, args.out) if per_chunk else samples_path

    python = bench_ragas.ragas_python()
    judge_model = resolve(args.judge, "judge")
    embedder = resolve(bench_ragas.EMBEDDER, "embedder")
    server, url = bench_ragas.serve(python, judge_model.path, args.n_ctx, os.cpu_count() or 1,
                                    args.out / "server.log")
    raw = args.out / "ragas-scores.json"
    started = time.perf_counter()
    try:
        subprocess.run([str(python), str(bench_ragas.REPO / "scripts" / "ragas_side.py"), str(ragas_input),
                        "--base-url", url, "--embedder", str(embedder.path), "--metrics", ",".join(mapping),
                        "--out", str(raw)], check=True, stderr=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait(timeout=30)
    seconds = time.perf_counter() - started
    ragas = json.loads(raw.read_text("utf-8"))

    # RAGAS's scores in the shape of an offline-eval report, so one agreement() computes both columns.
    if per_chunk:
        samples = regroup_chunks(ragas["sample_ids"], ragas["scores"]["context_precision"])
    else:
        samples = []
        for i, sample_id in enumerate(ragas["sample_ids"]):
            scores = {m: ragas["scores"][m][i] for m in mapping}
            samples.append({"sample_id": sample_id, "scores": scores, "details": {},
                            "not_computable": {m: "RAGAS gave NaN" for m, v in scores.items() if v is None}})
    report = {"schema_version": 1, "run": {"metrics": list(mapping)}, "samples": samples}
    gate = default_thresholds()
    # RAGAS's answer relevancy is taken at the gate of offline-eval's RAGAS form.
    result = agreement(report, labels, mapping,
                       fixed_threshold={m: gate[bench_ragas.OURS_FOR.get(m, m)] for m in mapping})
    if per_chunk:
        result["chunks"] = agreement_benchmark.chunk_agreement(report, labels)
    failures = bench_ragas.ragas_failures(ragas["logged_errors"])
    result["benchmark_run"] = {
        "benchmark": args.name, "split": args.split, "sample_seed": args.sample_seed,
        "judge": f"RAGAS 0.4.3 · {judge_model.name}",
        "n_items": len(items), "seconds": round(seconds, 1), "seconds_per_item": round(seconds / max(len(items), 1), 1),
        "judge_calls": ragas["calls"], "nan": ragas["nan"], "logged_failures": failures,
        "ragas_metric": ragas.get("ragas_metric"),
    }
    (args.out / "agreement.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"RAGAS 0.4.3 on {args.name} {args.split}: {len(items)} items, judge {judge_model.name}, {seconds:.0f}s, "
          f"{ragas['calls']} calls, NaN {ragas['nan']}" + (f", logged {failures}" if failures else ""))
    print(render_agreement_markdown(result))
    agreement_benchmark.print_chunk_agreement(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
