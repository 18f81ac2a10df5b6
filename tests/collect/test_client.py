import asyncio
import contextlib
import email.utils
import http.server
import pickle
import socket
import threading
import time

import pytest
from collect_helpers import MODEL, fast_client

from hce.collect.call.client import FatalCallError, JudgeClient, _retry_after, endpoint_key
from hce.collect.design.prompts import render
from hce.sim import Faults, SimJudge
from hce.errors import CollectError

USER = [{"role": "user", "content": "Transcript:\nPatient: I walk sometimes.\n\nTotal Score (5-20):"}]


def call(client, messages=USER, **kwargs):
    async def go():
        async with client:
            return await client.complete(messages, model=kwargs.pop("model", MODEL), **kwargs)

    return asyncio.run(go())


def test_success_records_the_call(serve):
    server = serve(SimJudge(seed=0))
    result = call(fast_client(server), temperature=0.1, max_tokens=50, logprobs=True, top_logprobs=3)
    assert result.ok and result.retries == 0 and result.tries == []
    assert result.response_text.isdigit() and result.finish_reason == "stop"
    assert result.model_version == MODEL
    assert result.input_tokens == -(-len(USER[0]["content"]) // 4)  # the simulator's ~4 characters a token
    assert result.output_tokens == 1 and result.cached_tokens == 0
    assert result.latency_s > 0
    [token] = result.logprobs
    assert token["token"] == result.response_text and len(token["top_logprobs"]) == 3


def test_alias_comes_back_as_dated_snapshot_and_prefix_is_cached(serve):
    server = serve(SimJudge(seed=0))
    messages = render("P1.2", transcript="Doctor: Hi.\nPatient: I walk sometimes.")
    first = call(fast_client(server), messages, model="gpt-4o")
    second = call(fast_client(server), render("P1.2", transcript="Doctor: Hi.\nPatient: No."), model="gpt-4o")
    assert first.model_version == "gpt-4o-2024-08-06"
    assert first.cached_tokens == 0
    # The rubric-bearing prefix (> 1,024 tokens) is served from cache the second time, in 128-token blocks.
    assert second.cached_tokens >= 1024 and second.cached_tokens % 128 == 0
    assert second.cached_tokens < second.input_tokens


def test_429_honours_retry_after_and_counts_every_try(serve):
    judge = SimJudge(seed=0, faults=Faults(rate_429=1.0, retry_after=0.05))
    server = serve(judge)
    started = time.perf_counter()
    # A 10 s backoff would be used without Retry-After (3 retries: 30 s); the server's 0.05 s wins.
    # The bound is far from both so that a loaded machine cannot cross it.
    result = call(fast_client(server, backoff_base=10, backoff_max=10))
    assert time.perf_counter() - started < 20
    assert result.retries == 3 and not result.ok
    assert result.error_message.startswith("HTTP 429") and result.error_message.endswith("(after 4 tries)")
    assert judge.stats["429"] == 4 and len(result.tries) == 4


def test_500_then_success_is_retried(serve):
    judge = SimJudge(seed=3, faults=Faults(rate_500=0.5))
    server = serve(judge)
    client = fast_client(server, max_retries=10)

    async def go():
        async with client:
            return await asyncio.gather(*[client.complete(USER, model=MODEL) for _ in range(20)])

    results = asyncio.run(go())
    assert all(r.ok for r in results)
    assert sum(r.retries for r in results) == judge.stats["500"] > 0


def test_timeout_and_connection_errors_end_as_errors(serve):
    server = serve(SimJudge(seed=0, faults=Faults(rate_slow=1.0, slow_s=2.0)))
    result = call(fast_client(server, timeout=0.2, max_retries=1))
    # The timeout is the whole call's: the first try used it all, so no second try is sent (issue 44).
    assert result.retries == 0 and result.error_message.startswith("timeout") and "after 1 try" in result.error_message
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = call(JudgeClient(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=2, backoff_base=0.001))
    assert result.retries == 2 and result.error_message.startswith("connection error")


def test_broken_json_body_ends_as_an_error(serve):
    judge = SimJudge(seed=0, faults=Faults(rate_malformed=1.0))
    server = serve(judge)
    client = fast_client(server)

    async def go():
        async with client:
            return await asyncio.gather(*[client.complete(USER, model=MODEL) for _ in range(12)])

    results = asyncio.run(go())
    broken = [r for r in results if not r.ok]
    assert broken and all(r.error_message.startswith("unreadable response") and r.retries == 0 for r in broken)


def test_bad_request_is_not_retried(serve):
    server = serve(SimJudge(seed=0))
    result = call(fast_client(server), messages=[])  # the simulator needs messages: 400
    assert result.retries == 0 and result.error_message.startswith("HTTP 400")


def test_key_never_shown(serve, monkeypatch):
    planted = "sk-PLANTED-client-3f9a7c"
    server = serve(SimJudge(seed=0), api_key="the-right-key")
    client = JudgeClient(base_url=server.url, api_key=planted)
    assert planted not in repr(client) and planted not in str(vars(client).get("base_url"))
    with pytest.raises(TypeError):
        pickle.dumps(client)
    # The simulator's 401 quotes the key it got; the client strikes it out.
    with pytest.raises(FatalCallError) as caught:
        call(client)
    assert planted not in str(caught.value) and "[API key removed]" in str(caught.value)


def test_openai_key_is_read_only_for_openai_itself(serve, monkeypatch):
    # Issue 19: OPENAI_API_KEY went to whatever server the endpoint named.
    server = serve(SimJudge(seed=0), api_key="env-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    with pytest.raises(CollectError, match="names no api_key_env") as caught:
        JudgeClient()
    assert "sk-PLANTED" not in str(caught.value)
    assert call(JudgeClient(api_key="env-key")).ok  # a key given for this endpoint is used
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert JudgeClient().base_url == "https://api.openai.com/v1"  # OpenAI's own: its variable is read
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CollectError, match="OPENAI_API_KEY that should hold its API key is not set"):
        JudgeClient()


def test_endpoint_key_reads_only_the_named_variable(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-openai")
    monkeypatch.delenv("COLLEAGUE_VLLM_KEY", raising=False)
    with pytest.raises(CollectError) as caught:
        endpoint_key("vllm", "http://127.0.0.1:18701/v1", "COLLEAGUE_VLLM_KEY")
    message = str(caught.value)
    assert "COLLEAGUE_VLLM_KEY" in message and "'vllm'" in message and "sk-PLANTED" not in message
    monkeypatch.setenv("COLLEAGUE_VLLM_KEY", "")
    with pytest.raises(CollectError, match="COLLEAGUE_VLLM_KEY that should hold its API key is empty"):
        endpoint_key("vllm", "http://127.0.0.1:18701/v1", "COLLEAGUE_VLLM_KEY")
    monkeypatch.setenv("COLLEAGUE_VLLM_KEY", "sk-vllm")
    assert endpoint_key("vllm", "http://127.0.0.1:18701/v1", "COLLEAGUE_VLLM_KEY") == "sk-vllm"
    # http://api.openai.com is not OpenAI's API (the key would travel in clear text).
    with pytest.raises(CollectError, match="names no api_key_env"):
        endpoint_key("default", "http://api.openai.com/v1", None)
    assert endpoint_key("default", None, None) == "sk-PLANTED-openai"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``self.server.status`` (and ``Location``) and records its headers."""

    def do_POST(self):  # noqa: N802 (the http.server API)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(self.server.status)
        if self.server.location:
            self.send_header("Location", self.server.location)
        body = b'{"error": {"message": "moved"}}'
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def recorder(status=200, location=None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen, server.status, server.location = [], status, location
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_the_key_stays_home(status):
    planted = "sk-PLANTED-redirect-77a1"
    with recorder() as elsewhere:
        target = f"http://127.0.0.1:{elsewhere.server_address[1]}/v1/chat/completions"
        with recorder(status, target) as endpoint:
            client = JudgeClient(base_url=f"http://127.0.0.1:{endpoint.server_address[1]}/v1", api_key=planted)
            with pytest.raises(FatalCallError, match=f"HTTP {status}, a redirect to {target}; hce never follows"):
                call(client)
    assert len(endpoint.seen) == 1 and endpoint.seen[0]["authorization"] == f"Bearer {planted}"
    assert elsewhere.seen == []  # the other port received nothing, so not the key


def test_retry_after_forms():
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < _retry_after({"retry-after": date}) <= 30
    assert _retry_after({"retry-after": "soon"}) is None and _retry_after({}) is None


@contextlib.contextmanager
def hung_server():
    """A socket server that accepts every connection and never answers (llama-server after SIGTERM)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.05)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def test_a_hung_server_is_given_up_on_at_the_calls_deadline():
    # Issue 44: a server keeping the request open was waited on for the whole timeout, try after try.
    with hung_server() as url:
        client = JudgeClient(base_url=url, api_key="k", timeout=0.6, max_retries=3, backoff_base=0.01)
        started = time.perf_counter()  # the call's time, not the client's construction (it imports openai on first use)
        result = call(client)
        took = time.perf_counter() - started
    assert took < 2.5, took  # 0.6 s deadline; 4 tries of 0.6 s would be 2.4 s and more
    assert result.error_message.startswith("timeout: no answer within the call's 0.6 s")
    # The attempt's whole wall time: at least the deadline, at most what the caller waited (no timing margin
    # that a loaded machine could cross).
    assert 0.6 <= result.latency_s <= took and result.latency_last_s <= result.latency_s


class _Answers(http.server.BaseHTTPRequestHandler):
    status, body, kind = 501, "", "text/html"
    seen = 0

    def do_POST(self):
        type(self).seen += 1
        data = self.body.encode()
        self.send_response(self.status)
        self.send_header("Content-Type", self.kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("status, body, kind, said", [
    (501, "<html><head><title>Error</title></head><body><h1>Error response</h1><p>Error code: 501</p>"
          "<p>Message: Unsupported method ('POST').</p></body></html>", "text/html", "Unsupported method ('POST')"),
    (405, "Method Not Allowed: use GET", "text/plain", "Method Not Allowed: use GET"),
    (400, "bad body " * 100, "text/plain", "bad body"),
])
def test_a_non_json_error_body_is_kept_and_permanent_statuses_are_not_retried(status, body, kind, said):
    # Issue 44: a 501 with HTML was retried as transient and logged as "HTTP 501: Error code: 501".
    handler = type("Handler", (_Answers,), {"status": status, "body": body, "kind": kind, "seen": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = call(JudgeClient(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", backoff_base=0.01))
    finally:
        server.shutdown()
        server.server_close()
    assert handler.seen == 1 and result.retries == 0
    assert result.error_message.startswith(f"HTTP {status}: ") and said in result.error_message
    assert len(result.error_message) < 400 and "<" not in result.error_message
