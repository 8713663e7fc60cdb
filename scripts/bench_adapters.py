#!/usr/bin/env python3
"""Turn a human-labelled benchmark into our input format, for meta-evaluating the evaluator.

    python scripts/bench_adapters.py NAME --split dev|test --out DIR [--limit N] [--root DIR]

writes two files into DIR:

``samples.jsonl``
    one record per item, in the seed field names that ``offline_eval.data.load_samples`` reads
    (``sample_id, question, answer, contexts, reference_answer, category``);
``labels.jsonl``
    ``{"sample_id": ..., <label fields>}`` per item, in the same order, for comparing our scores
    with the human labels.

The benchmarks are read from ``../shared/benchmarks/`` next to the repository (``--root`` points
elsewhere); each folder's ``SOURCE.md`` documents its schema. Nothing is copied into the repository.
Text is written exactly as it is in the benchmark file (no stripping, no re-wrapping).

Splits follow ``shared/benchmarks/README.md``: tune on ``dev``, report on ``test``.

=====================  ============================================  ===================================
NAME                   dev / test                                    labels
=====================  ============================================  ===================================
``ares``               rows 1-100 / 101-200 of                       ``faithfulness``,
                       ``LLM_Judge_Test_Set_Human_Annotations.tsv``  ``answer_relevancy``,
                                                                     ``context_relevance`` (0/1)
``attributionbench``   ``dev_all_subset_balanced.jsonl`` /           ``attributable`` (0/1)
                       ``test_all_subset_balanced_sampled500.jsonl``
``attributionbench-``  none (a test set only) /                      ``attributable`` (0/1)
``ood``                ``test_ood_all_subset_balanced.jsonl``
                       (HAGRID, BEGIN, AttrScore-GenSearch)
``hotpotqa``           lines 1-250 / 251-500 of                      ``gold_flags`` (0/1 per context),
                       ``dev_subsampled.jsonl``                      ``context_precision`` (AP)
``ocnli``              lines 1-1500 / 1501-3000 of                   ``entailed`` (1: entailment;
                       ``ocnli_zh/dev.json`` (label ``-`` left out)  0: neutral or contradiction)
``halueval``           lines 1-500 / 501-1000 of                     ``correct`` (by construction, not
                       ``halueval_qa/...first1000.jsonl``, two       human: 1 the gold answer, 0
                       samples a line                                ChatGPT's hallucinated one)
``qags``               the first / second half of each of            ``supported`` (1: at least 2 of the
                       ``qags/mturk_cnndm.jsonl`` (117 / 118         3 workers said the article supports
                       articles) and ``mturk_xsum.jsonl`` (119 /     the sentence), ``yes_share``
                       120), one sample per summary sentence
``alce``               the first / second half of                    ``useful`` (1: utility 4-5; 0:
                       ``alce_human_utility/...completed.json`` in   1-2; utility 3 left out),
                       file order: ASQA's 400 / ELI5's 400 rated     ``utility`` (1-5)
                       answers (no retrieved documents)
=====================  ============================================  ===================================

Standard library only, so it runs anywhere the benchmarks are.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO_ROOT.parent / "shared" / "benchmarks"

Item = tuple[dict[str, Any], dict[str, Any]]  # (sample record, label record)
T = TypeVar("T")


class AdapterError(Exception):
    """The benchmark file is missing or does not have the documented shape."""


def _sample(
    sample_id: str,
    question: str,
    answer: str,
    contexts: list[str],
    reference_answer: str | None = None,
    category: str | None = None,
) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "question": question,
        "answer": answer,
        "contexts": contexts,
        "reference_answer": reference_answer,
        "category": category,
    }


def _binary(value: Any, what: str, where: str, mapping: dict[Any, int]) -> int:
    if value not in mapping:
        raise AdapterError(f"{where}: {what} is {value!r}, expected one of {sorted(mapping)}")
    return mapping[value]


def _open_checked(path: Path) -> Path:
    if not path.is_file():
        raise AdapterError(f"benchmark file not found: {path}")
    return path


def _half(items: list[T], split: str) -> list[T]:
    """The first half of ``items`` (dev; the shorter one when their number is odd) or the second (test)."""
    half = len(items) // 2
    return items[:half] if split == "dev" else items[half:]


def _jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (physical line number, object) for each non-blank line."""
    with _open_checked(path).open(encoding="utf-8", newline="") as f:
        for line_no, line in enumerate(f, start=1):
            if line.strip():
                yield line_no, json.loads(line)


# --------------------------------------------------------------------------------------------------
# ARES (Databricks docs): one question, one retrieved chunk, one answer, three binary human labels
# --------------------------------------------------------------------------------------------------

