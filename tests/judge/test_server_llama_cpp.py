"""The server judge against a real OpenAI-compatible server: llama-cpp-python's own, on 127.0.0.1,
serving the tiny judge (slow: it loads a GGUF model in a child process).

Run: ``.venv/bin/python -m pytest tests/judge/test_server_llama_cpp.py -m slow`` (needs the [test]
extra: llama-cpp-python's server dependencies).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest

from offline_eval import evaluate, prompts
from offline_eval.judge import JudgeError
from offline_eval.judge.judge import Judge
from offline_eval.judge.server import ServerJudge
from offline_eval.metrics.answer_relevancy import ClassifyAnswer, GenerateQuestions, answer_block
from offline_eval.metrics.claim_coverage import ExtractClaims, VerifyClaims
from offline_eval.metrics.context_precision import JudgeChunk, chunk_question
from offline_eval.testing import hashing_embedders
from tests.conftest import REPO

pytestmark = pytest.mark.slow
for module in ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
    pytest.importorskip(module, reason="llama-cpp-python's server needs the [test] extra's dependencies")

N_CTX = 2048
CONTEXT = prompts.context_block([(1, "The Eiffel Tower was completed in 1889 in Paris."), (2, "Bananas are yellow.")],
                                "en")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from offline_eval import modelstore

    model = modelstore.resolve("tiny", "judge").path
    port = _free_port()
    # The server's log goes to a file: llama.cpp writes more than a pipe holds, and a full pipe nobody
    # reads blocks the server before it ever answers.
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", str(N_CTX)],
                            stdout=subprocess.DEVNULL, stderr=log, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    models = None
    while time.time() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as response:
                models = json.loads(response.read())
            break
        except OSError:
            time.sleep(1)
    if models is None:
        proc.kill()
        log.close()
        pytest.fail(f"llama-cpp-python's server did not start: {log_path.read_text(errors='replace')[-2000:]}")
    yield url, models["data"][0]["id"]
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_every_task_gets_a_schema_valid_answer_through_the_server(server):
    url, model = server
    backend = ServerJudge(url, model, n_ctx=N_CTX)
    judge = Judge(backend)
    assert backend.n_ctx == N_CTX and backend.describe()["token_counts"] == "server"  # /extras/tokenize
    tasks = [
        (ExtractClaims("The tower is in Paris. It opened in 1889.", "Where is it?", 2, "answer"), ""),
        (VerifyClaims(("The tower is in Paris.", "It was built in 1920.")), CONTEXT),
        (GenerateQuestions(1), answer_block("Paris is the capital of France.", "en")),
        (ClassifyAnswer(), answer_block("I don't know.", "en")),
        (JudgeChunk("Bananas are yellow."), chunk_question("Where is the tower?", "In Paris.", "en",
                                                             basis_is_reference=True)),
    ]
    answered = 0
    for task, shared in tasks:
        try:
            result = judge.judge(task.request("en", shared, "test"))
        except JudgeError as exc:
            # The tiny judge may write an invalid free-text string (a raw newline: the server's json_object
            # grammar allows it); that fails loudly, as in test_llama. Verdict tasks must always close.
            assert isinstance(task, (ExtractClaims, GenerateQuestions)), exc
            continue
        jsonschema.validate(result.value, task.schema)
        task.parse(result)
        assert result.probabilities == {}  # a server reports no verdict probabilities
        answered += 1
    assert answered >= 3
    # llama-cpp-python's server refuses OpenAI's json_schema form; the backend switched to its own.
    described = backend.describe()
    assert described["response_format"] == "json_object" and described["deterministic"] is False


def test_an_evaluation_with_the_server_judge_reports_it(server, tmp_path):
    url, model = server
    records = [{"sample_id": "eiffel", "question": "When was the Eiffel Tower completed?",
                "contexts": ["The Eiffel Tower was completed in 1889 in Paris.", "Bananas are yellow."],
                "answer": "It was completed in 1889.", "reference_answer": "In 1889."}]
    report = evaluate(records, judge_url=url, judge_model=model, n_ctx=N_CTX, max_claims=2, n_questions=1,
                      cache_path=tmp_path / "c.sqlite", embedders=hashing_embedders(), n_resamples=50)
    (sample,) = report.samples
    for metric, value in sample["scores"].items():
        assert value is None or 0.0 <= value <= 1.0, (metric, sample["not_computable"])
    assert report.data["run"]["judge"]["backend"] == "openai-server"
    assert report.data["run"]["judge"]["deterministic"] is False
    for finding in sample["details"].get("context_precision", {}).get("findings", []):
        assert finding["probability"] is None


def test_the_command_line_judges_through_the_server(server, tmp_path):
    url, model = server
    env = {**os.environ, "OFFLINE_EVAL_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "offline_eval", "evaluate", str(REPO / "examples" / "sample.jsonl"),
                           "--out", str(tmp_path / "out"), "--judge-url", url, "--judge-model", model,
                           "--metrics", "faithfulness,context_precision", "--max-claims", "2", "--n-ctx", str(N_CTX)],
                          env=env, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "not byte-deterministic" in proc.stdout
    assert "not byte-deterministic" in (Path(tmp_path / "out" / "report.md")).read_text("utf-8")
