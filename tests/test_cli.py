"""``offline-eval evaluate`` end to end without a model: the judge and embedders the run would load are
replaced by the scripted ones, everything else is the real command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from offline_eval import runner
from offline_eval.cli import EXIT_INTERRUPTED, cli
from offline_eval.testing import FakeJudge, hashing_embedders
from tests.conftest import REPO
from tests.test_runner import answer

EXAMPLE = str(REPO / "examples" / "sample.jsonl")


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "home"))
    judges: list[FakeJudge] = []

    def load_judge(config, echo):
        judges.append(FakeJudge(answer))
        echo("judge fake-judge loaded")
        return judges[-1]

    monkeypatch.setattr(runner, "load_judge", load_judge)
    monkeypatch.setattr(runner, "EmbedderSet", lambda forced=None: hashing_embedders())
    return judges


def test_evaluate_writes_every_report_and_exits_with_the_gate(scripted, tmp_path):
    result = CliRunner().invoke(cli, ["evaluate", EXAMPLE, "--out", "out", "--threshold", "faithfulness=0.1",
                                      "--max-claims", "2", "--verdict-scoring", "probability"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert result.exit_code == (0 if report["gate"]["passed"] else 1)
    assert report["run"]["params"]["max_claims"] == 2 and report["run"]["params"]["verdict_scoring"] == "probability"
    for name in ("report.md", "report.html", "junit.xml", "timing.json"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert "6 samples from" in result.output and "judge fake-judge loaded" in result.output
    assert "gate PASSED" in result.output or "gate FAILED" in result.output


def test_a_format_subset_and_quiet(scripted, tmp_path):
    result = CliRunner().invoke(cli, ["evaluate", EXAMPLE, "--out", "out", "--format", "md", "--quiet",
                                      "--metrics", "context_precision"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.md", "timing.json"]
    assert "samples from" not in result.output and "context_relevant_ratio" in result.output


def test_ctrl_c_exits_130_and_says_how_to_resume(scripted, monkeypatch):
    def interrupted(request):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "load_judge", lambda config, echo: FakeJudge(interrupted))
    result = CliRunner().invoke(cli, ["evaluate", EXAMPLE, "--out", "out"])
    assert result.exit_code == EXIT_INTERRUPTED
    assert "run the same command again to resume" in result.output


def test_help_lists_every_registered_metric_and_its_parameters():
    out = CliRunner().invoke(cli, ["evaluate", "--help"]).output
    for text in ("faithfulness, answer_relevancy, context_recall, context_precision", "--max-claims",
                 "--max-reference-claims", "--n-questions", "--chunk-word-percent", "--judge-url", "--verdict-scoring",
                 "faithfulness=0.8 faithfulness_ragas=0.8 answer_relevancy=0.7", "answer_relevancy_ragas"):
        assert text in " ".join(out.split()), text
