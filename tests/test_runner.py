"""The run path without a model: a scripted judge and a hashing embedder through ``run`` and
``evaluate_samples`` (the same path the CLI and ``evaluate()`` take)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from offline_eval import evaluate, runner
from offline_eval.config import ConfigError, EvalConfig
from offline_eval.data import DatasetError
from offline_eval.embed import EmbedderSet
from offline_eval.judge.cache import JudgeCache
from offline_eval.report.json_report import render_json
from offline_eval.runner import InProcess, SampleWork, Threads, judge_sample, run
from offline_eval.testing import FakeJudge, hashing_embedders
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "sample.jsonl"


def answer(request):
    """Claims from the first sentence of the text, verdicts alternating by key, an informative answer."""
    props = request.schema["properties"]
    if "claims" in props:
        text = request.task.split(">\n", 3)[-1].split("\n</", 1)[0]
        return {"claims": [text.split(".")[0].strip() or "x"]}
    if "questions" in props:
        return {"questions": [f"Question {i} about the answer?" for i in range(props["questions"]["minItems"])]}
    if "answer_kind" in props:
        return {"answer_kind": "informative"}
    if "addresses" in props:
        return {"addresses": "yes"}, {"addresses": {"yes": 0.9, "no": 0.1}}
    value = {key: "yes" if i % 2 == 0 else "no" for i, key in enumerate(props)}
    return value, {key: {"yes": 0.8 if v == "yes" else 0.3, "no": 0.2 if v == "yes" else 0.7}
                   for key, v in value.items()}


def test_a_whole_run_without_a_model():
    report = evaluate(EXAMPLE, judge_instance=FakeJudge(answer), embedders=hashing_embedders(), n_resamples=100)
    data = report.data
    assert data["run"]["judge"]["backend"] == "fake" and data["run"]["data"]["n_records"] == 6
    assert data["run"]["metrics"] == ["faithfulness", "answer_relevancy", "context_recall", "context_precision"]
    assert set(data["aggregate"]) == {"faithfulness", "answer_relevancy", "context_recall", "context_precision",
                                      "context_relevant_ratio"}
    assert {s["language"] for s in report.samples} == {"en", "zh"}
    assert data["run"]["embedders"] == {}  # no default metric embeds
    usage = data["run"]["usage"]
    assert usage["judge_calls"] == sum(m["judge_calls"] for m in usage["by_metric"].values()) > 0
    assert report.timing["judge_calls"] == usage["judge_calls"] and report.timing["cache_hits"] == 0
    for sample in report.samples:
        for metric, value in sample["scores"].items():
            assert value is None or 0.0 <= value <= 1.0
    json.loads(report.to_json())  # strict JSON


def test_the_same_inputs_give_the_same_bytes_and_a_warm_cache_answers_everything(tmp_path):
    def once():
        judge = FakeJudge(answer, cache=JudgeCache(tmp_path / "c.sqlite"))
        return evaluate(EXAMPLE, judge_instance=judge, embedders=hashing_embedders(), n_resamples=100)

    cold, warm = once(), once()
    assert render_json(cold.data) == render_json(warm.data)
    assert warm.timing["cache_hits"] == warm.timing["judge_calls"] == cold.timing["judge_calls"]


def test_each_sample_returns_its_own_usage_and_any_executor_gives_the_same_report():
    samples = runner.load_data(EXAMPLE).samples
    config = EvalConfig(n_resamples=100)
    metrics = runner.build_metrics(config)
    judged = judge_sample(SampleWork(samples[0], "en"), metrics, FakeJudge(answer))
    assert set(judged.evidence) == set(config.metrics)
    assert judged.usage["faithfulness"].judge_calls == 1  # one verification window: sentences need no call

    lock = threading.Lock()

    class ThreadedJudge(FakeJudge):
        def judge(self, request):
            with lock:  # the fake keeps a list of requests; a real worker would hold its own judge
                return super().judge(request)

    class Reversed(InProcess):
        """Finishes the samples last to first: the report must not care."""

        def judge(self, work, metrics, judge):
            for i in reversed(range(len(work))):
                yield i, judge_sample(work[i], metrics, judge)

    progress = []
    base = runner.evaluate_samples(samples, config, judge=FakeJudge(answer), embedders=hashing_embedders(),
                                   executor=InProcess(), on_progress=progress.append)
    for executor, judge in ((Threads(4), ThreadedJudge(answer)), (Reversed(), FakeJudge(answer))):
        other = runner.evaluate_samples(samples, config, judge=judge, embedders=hashing_embedders(),
                                        executor=executor)
        assert render_json(base.report) == render_json(other.report)
        assert other.timing["judge_calls"] == base.timing["judge_calls"]
    assert [p.done for p in progress] == list(range(1, len(samples) + 1))
    assert progress[-1].judge_calls == base.timing["judge_calls"]
    assert base.timing["executor"] == "in-process"


def test_the_settings_choose_the_executor_and_a_default_run_imports_no_ray():
    assert isinstance(runner.executor_for(EvalConfig()), InProcess)
    threads = runner.executor_for(EvalConfig(judge_url="http://127.0.0.1:1", judge_model="m", concurrency=3))
    assert isinstance(threads, Threads) and threads.describe() == {"executor": "threads", "concurrency": 3}
    script = ("import sys\n"
              "from offline_eval import evaluate\n"
              "from offline_eval.testing import FakeJudge, hashing_embedders\n"
              f"evaluate({str(EXAMPLE)!r}, judge_instance=FakeJudge(), embedders=hashing_embedders(), n_resamples=10)\n"
              "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'offline_eval.ray'))))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_threads_stop_at_the_first_error_and_hand_it_over():
    samples = runner.load_data(EXAMPLE).samples
    metrics = runner.build_metrics(EvalConfig(metrics=("faithfulness",)))

    class Broken(FakeJudge):
        def judge(self, request):
            raise RuntimeError("the server went away")

    work = [SampleWork(s, "en") for s in samples]
    with pytest.raises(RuntimeError, match="the server went away"):
        list(Threads(2).judge(work, metrics, Broken(answer)))


def test_run_checks_data_and_settings_before_loading_any_model(monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(runner, "load_judge", no_model)
    with pytest.raises(DatasetError, match="contexts"):
        run([{"question": "q", "answer": "a", "contexts": "not a list"}], EvalConfig())
    config = EvalConfig(category_thresholds={"nope": {"faithfulness": 0.5}})
    with pytest.raises(ConfigError, match="no sample has that category"):
        run(EXAMPLE, config, source="command line")


def test_run_warns_about_skipped_records_and_loads_embedders_only_when_needed(monkeypatch):
    records = [{"question": "Is it blue?", "contexts": ["It is blue."], "answer": "Yes, blue."},
               {"question": "q", "answer": "a", "contexts": "not a list"}]
    warnings, loaded = [], []

    class Spy(EmbedderSet):
        def for_language(self, lang):
            loaded.append(lang)
            return super().for_language(lang)

    result = run(records, EvalConfig(metrics=("faithfulness",), n_resamples=10), skip_invalid=True,
                 judge=FakeJudge(answer), embedders=Spy(default=hashing_embedders().default), warn=warnings.append)
    assert warnings == ["skipping record 2: field 'contexts': expected a list of strings, got a string "
                        '(for one chunk write ["not a list"])']
    assert loaded == [] and result.report["run"]["embedders"] == {}
    run(records[:1], EvalConfig(metrics=("answer_relevancy_ragas",), n_resamples=10), judge=FakeJudge(answer),
        embedders=Spy(default=hashing_embedders().default))
    assert loaded[0] == "en"  # loaded up front, before any judging


def test_a_cache_that_fails_mid_run_is_a_warning(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    cache._db.close()  # the file goes away under the run
    result = run(EXAMPLE, EvalConfig(metrics=("faithfulness",), n_resamples=10),
                 judge=FakeJudge(answer, cache=cache), embedders=hashing_embedders())
    assert len(result.warnings) == 1 and "the judge cache failed during the run" in result.warnings[0]
