"""One module per metric; each registers itself (``@register``). Importing this package registers the
built-in metrics, in the order every report lists them (and in which a sample's metrics are judged:
one that reuses another's judge answers comes after it). Custom criteria (``criteria.py``) register
when the settings define them."""

# isort: off  (registration order is the order of every report)
from offline_eval.metrics import faithfulness  # noqa: F401
from offline_eval.metrics import answer_relevancy  # noqa: F401
from offline_eval.metrics import context_recall  # noqa: F401
from offline_eval.metrics import context_precision  # noqa: F401
from offline_eval.metrics import answer_correctness  # noqa: F401
from offline_eval.metrics import ragchecker  # noqa: F401
# isort: on
from offline_eval.metrics.base import (
    REGISTRY,
    Evidence,
    Finding,
    Metric,
    Outcome,
    SampleContext,
    ScoreSpec,
    default_metrics,
    default_thresholds,
    metric_names,
    param,
    param_fields,
    register,
    score_owner,
    score_spec,
    score_specs,
    unregister,
)

__all__ = ["REGISTRY", "Evidence", "Finding", "Metric", "Outcome", "SampleContext", "ScoreSpec",
           "default_metrics", "default_thresholds", "metric_names", "param", "param_fields", "register", "score_owner", "score_spec",
           "score_specs", "unregister"]
