"""scripts/agreement_table.py: one markdown table from agreement_benchmark.py / ragas_agreement.py results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from offline_eval.agreement import agreement, binary_agreement
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import agreement_table  # noqa: E402


def _result(judge: str, seconds_per_item: float) -> dict:
    scores = [0.9, 0.8, 0.3, 0.2]
    report = {"schema_version": 1, "run": {"metrics": ["faithfulness"]},
              "samples": [{"sample_id": f"s{i}", "scores": {"faithfulness": s}, "not_computable": {}, "details": {}}
                          for i, s in enumerate(scores)]}
    labels = [{"sample_id": f"s{i}", "entailed": int(i < 2)} for i in range(4)]
    result = agreement(report, labels, {"faithfulness": "entailed"}, fixed_threshold={"faithfulness": 0.8},
                       n_resamples=50)
    result["chunks"] = binary_agreement([0.7, 0.1], [1, 0], n_resamples=50)
    result["benchmark_run"] = {"benchmark": "ocnli", "split": "test", "judge": judge, "n_items": 4,
                               "seconds_per_item": seconds_per_item}
    return result


def test_one_row_per_metric_and_chunk_set_with_the_run_threshold(tmp_path: Path, capsys) -> None:
    for name, judge in (("ours", "qwen2.5-coder-1.5b"), ("ragas", "RAGAS 0.4.3 · qwen2.5-coder-1.5b")):
        result = _result(judge, 12.34)
        if name == "ragas":
            result["chunks"]["score"] = "verdict"  # as chunk_agreement names hard verdicts
        (tmp_path / name).mkdir()
        (tmp_path / name / "agreement.json").write_text(json.dumps(result), encoding="utf-8")
    assert agreement_table.main([str(tmp_path / "ours"), str(tmp_path / "ragas")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| benchmark (split) |") and len(lines) == 2 + 4
    faith = lines[2]
    # Positives 0.9, 0.8 above both negatives: AUC 1; at the run's 0.8 both positives pass -> BA 1.
    assert faith.startswith("| ocnli (test) | faithfulness ↔ entailed | qwen2.5-coder-1.5b | 4 (2/2) | 1.000 [")
    assert "| 0.8 |" in faith and faith.endswith("| 12.3 |")
    assert lines[3].startswith("| ocnli (test) | chunk P(relevant) ↔ gold paragraph |") and "| 0.5 |" in lines[3]
    assert "RAGAS 0.4.3" in lines[4]
    assert lines[5].startswith("| ocnli (test) | chunk verdict ↔ gold paragraph | RAGAS 0.4.3")


def test_a_folder_without_a_result_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert agreement_table.main([str(tmp_path)]) == 2
    assert str(tmp_path / "agreement.json") in capsys.readouterr().err
