"""The review items of a real report (the tiny judge, real embedders) round-trip: the ids report.html
embeds, a reviewer's labels in the export's format, ``offline-eval agreement`` and ``evaluate --labels``."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from offline_eval import evaluate, stats
from offline_eval.cli import cli
from offline_eval.report import view
from tests.conftest import REPO
from tests.review_common import write_labels

pytestmark = pytest.mark.slow
EXAMPLE = REPO / "examples" / "sample.jsonl"
OPTIONS = {"max_claims": 3, "n_questions": 1, "n_resamples": 200}


def test_review_items_of_a_real_report_round_trip(tiny_judge, embedders, tmp_path):
    samples = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()[:3]]
    report = evaluate(samples, judge_instance=tiny_judge, embedders=embedders, **OPTIONS)
    out = tmp_path / "out"
    report.write(out)
    items = view.review_items(report.data)
    verdicts = [i for i in items if i["kind"] == "verdict"]
    assert verdicts, "a real report has yes/no verdicts to review"
    assert {i["metric"] for i in verdicts} <= {"faithfulness", "answer_relevancy", "context_recall",
                                               "context_precision"}

    # report.html embeds exactly these items, in this order
    page = (out / "report.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="review-data">(.*?)</script>', page, re.S).group(1)
    assert [(d["s"], d["i"], d["v"]) for d in json.loads(block)["items"]] == \
        [(i["sample_id"], i["item"], i["verdict"]) for i in items]

    # a reviewer marks every item of the first two samples: verdicts alternately right and wrong, scores right
    reviewed = [i for i in items if i["sample_id"] in {s["sample_id"] for s in report.samples[:2]}]
    rows, n = [], 0
    for item in reviewed:
        label = "right" if item["kind"] == "score" or n % 2 == 0 else "wrong"
        n += item["kind"] == "verdict"
        rows.append({"sample_id": item["sample_id"], "item": item["item"], "label": label,
                     "verdict": item["verdict"], "reviewer": "ci", "time": "2026-12-04T00:00:00.000Z"})
    labels = write_labels(tmp_path / "labels.jsonl", rows)

    result = CliRunner().invoke(cli, ["agreement", str(out / "report.json"), "--labels", str(labels), "--ppi",
                                      "--json", str(tmp_path / "agreement.json")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "agreement.json").read_text(encoding="utf-8"))
    assert data["n_reviewed"] == len(rows) and data["n_samples_reviewed"] == 2
    total = data["error_rates"][-1]
    n_wrong = sum(r["label"] == "wrong" for r in rows)
    assert (total["metric"], total["n_reviewed"], total["n_wrong"]) == ("all", len(rows), n_wrong)
    assert total["error_rate"]["ci_low"] == pytest.approx(stats.proportion_ci(n_wrong, len(rows))[1])
    for entry in data["ppi"]:  # every computable metric of a fully reviewed sample has a true score
        computable = [s for s in report.samples[:2] if view.score_of(s, entry["metric"]) is not None]
        assert entry["n_labelled"] == len(computable), entry

    # the same labels in a second run: answered from the cache, the PPI means in the report
    again = evaluate(samples, judge_instance=tiny_judge, embedders=embedders, labels=str(labels), **OPTIONS)
    assert again.data["review"]["n_reviewed"] == len(rows)
    for entry in data["ppi"]:
        assert again.data["aggregate"][entry["metric"]]["ppi"]["value"] == entry["value"]
