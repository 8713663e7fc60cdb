"""Build the configured judge: its backend (llama.cpp by default, a server when asked) and its cache."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from offline_eval import modelstore
from offline_eval.judge.cache import JudgeCache
from offline_eval.judge.judge import Judge

if TYPE_CHECKING:
    from offline_eval.config import EvalConfig


def load_judge(config: EvalConfig, echo: Callable[[str], None] = lambda _: None) -> Judge:
    """Resolve, verify and load the configured judge, with the SQLite cache unless disabled.

    Raises ``CacheError`` for a cache file that cannot be used, ``ModelError`` for a missing model,
    ``JudgeServerError`` for a judge server that is not on this network or does not answer.
    """
    cache = None
    if config.use_cache:  # first: an unusable cache (CacheError) is reported before any model work
        cache = JudgeCache(config.cache_path or modelstore.home() / "judge-cache.sqlite")
    started = time.perf_counter()
    if config.judge_url or config.judge_model:
        from offline_eval.judge.server import JudgeServerError, ServerJudge

        if not (config.judge_url and config.judge_model):  # checked here: the two may come from different layers
            raise JudgeServerError("a judge server needs both judge_url and judge_model (--judge-url URL "
                                   "--judge-model NAME)")
        server = ServerJudge(config.judge_url, config.judge_model, n_ctx=config.n_ctx, concurrency=config.concurrency)
        echo(f"judge {server.name} at {server.url} (window {server.n_ctx} tokens; a server is not byte-deterministic)")
        return Judge(server, cache)
    from offline_eval.judge.llama import JudgeOptions, LlamaJudge

    model = modelstore.resolve(config.judge, "judge")
    backend = LlamaJudge(
        model.path,
        name=model.name,
        sha256=model.sha256 or "",
        options=JudgeOptions(n_ctx=config.n_ctx, n_threads=config.n_threads, n_gpu_layers=config.n_gpu_layers,
                             seed=config.seed, verbose=config.verbose),
    )
    where = "GPU" if config.n_gpu_layers else "CPU"
    echo(f"judge {model.name} loaded on {where} in {time.perf_counter() - started:.1f}s (window {backend.n_ctx} tokens)")
    return Judge(backend, cache)
