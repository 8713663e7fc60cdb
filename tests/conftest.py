"""Shared fixtures. Model-backed fixtures load the real installed models, once per session (slow
tests only; model-free tests use ``offline_eval.testing.FakeJudge`` and ``hashing_embedders``).

``tiny`` (SmolLM2-135M) exercises the llama.cpp path fast; ``default_judge`` (Qwen2.5-Coder-1.5B) is
used where judgement quality is asserted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from offline_eval.config import EvalConfig

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO.parent / "shared" / "benchmarks"


def make_judge(name: str, cache_path: Path | None, **options):
    """A real judge (llama.cpp backend) loaded like a run loads it; ``.backend`` is the LlamaJudge."""
    from offline_eval.judge.load import load_judge

    config = EvalConfig(judge=name, cache_path=cache_path, use_cache=cache_path is not None, **options)
    return load_judge(config)


@pytest.fixture(scope="session")
def tiny_judge(tmp_path_factory):
    return make_judge("tiny", tmp_path_factory.mktemp("tiny") / "cache.sqlite", n_ctx=4096)


@pytest.fixture(scope="session")
def default_judge(tmp_path_factory):
    return make_judge("qwen2.5-coder-1.5b", tmp_path_factory.mktemp("default") / "cache.sqlite", n_ctx=4096)


@pytest.fixture(scope="session")
def embedders():
    from offline_eval.embed import EmbedderSet

    return EmbedderSet()


@pytest.fixture(scope="session")
def tiny_baseline(tmp_path_factory):
    """The example judged in this process by the tiny judge (``tests.ray_common``): the report bytes any
    spread of the same run must give, and the cache it filled."""
    from tests.ray_common import tiny_run

    cache = tmp_path_factory.mktemp("tiny-baseline") / "cache.sqlite"
    return tiny_run(cache), cache


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """A fresh offline-eval home (cache) that still finds the installed, verified models."""
    from offline_eval import modelstore

    monkeypatch.setenv("OFFLINE_EVAL_MODELS", str(modelstore.models_dir()))
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def pytest_configure(config):
    os.environ.setdefault("OFFLINE_EVAL_TEST", "1")
