"""Tests for scripts/bench_adapters.py. Those that read real benchmark files skip without them."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from offline_eval.data import load_samples

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_adapters", REPO / "scripts" / "bench_adapters.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

ROOT = bench.DEFAULT_ROOT
needs_benchmarks = pytest.mark.skipif(not ROOT.is_dir(), reason=f"benchmarks not present at {ROOT}")


def test_average_precision():
    assert bench.average_precision([1, 1, 0]) == 1.0
    assert bench.average_precision([0, 1, 0, 1]) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert bench.average_precision([0, 0]) is None


@pytest.mark.parametrize(("name", "message"), [
    ("ares", "benchmark file not found"),  # the root holds no benchmark
    ("attributionbench-ood", "test set only"),  # a test set has no dev split, whatever the root holds
])
def test_a_dev_split_that_cannot_be_read_is_a_clear_error(tmp_path, capsys, name, message):
    rc = bench.main([name, "--split", "dev", "--out", str(tmp_path / "o"), "--root", str(tmp_path)])
    assert rc == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@needs_benchmarks
def test_ares_splits_and_labels():
    dev = bench.convert("ares", "dev", ROOT)
    test = bench.convert("ares", "test", ROOT)
    assert len(dev) == len(test) == 100
    assert dev[0][0]["sample_id"] == "ares-001" and test[0][0]["sample_id"] == "ares-101"
    labels = [lab for _, lab in dev + test]
    # Counts documented in ares_databricks_human/SOURCE.md for the whole 200-row file.
    assert Counter(lab["faithfulness"] for lab in labels) == {1: 172, 0: 28}
    assert Counter(lab["answer_relevancy"] for lab in labels) == {1: 179, 0: 21}
    assert Counter(lab["context_relevance"] for lab in labels) == {1: 98, 0: 102}
    sample = dev[0][0]
    assert sample["question"] == "Give a tutorial of declaring a delta live table?"
    assert len(sample["contexts"]) == 1 and sample["contexts"][0].startswith("      Delta Live Tables CLI")


@needs_benchmarks
def test_attributionbench_splits_and_labels():
    dev = bench.convert("attributionbench", "dev", ROOT)
    test = bench.convert("attributionbench", "test", ROOT)
    assert (len(dev), len(test)) == (1198, 500)
    assert Counter(lab["attributable"] for _, lab in dev) == {1: 599, 0: 599}
    assert Counter(lab["attributable"] for _, lab in test) == {1: 250, 0: 250}
    first = json.loads((ROOT / bench.ATTRIBUTIONBENCH_FILES["dev"]).read_text(encoding="utf-8").split("\n")[0])
    sample, label = dev[0]
    assert sample["sample_id"] == label["sample_id"] == first["id"]
    assert sample["answer"] == first["claim"] and sample["question"] == first["question"]
    assert sample["contexts"] == ["\n\n".join(first["references"])]
    assert sample["category"] == first["src_dataset"]


@needs_benchmarks
def test_attributionbench_ood_sources_and_labels():
    items = bench.convert("attributionbench-ood", "test", ROOT)
    # Counts documented in attributionbench/SOURCE.md; none of these sources is in dev or test-ID.
    sources = Counter(sample["category"] for sample, _ in items)
    assert sources == {"HAGRID": 1088, "BEGIN": 436, "AttrScore-GenSearch": 162}
    assert Counter(lab["attributable"] for _, lab in items) == {1: 843, 0: 843}
    dev_sources = {sample["category"] for sample, _ in bench.convert("attributionbench", "dev", ROOT)}
    assert not dev_sources & {sample["category"] for sample, _ in items}
    # 75 HAGRID items cite no evidence: kept, with no context, for the metric to score (0 by its formula).
    assert sum(1 for sample, _ in items if sample["contexts"] == []) == 75


@needs_benchmarks
def test_hotpotqa_splits_and_gold_flags():
    dev = bench.convert("hotpotqa", "dev", ROOT)
    test = bench.convert("hotpotqa", "test", ROOT)
    assert len(dev) == len(test) == 250
    assert not {s["sample_id"] for s, _ in dev} & {s["sample_id"] for s, _ in test}
    for sample, label in dev + test:
        assert len(label["gold_flags"]) == len(sample["contexts"])
        assert sum(label["gold_flags"]) == 2
        assert label["context_precision"] == bench.average_precision(label["gold_flags"])
        assert sample["reference_answer"]
    sample, label = dev[0]
    assert sample["reference_answer"] == "Chief of Protocol"
    assert label["gold_flags"] == [0, 1, 0, 0, 0, 0, 1, 0, 0, 0]
    assert sample["contexts"][1].startswith("Shirley Temple\nShirley Temple Black")


@needs_benchmarks
def test_ocnli_halves_and_labels():
    dev = bench.convert("ocnli", "dev", ROOT)
    test = bench.convert("ocnli", "test", ROOT)
    assert len(dev) + len(test) == 2950  # 3,000 pairs, 50 without a majority label left out
    assert not {s["sample_id"] for s, _ in dev} & {s["sample_id"] for s, _ in test}
    counts = Counter(label["nli_label"] for _, label in dev + test)
    assert counts == {"neutral": 1103, "entailment": 947, "contradiction": 900}
    assert all(label["entailed"] == (label["nli_label"] == "entailment") for _, label in dev + test)
    sample, _ = dev[0]
    assert sample["contexts"] == ["身上裹一件工厂发的棉大衣,手插在袖筒里"] and sample["answer"] == "身上至少一件衣服"


@needs_benchmarks
def test_halueval_halves_two_answers_a_line():
    dev = bench.convert("halueval", "dev", ROOT)
    test = bench.convert("halueval", "test", ROOT)
    assert (len(dev), len(test)) == (1000, 1000)
    assert Counter(lab["correct"] for _, lab in dev) == {1: 500, 0: 500}
    (right, right_label), (wrong, wrong_label) = dev[:2]
    assert (right["sample_id"], wrong["sample_id"]) == ("halueval-0001-right", "halueval-0001-hallucinated")
    assert right["answer"] == "The answer is Arthur's Magazine." and right["reference_answer"] == "Arthur's Magazine"
    assert wrong["answer"] == "First for Women was started first." and wrong["reference_answer"] == "Arthur's Magazine"
    assert right["contexts"] == wrong["contexts"] and len(right["contexts"]) == 1
    assert (right_label["correct"], wrong_label["correct"]) == (1, 0)
    assert test[0][0]["sample_id"] == "halueval-0501-right"


@needs_benchmarks
def test_qags_halves_by_article_one_sample_a_sentence():
    dev = bench.convert("qags", "dev", ROOT)
    test = bench.convert("qags", "test", ROOT)
    # SOURCE.md: CNN/DM 714 summary sentences, XSum 239 (one a summary); halves by article.
    assert len(dev) + len(test) == 714 + 239
    articles = [{s["sample_id"].rsplit("-", 1)[0] for s, _ in half} for half in (dev, test)]
    assert not articles[0] & articles[1]
    assert Counter(s["category"] for s, _ in test) == {"cnndm": 360, "xsum": 120}
    assert all(lab["supported"] == (lab["yes_share"] > 0.5) for _, lab in dev + test)
    assert Counter(lab["supported"] for _, lab in test) == {1: 328, 0: 152}
    first, label = test[0]
    assert first["sample_id"] == "qags-cnndm-118-1" and label == {
        "sample_id": "qags-cnndm-118-1", "supported": 0, "yes_share": 0.333333}
    assert first["answer"] == "Stephen dodd took asif bodi and abubakar bhula at anfield last month."
    assert first["contexts"][0].startswith("Goodness knows how many times at white hart lane")


def test_a_qags_vote_that_is_not_yes_or_no_names_the_line(tmp_path):
    (tmp_path / "qags").mkdir()
    record = {"article": "A.", "summary_sentences": [{"sentence": "B.", "responses": [{"worker_id": 1, "response": "maybe"}]}]}
    (tmp_path / "qags" / "mturk_cnndm.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(bench.AdapterError, match=r"mturk_cnndm.jsonl line 2, summary sentence 1: response is 'maybe'"):
        bench.convert("qags", "test", tmp_path)


@needs_benchmarks
def test_alce_halves_are_asqa_then_eli5_with_utility_3_left_out():
    dev = bench.convert("alce", "dev", ROOT)
    test = bench.convert("alce", "test", ROOT)
    # SOURCE.md: 4 runs x 100 rated answers per dataset; utility 3 (38 ASQA, 50 ELI5 answers) is neither label.
    assert (len(dev), len(test)) == (400 - 38, 400 - 50)
    assert {s["category"] for s, _ in dev} == {"asqa"} and {s["category"] for s, _ in test} == {"eli5"}
    assert not {s["question"] for s, _ in dev} & {s["question"] for s, _ in test}
    assert all(lab["useful"] == (lab["utility"] >= 4) and lab["utility"] != 3 for _, lab in dev + test)
    assert Counter(lab["useful"] for _, lab in dev) == {1: 274, 0: 88}
    first, label = test[0]
    # Numbered by place in the file: ELI5's first two rated answers (401, 402) have utility 3.
    assert first["sample_id"] == "alce-403" and first["contexts"] == []
    assert first["question"] == "how does so much of our trash end up in the ocean?"
    assert label == {"sample_id": "alce-403", "useful": 1, "utility": 4}


def test_an_alce_utility_out_of_range_names_the_record(tmp_path):
    (tmp_path / "alce_human_utility").mkdir()
    runs = {"asqa": {"run-a.json": {"q1": {"question": "Q?", "output": "A.", "utility_score": 7},
                                    "overall_results": {}}}}
    (tmp_path / "alce_human_utility" / "human_eval_utility_completed.json").write_text(json.dumps(runs))
    with pytest.raises(bench.AdapterError, match=r"asqa / run-a.json / q1: utility_score is 7, expected 1-5"):
        bench.convert("alce", "test", tmp_path)


@needs_benchmarks
@pytest.mark.parametrize("name", sorted(bench.ADAPTERS))
def test_cli_output_loads_as_our_dataset(tmp_path, name):
    out = tmp_path / name
    assert bench.main([name, "--split", "test", "--out", str(out), "--limit", "5"]) == 0
    result = load_samples(out / "samples.jsonl")
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(result.samples) == len(labels) == 5
    assert [s.sample_id for s in result.samples] == [lab["sample_id"] for lab in labels]
    converted = bench.convert(name, "test", ROOT, limit=5)
    assert [s.contexts for s in result.samples] == [tuple(s["contexts"]) for s, _ in converted]


@needs_benchmarks
def test_a_seeded_sample_stands_for_the_whole_split():
    """In file order AttributionBench's balanced 60 are all AttributedQA; a seeded sample draws from
    across its sub-datasets, balanced by label, and the same seed draws the same items."""
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    import agreement_benchmark

    items = bench.convert("attributionbench", "dev", ROOT)
    mapping = agreement_benchmark.MAPPINGS["attributionbench"]
    in_order = agreement_benchmark.select(items, mapping, 60, True)
    assert {s["category"] for s, _ in in_order} == {"AttributedQA"}
    drawn = agreement_benchmark.select(items, mapping, 60, True, sample_seed=7)
    assert sorted(lab["attributable"] for _, lab in drawn) == [0] * 30 + [1] * 30
    assert len(Counter(s["category"] for s, _ in drawn)) >= 3
    assert drawn == agreement_benchmark.select(items, mapping, 60, True, sample_seed=7)
    assert drawn != agreement_benchmark.select(items, mapping, 60, True, sample_seed=8)
