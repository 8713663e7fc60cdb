"""A smoke decode of the llama.cpp build: load a judge, decode under a grammar, restore a saved state.

Run in a child process (set-up and ``offline-eval doctor`` do), so that a build that crashes on this
CPU — llama.cpp's AMX kernels segfault on many virtual machines — is a finding, not the end:

    python -m offline_eval.smoke [--judge tiny] [--gpu-layers N] [--threads N] [--json] [--verbose]

It makes the judge's real calls: two requests sharing a prefix (the saved state is restored for the
second), then the first again, which must give the same bytes. Exit 0 and one line of figures, or
exit 1 with the reason.

``OFFLINE_EVAL_SMOKE_FAULT=AMX_INT8`` (comma-separated llama.cpp feature names) makes the check crash
with SIGSEGV when the build has one of those features compiled in, as such a CPU would: it proves on any
machine that set-up notices a crashing build and rebuilds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

_CONTEXT = (
    "Retrieved context:\n<context>\n[chunk_1] Canberra is the capital of Australia. Sydney is its most "
    "populous city.\n[chunk_2] The Berlin Wall fell on 9 November 1989.\n</context>\n\n"
)
_SCHEMA = {"type": "object", "properties": {"claim_1": {"type": "string", "enum": ["yes", "no"]}},
           "required": ["claim_1"], "additionalProperties": False}


def simulated_fault(features: set[str], spec: str | None) -> str | None:
    """The compiled-in feature that the fault simulation names, if any."""
    named = {f.strip().upper() for f in (spec or "").split(",") if f.strip()}
    hit = sorted(named & features)
    return hit[0] if hit else None


def run_smoke(judge: str = "tiny", n_gpu_layers: int = 0, n_threads: int | None = None,
              verbose: bool = False) -> dict[str, Any]:
    """Load ``judge`` and make three grammar-constrained calls; raise RuntimeError on a wrong result."""
    import llama_cpp

    from offline_eval import modelstore
    from offline_eval.judge import JudgeRequest
    from offline_eval.judge.llama import JudgeOptions, LlamaJudge
    from offline_eval.judge.llama_build import build_identity, compiled_features

    fault = simulated_fault(compiled_features(), os.environ.get("OFFLINE_EVAL_SMOKE_FAULT"))
    if fault:
        print(f"simulated fault: this build has {fault} compiled in (OFFLINE_EVAL_SMOKE_FAULT)", file=sys.stderr,
              flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)

    model = modelstore.resolve(judge, "judge")
    started = time.perf_counter()
    llm_judge = LlamaJudge(model.path, name=model.name, sha256=model.sha256 or "",
                           options=JudgeOptions(n_ctx=2048, n_threads=n_threads, n_gpu_layers=n_gpu_layers,
                                                verbose=verbose))
    load_seconds = time.perf_counter() - started
    system = "You check claims against a context. Answer only with the JSON object asked for."

    def ask(claim: str):
        task = f"<claims>\nclaim_1: {claim}\n</claims>\n\nDoes the context support claim_1? Answer yes or no."
        return llm_judge.judge(JudgeRequest(system, _CONTEXT, task, _SCHEMA, 24, "smoke"))

    first = ask("The capital of Australia is Canberra.")
    ask("The Berlin Wall fell in 1989.")  # restores the same saved context state
    again = ask("The capital of Australia is Canberra.")
    if first.raw != again.raw:
        raise RuntimeError(f"a restored state gave different bytes: {first.raw!r} then {again.raw!r}")
    perf = llama_cpp.llama_perf_context(llm_judge._llm._ctx.ctx)
    return {
        "judge": model.name,
        "n_gpu_layers": n_gpu_layers,
        "load_seconds": round(load_seconds, 2),
        "prompt_tokens_per_second": round(perf.n_p_eval / perf.t_p_eval_ms * 1000, 1) if perf.t_p_eval_ms else None,
        "generated_tokens_per_second": round(perf.n_eval / perf.t_eval_ms * 1000, 1) if perf.t_eval_ms else None,
        "verdict": first.value["claim_1"],
        "build": build_identity(),
    }


def describe(result: dict[str, Any]) -> str:
    return (f"{result['judge']}: prompt {result['prompt_tokens_per_second']} tok/s, generation "
            f"{result['generated_tokens_per_second']} tok/s, grammar and state restore ok")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline_eval.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="tiny")
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--verbose", action="store_true", help="show llama.cpp's own log")
    opts = parser.parse_args(argv)
    try:
        result = run_smoke(opts.judge, opts.gpu_layers, opts.threads, opts.verbose)
    except Exception as exc:  # any failure is the finding; the parent process reports it
        print(f"smoke check failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True) if opts.json else describe(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
