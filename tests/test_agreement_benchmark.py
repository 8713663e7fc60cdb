"""Agreement with real human labels: faithfulness vs AttributionBench's "attributable" (dev split).

20 items of the dev file, balanced by label (10 attributable, 10 not, in file order), judged by the
default judge. The run is deterministic, so the floors are the measured values less a small margin (for a
llama.cpp or library update); they catch a regression of the prompts or the claim pipeline.
"""

from __future__ import annotations

import sys

import pytest

from offline_eval import evaluate
from offline_eval.agreement import agreement
from tests.conftest import BENCHMARKS, REPO

pytestmark = [pytest.mark.slow, pytest.mark.quality]

# The floors were set from the extracted-claims form; the sentence check (the default since 2026-12-05)
# passes them too.
# Measured 2026-12-03 with qwen2.5-coder-1.5b on these 20 items (see scripts/agreement_benchmark.py); the
# default scoring is now the mean P(supported): AUC 0.880 [0.681, 1.000], balanced accuracy 0.700 at 0.5
# (hard verdicts: AUC 0.700, balanced accuracy 0.700).  Earlier, hard verdicts on another build:
AUC_FLOOR = 0.70  # measured 0.778 [0.589, 0.950]
BALANCED_ACCURACY_FLOOR = 0.65  # measured 0.728 [0.534, 0.900] at the fixed 0.5 threshold


@pytest.mark.skipif(not (BENCHMARKS / "attributionbench").exists(), reason="shared benchmarks not present")
def test_faithfulness_agrees_with_attributionbench_dev_labels(default_judge, tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    import agreement_benchmark
    import bench_adapters

    mapping = {"faithfulness": agreement_benchmark.MAPPINGS["attributionbench"]["faithfulness"]}
    items = agreement_benchmark.select(bench_adapters.convert("attributionbench", "dev", BENCHMARKS), mapping, 20, True)
    samples, labels = zip(*items)
    assert sorted(lab["attributable"] for lab in labels) == [0] * 10 + [1] * 10
    report = evaluate(list(samples), judge_instance=default_judge, metrics=("faithfulness",), n_resamples=200)
    result = agreement(report.data, list(labels), mapping, n_resamples=200)
    (row,) = result["metrics"]
    stats = row["stats"]
    assert row["n"] >= 18, row  # at most 2 of the 20 not computable
    assert stats["roc_auc"]["value"] >= AUC_FLOOR, stats
    assert stats["balanced_accuracy_fixed"]["value"] >= BALANCED_ACCURACY_FLOOR, stats
