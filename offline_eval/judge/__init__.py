"""The judge: a local model that answers a prompt with a JSON object that matches a schema."""

from offline_eval.judge.base import Judge, JudgeError, JudgeRequest, JudgeResult, validate_output

__all__ = ["Judge", "JudgeError", "JudgeRequest", "JudgeResult", "validate_output"]
