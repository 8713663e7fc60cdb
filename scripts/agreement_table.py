#!/usr/bin/env python3
"""One markdown table from several ``agreement_benchmark.py`` (or ``bench_ragas.py --labels``) runs.

    .venv/bin/python scripts/agreement_table.py bench-out/attributionbench-test-default bench-out/ocnli-test-default

Each folder holds the ``agreement.json`` a run wrote. One row per benchmark × metric × judge: n (positive
/ negative), ROC AUC, balanced accuracy and Cohen's κ at the threshold the run decided with (each metric's
gate threshold; a chunk's score ≥ 0.5 for HotpotQA's per-paragraph rows), each with its 95% bootstrap interval,
and the run's seconds per item.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HEADER = ("| benchmark (split) | metric ↔ label | judge | n (yes/no) | ROC AUC | balanced acc. @ t | t | Cohen's κ @ t "
          "| s / item |\n|---|---|---|---|---|---|---:|---|---:|")


def _fmt(stat: dict | None) -> str:
    if not stat or stat.get("value") is None:
        return "n/a"
    return f"{stat['value']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def rows(result: dict) -> list[str]:
    """The table rows of one run's ``agreement.json``."""
    run = result["benchmark_run"]
    where = f"{run['benchmark']} ({run['split']})"
    per_item = f"{run['seconds_per_item']:.1f}" if run.get("seconds_per_item") is not None else "n/a"
    out = []
    for m in result["metrics"]:
        if m["kind"] != "binary":
            continue
        st = m["stats"]
        out.append(f"| {where} | {m['metric']} ↔ {m['label']} | {run['judge']} | {m['n']} ({m['n_positive']}/"
                   f"{m['n_negative']}) | {_fmt(st.get('roc_auc'))} | {_fmt(st.get('balanced_accuracy_fixed'))} "
                   f"| {m['fixed_threshold']:g} | {_fmt(st.get('cohen_kappa'))} | {per_item} |")
    chunks = result.get("chunks")
    if chunks:
        st = chunks["stats"]
        t = (st.get("balanced_accuracy_fixed") or {}).get("threshold", 0.5)
        score = chunks.get("score", "P(relevant)")  # results written before chunk_agreement named it
        out.append(f"| {where} | chunk {score} ↔ gold paragraph | {run['judge']} | {chunks['n']} "
                   f"({chunks['n_positive']}/{chunks['n_negative']}) | {_fmt(st.get('roc_auc'))} "
                   f"| {_fmt(st.get('balanced_accuracy_fixed'))} | {t:g} | {_fmt(st.get('cohen_kappa'))} "
                   f"| {per_item} |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="folders holding agreement.json")
    args = parser.parse_args(argv)
    lines = [HEADER]
    for folder in args.runs:
        path = folder / "agreement.json"
        try:
            result = json.loads(path.read_text("utf-8"))
            lines += rows(result)
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: {path}: {exc!r} (not an agreement_benchmark.py result?)", file=sys.stderr)
            return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