ARES_FILE = "ares_databricks_human/LLM_Judge_Test_Set_Human_Annotations.tsv"
ARES_ROWS = {"dev": (1, 100), "test": (101, 200)}  # 1-based data rows, inclusive, in file order
_ZERO_ONE = {"0": 0, "1": 1}


def ares(root: Path, split: str) -> Iterator[Item]:
    first, last = ARES_ROWS[split]
    path = _open_checked(root / ARES_FILE)
    with path.open(encoding="utf-8", newline="") as f:
        for row_no, row in enumerate(csv.DictReader(f, delimiter="\t"), start=1):
            if row_no < first:
                continue
            if row_no > last:
                break
            where = f"{path.name} row {row_no}"
            sample_id = f"ares-{row_no:03d}"
            yield (
                _sample(sample_id, row["Question"], row["Answer"], [row["Document"]]),
                {
                    "sample_id": sample_id,
                    "faithfulness": _binary(row["Answer_Faithfulness_Label"], "faithfulness", where, _ZERO_ONE),
                    "answer_relevancy": _binary(
                        row["Answer_Relevance_Label"], "answer relevance", where, _ZERO_ONE
                    ),
                    "context_relevance": _binary(
                        row["Context_Relevance_Label"], "context relevance", where, _ZERO_ONE
                    ),
                },
            )


# --------------------------------------------------------------------------------------------------
# AttributionBench: question + answer claim + evidence; is the claim attributable to the evidence?
# --------------------------------------------------------------------------------------------------

ATTRIBUTIONBENCH_FILES = {
    "dev": "attributionbench/dev_all_subset_balanced.jsonl",
    "test": "attributionbench/test_all_subset_balanced_sampled500.jsonl",
}
# Out of distribution: sources (HAGRID, BEGIN, AttrScore-GenSearch) that neither dev nor test-ID holds.
ATTRIBUTIONBENCH_OOD_FILE = "attributionbench/test_ood_all_subset_balanced.jsonl"
_ATTRIBUTABLE = {"attributable": 1, "not attributable": 0}
EVIDENCE_SEPARATOR = "\n\n"


def attributionbench(root: Path, split: str) -> Iterator[Item]:
    return _attribution_items(root / ATTRIBUTIONBENCH_FILES[split])


def attributionbench_ood(root: Path, split: str) -> Iterator[Item]:
    """AttributionBench's test-OOD set: a test split only (what is tuned on AttributionBench dev is
    checked here on sources it never saw)."""
    if split != "test":
        raise AdapterError("attributionbench-ood is a test set only: tune on attributionbench's dev split")
    return _attribution_items(root / ATTRIBUTIONBENCH_OOD_FILE)


def _attribution_items(path: Path) -> Iterator[Item]:
    for line_no, rec in _jsonl_lines(path):
        where = f"{path.name} line {line_no}"
        references = rec["references"]
        if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
            raise AdapterError(f"{where}: 'references' is not a list of strings")
        # The claim is judged against all its evidence together, so the passages form one context.
        contexts = [EVIDENCE_SEPARATOR.join(references)] if references else []
        yield (
            _sample(rec["id"], rec["question"], rec["claim"], contexts, category=rec.get("src_dataset")),
            {
                "sample_id": rec["id"],
                "attributable": _binary(rec["attribution_label"], "attribution_label", where, _ATTRIBUTABLE),
            },
        )


# --------------------------------------------------------------------------------------------------
# HotpotQA (distractor setting): 10 paragraphs per question, the 2 gold ones flagged
# --------------------------------------------------------------------------------------------------

HOTPOTQA_FILE = "hotpotqa_dev_subsampled/dev_subsampled.jsonl"
HOTPOTQA_LINES = {"dev": (1, 250), "test": (251, 500)}


def average_precision(flags: list[int]) -> float | None:
    """Context-precision-style average precision of a ranked list of 0/1 relevance flags.

    ``sum_k precision@k * flag_k / number of relevant items``, as RAGAS' context precision computes
    it from per-chunk verdicts; ``None`` when nothing in the list is relevant.
    """
    hits = 0
    total = 0.0
    for k, flag in enumerate(flags, start=1):
        if flag:
            hits += 1
            total += hits / k
    return total / hits if hits else None


