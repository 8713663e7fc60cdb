"""Judge workers on Ray (``offline_eval.ray_workers``).

Model-free: how samples are dealt and how workers are laid out. With the tiny judge (slow): two
workers give the in-process report byte for byte and fill the run's cache through the driver; a run
resumes from a partial cache; a worker killed with SIGKILL has its sample re-run elsewhere; a worker
whose judge differs from the driver's is refused. One Ray instance serves the whole module (Ray takes
seconds to start on 2 cores); the 2-node cluster is in ``test_ray_cluster.py``.
"""

from __future__ import annotations

import os
import signal
import sqlite3

import pytest

from offline_eval.config import EvalConfig
from offline_eval.data import samples_from_records
from offline_eval.judge.cache import JudgeCache
from offline_eval.runner import SampleWork, WorkerError
from offline_eval.ray_workers import RayExecutor, WorkerCache, deal_order, layout
from tests.ray_common import EXAMPLE, TINY, partial_cache, report_bytes, tiny_run

# ------------------------------------------------------------------ model-free


def test_samples_are_dealt_longest_first_ties_in_dataset_order():
    records = [{"question": "q", "contexts": ["x" * n], "answer": "a"} for n in (10, 300, 10, 50)]
    work = [SampleWork(s, "en") for s in samples_from_records(records).samples]
    assert deal_order(work) == [1, 3, 0, 2]


def test_layout_splits_the_cores_between_workers_unless_told():
    assert layout(EvalConfig(workers=2), 2) == (2, 1)
    assert layout(EvalConfig(workers=2), 16) == (2, 8)
    assert layout(EvalConfig(workers=3, n_threads=4), 2) == (3, 4)  # asked for: oversubscribed
    assert layout(EvalConfig(workers=4), 2) == (4, 1)
    assert layout(EvalConfig(ray_address="auto"), 16) == (8, 2)  # a cluster, no count: one per 2 CPUs
    assert layout(EvalConfig(ray_address="auto", n_threads=4), 16) == (4, 4)


def test_a_worker_answers_its_own_calls_from_what_it_computed():
    cache = WorkerCache(reader=None)
    assert cache.get("k") is None
    cache.put("k", model_sha256="m", prompt="p", schema="{}", params={}, output='{"a": 1}', prompt_tokens=3,
              completion_tokens=2, seconds=0.1, probabilities=None)
    assert cache.get("k") == ('{"a": 1}', 3, 2, 0.1, {})


def test_a_read_only_cache_reads_and_refuses_to_write(tmp_path):
    from offline_eval.judge.cache import CacheError

    writer = JudgeCache(tmp_path / "c.sqlite")
    writer.put("k", model_sha256="m", prompt="p", schema="{}", params={}, output="{}", prompt_tokens=1,
               completion_tokens=1, seconds=0.0, probabilities={"x": {"yes": 0.5, "no": 0.5}})
    reader = JudgeCache(tmp_path / "c.sqlite", read_only=True)
    assert reader.get("k") == ("{}", 1, 1, 0.0, {"x": {"yes": 0.5, "no": 0.5}})
    with pytest.raises(CacheError, match="read-only"):
        reader.put("k2", model_sha256="m", prompt="p", schema="{}", params={}, output="{}", prompt_tokens=1,
                   completion_tokens=1, seconds=0.0)
    with pytest.raises(CacheError):
        JudgeCache(tmp_path / "missing.sqlite", read_only=True)


# ------------------------------------------------------------------ the tiny judge on Ray


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=128 * 1024**2)
    yield ray
    ray.shutdown()


def _rows(cache) -> int:
    return sqlite3.connect(cache).execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]


@pytest.mark.slow
def test_two_workers_give_the_in_process_bytes_and_the_driver_fills_the_cache(local_ray, tiny_baseline, tmp_path):
    expected, baseline_cache = tiny_baseline
    result = tiny_run(tmp_path / "c.sqlite", workers=2, n_threads=1)
    assert report_bytes(result) == report_bytes(expected)
    assert (result.timing["executor"], result.timing["workers"], result.timing["threads"]) == ("ray", 2, 1)
    assert result.timing["cache_hits"] == 0 and result.timing["resubmitted"] == 0
    # Every call the workers made went back to the driver and into the run's cache, under the same keys
    # as in-process: a rerun in this process is answered from it entirely.
    assert _rows(tmp_path / "c.sqlite") == _rows(baseline_cache)
    again = tiny_run(tmp_path / "c.sqlite")
    assert again.timing["cache_hits"] == again.timing["judge_calls"]
    assert report_bytes(again) == report_bytes(expected)


@pytest.mark.slow
def test_a_partial_cache_resumes_with_any_number_of_workers(local_ray, tiny_baseline, tmp_path):
    expected, baseline_cache = tiny_baseline
    kept = partial_cache(baseline_cache, tmp_path / "c.sqlite")
    resumed = tiny_run(tmp_path / "c.sqlite", workers=1, n_threads=2)
    assert resumed.timing["cache_hits"] >= kept > 0 and resumed.timing["cache_hits"] < resumed.timing["judge_calls"]
    assert report_bytes(resumed) == report_bytes(expected)


@pytest.mark.slow
def test_a_worker_killed_mid_sample_has_its_sample_rerun_and_nothing_is_lost(local_ray, tiny_baseline, tmp_path):
    from offline_eval.api import make_config
    from offline_eval.runner import run
    from offline_eval.testing import hashing_embedders

    expected, baseline_cache = tiny_baseline
    partial_cache(baseline_cache, tmp_path / "c.sqlite")  # every sample has calls left to make
    config = make_config(**TINY, cache_path=tmp_path / "c.sqlite", workers=2, n_threads=1)
    executor = RayExecutor(config)
    killed = []

    def on_progress(progress):
        if not killed and executor.in_flight:
            worker, sample = next(iter(executor.in_flight.items()))
            os.kill(executor.pids[worker], signal.SIGKILL)
            killed.append(sample)

    result = run(EXAMPLE, config, embedders=hashing_embedders(), executor=executor, on_progress=on_progress)
    assert killed and result.timing["resubmitted"] >= 1
    assert len(result.report["samples"]) == 6
    assert report_bytes(result) == report_bytes(expected)


@pytest.mark.slow
def test_a_worker_with_another_llama_cpp_build_is_refused(local_ray, tmp_path):
    from offline_eval.api import make_config
    from offline_eval.judge.load import load_judge
    from offline_eval.runner import run
    from offline_eval.testing import hashing_embedders

    config = make_config(**TINY, cache_path=tmp_path / "c.sqlite", workers=2, n_threads=1)
    judge = load_judge(config)
    build = judge.describe()["build"]
    other = {**build, "backends": {**build["backends"], "CPU": ["AMX_INT8", "AVX512"]}}
    judge.describe = lambda: {**type(judge).describe(judge), "build": other}  # this process "is" another build
    with pytest.raises(WorkerError, match="refusing workers whose judge differs") as refused:
        run(EXAMPLE, config, judge=judge, embedders=hashing_embedders())
    assert "AMX_INT8" in str(refused.value) and "build" in str(refused.value)
    assert _rows(tmp_path / "c.sqlite") == 0  # refused before any sample

