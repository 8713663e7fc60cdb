"""An OpenAI-compatible server as the judge's backend: llama.cpp's llama-server, llama-cpp-python's
server, vLLM.

Opt-in (``--judge-url URL --judge-model NAME``), and only on loopback or the user's own network: the
address must resolve to a loopback, private or link-local address, and requests never go through a
proxy, so a sample is never sent to the internet. The default path (llama.cpp in this process) opens
no socket at all.

The schema travels in ``response_format``: OpenAI's ``{"type": "json_schema", ...}`` (llama-server,
vLLM), or, when a server refuses that form, llama-cpp-python's ``{"type": "json_object", "schema":
...}``. Decoding is greedy (temperature 0), but a server is not byte-deterministic: it reuses the
previous prompt's cached prefix, and one with several slots batches calls together, both of which
change the floating-point sums. ``describe()`` says so, and the reports show it. A server reports no
verdict probabilities, so findings from it carry ``probability: null``.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from offline_eval.judge.base import Completion, JudgeError, JudgeRequest, Prepared

# Tokens the chat template adds around the messages (role markers, end of turn): counted on top of
# the text, since the server applies a template this process does not see. Fixed, not measured, so
# that packing a context into windows never depends on which calls came first.
TEMPLATE_TOKENS = 64
_JSON_SCHEMA = "json_schema"
_JSON_OBJECT = "json_object"


class JudgeServerError(RuntimeError):
    """The judge server cannot be used (an address outside this network, nothing answering)."""


def check_local_url(url: str) -> urllib.parse.SplitResult:
    """Accept an http(s) URL whose host resolves only to loopback, private or link-local addresses."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeServerError(f"--judge-url {url!r}: expected http://HOST:PORT of an OpenAI-compatible server")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        raise JudgeServerError(f"--judge-url {url!r}: cannot resolve {parts.hostname!r} ({exc})") from None
    for *_, address in found:
        ip = ipaddress.ip_address(address[0].split("%")[0])
        if not (ip.is_loopback or ip.is_private or ip.is_link_local):
            raise JudgeServerError(
                f"--judge-url {url!r}: {parts.hostname} is {ip}, outside this machine and its local network; "
                "offline-eval only sends samples to a judge on loopback or a private network")
    return parts


