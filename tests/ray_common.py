"""What the Ray tests share: the run settings of a short evaluation with the tiny judge, and its
in-process report to compare bytes with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offline_eval.api import make_config
from offline_eval.report.json_report import render_json
from offline_eval.runner import RunResult, run
from offline_eval.testing import hashing_embedders
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "sample.jsonl"
# The tiny judge, few claims and questions: every metric's calls, in seconds per sample.
TINY = {"judge": "tiny", "max_claims": 3, "n_questions": 1, "n_ctx": 4096, "n_resamples": 200}


def tiny_run(cache: Path, data: Any = EXAMPLE, **settings: Any) -> RunResult:
    """The example judged by the tiny judge (in-process unless ``settings`` say workers), hashing embedder."""
    config = make_config(**TINY, cache_path=cache, **settings)
    return run(data, config, embedders=hashing_embedders())


def report_bytes(result: RunResult) -> str:
    return render_json(result.report)
