"""Judge workers on Ray: N llama.cpp processes, on this machine or a cluster, with the same report bytes.

Chosen by the ``workers`` / ``ray_address`` settings (``--workers N``, ``--ray ADDRESS``); the default
run never imports this module, nor Ray. Ray is the optional extra ``offline-eval[ray]``, imported here
only inside functions.

How a run is spread. The driver (the process running ``runner.run``) has loaded its own judge: it
names the judge in the report and owns the run's cache. It starts Ray on this machine (``ray.init``
with its cores) or joins the cluster at ``ray_address``, starts a cache reader pinned to its own node
and N ``JudgeWorker`` actors, each reserving T CPUs and loading its own llama.cpp model with T threads
(the model store checks the model's sha256 on the worker's node before it loads).

- Same bytes. Each worker reports its identity, the judge's ``describe()`` (model sha256, window,
  llama.cpp build: version, CPU backend and the instruction sets compiled in, GPU offload), and a
  worker whose identity differs from the driver's is refused before any sample is dealt (and every
  result is checked again, so a worker restarted on another node cannot slip in): another build can
  compute other bytes. Every llama.cpp judge state is made by the same steps whatever ran before
  (``judge/llama.py``), so a sample judged on any worker gives the bytes it gives in-process.
- Dealing. Samples go longest first (text length stands in for tokens) to whichever worker is free,
  one sample at a time: a free worker is the least loaded one, and the slowest finishes last by about
  one sample at most. A sample's calls all run on one worker, so its saved context state is reused.
  Results are assembled in dataset order by the runner.
- One cache, one writer. Workers look calls up in the run's SQLite cache through the reader (opened
  read-only); what a worker computes goes back with the sample's result and the driver stores it.
  A run killed mid-way therefore resumes from the cache with any number of workers.
- A worker that dies (killed, out of memory) loses only its samples in flight: they go back to the
  front of the queue for the next free worker, and Ray restarts the worker (``MAX_RESTARTS`` times).
  A sample that takes down ``MAX_ATTEMPTS`` workers stops the run with a ``WorkerError`` naming it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from offline_eval.config import EvalConfig
from offline_eval.judge import Judge
from offline_eval.metrics import Metric
from offline_eval.runner import SampleJudged, SampleWork, WorkerError, build_metrics, judge_sample

MAX_RESTARTS = 3  # times Ray restarts a worker that died
MAX_ATTEMPTS = 3  # workers a sample may take down before the run stops
START_TIMEOUT = 600.0  # seconds for the workers to load their models and report


def sample_cost(work: SampleWork) -> int:
    """How long a sample should take, for dealing: its text length (prompt tokens track it)."""
    s = work.sample
    return len(s.question) + len(s.answer) + len(s.reference_answer or "") + sum(len(c) for c in s.contexts)


def deal_order(work: Sequence[SampleWork]) -> list[int]:
    """Positions longest first (ties in dataset order): longest-processing-time-first list scheduling."""
    return sorted(range(len(work)), key=lambda i: (-sample_cost(work[i]), i))


def layout(config: EvalConfig, cpus: int) -> tuple[int, int]:
    """(workers, threads per worker) for ``cpus`` CPUs: the settings, else cores ÷ workers threads each;
    on a cluster with no worker count, one worker per 2 CPUs."""
    if config.workers is not None:
        return config.workers, config.n_threads or max(1, cpus // config.workers)
    threads = config.n_threads or 2
    return max(1, cpus // threads), threads


class WorkerCache:
    """A worker's view of the run's cache: look-ups through the reader on the driver's node (the Ray
    actor named ``reader``: by name, because a handle passed to a restartable actor's constructor is
    kept in the object store, which Ray warns a restart may not find); what the worker computes is
    kept (``rows``) to go back with the sample's result, for the driver to store."""

    problem = None

    def __init__(self, reader: str | None):
        self.reader_name = reader
        self.reader: Any = None
        self.rows: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> tuple[str, int, int, float, dict[str, dict[str, float]]] | None:
        if key in self.rows:  # a call this sample made already, as the run's cache would answer it
            row = self.rows[key]
            return (row["output"], row["prompt_tokens"], row["completion_tokens"], row["seconds"],
                    row["probabilities"] or {})
        if self.reader_name is None:
            return None
        import ray

        if self.reader is None:
            self.reader = ray.get_actor(self.reader_name)
        return ray.get(self.reader.get.remote(key))

    def put(self, key: str, **row: Any) -> None:
        self.rows[key] = row