class ServerJudge:
    """The backend for an OpenAI-compatible chat-completions server on this machine or network."""

    def __init__(self, url: str, model: str, *, n_ctx: int, timeout: float = 600.0, concurrency: int = 1):
        check_local_url(url)
        self.url = url.rstrip("/").removesuffix("/v1")
        self.name = model
        self.concurrency = concurrency  # requests the run keeps in flight (runner.Threads), for describe()
        self.sha256: str | None = None
        self.timeout = timeout
        # Never through a proxy: HTTP_PROXY would carry the samples off this network.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            models = [m for m in self._call("GET", "/v1/models").get("data") or [] if isinstance(m, dict)]
        except JudgeError as exc:
            raise JudgeServerError(f"--judge-url {url!r}: no OpenAI-compatible server answers there ({exc})") from None
        # The model name a server is asked for is not always the model it runs (llama-server ignores it),
        # so the cache key holds what the server says it serves as well.
        self.identity = f"openai-server:{model}:{','.join(sorted(str(m.get('id')) for m in models))}"
        server_ctx, self.slots = self._server_limits(models)
        self.n_ctx = min(n_ctx, server_ctx) if server_ctx else n_ctx
        self._tokenize = self._find_tokenizer()
        self._format = _JSON_SCHEMA

    # ------------------------------------------------------------ HTTP

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", errors="replace")[:300]
            raise JudgeError(f"judge server {self.url}{path}: HTTP {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise JudgeError(f"judge server {self.url}{path}: {reason}") from None
        if not isinstance(payload, dict):
            raise JudgeError(f"judge server {self.url}{path}: expected a JSON object, got {payload!r:.100}")
        return payload

    def _server_limits(self, models: list[dict[str, Any]]) -> tuple[int | None, int | None]:
        """The server's window and slot count where it says (llama-server: /props; vLLM: /v1/models)."""
        try:
            props = self._call("GET", "/props")
        except JudgeError:
            props = {}
        settings = props.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") or props.get("n_ctx") or next(
            (m["max_model_len"] for m in models if m.get("id") == self.name and "max_model_len" in m), None)
        slots = props.get("total_slots")
        return (int(n_ctx) if isinstance(n_ctx, int) else None), (int(slots) if isinstance(slots, int) else None)

    def _find_tokenizer(self) -> str | None:
        """The server's tokenize endpoint: /tokenize (llama-server, vLLM) or /extras/tokenize (llama-cpp-python)."""
        for path in ("/tokenize", "/extras/tokenize"):
            try:
                self._count_with(path, "offline-eval")
                return path
            except (JudgeError, KeyError, TypeError):
                continue
        return None

    def _count_with(self, path: str, text: str) -> int:
        body = {"content": text, "prompt": text, "input": text, "model": self.name,
                "add_special": False, "add_special_tokens": False}
        answer = self._call("POST", path, body)
        return int(answer["count"]) if "count" in answer else len(answer["tokens"])

    # ------------------------------------------------------------ Backend

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        if self._tokenize is None:
            return len(text.encode("utf-8"))  # every token is at least one byte: an upper bound
        return self._count_with(self._tokenize, text)

    def _messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        return [{"role": "system", "content": request.system}, {"role": "user", "content": request.shared + request.task}]

    def room_for_shared(self, request: JudgeRequest) -> int:
        used = self.count_tokens(request.system) + self.count_tokens(request.task) + TEMPLATE_TOKENS
        return self.n_ctx - used - request.max_tokens

    def prepare(self, request: JudgeRequest) -> Prepared:
        messages = self._messages(request)
        prompt = json.dumps(messages, ensure_ascii=False)
        n_prompt = self.count_tokens(request.system) + self.count_tokens(request.shared + request.task) + TEMPLATE_TOKENS
        params = {"backend": "openai-server", "model": self.name, "temperature": 0, "max_tokens": request.max_tokens}
        return Prepared(prompt, params, n_prompt, messages)

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self._format == _JSON_SCHEMA:
            return {"type": "json_schema", "json_schema": {"name": "judge_output", "schema": schema, "strict": True}}
        return {"type": "json_object", "schema": schema}

    def complete(self, prepared: Prepared, request: JudgeRequest, max_tokens: int) -> Completion:
        def ask() -> dict[str, Any]:
            return self._call("POST", "/v1/chat/completions", {
                "model": self.name, "messages": prepared.payload, "temperature": 0, "max_tokens": max_tokens,
                "response_format": self._response_format(request.schema)})

        try:
            answer = ask()
        except JudgeError as exc:
            # A refusal of the json_schema form: HTTP 4xx, or (llama-cpp-python's server) a 500 whose
            # message names response_format.
            if self._format != _JSON_SCHEMA or not (" HTTP 4" in str(exc) or "response_format" in str(exc)):
                raise
            self._format = _JSON_OBJECT  # llama-cpp-python's server takes the schema in its own form
            answer = ask()
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise JudgeError(f"judge server {self.url}: unexpected answer {json.dumps(answer)[:200]}") from None
        usage = answer.get("usage") or {}
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        prompt_tokens = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
        # llama-server says how many prompt tokens it evaluated (the rest came from its prefix cache).
        evaluated = (answer.get("timings") or {}).get("prompt_n", prompt_tokens or 0)
        return Completion(text, finish, int(usage.get("completion_tokens") or 0), int(evaluated),
                          prompt_tokens=prompt_tokens)

    def describe(self) -> dict[str, Any]:
        slots = f"{self.slots} slots batch calls together and a" if self.slots and self.slots > 1 else "a"
        in_flight = (f"{self.concurrency} requests in flight interleave in any order, "
                     if self.concurrency > 1 else "")
        return {
            "backend": "openai-server",
            "name": self.name,
            "sha256": None,
            "url": self.url,
            "n_ctx": self.n_ctx,
            "slots": self.slots,
            "response_format": self._format,
            "token_counts": "server" if self._tokenize else "upper bound (UTF-8 bytes)",
            "deterministic": False,
            "determinism": f"not byte-deterministic: {in_flight}{slots} server reuses cached prompt prefixes, which "
                           "changes the floating-point sums",
            **({"concurrency": self.concurrency} if self.concurrency > 1 else {}),
        }