def hotpotqa(root: Path, split: str) -> Iterator[Item]:
    first, last = HOTPOTQA_LINES[split]
    path = root / HOTPOTQA_FILE
    for line_no, rec in _jsonl_lines(path):
        if line_no < first:
            continue
        if line_no > last:
            break
        where = f"{path.name} line {line_no}"
        spans = [s for obj in rec["answers_objects"] for s in obj.get("spans", [])]
        if len(spans) != 1:
            raise AdapterError(f"{where}: expected one gold answer span, found {len(spans)}")
        paragraphs = rec["contexts"]
        contexts = [
            f"{p['title']}\n{p['paragraph_text']}" if p.get("title") else p["paragraph_text"]
            for p in paragraphs
        ]
        flags = [_binary(p["is_supporting"], "is_supporting", where, {True: 1, False: 0}) for p in paragraphs]
        yield (
            # No RAG system answered these questions: the answer is left empty (the metrics that
            # need one report "not computable"); the gold answer is the reference.
            _sample(rec["question_id"], rec["question_text"], "", contexts, reference_answer=spans[0]),
            {"sample_id": rec["question_id"], "gold_flags": flags, "context_precision": average_precision(flags)},
        )


# --------------------------------------------------------------------------------------------------
# OCNLI (Chinese NLI dev set): premise as the context, hypothesis as the answer
# --------------------------------------------------------------------------------------------------

OCNLI_FILE = "ocnli_zh/dev.json"
OCNLI_HALF = 1500  # 3,000 lines: the first half is dev, the second test (shared/benchmarks/README.md)
# OCNLI has no question; one fixed, neutral question keeps the sample valid and names no fact.
OCNLI_QUESTION = "这段资料说明了什么？"
_ENTAILED = {"entailment": 1, "neutral": 0, "contradiction": 0}


def ocnli(root: Path, split: str) -> Iterator[Item]:
    path = root / OCNLI_FILE
    for line_no, rec in _jsonl_lines(path):
        if (line_no <= OCNLI_HALF) != (split == "dev"):
            continue
        if rec.get("label") == "-":
            continue  # no majority among the five annotators: excluded, as SOURCE.md says
        where = f"{path.name} line {line_no}"
        sample_id = f"ocnli-{rec['id']}"
        yield (
            _sample(sample_id, OCNLI_QUESTION, rec["sentence2"], [rec["sentence1"]], category=rec.get("genre")),
            {"sample_id": sample_id, "entailed": _binary(rec["label"], "label", where, _ENTAILED),
             "nli_label": rec["label"]},
        )


# --------------------------------------------------------------------------------------------------
# HaluEval QA: HotpotQA knowledge and question, the gold answer and a hallucinated one (a constructed
# sanity check: the labels are by construction, see halueval_qa/SOURCE.md)
# --------------------------------------------------------------------------------------------------

HALUEVAL_FILE = "halueval_qa/dataset_halueval_qa.first1000.jsonl"
HALUEVAL_HALF = 500  # 1,000 lines: the first half is dev, the second test


def halueval(root: Path, split: str) -> Iterator[Item]:
    """Two samples a line, the gold answer's then the hallucinated one's, each with the gold answer as
    the reference and the knowledge as the one retrieved chunk. The gold answer is a bare entity
    ("Delhi"): as an answer it is written as a sentence ("The answer is Delhi."), as SOURCE.md suggests,
    so that answer and reference are not the same string."""
    path = root / HALUEVAL_FILE
    for line_no, rec in _jsonl_lines(path):
        if (line_no <= HALUEVAL_HALF) != (split == "dev"):
            continue
        right = rec["right_answer"].strip()
        for kind, answer, correct in (("right", f"The answer is {right}.", 1),
                                      ("hallucinated", rec["hallucinated_answer"], 0)):
            sample_id = f"halueval-{line_no:04d}-{kind}"
            yield (
                _sample(sample_id, rec["question"], answer, [rec["knowledge"]], reference_answer=right),
                {"sample_id": sample_id, "correct": correct},
            )


# --------------------------------------------------------------------------------------------------
# QAGS: model summaries of CNN/DM and XSum articles, each sentence judged supported or not by 3 workers
# --------------------------------------------------------------------------------------------------

QAGS_FILES = {"cnndm": "qags/mturk_cnndm.jsonl", "xsum": "qags/mturk_xsum.jsonl"}
# A summary answers no question; one fixed question that names no fact keeps the sample valid (as OCNLI's).
QAGS_QUESTION = "What does the article report?"
_VOTE = {"yes": 1, "no": 0}


def qags(root: Path, split: str) -> Iterator[Item]:
    """One sample per summary sentence: the sentence as the answer, its article as the one chunk, the
    workers' majority as the label. Each file is split in half by articles (CNN/DM 235, XSum 239: the
    first 117 and 119 are dev), so no article's sentences are on both sides; the category says which."""
    for source, name in QAGS_FILES.items():
        path = root / name
        for line_no, rec in _half(list(_jsonl_lines(path)), split):
            for k, part in enumerate(rec["summary_sentences"], start=1):
                where = f"{path.name} line {line_no}, summary sentence {k}"
                votes = [_binary(r["response"], "response", where, _VOTE) for r in part["responses"]]
                if not votes:
                    raise AdapterError(f"{where}: no worker responses")
                sample_id = f"qags-{source}-{line_no:03d}-{k}"
                yield (
                    _sample(sample_id, QAGS_QUESTION, part["sentence"], [rec["article"]], category=source),
                    {"sample_id": sample_id, "supported": int(2 * sum(votes) > len(votes)),
                     "yes_share": round(sum(votes) / len(votes), 6)},
                )


