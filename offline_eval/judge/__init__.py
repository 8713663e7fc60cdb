"""The judge: a model that answers a prompt with a JSON object that matches a schema.

``Judge`` (judge.py) is what metrics call: cache, retry, schema check and cost around a ``Backend``
(base.py): llama.cpp in this process (llama.py) or an OpenAI-compatible server (server.py).
"""

from offline_eval.judge.base import (
    Backend,
    Completion,
    JudgeError,
    JudgeRequest,
    JudgeResult,
    Prepared,
    Usage,
    validate_output,
)
from offline_eval.judge.judge import Judge

__all__ = ["Backend", "Completion", "Judge", "JudgeError", "JudgeRequest", "JudgeResult", "Prepared", "Usage",
           "validate_output"]
