"""The Python API checks settings and records exactly as the CLI does, before any model loads."""

from __future__ import annotations

import pytest

import offline_eval.runner as runner
from offline_eval import evaluate
from offline_eval.api import make_config
from offline_eval.config import ConfigError
from offline_eval.metrics import default_thresholds
from offline_eval.data import DatasetError
from offline_eval.sample import Sample
from offline_eval.testing import FakeJudge

RECORD = {"question": "How long is the refund window?", "contexts": ["Refunds within 30 days."],
          "answer": "30 days.", "category": "billing"}


@pytest.fixture(autouse=True)
def no_models(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(runner, "load_judge", refuse)
    monkeypatch.setattr(runner.EmbedderSet, "for_language", refuse)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"thresholds": {"faithfulnes": 0.9}}, "unknown metric 'faithfulnes'"),
        ({"gate_on": "Lower"}, "gate_on must be"),
        ({"n_resamples": 0}, "'n_resamples' must be at least 1"),
        ({"thresholds": {"faithfulness": 1.2}}, "outside [0, 1]"),
        ({"metrics": "faithfulness,bogus"}, "unknown metric(s) bogus"),
        ({"category_thresholds": {"billing": 0.5}}, "category_thresholds"),
        ({"seed": "1"}, "'seed' must be an integer"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(options, fragment):
    with pytest.raises(ConfigError) as exc:
        evaluate([RECORD], **options)
    assert str(exc.value).startswith("evaluate():")
    assert fragment in str(exc.value)


def test_thresholds_merge_over_the_defaults_as_on_the_command_line():
    config = make_config(thresholds={"faithfulness": 0.9})
    assert config.thresholds == {**default_thresholds(), "faithfulness": 0.9}
    assert make_config(metrics="faithfulness, context_recall").metrics == ("faithfulness", "context_recall")


def test_unknown_option_is_a_type_error():
    with pytest.raises(TypeError, match="max_claim"):
        make_config(max_claim=3)


def test_sample_objects_are_validated_like_records():
    bad = Sample(sample_id="s1", question="   ", answer="a", contexts=("",))
    with pytest.raises(DatasetError) as exc:
        evaluate([bad], judge_instance=FakeJudge(), metrics=("faithfulness",))
    text = str(exc.value)
    assert "record 1: field 'question'" in text
    assert "record 1: field 'contexts': element [0]" in text


def test_unknown_category_threshold_is_refused_before_judging():
    judge = FakeJudge()
    with pytest.raises(ConfigError, match="'shipping': no sample has that category .*billing"):
        evaluate([RECORD], judge_instance=judge, metrics=("faithfulness",),
                 category_thresholds={"shipping": {"faithfulness": 0.9}})
    assert judge.requests == []
