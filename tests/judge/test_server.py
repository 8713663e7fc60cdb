"""The OpenAI-compatible server backend against a small scripted HTTP server on 127.0.0.1 (model-free).

The scripted server speaks the parts of the protocol the backend uses: /v1/models, /props (as
llama-server does, or not at all), /tokenize or /extras/tokenize, and /v1/chat/completions with the
schema in response_format, refusing OpenAI's json_schema form when asked to behave like
llama-cpp-python's server.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from offline_eval import evaluate
from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.judge.cache import JudgeCache
from offline_eval.judge.judge import Judge
from offline_eval.judge.server import TEMPLATE_TOKENS, JudgeServerError, ServerJudge, check_local_url
from offline_eval.testing import hashing_embedders

SCHEMA = {"type": "object", "properties": {"claim_1": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["claim_1"], "additionalProperties": False}
REQUEST = JudgeRequest("system prompt", "Context: cats purr.\n", "Do cats purr?", SCHEMA, 26, "faithfulness")


class Script:
    """What the scripted server does; tests change it and read back what it was sent."""

    def __init__(self, flavour: str = "llama-server"):
        self.flavour = flavour  # "llama-server" | "llama-cpp-python" | "bare"
        self.completions: list[dict] = []
        self.answer = lambda body: {"claim_1": "yes"}
        self.finish = "stop"
        self.delay = 0.0  # seconds each completion takes
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()


def _handler(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code: int, payload: object) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "tiny.gguf", "object": "model"}]})
            elif self.path == "/props" and script.flavour == "llama-server":
                self._send(200, {"default_generation_settings": {"n_ctx": 1024}, "total_slots": 4})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            tokenize = {"llama-server": "/tokenize", "llama-cpp-python": "/extras/tokenize"}.get(script.flavour)
            if self.path == tokenize:
                text = body.get("content") if script.flavour == "llama-server" else body.get("input")
                self._send(200, {"tokens": list(range(len(text.split())))})
            elif self.path == "/v1/chat/completions":
                fmt = body["response_format"]
                if script.flavour == "llama-cpp-python" and fmt["type"] != "json_object":
                    self._send(422, {"detail": "response_format.type: Input should be 'text' or 'json_object'"})
                    return
                with script.lock:
                    script.completions.append(body)
                    script.in_flight += 1
                    script.most_in_flight = max(script.most_in_flight, script.in_flight)
                time.sleep(script.delay)
                with script.lock:
                    script.in_flight -= 1
                content = json.dumps(script.answer(body))
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": content},
                                              "finish_reason": script.finish}],
                                 "usage": {"prompt_tokens": 42, "completion_tokens": 7}})
            else:
                self._send(404, {"error": "not found"})

    return Handler


@pytest.fixture()
def server():
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    script.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield script
    httpd.shutdown()
    httpd.server_close()


def test_a_call_sends_the_schema_and_greedy_settings_and_reads_the_answer(server):
    backend = ServerJudge(server.url, "tiny.gguf", n_ctx=8192)
    assert backend.n_ctx == 1024 and backend.slots == 4  # the server's own window wins when smaller
    result = Judge(backend).judge(REQUEST)
    assert result.value == {"claim_1": "yes"} and result.probabilities == {}
    assert (result.prompt_tokens, result.completion_tokens) == (42, 7)  # the server's own counts
    (body,) = server.completions
    assert body["temperature"] == 0 and body["max_tokens"] == 26 and body["model"] == "tiny.gguf"
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "judge_output",
                                                                              "schema": SCHEMA, "strict": True}}
    assert body["messages"] == [{"role": "system", "content": "system prompt"},
                                {"role": "user", "content": "Context: cats purr.\nDo cats purr?"}]


def test_it_counts_tokens_with_the_server_and_leaves_room_for_the_template(server):
    backend = ServerJudge(server.url, "m", n_ctx=8192)
    assert backend.count_tokens("three short words") == 3 and backend.count_tokens("") == 0
    assert backend.room_for_shared(REQUEST) == 1024 - (2 + 3 + TEMPLATE_TOKENS) - 26
    assert backend.prepare(REQUEST).n_prompt == 2 + 6 + TEMPLATE_TOKENS


def test_llama_cpp_python_servers_get_the_schema_in_their_own_form(server):
    server.flavour = "llama-cpp-python"
    backend = ServerJudge(server.url, "m", n_ctx=2048)
    assert backend.n_ctx == 2048 and backend.slots is None  # no /props: the configured window
    assert backend.count_tokens("two words") == 2  # /extras/tokenize
    assert Judge(backend).judge(REQUEST).value == {"claim_1": "yes"}
    assert server.completions[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert backend.describe()["response_format"] == "json_object"


def test_without_a_tokenizer_counts_are_an_upper_bound(server):
    server.flavour = "bare"
    backend = ServerJudge(server.url, "m", n_ctx=2048)
    assert backend.count_tokens("héllo") == 6  # UTF-8 bytes: no token is shorter than a byte
    assert backend.describe()["token_counts"] == "upper bound (UTF-8 bytes)"


def test_describe_says_a_server_is_not_byte_deterministic(server):
    described = ServerJudge(server.url, "m", n_ctx=2048).describe()
    assert described["backend"] == "openai-server" and described["deterministic"] is False
    assert described["url"] == server.url and described["slots"] == 4
    assert "4 slots batch calls together" in described["determinism"]


def test_cut_and_invalid_outputs_are_judge_errors(server):
    judge = Judge(ServerJudge(server.url, "m", n_ctx=8192))
    server.answer = lambda body: {"claim_1": "maybe"}
    with pytest.raises(JudgeError, match="does not match the schema"):
        judge.judge(REQUEST)
    server.finish = "length"
    with pytest.raises(JudgeError, match="cut at"):
        judge.judge(REQUEST)
    assert [b["max_tokens"] for b in server.completions[-3:]] == [26, 52, 104]  # retried with larger budgets


def test_answers_are_cached_by_what_the_server_serves(server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    first = Judge(ServerJudge(server.url, "m", n_ctx=8192), cache).judge(REQUEST)
    again = Judge(ServerJudge(server.url, "m", n_ctx=8192), cache).judge(REQUEST)
    assert not first.cached and again.cached and len(server.completions) == 1


def test_a_whole_evaluation_through_the_server(server, tmp_path):
    def answer(body):
        props = body["response_format"]["json_schema"]["schema"]["properties"]
        if "claims" in props:
            return {"claims": ["Cats purr when content."]}
        return {key: "yes" for key in props}

    server.answer = answer
    report = evaluate([{"question": "Do cats purr?", "contexts": ["Cats purr when content."],
                        "answer": "Cats purr when content."}], judge_url=server.url, judge_model="tiny.gguf",
                      metrics=("faithfulness",), cache_path=tmp_path / "c.sqlite", embedders=hashing_embedders(),
                      n_resamples=50)
    assert report.samples[0]["scores"]["faithfulness"] == 1.0
    assert report.samples[0]["details"]["faithfulness"]["findings"][0]["probability"] is None
    assert report.data["run"]["judge"]["deterministic"] is False


def test_concurrency_keeps_requests_in_flight_and_the_report_says_it_is_not_deterministic(server, tmp_path):
    def answer(body):
        props = body["response_format"]["json_schema"]["schema"]["properties"]
        if "claims" in props:
            return {"claims": ["Cats purr."]}
        return {key: "yes" for key in props}

    server.answer, server.delay = answer, 0.05
    records = [{"question": f"Do cats purr? ({i})", "contexts": [f"Cats purr. Fact {i}."], "answer": "Cats purr."}
               for i in range(8)]

    def run(concurrency: int, cache: str):
        return evaluate(records, judge_url=server.url, judge_model="tiny.gguf", metrics=("faithfulness",),
                        cache_path=tmp_path / cache, embedders=hashing_embedders(), n_resamples=50,
                        concurrency=concurrency)

    one = run(1, "one.sqlite")
    assert server.most_in_flight == 1
    server.most_in_flight = 0
    four = run(4, "four.sqlite")
    assert server.most_in_flight == 4 and four.timing["executor"] == "threads"
    assert four.samples == one.samples and four.aggregate == one.aggregate  # a scripted server is deterministic
    judge = four.data["run"]["judge"]
    assert judge["deterministic"] is False and judge["concurrency"] == 4
    assert judge["determinism"].startswith("not byte-deterministic: 4 requests in flight")
    assert "concurrency" not in one.data["run"]["judge"]


@pytest.mark.parametrize("url", ["http://8.8.8.8:8080", "http://[2001:4860::8888]:80", "ftp://127.0.0.1/",
                                 "127.0.0.1:8080"])
def test_only_loopback_or_private_addresses_are_accepted(url):
    with pytest.raises(JudgeServerError, match="--judge-url"):
        check_local_url(url)


def test_local_addresses_are_accepted_and_a_silent_one_is_refused():
    for url in ("http://127.0.0.1:1", "http://localhost:1", "http://10.1.2.3:80/v1", "http://[::1]:8080"):
        check_local_url(url)
    with pytest.raises(JudgeServerError, match="no OpenAI-compatible server answers there"):
        ServerJudge("http://127.0.0.1:9", "m", n_ctx=2048)  # the discard port: nothing listens


def test_a_proxy_in_the_environment_is_never_used(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://203.0.113.1:3128")
    monkeypatch.setenv("http_proxy", "http://203.0.113.1:3128")
    assert ServerJudge(server.url, "m", n_ctx=2048).count_tokens("a b") == 2
