"""A metric is one file plus a registration: a toy metric written in a temporary module shows up in the
settings, the gate, every report format and ``compare``, with no other file touched."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import pytest

from offline_eval import evaluate
from offline_eval.compare import compare_reports, render_compare_markdown
from offline_eval.config import ConfigError
from offline_eval.metrics import REGISTRY, ScoreSpec, metric_names, param, register, unregister
from offline_eval.metrics.base import NoParams
from offline_eval.metrics.faithfulness import Faithfulness
from offline_eval.testing import FakeJudge, hashing_embedders

TOY = textwrap.dedent('''
    """A toy metric: is the answer polite? One yes/no call per sample."""
    from dataclasses import dataclass

    from offline_eval.metrics import Evidence, Finding, Metric, Outcome, ScoreSpec, param, register
    from offline_eval.metrics.base import judged, reported_details
    from offline_eval.prompts import YesNoTask


    @dataclass(frozen=True)
    class IsPolite(YesNoTask):
        answer: str

        @property
        def keys(self):
            return ["polite"]

        def text(self, lang):
            return f"<answer>\\n{self.answer}\\n</answer>\\n\\nIs the answer polite? Answer yes or no."


    @dataclass(frozen=True)
    class PolitenessParams:
        max_words: int = param(50, minimum=1, help="Words of the answer shown to the judge.")


    @register
    class Politeness(Metric):
        name = "toy_politeness"
        scores = (ScoreSpec("toy_politeness", 0.9, "rude answers put users off", "1 when the answer is polite"),)
        requires = ("answer",)
        Params = PolitenessParams

        def collect(self, ctx):
            reason = self.missing_input(ctx.sample)
            if reason:
                return Evidence(not_computable=reason)
            words = " ".join(ctx.sample.answer.split()[: self.params.max_words])
            return judged(lambda: Evidence({"verdict": ctx.ask(IsPolite(words))[0], "words": words}))

        def score(self, samples, evidence, embed):
            outcomes = []
            for ev in evidence:
                if ev.not_computable:
                    outcomes.append(self.not_computable(ev.not_computable))
                    continue
                v = ev.data["verdict"]
                finding = Finding("answer", ev.data["words"], "polite" if v.yes else "rude", v.yes, v.p_yes)
                outcomes.append(Outcome({self.name: 1.0 if v.yes else 0.0}, None,
                                        reported_details([finding], "polite" if v.yes else "a rude answer")))
            return outcomes
''')

RECORDS = [
    {"sample_id": "nice", "question": "Where is my order?", "contexts": ["Orders ship in 2 days."],
     "answer": "Thank you for asking: it ships within two days."},
    {"sample_id": "rude", "question": "Where is my order?", "contexts": ["Orders ship in 2 days."],
     "answer": "Go away and stop asking about your order."},
    {"sample_id": "empty", "question": "Where is my order?", "contexts": [], "answer": ""},
]


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_metric.py").write_text(TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_metric")
    yield module
    unregister("toy_politeness")
    sys.modules.pop("toy_metric", None)


def politeness_judge(rude_words: str = "Go away") -> FakeJudge:
    def answer(request):
        if "polite" not in request.schema["properties"]:
            return {key: "yes" for key in request.schema["properties"]} if "claims" not in request.schema[
                "properties"] else {"claims": []}
        rude = rude_words in request.task
        return {"polite": "no" if rude else "yes"}, {"polite": {"yes": 0.1 if rude else 0.95,
                                                                "no": 0.9 if rude else 0.05}}

    return FakeJudge(answer)


def _evaluate(judge: FakeJudge, **options):
    return evaluate(RECORDS, judge_instance=judge, embedders=hashing_embedders(),
                    metrics=("context_precision", "toy_politeness"), n_resamples=100, **options)


def test_a_toy_metric_in_its_own_module_runs_and_shows_everywhere(toy, tmp_path):
    assert "toy_politeness" in metric_names()
    report = _evaluate(politeness_judge(), max_words=3)
    judge_calls = [r for r in report.data["run"]["usage"]["by_metric"] if r == "toy_politeness"]
    assert judge_calls == ["toy_politeness"]
    assert report.data["run"]["params"]["max_words"] == 3  # its parameter, set like any setting
    scores = {s["sample_id"]: s["scores"]["toy_politeness"] for s in report.samples}
    assert scores == {"nice": 1.0, "rude": 0.0, "empty": None}
    rude = next(s for s in report.samples if s["sample_id"] == "rude")
    assert rude["details"]["toy_politeness"]["findings"] == [
        {"label": "answer", "text": "Go away and", "verdict": "rude", "ok": False, "probability": 0.1}]
    assert report.samples[2]["not_computable"]["toy_politeness"] == "empty answer"
    # Its default threshold gates it, with its own words for a failure.
    check = next(c for c in report.data["gate"]["checks"] if c["metric"] == "toy_politeness")
    assert (check["status"], check["threshold"], check["reason"]) == ("failed", 0.9, "rude answers put users off")

    out = tmp_path / "out"
    report.write(out)
    assert json.loads((out / "report.json").read_text("utf-8")) == report.data
    md = (out / "report.md").read_text("utf-8")
    assert "| toy_politeness | 0.500 |" in md and "rude answers put users off" in md
    assert "#### toy_politeness" in md and "answer (rude): Go away and" in md
    html = (out / "report.html").read_text("utf-8")
    assert 'aria-label="toy_politeness score histogram"' in html
    assert '<span class="v bad">rude</span>' in html and "a rude answer" in html and "P(yes) 0.100" in html
    root = ET.fromstring((out / "junit.xml").read_text("utf-8"))
    case = root.find("testsuite[@name='offline_eval.toy_politeness']/testcase[@name='rude']")
    assert "below threshold" in case.find("skipped").get("message")
    assert "answer (rude): Go away and" in case.find("system-out").text
    gate = root.find("testsuite[@name='offline_eval.gate']/testcase[@name='toy_politeness']/failure")
    assert "rude answers put users off" in gate.text


def test_compare_reads_a_toy_metric_and_its_evidence(toy):
    base = _evaluate(politeness_judge(rude_words="no such words")).data  # everything polite
    new = _evaluate(politeness_judge()).data
    result = compare_reports(base, new)
    entry = next(m for m in result["metrics"] if m["metric"] == "toy_politeness")
    (mover,) = entry["movers"]
    assert mover["sample_id"] == "rude" and mover["diff"] == -1.0
    assert mover["evidence"]["new"]["findings"][0]["verdict"] == "rude"
    md = render_compare_markdown(result)
    assert "| toy_politeness | 2 |" in md and "answer (rude): “Go away and stop asking about your order.”" in md


def test_settings_know_a_registered_metric_and_nothing_else(toy):
    with pytest.raises(ConfigError, match="'max_words' must be at least 1"):
        _evaluate(politeness_judge(), max_words=0)
    unregister("toy_politeness")
    with pytest.raises(TypeError, match="max_words"):
        _evaluate(politeness_judge(), max_words=3)


def test_a_clashing_or_malformed_registration_is_refused():
    class Clash(Faithfulness):
        name = "faithfulness_again"

    with pytest.raises(ValueError, match="faithfulness already registered"):
        register(Clash)  # its max_claims is faithfulness's own parameter, shared; its score is not

    @dataclass(frozen=True)
    class OtherMaxClaims:
        max_claims: int = param(3, minimum=1, help="Another meaning under a taken name.")

    class Renamed(Faithfulness):
        name = "faithfulness_renamed"
        scores = (ScoreSpec("faithfulness_renamed", None, "x"),)
        Params = OtherMaxClaims

    with pytest.raises(ValueError, match="max_claims already registered"):
        register(Renamed)

    class Needy(Faithfulness):
        name = "needy"
        scores = (ScoreSpec("needy", None, "x"),)
        requires = ("a pony",)
        Params = NoParams

    with pytest.raises(ValueError, match="unknown inputs a pony"):
        register(Needy)
    assert not {"needy", "faithfulness_again", "faithfulness_renamed"} & set(REGISTRY)
