"""``--dry-run``, model-free: the plan follows the run's own path call for call, prefix sharing is
counted as the llama.cpp judge evaluates it, and the command judges nothing and exits 0."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from offline_eval.config import EvalConfig, apply_settings
from offline_eval.data import load_samples
from offline_eval.plan import (
    SPEED_FILE,
    MetricCost,
    PlanningBackend,
    Speed,
    plan_samples,
    render_plan,
    speed_key,
    store_speed,
    stored_speed,
)
from offline_eval.prompts import schema_estimate
from offline_eval.runner import evaluate_samples
from offline_eval.testing import FakeJudge, ScriptedBackend, hashing_embedders
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "sample.jsonl"


def estimating_judge() -> FakeJudge:
    """A judge that answers every call with the dry run's estimate: a real run then makes exactly the
    calls the dry run counted."""
    return FakeJudge(lambda request: request.estimate() if request.estimate else schema_estimate(request.schema))


@pytest.mark.parametrize("metrics", [None, ("faithfulness", "answer_correctness", "context_precision")])
def test_the_plan_counts_the_calls_and_prompt_tokens_a_run_makes(metrics):
    settings = {"n_resamples": 10} | ({"metrics": metrics} if metrics else {})
    config = apply_settings(EvalConfig(), settings, "test")
    samples = load_samples(EXAMPLE).samples
    plan = plan_samples(samples, config, ScriptedBackend())
    usage = evaluate_samples(samples, config, judge=estimating_judge(), embedders=hashing_embedders()
                             ).report["run"]["usage"]["by_metric"]
    assert set(plan.by_metric) == set(usage)
    for name, cost in plan.by_metric.items():
        assert (cost.judge_calls, cost.prompt_tokens) == (usage[name]["judge_calls"], usage[name]["prompt_tokens"])
        assert cost.generated_tokens >= cost.judge_calls  # at least the end token each
        assert 0 < cost.evaluated_tokens <= cost.prompt_tokens
    assert plan.total.judge_calls == sum(u["judge_calls"] for u in usage.values())
    # Sentences are known before any call, so faithfulness's plan is exact; claims are estimated, one per
    # clause, and the checks that hold them say so.
    assert plan.by_metric["faithfulness"].estimated_calls == 0
    assert plan.by_metric["context_recall" if metrics is None else "answer_correctness"].estimated_calls > 0


def test_prefix_sharing_counts_a_stem_once_and_a_recent_head_once():
    from offline_eval.judge import JudgeRequest

    planner = PlanningBackend(ScriptedBackend())
    schema = {"type": "object", "properties": {"ok": {"type": "string", "enum": ["yes", "no"]}},
              "required": ["ok"]}

    def call(shared: str, task: str) -> int:
        before = planner.costs["m"].evaluated_tokens
        request = JudgeRequest("system words", shared, task, schema, 16, "m")
        planner.complete(planner.prepare(request), request, 16)
        return planner.costs["m"].evaluated_tokens - before

    assert call("a shared context", "first") == 2 + 3 + 1  # stem, head, tail
    assert call("a shared context", "second") == 1  # only the tail
    for other in ("b", "c", "d", "e"):  # four newer heads push it out of the saved ones
        call(other, "x")
    assert call("a shared context", "third") == 3 + 1


def test_the_report_of_a_plan_names_what_is_estimated_and_the_time():
    config = apply_settings(EvalConfig(), {"metrics": ("faithfulness_ragas",)}, "test")
    plan = plan_samples(load_samples(EXAMPLE).samples, config, ScriptedBackend())
    speed = Speed(0.01, 0.1, 3.0, "measured: 4 calls")
    text = render_plan(plan, speed, "judge-x")
    total = plan.total
    assert f"{total.judge_calls} judge calls with {total.prompt_tokens:,} prompt tokens" in text
    assert "one per clause of the text" in text and "judge-x" in text and "measured: 4 calls" in text
    seconds = round(total.evaluated_tokens * 0.01 + total.generated_tokens * 0.1)
    assert f"{seconds // 60} min {seconds % 60:02d} s of judging" in text
    assert "No time estimate" in render_plan(plan, None, "server")


def test_speed_is_stored_per_judge_build_and_threads(tmp_path):
    path = tmp_path / SPEED_FILE
    key = speed_key({"sha256": "abc", "build": {"v": 1}, "n_gpu_layers": 0}, None)
    assert key != speed_key({"sha256": "abc", "build": {"v": 1}, "n_gpu_layers": 0}, 2)
    assert stored_speed(path, key) is None
    store_speed(path, key, Speed(0.02, 0.12, 2.5, "measured"))
    assert stored_speed(path, key) == Speed(0.02, 0.12, 2.5, "measured")
    path.write_text("not json", encoding="utf-8")
    assert stored_speed(path, key) is None  # a damaged file is measured again, not an error


def test_metric_cost_adds_up():
    a = MetricCost(1, 0, 10, 5, 3)
    a.add(MetricCost(2, 1, 20, 10, 6))
    assert a == MetricCost(3, 1, 30, 15, 9)


def test_dry_run_on_the_command_line_judges_nothing_writes_nothing_and_exits_0(tmp_path, monkeypatch):
    from offline_eval.cli import cli
    from offline_eval.judge import load as judge_load

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "home"))
    judges: list[FakeJudge] = []

    def load_judge(config, echo):
        assert config.use_cache is False  # a dry run neither reads nor writes the cache
        judges.append(FakeJudge())
        return judges[-1]

    monkeypatch.setattr(judge_load, "load_judge", load_judge)
    store_speed(tmp_path / "home" / SPEED_FILE, speed_key(FakeJudge().describe(), None), Speed(0.01, 0.1, 1.0, "m"))
    result = CliRunner().invoke(cli, ["evaluate", str(EXAMPLE), "--out", "out", "--dry-run",
                                      "--metrics", "+answer_correctness"])
    assert result.exit_code == 0, result.output
    assert "answer_correctness" in result.output and "judge calls with" in result.output
    assert "Estimated time, cold cache" in result.output
    assert judges[0].requests == []  # nothing was decoded
    assert not (tmp_path / "out").exists()
    bad = CliRunner().invoke(cli, ["evaluate", str(tmp_path / "missing.jsonl"), "--dry-run"])
    assert bad.exit_code == 2