class CacheReader:
    """The run's SQLite cache, read-only, on the driver's node (a Ray actor)."""

    def __init__(self, path: str):
        from offline_eval.judge.cache import JudgeCache

        self.cache = JudgeCache(path, read_only=True)

    def get(self, key: str) -> tuple[str, int, int, float, dict[str, dict[str, float]]] | None:
        return self.cache.get(key)


class JudgeWorker:
    """One llama.cpp judge in its own process (a Ray actor): judges whole samples."""

    def __init__(self, config: EvalConfig, reader: str | None):
        from offline_eval.judge.load import load_judge

        self.judge = load_judge(config)  # resolves the model here: its sha256 is checked on this node
        self.cache = WorkerCache(reader)
        self.judge.cache = self.cache  # type: ignore[assignment]
        self.metrics = build_metrics(config)
        self.identity = self.judge.describe()

    def hello(self) -> dict[str, Any]:
        """This worker's judge identity and where it runs."""
        import ray

        return {"judge": self.identity, "host": socket.gethostname(), "pid": os.getpid(),
                "node": ray.get_runtime_context().get_node_id()}

    def judge_sample(self, work: SampleWork) -> tuple[SampleJudged, dict[str, dict[str, Any]], dict[str, Any]]:
        """The sample's result, the calls computed for it (for the driver's cache), and who computed it."""
        self.cache.rows = {}
        judged = judge_sample(work, self.metrics, self.judge)
        return judged, self.cache.rows, self.identity


def _mismatch(worker: dict[str, Any], expected: dict[str, Any]) -> str:
    differing = sorted(k for k in set(worker) | set(expected) if worker.get(k) != expected.get(k))
    return "; ".join(f"{k}: {worker.get(k)!r} there, {expected.get(k)!r} here" for k in differing)


