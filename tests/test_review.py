"""Reviewed items without a browser: item ids, the labels.jsonl reader (file:line:field errors), matching
labels to a report, error rates, true scores, PPI in every report format and the ``ppi`` gate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from offline_eval import console, runner, stats
from offline_eval.agreement import LabelsError
from offline_eval.cli import cli
from offline_eval.config import ConfigError
from offline_eval.metrics import REGISTRY
from offline_eval.report import view
from offline_eval.report.html import render_html
from offline_eval.report.junit import render_junit
from offline_eval.report.markdown import render_markdown
from offline_eval.review import item_agreement, load_item_labels, match_labels, true_scores
from offline_eval.testing import FakeJudge, hashing_embedders
from tests.report.common import load_fixture
from tests.review_common import INJECTED_ID, answer, build, records, write_labels


@pytest.fixture
def made(tmp_path) -> tuple[Path, dict]:
    out = tmp_path / "out"
    return out, build(out)


def _row(sid: str, item: str, label, **extra) -> dict:
    return {"sample_id": sid, "item": item, "label": label, **extra}


# ------------------------------------------------------------------------------------------ item ids


def test_review_items_of_a_report(made):
    _, report = made
    items = view.review_items(report)
    parking = [(i["item"], i["kind"], i["verdict"], i["probability"]) for i in items if i["sample_id"] == "parking"]
    assert parking == [("faithfulness/score", "score", "0.500", None),
                       ("faithfulness/finding/1", "verdict", "supported", 0.55),
                       ("faithfulness/finding/2", "verdict", "unsupported", 0.45)]
    assert len({i.key for i in items}) == len(items)  # unique within the report
    assert [i["doubt"] for i in items if i["sample_id"] == "parking"] == [0.3, 0.05, 0.05]
    for item in items:
        name, kind, index = view.parse_item_id(item["item"])
        assert (name, kind, index) == (item["metric"], item["kind"], item["index"])
    assert view.review_fingerprint(items) == view.review_fingerprint(view.review_items(json.loads(
        json.dumps(report))))


def test_every_metric_has_items_and_graded_findings_are_not_items():
    report = load_fixture()
    items = view.review_items(report)
    kinds = {(i["metric"], i["kind"]) for i in items}
    assert {("faithfulness", "verdict"), ("context_recall", "verdict"), ("context_precision", "verdict"),
            ("answer_relevancy", "verdict"), ("context_relevant_ratio", "score")} <= kinds
    generated = [i for i in items if i["label"] == "generated question"]
    assert generated == []  # a similarity is not a verdict


@pytest.mark.parametrize("item", ["faithfulness", "faithfulness/finding/0", "faithfulness/finding/01", "/score",
                                  "faithfulness/finding/x", "a/b/c/d", 3])
def test_malformed_item_ids(item):
    assert view.parse_item_id(item) is None


# ------------------------------------------------------------------------------------------ the reader


def test_reads_jsonl_json_and_csv(tmp_path):
    rows = [_row("a", "faithfulness/finding/1", "Wrong", verdict="supported", reviewer="ana", time="t"),
            _row("a", "faithfulness/score", 0.25), _row("b", "faithfulness/score", "right")]
    jsonl = load_item_labels(write_labels(tmp_path / "l.jsonl", rows))
    assert [(x.sample_id, x.item, x.label, x.reviewer, x.location) for x in jsonl.labels] == [
        ("a", "faithfulness/finding/1", "wrong", "ana", "line 1"), ("a", "faithfulness/score", 0.25, None, "line 2"),
        ("b", "faithfulness/score", "right", None, "line 3")]
    (tmp_path / "l.json").write_text(json.dumps(rows), encoding="utf-8")
    assert [x.label for x in load_item_labels(tmp_path / "l.json").labels] == ["wrong", 0.25, "right"]
    (tmp_path / "l.csv").write_text("sample_id,item,label\na,faithfulness/finding/1,wrong\n\na,faithfulness/score,"
                                    "0.5\n", encoding="utf-8")
    assert [(x.label, x.location) for x in load_item_labels(tmp_path / "l.csv").labels] == [
        ("wrong", "line 2"), (0.5, "line 4")]


@pytest.mark.parametrize("line, message", [
    ('{"item": "faithfulness/score", "label": "right"}', "line 2: field 'sample_id': missing"),
    ('{"sample_id": "a", "label": "right"}', "line 2: field 'item': missing"),
    ('{"sample_id": "a", "item": "faithfulness/claim/1", "label": "right"}',
     "line 2: field 'item': 'faithfulness/claim/1' is not an item id"),
    ('{"sample_id": "a", "item": "faithfulness/finding/2", "label": "maybe"}',
     "line 2: field 'label': expected \"right\" or \"wrong\" for a verdict item, got 'maybe'"),
    ('{"sample_id": "a", "item": "faithfulness/finding/2", "label": 0.5}', "line 2: field 'label': expected"),
    ('{"sample_id": "a", "item": "faithfulness/score", "label": 1.5}',
     "line 2: field 'label': a score must be a number in [0, 1], got 1.5"),
    ('{"sample_id": "a", "item": "faithfulness/score", "label": "high"}',
     "line 2: field 'label': expected \"right\" or \"wrong\" or the correct score"),
    ('{"sample_id": "a", "item": "faithfulness/score"}', "line 2: field 'label': missing"),
    ('{"sample_id": "a", "item": "faithfulness/finding/1", "label": "right"}',
     "line 2: field 'item': sample 'a' item 'faithfulness/finding/1' is labelled twice (also line 1)"),
    ('{"sample_id": "a", "item": "faithfulness/score", "label": "right", "reviewer": ["x"]}',
     "line 2: field 'reviewer': expected a string"),
    ('{"sample_id": "a", "item": ', "line 2: invalid JSON"),
    ('["a", "faithfulness/score", "right"]', "line 2: expected a JSON object, got list"),
])
def test_bad_lines_name_the_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"sample_id": "a", "item": "faithfulness/finding/1", "label": "right"}\n' + line + "\n",
                    encoding="utf-8")
    with pytest.raises(LabelsError) as err:
        load_item_labels(path)
    assert str(err.value).startswith(f"{path} ") and message in str(err.value)


def test_bad_files(tmp_path):
    with pytest.raises(LabelsError, match="file not found"):
        load_item_labels(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(LabelsError, match="empty"):
        load_item_labels(tmp_path / "empty.jsonl")


# ------------------------------------------------------------------------------------------ against a report


@pytest.mark.parametrize("row, message", [
    (_row("nope", "faithfulness/score", "right"), "line 1: field 'sample_id': sample 'nope' is not in the report"),
    (_row("parking", "faithfulness/finding/7", "right"),
     "line 1: field 'item': 'faithfulness/finding/7' is not an item of sample 'parking' in the report (its items: "
     "faithfulness/score, faithfulness/finding/1, faithfulness/finding/2)"),
    (_row("parking", "context_recall/score", "right"), "field 'item': 'context_recall/score' is not an item"),
    (_row("parking", "faithfulness/finding/1", "right", verdict="unsupported"),
     "line 1: field 'verdict': the label was given for the judge's verdict 'unsupported', but the report says "
     "'supported'"),
])
def test_labels_that_do_not_match_the_report(made, tmp_path, row, message):
    out, report = made
    path = write_labels(tmp_path / "labels.jsonl", [row])
    with pytest.raises(LabelsError) as err:
        match_labels(report, load_item_labels(path))
    assert str(err.value).startswith(f"{path} line 1: field ") and message in str(err.value)
    result = CliRunner().invoke(cli, ["agreement", str(out / "report.json"), "--labels", str(path)])
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_per_sample_labels_without_map_say_so(made, tmp_path):
    out, _ = made
    path = write_labels(tmp_path / "labels.jsonl", [{"sample_id": "parking", "faithful": "no"}])
    result = CliRunner().invoke(cli, ["agreement", str(out / "report.json"), "--labels", str(path)])
    assert result.exit_code == 2
    assert "line 1: field 'item': missing" in result.stderr and "--map METRIC=LABEL_FIELD" in result.stderr
    # the per-sample format still works with --map
    result = CliRunner().invoke(cli, ["agreement", str(out / "report.json"), "--labels", str(path),
                                      "--map", "faithfulness=faithful"])
    assert result.exit_code == 0 and "### Binary labels" in result.output


# ------------------------------------------------------------------------------------------ error rates, truth


def test_error_rates_and_kappa(made, tmp_path):
    _, report = made
    rows = [_row("parking", "faithfulness/finding/1", "wrong"), _row("parking", "faithfulness/finding/2", "right"),
            _row("refunds", "faithfulness/finding/1", "right"), _row("refunds", "faithfulness/finding/2", "wrong"),
            _row("store-hours", "faithfulness/score", "wrong"), _row("refunds", "faithfulness/score", 0.5)]
    result = item_agreement(report, load_item_labels(write_labels(tmp_path / "l.jsonl", rows)), include_ppi=True)
    verdict, score, total = result["error_rates"]
    assert (verdict["kind"], verdict["n_reviewed"], verdict["n_wrong"]) == ("verdict", 4, 2)
    assert (verdict["error_rate"]["value"], verdict["error_rate"]["ci_low"], verdict["error_rate"]["ci_high"]) == \
        pytest.approx(stats.proportion_ci(2, 4))
    # judge: supported, unsupported, supported, unsupported; reviewer: unsupported, unsupported, supported, supported
    assert verdict["cohen_kappa"] == pytest.approx(stats.cohen_kappa([1, 0, 1, 0], [0, 0, 1, 1]))
    assert (score["kind"], score["n_reviewed"], score["n_wrong"], score["n_scores_given"]) == ("score", 1, 1, 1)
    assert (total["metric"], total["n_reviewed"], total["n_wrong"]) == ("all", 5, 3)
    assert result["n_reviewed"] == 6 and result["n_samples_reviewed"] == 3


def test_true_scores_follow_each_metrics_formula(made, tmp_path):
    _, report = made
    rows = [_row("parking", "faithfulness/finding/1", "wrong"), _row("parking", "faithfulness/finding/2", "wrong"),
            _row("refunds", "faithfulness/finding/1", "right"),  # one of two verdicts: no true score
            _row("store-hours", "faithfulness/score", "right"), _row(INJECTED_ID, "faithfulness/score", 0.4),
            _row(INJECTED_ID, "faithfulness/finding/1", "right")]
    labels = load_item_labels(write_labels(tmp_path / "l.jsonl", rows))
    truth = true_scores(report, match_labels(report, labels))
    store = view.score_of(report["samples"][0], "faithfulness")
    assert truth == {"faithfulness": {"parking": 0.5, "store-hours": store, INJECTED_ID: 0.4}}
    # context precision: average precision over the reviewer's relevance; answer relevancy: 0 if evasive
    assert REGISTRY["context_precision"].truth_scores({}, [False, True]) == \
        {"context_precision": 0.5, "context_relevant_ratio": 0.5}
    details = {"generated_questions": [{"similarity": 0.5}, {"similarity": 0.9}]}
    ragas_form = REGISTRY["answer_relevancy_ragas"]
    assert ragas_form.truth_scores(details, [True]) == {"answer_relevancy_ragas": pytest.approx(0.7)}
    assert ragas_form.truth_scores(details, [False]) == {"answer_relevancy_ragas": 0.0}
    assert REGISTRY["answer_relevancy"].truth_scores({}, [True, True]) == {"answer_relevancy": 1.0}
    assert REGISTRY["faithfulness"].truth_scores({}, [True, False, True]) == {"faithfulness": pytest.approx(2 / 3)}


# ------------------------------------------------------------------------------------------ PPI in every report


def _two_reviewed(tmp_path: Path) -> Path:
    """Parking (true score 0.5: one claim of two truly supported) and refunds (score marked right)."""
    return write_labels(tmp_path / "labels.jsonl", [
        _row("parking", "faithfulness/finding/1", "right", verdict="supported", reviewer="ana"),
        _row("parking", "faithfulness/finding/2", "right", verdict="unsupported", reviewer="ana"),
        _row("refunds", "faithfulness/score", 0.0, reviewer="bo"),
    ])


def test_ppi_beside_the_judge_mean_in_every_format(tmp_path):
    labels = _two_reviewed(tmp_path)
    report = build(tmp_path / "out", labels=str(labels))
    scores = {s["sample_id"]: s["scores"]["faithfulness"] for s in report["samples"]}
    expected = stats.ppi_mean_ci([scores["parking"], scores["refunds"]], [0.5, 0.0],
                                 [scores["store-hours"], scores[INJECTED_ID]])
    agg = report["aggregate"]["faithfulness"]
    assert (agg["ppi"]["value"], agg["ppi"]["ci_low"], agg["ppi"]["ci_high"]) == \
        pytest.approx([min(1.0, max(0.0, x)) for x in expected])
    assert (agg["ppi"]["n_labelled"], agg["ppi"]["n_unlabelled"]) == (2, 2)
    assert report["review"]["labels"]["reviewers"] == ["ana", "bo"] and report["review"]["n_reviewed"] == 3
    saved = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert saved["aggregate"]["faithfulness"]["ppi"] == agg["ppi"]
    value = f"{agg['ppi']['value']:.3f}"
    ci = f"[{agg['ppi']['ci_low']:.3f}, {agg['ppi']['ci_high']:.3f}]"
    md = render_markdown(report)
    assert "| PPI mean | PPI 95% CI | reviewed |" in md and f"| {value} | {ci} | 2 |" in md
    assert "### Judge error rate on reviewed items" in md
    html = render_html(report)
    assert f'>{value}</td><td class=num>{ci}</td><td class=num>2</td>' in html and "PPI mean" in html
    junit = render_junit(report)
    assert f'<property name="ppi_mean" value="{value}" />' in junit
    table = console.summary(report)
    assert re.search(rf"faithfulness\s+{agg['mean']:.3f}\s+\[[^]]+\]\s+{value}\s+\[", table)
    assert "2 of 2 verdicts" not in table and "items reviewed" in table
    # without labels nothing changes
    plain = build(tmp_path / "plain")
    assert "ppi" not in plain["aggregate"]["faithfulness"] and "review" not in plain
    assert "PPI" not in render_markdown(plain) and "PPI" not in console.summary(plain)


def test_ppi_per_category(tmp_path):
    labels = _two_reviewed(tmp_path)
    data = records()
    for r, category in zip(data, ["a", "a", "b", "b"]):
        r["category"] = category
    report = runner.run(data, _config(labels=labels), judge=FakeJudge(answer), embedders=hashing_embedders()).report
    by_cat = report["by_category"]
    assert by_cat["a"]["faithfulness"]["ppi"]["n_labelled"] == 1 and by_cat["b"]["faithfulness"]["ppi"]["n_labelled"] == 1


def _config(**settings):
    from offline_eval.config import EvalConfig, apply_settings

    return apply_settings(EvalConfig(), {"metrics": ("faithfulness",), "n_resamples": 100, **settings}, "test")


# ------------------------------------------------------------------------------------------ the ppi gate


def test_gate_on_ppi_judges_the_corrected_mean(tmp_path):
    labels = _two_reviewed(tmp_path)
    report = build(tmp_path / "out", labels=str(labels), gate_on="ppi", thresholds={"faithfulness": 0.5})
    agg = report["aggregate"]["faithfulness"]
    check = view.find_check(report, "faithfulness")
    assert check["value"] == agg["ppi"]["value"] != agg["mean"]
    assert check["status"] == ("passed" if round(agg["ppi"]["value"], 3) >= 0.5 else "failed")
    # the judge's own mean would pass a threshold the corrected mean fails
    threshold = round((agg["mean"] + agg["ppi"]["value"]) / 2, 3)
    assert agg["ppi"]["value"] < threshold <= agg["mean"]
    failed = build(tmp_path / "out2", labels=str(labels), gate_on="ppi", thresholds={"faithfulness": threshold})
    assert failed["gate"]["passed"] is False
    assert "gate on PPI-corrected mean" in render_markdown(failed)
    assert "judged on the PPI-corrected mean" in console.summary(failed)
    passed = build(tmp_path / "out3", labels=str(labels), thresholds={"faithfulness": threshold})
    assert passed["gate"]["passed"] is True  # gating on the mean


def test_gate_on_ppi_without_a_review_of_the_metric_fails(tmp_path):
    labels = write_labels(tmp_path / "l.jsonl", [_row("parking", "faithfulness/finding/1", "right")])
    report = build(tmp_path / "out", labels=str(labels), gate_on="ppi", thresholds={"faithfulness": 0.1})
    check = view.find_check(report, "faithfulness")
    assert check["status"] == "failed" and check["value"] is None
    assert check["reason"].startswith("no PPI-corrected mean (no reviewed sample")


def test_gate_on_ppi_needs_labels():
    with pytest.raises(ConfigError, match="gate_on 'ppi' .* needs reviewed labels"):
        runner.run(records(), _config(gate_on="ppi"), judge=FakeJudge(answer), embedders=hashing_embedders())


# ------------------------------------------------------------------------------------------ the command line


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(runner, "load_judge", lambda config, echo: FakeJudge(answer))
    monkeypatch.setattr(runner, "EmbedderSet", lambda forced=None: hashing_embedders())
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records()), encoding="utf-8")
    return data


def test_evaluate_with_labels_and_the_ppi_gate(scripted, tmp_path):
    labels = _two_reviewed(tmp_path)
    result = CliRunner().invoke(cli, ["evaluate", str(scripted), "--out", "out", "--metrics", "faithfulness",
                                      "--labels", str(labels), "--gate-on", "ppi", "--threshold", "faithfulness=0.1"])
    assert result.exit_code == 0, result.output
    assert "PPI 95% CI" in result.output and "judged on the PPI-corrected mean" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["gate"]["gate_on"] == "ppi" and report["aggregate"]["faithfulness"]["ppi"]["n_labelled"] == 2
    # the same labels, fed to agreement, give the same PPI mean
    agreed = CliRunner().invoke(cli, ["agreement", "out/report.json", "--labels", str(labels), "--ppi",
                                      "--json", "agree.json"])
    assert agreed.exit_code == 0, agreed.output
    ppi = json.loads((tmp_path / "agree.json").read_text(encoding="utf-8"))["ppi"][0]
    assert ppi["value"] == report["aggregate"]["faithfulness"]["ppi"]["value"]


@pytest.mark.parametrize("args, message", [
    (["--gate-on", "ppi"], "gate_on 'ppi' gates on the PPI-corrected mean, which needs reviewed labels"),
    (["--labels", "missing.jsonl"], "missing.jsonl: file not found"),
])
def test_evaluate_usage_errors_exit_2_before_judging(scripted, args, message):
    result = CliRunner().invoke(cli, ["evaluate", str(scripted), "--out", "out", *args])
    assert result.exit_code == 2 and message in result.output
    assert "samples from" not in result.output  # nothing was judged


def test_evaluate_with_labels_of_another_report_exits_2(scripted, tmp_path):
    labels = write_labels(tmp_path / "l.jsonl", [_row("parking", "faithfulness/finding/1", "right"),
                                                  _row("parking", "faithfulness/finding/9", "wrong")])
    result = CliRunner().invoke(cli, ["evaluate", str(scripted), "--out", "out", "--metrics", "faithfulness",
                                      "--labels", str(labels)])
    assert result.exit_code == 2
    assert f"{labels} line 2: field 'item': 'faithfulness/finding/9' is not an item of sample 'parking'" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------------------ the page's data


def test_review_data_in_the_page_is_escaped_json(made):
    out, report = made
    page = (out / "report.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="review-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in block and ">" not in block and "&" not in block
    data = json.loads(block)
    items = view.review_items(report)
    assert data["key"] == view.review_fingerprint(items)
    assert [(d["s"], d["i"], d["v"]) for d in data["items"]] == [(i["sample_id"], i["item"], i["verdict"])
                                                                  for i in items]
    assert INJECTED_ID in [d["s"] for d in data["items"]]
    assert page.count("<script") == 2 and "<script>window.__pwned" not in page
    for n, item in enumerate(items):
        assert f'data-item="{n}"' in page


def test_proportion_ci():
    assert stats.proportion_ci(0, 0) == (None, None, None)
    rate, low, high = stats.proportion_ci(1, 3)
    assert rate == pytest.approx(1 / 3) and (low, high) == pytest.approx((0.0615, 0.7923), abs=1e-4)
    assert stats.proportion_ci(0, 5)[1:] == pytest.approx((0.0, 0.4345), abs=1e-4)
    assert stats.proportion_ci(5, 5)[2] == 1.0
    with pytest.raises(ValueError):
        stats.proportion_ci(4, 3)
