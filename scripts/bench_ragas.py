#!/usr/bin/env python3
"""offline-eval against RAGAS 0.4.3 on the same samples, the same GGUF judge and the same embedder.

    .venv/bin/python scripts/bench_ragas.py [--data FILE | --bench NAME --n N] [--judge NAME]

1. Sets up RAGAS in its own virtual environment (``bench-out/ragas-venv``: RAGAS is not a dependency
   of offline-eval), with llama-cpp-python's OpenAI-compatible server, from pinned versions.
2. Runs offline-eval in this process, cold (empty judge cache), judge and embedder already loaded.
3. Serves the same GGUF file on loopback (``python -m llama_cpp.server``, same context size and
   threads) and runs ``scripts/ragas_side.py`` in the RAGAS environment: RAGAS's classic
   ``faithfulness, answer_relevancy, context_recall, context_precision`` through LangChain's
   ``ChatOpenAI``, embedding with the same sentence-transformers folder. Calls and tokens are
   counted on the wire (every response's ``usage``).
4. Prints both side by side and writes ``bench-out/ragas.json``.

Both run one request at a time: the server has one model and this machine two cores, so more RAGAS
workers only queue requests until they time out (RAGAS's default is 16 workers, 180 s timeout).
Both use the English embedder all-minilm-l6-v2 for every sample, so the embedder is the same.
Runs are sequential, never overlapping: two model processes on two cores slow each other ~10×.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_adapters
import llama_build

from offline_eval.config import EvalConfig
from offline_eval.data import load_samples
from offline_eval.embed import EmbedderSet
from offline_eval.judge.load import load_judge
from offline_eval.modelstore import resolve
from offline_eval.runner import evaluate_samples

REPO = Path(__file__).resolve().parent.parent
RAGAS_VENV = REPO / "bench-out" / "ragas-venv"
# RAGAS 0.4.3 imports langchain_community.chat_models.vertexai, which langchain-community 0.4 removed.
RAGAS_PINS = [
    "ragas==0.4.3",
    "langchain-community==0.3.31",
    "langchain-core==1.8.3",
    "langchain-openai==1.1.9",
    "openai==1.109.1",
    "llama-cpp-python[server]",  # version from scripts/constraints.txt, so pip reuses the built wheel
    "sentence-transformers",
]
EMBEDDER = "all-minilm-l6-v2"
METRICS = ["faithfulness", "answer_relevancy", "context_recall", "context_precision"]
# offline-eval's name for each RAGAS metric: RAGAS's answer relevancy is offline-eval's RAGAS form.
OURS_FOR = {"answer_relevancy": "answer_relevancy_ragas"}
# offline-eval also runs its default (judge) form of answer relevancy, beside the RAGAS form both tools share.
OURS = [*(OURS_FOR.get(m, m) for m in METRICS), "answer_relevancy"]


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def ragas_python() -> Path:
    """The RAGAS environment's interpreter, set up (or updated) when the pins changed."""
    python = RAGAS_VENV / "bin" / "python"
    constraints = REPO / "scripts" / "constraints.txt"
    want = hashlib.sha256((json.dumps(RAGAS_PINS) + constraints.read_text()).encode()).hexdigest()
    stamp = RAGAS_VENV / ".pins"
    if python.exists() and stamp.exists() and stamp.read_text() == want:
        return python
    step(f"setting up RAGAS in {RAGAS_VENV.relative_to(REPO)} (one time, ~2 min with a warm pip cache)")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(RAGAS_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-c", str(constraints)]
    subprocess.run(pip + ["torch"], check=True)  # the CPU build first, as scripts/setup.sh does
    # The llama-cpp-python wheel scripts/setup.sh built for this machine, so the server is not compiled again.
    built = llama_build.read_stamp(REPO / ".venv").get("wheel")
    links = ["--find-links", str(Path(built).parent)] if built and Path(built).exists() else []
    subprocess.run(pip + links + RAGAS_PINS, check=True)
    stamp.write_text(want)
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(python: Path, gguf: Path, n_ctx: int, threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--n_ctx", str(n_ctx),
           "--n_threads", str(threads), "--n_threads_batch", str(threads), "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(240):
        if server.poll() is not None:
            raise SystemExit(f"the llama-cpp-python server exited; see {log}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1).read()
            return server, url
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit(f"the llama-cpp-python server did not start in 120 s; see {log}")


def run_ours(samples_path: Path, judge_name: str, n_ctx: int, tmp: Path) -> dict:
    samples = load_samples(samples_path).samples
    config = EvalConfig(judge=judge_name, embedder=EMBEDDER, n_ctx=n_ctx, cache_path=tmp / "cache.sqlite",
                        metrics=tuple(OURS))
    judge = load_judge(config)
    embedders = EmbedderSet(EMBEDDER)
    embedders.for_language("en")
    started = time.perf_counter()
    result = evaluate_samples(samples, config, judge=judge, embedders=embedders)
    seconds = time.perf_counter() - started
    rows = result.report["samples"]
    usage = result.report["run"]["usage"]
    reasons = [r["not_computable"].get(m) for r in rows for m in OURS if r["not_computable"].get(m)]
    return {
        "sample_ids": [r["sample_id"] for r in rows],
        "seconds": seconds,
        "calls": usage["judge_calls"],
        "prompt_tokens": usage["prompt_tokens"],
        "evaluated_prompt_tokens": result.timing["evaluated_prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "scores": {m: [r["scores"].get(m) for r in rows] for m in OURS},
        "parse_failures": sum(1 for r in reasons if r.startswith("judge failure")),
        "nan": {m: 0 for m in OURS},  # by construction: not computable is None with a reason, never NaN
        "not_computable": {m: sum(1 for r in rows if r["scores"].get(m) is None) for m in OURS},
    }


def with_reference(samples_path: Path, tmp: Path) -> tuple[Path, int, int]:
    """The samples that have a reference answer, as a file both tools read; and how many were left out."""
    lines = [line for line in samples_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line).get("reference_answer")]
    out = tmp / "with-reference.jsonl"
    out.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return out, len(kept), len(lines) - len(kept)


def mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def table(ours: dict, ragas: dict, n: int) -> list[tuple[str, str, str]]:
    def fmt(v: float | None, digits: int = 3) -> str:
        return "—" if v is None else f"{v:.{digits}f}"

    rows = [
        ("samples per minute", fmt(60 * n / ours["seconds"], 2), fmt(60 * n / ragas["seconds"], 2)),
        ("speed-up (RAGAS time / ours)", fmt(ragas["seconds"] / ours["seconds"], 2), "1.00"),
        ("wall seconds", fmt(ours["seconds"], 1), fmt(ragas["seconds"], 1)),
        ("judge calls per sample", fmt(ours["calls"] / n, 1), fmt(ragas["calls"] / n, 1)),
        ("prompt tokens per sample (sent)", fmt(ours["prompt_tokens"] / n, 0), fmt(ragas["prompt_tokens"] / n, 0)),
        ("prompt tokens per sample (evaluated)", fmt(ours["evaluated_prompt_tokens"] / n, 0), "n/a"),
        ("completion tokens per sample", fmt(ours["completion_tokens"] / n, 0), fmt(ragas["completion_tokens"] / n, 0)),
        ("parse failures", str(ours["parse_failures"]), str(ragas["parse_failures"])),
        ("NaN scores", str(sum(ours["nan"].values())), str(sum(ragas["nan"].values()))),
    ]
    for m in METRICS:
        name = OURS_FOR.get(m, m)
        rows.append((f"{m}: mean (missing)", f"{fmt(mean(ours['scores'][name]))} ({ours['not_computable'][name]})",
                     f"{fmt(mean(ragas['scores'][m]))} ({ragas['nan'][m]})"))
        if name != m:
            rows.append((f"{m}, offline-eval's default form: mean (missing)", f"{fmt(mean(ours['scores'][m]))} "
                         f"({ours['not_computable'][m]})", "—"))
    return rows


def ragas_failures(messages: list[str]) -> dict[str, int]:
    """Exception types RAGAS logged (each one became a NaN or a retry), counted."""
    kinds: dict[str, int] = {}
    for message in messages:
        if message.startswith("Exception raised in Job"):
            kind = message.split(":", 1)[1].strip().split("(", 1)[0]
        elif "generations instead of requested" in message:
            kind = "fewer generations than requested (n ignored by the server)"
        else:
            kind = message[:80]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO / "examples" / "sample.jsonl", help="a JSONL samples file")
    parser.add_argument("--bench", choices=["ares", "attributionbench", "hotpotqa"],
                        help="use a benchmark's dev split instead of --data")
    parser.add_argument("--n", type=int, default=10, help="with --bench: the first N items")
    parser.add_argument("--judge", default="qwen2.5-coder-1.5b")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "ragas.json")
    args = parser.parse_args()

    python = ragas_python()
    judge_model = resolve(args.judge, "judge")
    embedder = resolve(EMBEDDER, "embedder")
    threads = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.bench:
            samples_path, _ = bench_adapters.write(bench_adapters.convert(args.bench, "dev", limit=args.n), tmp)
            source = f"{args.bench} dev, first {args.n}"
        else:
            samples_path, source = args.data, str(args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data)
        samples_path, n, left_out = with_reference(samples_path, tmp)
        if left_out:
            source += f", {left_out} without a reference left out (RAGAS's recall and precision need one)"

        step(f"offline-eval on {n} samples ({source}), judge {judge_model.name}, cold cache")
        ours = run_ours(samples_path, args.judge, args.n_ctx, tmp)

        step(f"RAGAS 0.4.3 on the same samples, {judge_model.name} served on loopback")
        server, url = serve(python, judge_model.path, args.n_ctx, threads, tmp / "server.log")
        try:
            out = tmp / "ragas.json"
            subprocess.run([str(python), str(REPO / "scripts" / "ragas_side.py"), str(samples_path), "--base-url", url,
                            "--embedder", str(embedder.path), "--metrics", ",".join(METRICS), "--out", str(out)],
                           check=True, stderr=subprocess.DEVNULL)
            ragas = json.loads(out.read_text(encoding="utf-8"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    failures = ragas_failures(ragas["logged_errors"])
    ragas["parse_failures"] = sum(v for k, v in failures.items() if "Parser" in k or "Validation" in k)
    ragas["logged_failures"] = failures

    rows = table(ours, ragas, n)
    width = max(len(r[0]) for r in rows)
    print(f"\n{'':<{width}}  {'offline-eval':>16}  {'RAGAS 0.4.3':>16}")
    for name, a, b in rows:
        print(f"{name:<{width}}  {a:>16}  {b:>16}")
    if failures:
        print("RAGAS logged: " + "; ".join(f"{k} ×{v}" for k, v in failures.items()))
    figures = {"samples": n, "source": source, "judge": judge_model.name, "embedder": embedder.name,
               "threads": threads, "n_ctx": args.n_ctx, "offline_eval": ours, "ragas": ragas,
               "table": [list(r) for r in rows]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
