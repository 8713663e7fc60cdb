#!/usr/bin/env python3
"""The RAGAS half of ``scripts/bench_ragas.py``; runs inside the RAGAS virtual environment, not ours.

    bench-out/ragas-venv/bin/python scripts/ragas_side.py SAMPLES.jsonl --base-url URL \
        --embedder DIR --out RESULT.json

Evaluates our samples file with RAGAS 0.4.3's four classic metrics, judged by the llama-cpp-python
OpenAI-compatible server at URL (same GGUF as ours) and embedded with the same sentence-transformers
folder. Every HTTP request to the server is counted with the token usage it reports, so calls and
tokens are measured at the wire, not estimated. Writes per-sample scores (None where RAGAS gave NaN),
the NaN count per metric, the parse/other errors RAGAS logged, wall seconds, calls and tokens.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # RAGAS sends usage analytics otherwise
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import httpx
from langchain_core.embeddings import Embeddings
from langchain_openai import ChatOpenAI
from ragas import EvaluationDataset, evaluate
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import (
    LLMContextPrecisionWithoutReference,
    answer_relevancy,
    context_precision,
    context_recall,
    faithfulness,
)
from ragas.run_config import RunConfig
from sentence_transformers import SentenceTransformer

METRICS = {
    "faithfulness": faithfulness,
    "answer_relevancy": answer_relevancy,
    "context_recall": context_recall,
    "context_precision": context_precision,
}


class LocalSentenceTransformer(Embeddings):
    """A sentence-transformers folder behind LangChain's embeddings interface (normalised, CPU)."""

    def __init__(self, path: str) -> None:
        self.model = Path(path).name  # RAGAS logs usage events with a model *name* (a str)
        self._encoder = SentenceTransformer(path, device="cpu")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class WireCounter:
    """Counts requests to the judge server and sums the token usage each response reports."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.http_errors = 0

    async def on_response(self, response: httpx.Response) -> None:
        await response.aread()
        self._count(response)

    def on_response_sync(self, response: httpx.Response) -> None:
        response.read()
        self._count(response)

    def _count(self, response: httpx.Response) -> None:
        self.calls += 1
        if response.status_code >= 400:
            self.http_errors += 1
            return
        usage = response.json().get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)


class ErrorLog(logging.Handler):
    """Collects the errors RAGAS logs instead of raising (raise_exceptions=False turns them into NaN)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:300])


def ragas_rows(samples_path: Path, metric_names: list[str]) -> tuple[list[str], list[dict]]:
    """Our samples file → RAGAS single-turn rows; reference-based metrics need a reference."""
    ids, rows = [], []
    for line in samples_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        ids.append(str(record["sample_id"]))
        row = {
            "user_input": record["question"],
            "response": record["answer"],
            "retrieved_contexts": record["contexts"],
        }
        if record.get("reference_answer"):
            row["reference"] = record["reference_answer"]
        rows.append(row)
    if any("reference" not in r for r in rows) and "context_recall" in metric_names:
        raise SystemExit("context_recall needs a reference_answer on every sample")
    return ids, rows


def chosen_metrics(names: list[str], rows: list[dict]) -> tuple[list, dict[str, str]]:
    """RAGAS's metric objects for ``names``, and the RAGAS metric each one is.

    Context precision judges each chunk against the reference answer; where the samples have none
    (ARES), RAGAS's own reference-free form judges it against the response, under the same column."""
    with_reference = [("reference" in r) for r in rows]
    if "context_precision" in names and any(with_reference) and not all(with_reference):
        raise SystemExit("context_precision: give a reference_answer on every sample or on none")
    metrics, which = [], {}
    for name in names:
        metric = METRICS[name]
        if name == "context_precision" and not any(with_reference):
            metric = LLMContextPrecisionWithoutReference(name="context_precision")
        metrics.append(metric)
        which[name] = type(metric).__name__
    return metrics, which


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("samples", type=Path)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--max-workers", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    names = [m for m in args.metrics.split(",") if m]
    ids, rows = ragas_rows(args.samples, names)
    metrics, ragas_metric = chosen_metrics(names, rows)
    counter = WireCounter()
    llm = ChatOpenAI(
        base_url=args.base_url,
        api_key="local",
        model="judge",
        temperature=0,
        timeout=args.timeout,
        max_retries=0,
        http_client=httpx.Client(event_hooks={"response": [counter.on_response_sync]}, timeout=args.timeout),
        http_async_client=httpx.AsyncClient(event_hooks={"response": [counter.on_response]}, timeout=args.timeout),
    )
    errors = ErrorLog()
    logging.getLogger("ragas").addHandler(errors)
    embeddings = LangchainEmbeddingsWrapper(LocalSentenceTransformer(args.embedder))

    started = time.perf_counter()
    result = evaluate(
        EvaluationDataset.from_list(rows),
        metrics=metrics,
        llm=LangchainLLMWrapper(llm),
        embeddings=embeddings,
        # The server answers one request at a time: more workers only queue up and hit timeouts.
        run_config=RunConfig(max_workers=args.max_workers, timeout=args.timeout, max_retries=1),
        raise_exceptions=False,
        show_progress=False,
    )
    seconds = time.perf_counter() - started

    table = result.to_pandas()
    scores = {}
    for name in names:
        values = [float(v) for v in table[name].tolist()]
        scores[name] = [None if math.isnan(v) else v for v in values]
    out = {
        "sample_ids": ids,
        "seconds": seconds,
        "calls": counter.calls,
        "http_errors": counter.http_errors,
        "prompt_tokens": counter.prompt_tokens,
        "completion_tokens": counter.completion_tokens,
        "scores": scores,
        "ragas_metric": ragas_metric,
        "nan": {name: sum(v is None for v in values) for name, values in scores.items()},
        "logged_errors": errors.messages,
    }
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
