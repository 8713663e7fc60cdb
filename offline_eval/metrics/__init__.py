"""One module per metric. ``REGISTRY`` maps a metric name to its implementation."""

from offline_eval.metrics.answer_relevancy import AnswerRelevancy
from offline_eval.metrics.base import Evidence, Metric, Outcome, SampleContext, Usage
from offline_eval.metrics.context_precision import ContextPrecision
from offline_eval.metrics.context_recall import ContextRecall
from offline_eval.metrics.faithfulness import Faithfulness

REGISTRY: dict[str, type] = {
    "faithfulness": Faithfulness,
    "answer_relevancy": AnswerRelevancy,
    "context_recall": ContextRecall,
    "context_precision": ContextPrecision,
}

__all__ = ["REGISTRY", "Evidence", "Metric", "Outcome", "SampleContext", "Usage"]