# --------------------------------------------------------------------------------------------------
# ALCE human evaluation: long-form cited answers to ASQA and ELI5 questions, rated for utility 1-5
# --------------------------------------------------------------------------------------------------

ALCE_FILE = "alce_human_utility/human_eval_utility_completed.json"
# Utility 4-5 is a useful answer, 1-2 is not; 3 is left out, as neither (SOURCE.md: a refusal gets 1).
_USEFUL = {1: 0, 2: 0, 4: 1, 5: 1}


def alce(root: Path, split: str) -> Iterator[Item]:
    """One sample per rated (question, answer): the answer as the system wrote it, citation marks and
    all, with no contexts (the file holds none). The file holds ASQA's four system runs, then ELI5's,
    100 rated answers each: its first half in file order (ASQA, dev) and its second (ELI5, test) share
    no question. A run's ``overall_results`` entry is not a rated answer and is skipped."""
    path = _open_checked(root / ALCE_FILE)
    records = list(enumerate(((dataset, run, key, rec)
                              for dataset, runs in json.loads(path.read_text(encoding="utf-8")).items()
                              for run, recs in runs.items() for key, rec in recs.items()
                              if key != "overall_results"), start=1))
    for number, (dataset, run, key, rec) in _half(records, split):
        utility = rec.get("utility_score")
        if utility not in (1, 2, 3, 4, 5):
            raise AdapterError(f"{path.name}: {dataset} / {run} / {key}: utility_score is {utility!r}, "
                               "expected 1-5")
        if utility == 3:
            continue
        sample_id = f"alce-{number:03d}"
        yield (
            _sample(sample_id, rec["question"], rec["output"], [], category=dataset),
            {"sample_id": sample_id, "useful": _USEFUL[utility], "utility": utility},
        )


ADAPTERS: dict[str, Callable[[Path, str], Iterator[Item]]] = {
    "ares": ares,
    "attributionbench": attributionbench,
    "attributionbench-ood": attributionbench_ood,
    "hotpotqa": hotpotqa,
    "ocnli": ocnli,
    "halueval": halueval,
    "qags": qags,
    "alce": alce,
}


# --------------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------------


def convert(name: str, split: str, root: Path = DEFAULT_ROOT, limit: int | None = None) -> list[Item]:
    """Read benchmark ``name``'s ``split`` from ``root``; at most ``limit`` items, in file order."""
    if name not in ADAPTERS:
        raise AdapterError(f"unknown benchmark {name!r}; choose from {', '.join(ADAPTERS)}")
    if split not in ("dev", "test"):
        raise AdapterError(f"unknown split {split!r}; choose dev or test")
    items: list[Item] = []
    for item in ADAPTERS[name](Path(root), split):
        if limit is not None and len(items) >= limit:
            break
        items.append(item)
    return items


def write(items: list[Item], out: Path) -> tuple[Path, Path]:
    """Write ``samples.jsonl`` and ``labels.jsonl`` (UTF-8, ``\\n`` line ends) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    samples_path, labels_path = out / "samples.jsonl", out / "labels.jsonl"
    with samples_path.open("w", encoding="utf-8", newline="\n") as fs, labels_path.open(
        "w", encoding="utf-8", newline="\n"
    ) as fl:
        for sample, labels in items:
            fs.write(json.dumps(sample, ensure_ascii=False) + "\n")
            fl.write(json.dumps(labels, ensure_ascii=False) + "\n")
    return samples_path, labels_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(ADAPTERS), help="benchmark to convert")
    parser.add_argument("--split", required=True, choices=("dev", "test"), help="tune on dev, report on test")
    parser.add_argument("--out", required=True, type=Path, help="folder for samples.jsonl and labels.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="keep only the first N items of the split")
    parser.add_argument(
        "--root", type=Path, default=DEFAULT_ROOT, help=f"benchmarks folder (default: {DEFAULT_ROOT})"
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    try:
        items = convert(args.name, args.split, args.root, args.limit)
    except AdapterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    samples_path, labels_path = write(items, args.out)
    print(f"{args.name} {args.split}: {len(items)} items -> {samples_path}, {labels_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
