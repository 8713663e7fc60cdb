"""What the Ray tests share: the run settings of a short evaluation with the tiny judge, and its
in-process report to compare bytes with."""

from __future__ import annotations

import sqlite3
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


def partial_cache(source: Path, target: Path) -> int:
    """A copy of a run's cache with every other call gone, as a run stopped part-way leaves calls
    missing (here: some from every sample, so that every sample has calls left to judge). Returns the
    calls kept."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM judge_calls WHERE rowid % 2 = 0")
        dst.commit()
        return dst.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