class RayExecutor:
    """The samples judged by llama.cpp workers on Ray (see the module docstring)."""

    def __init__(self, config: EvalConfig):
        self.config = config
        self.stats: dict[str, Any] = {"executor": "ray", "address": config.ray_address or "local"}
        self.pids: list[int] = []  # each worker's first process
        self.in_flight: dict[int, int] = {}  # worker → position of the sample it is judging
        self._actors: list[Any] = []  # every actor a run started, stopped whatever happens

    def describe(self) -> dict[str, Any]:
        return dict(self.stats)

    # ------------------------------------------------------------ start and stop

    def _connect(self) -> bool:
        """Join or start Ray; True when this call started it (and so must shut it down)."""
        import logging

        import ray

        if ray.is_initialized():  # a caller's Ray (a notebook, a test): use it as it is
            return False
        # Ray's own notices (token authentication, a started instance) would bury the progress line.
        quiet = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
        if self.config.ray_address:
            try:
                ray.init(address=self.config.ray_address, **quiet)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise WorkerError(f"cannot join the Ray cluster at {self.config.ray_address}: {exc}") from None
        else:
            # This machine's cores; more CPUs than cores only when asked for more workers × threads.
            cores = os.cpu_count() or 1
            workers, threads = layout(self.config, cores)
            ray.init(num_cpus=max(cores, workers * threads), object_store_memory=128 * 1024**2, **quiet)
        return True

    def _start(self, driver_identity: dict[str, Any], cache_path: str | None) -> list[Any]:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        cpus = int(ray.cluster_resources().get("CPU", 0))
        n, threads = layout(self.config, cpus)
        if n * threads > cpus:
            raise WorkerError(f"{n} workers × {threads} threads need {n * threads} CPUs; the Ray cluster at "
                              f"{self.config.ray_address or 'this machine'} has {cpus}")
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        reader_name = f"offline-eval-cache-reader-{uuid.uuid4().hex}" if cache_path else None
        if cache_path:
            self._actors.append(ray.remote(CacheReader).options(num_cpus=0, scheduling_strategy=here,
                                                                 name=reader_name).remote(cache_path))
        worker_config = dataclasses.replace(self.config, n_threads=threads, use_cache=False, workers=None,
                                            ray_address=None)
        actor = ray.remote(JudgeWorker).options(num_cpus=threads, max_restarts=MAX_RESTARTS, max_task_retries=0)
        workers = [actor.remote(worker_config, reader_name) for _ in range(n)]
        self._actors.extend(workers)
        try:
            hellos = ray.get([w.hello.remote() for w in workers], timeout=START_TIMEOUT)
        except ray.exceptions.GetTimeoutError:
            raise WorkerError(f"the {n} workers did not load their judges within {START_TIMEOUT:.0f}s") from None
        except ray.exceptions.RayError as exc:
            raise WorkerError(f"a worker could not load its judge: {_cause(exc)}") from None
        refused = [f"{h['host']} (pid {h['pid']}): {_mismatch(h['judge'], driver_identity)}"
                   for h in hellos if h["judge"] != driver_identity]
        if refused:
            raise WorkerError("refusing workers whose judge differs from this process's (their verdicts could "
                              "differ in bytes; install the same llama.cpp build and models on every node): "
                              + " | ".join(refused))
        self.stats.update(workers=n, threads=threads, nodes=len({h["node"] for h in hellos}))
        self.pids = [h["pid"] for h in hellos]
        return workers

    # ------------------------------------------------------------ the run

    def judge(self, work: Sequence[SampleWork], metrics: Sequence[Metric],
              judge: Judge) -> Iterator[tuple[int, SampleJudged]]:
        import ray

        started_ray = self._connect()
        self._actors = []
        try:
            cache = judge.cache
            workers = self._start(judge.describe(), str(cache.path) if cache is not None else None)
            yield from self._deal(work, workers, judge)
        finally:
            for handle in self._actors:
                ray.kill(handle, no_restart=True)
            if started_ray:
                ray.shutdown()

    def _deal(self, work: Sequence[SampleWork], workers: list[Any],
              judge: Judge) -> Iterator[tuple[int, SampleJudged]]:
        import ray

        expected = judge.describe()
        todo = deque(deal_order(work))
        free = list(range(len(workers)))
        alive = set(free)
        deaths = [0] * len(workers)
        attempts = [0] * len(work)
        running: dict[Any, tuple[int, int]] = {}  # object ref → (worker, sample position)
        self.stats.update(resubmitted=0, calls_stored=0, seconds_storing=0.0)
        started = time.perf_counter()
        while todo or running:
            while todo and free:
                w, i = free.pop(0), todo.popleft()
                attempts[i] += 1
                running[workers[w].judge_sample.remote(work[i])] = (w, i)
            self.in_flight = dict(running.values())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            for ref in ready:
                w, i = running.pop(ref)
                self.in_flight.pop(w, None)
                try:
                    judged, rows, identity = ray.get(ref)
                except ray.exceptions.RayActorError:
                    # The worker died with the sample: the sample goes to the next free worker, and the
                    # worker, once Ray has restarted it, deals again until it has died too often.
                    if attempts[i] >= MAX_ATTEMPTS:
                        raise WorkerError(f"sample {work[i].sample.sample_id!r} was in flight on {attempts[i]} "
                                          "workers that died; judge it alone to see why") from None
                    todo.appendleft(i)
                    self.stats["resubmitted"] += 1
                    deaths[w] += 1
                    if deaths[w] <= MAX_RESTARTS:
                        free.append(w)
                    else:
                        alive.discard(w)
                    if not alive:
                        raise WorkerError(f"every worker died ({sum(deaths)} deaths)") from None
                    continue
                except ray.exceptions.RayTaskError as exc:
                    raise exc.as_instanceof_cause() from None  # what the sample raised, as in-process
                if identity != expected:
                    raise WorkerError(f"a restarted worker's judge differs from this process's: "
                                      f"{_mismatch(identity, expected)}")
                storing = time.perf_counter()
                if judge.cache is not None:
                    for key, row in rows.items():
                        judge.cache.put(key, **row)
                self.stats["seconds_storing"] += time.perf_counter() - storing
                self.stats["calls_stored"] += len(rows)
                free.append(w)
                yield i, judged
        self.in_flight = {}
        self.stats["seconds_judging"] = round(time.perf_counter() - started, 3)
        self.stats["seconds_storing"] = round(self.stats["seconds_storing"], 3)


def _cause(exc: Exception) -> str:
    cause = getattr(exc, "cause", None)
    return str(cause if cause is not None else exc).strip().splitlines()[-1]
