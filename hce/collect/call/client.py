"""One OpenAI-compatible chat call: timeout, counted retries with backoff and Retry-After, usage, logprobs.

Built on the official ``openai`` async client with its own retries switched off, so every
try is counted here and ends up in the log (``retries``). Transient failures (429, 408,
409, 5xx, timeouts, dropped connections) are retried ``max_retries`` times (3 by default,
seed 000 section 12) after an exponential, jittered wait, or after exactly the wait the
server asks for in ``Retry-After``. Other failures (a bad request, say) end the attempt
at once; an authentication, permission or unknown-model error raises
:class:`FatalCallError`, because every other call would fail the same way. The
``error_message`` of an attempt that got no reply begins ``HTTP <status>:``, ``timeout:``
or ``connection error:``: that is how :mod:`hce.collect.running.failed` tells a failed call,
which ``--retry-failed`` sends again, from an unusable reply, which it keeps.

The API key is held only inside the ``openai`` client: it is not an attribute here, not
in any repr, and it is struck out of every error message kept. A key goes only to its own
endpoint: ``$OPENAI_API_KEY`` is read only when the endpoint is OpenAI's own
(``api.openai.com``), and redirects are never followed (the ``openai`` SDK's httpx client
follows them by default, and would carry an ``api-key`` header to another host): a 3xx
answer raises :class:`FatalCallError` naming where it pointed.
"""

from __future__ import annotations

import asyncio
import email.utils
import html
import json
import os
import random
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hce.collect.call.keys import OPENAI_URL, endpoint_key, is_openai  # noqa: F401 (importable from here, as before)
from hce.errors import CollectError


class _OpenAI:
    """The ``openai`` package, imported at its first use: a dry run, which sends nothing, never
    loads it (0.5 s of the CLI's start on an idle core, issue 44)."""

    def __getattr__(self, name: str) -> Any:
        import openai as package

        return getattr(package, name)


openai = _OpenAI()

TRANSIENT_STATUS = frozenset({408, 409, 429})  # and every 5xx
FATAL_STATUS = frozenset({401, 403, 404})
# 5xx answers no retry can change: the server does not implement the method or the HTTP version.
PERMANENT_5XX = frozenset({501, 505})
T = TypeVar("T")
# Reasoning models take max_completion_tokens; older servers know only max_tokens.
_REASONING_MODEL = re.compile(r"^(openai/)?(o\d|gpt-5)")


class FatalCallError(CollectError):
    """The endpoint refused in a way every other call would repeat (bad key, no such model, a redirect).

    ``fix`` says what to change, for that cause: a 401 is the key, a 404 the model name or
    the address, a redirect the ``base_url``.
    """

    def __init__(self, message: str, *, fix: str = "fix the endpoint's settings"):
        super().__init__(message)
        self.fix = fix


def _refused(base_url: str, status: int, message: str, model: str | None = None, what: str | None = None) -> FatalCallError:
    """The :class:`FatalCallError` of a 401, 403 or 404, saying what it refused and what to fix."""
    target = f"model {model!r}" if model is not None else f"the {what}"
    if status == 401:
        return FatalCallError(f"{base_url} refused the API key{f' for the {what}' if what else ''} ({message})",
                              fix="set the right key in the variable the endpoint's api_key_env names")
    if status == 403:
        return FatalCallError(f"{base_url} refused this key access to {target} ({message})",
                              fix="use a key allowed to use it, or another model")
    return FatalCallError(f"{base_url} does not know {target} ({message})",
                          fix="fix the model name (or the endpoint's base_url, if it points at the wrong path)")


@dataclass
class CallResult:
    """What one attempt's call produced: the reply and its record, or the final error.

    Attributes
    ----------
    response_text, finish_reason : str or None
        The reply's text and why it ended.
    model_version, system_fingerprint : str or None
        The model that answered and the provider's configuration fingerprint.
    input_tokens, output_tokens, cached_tokens, cache_write_tokens : int or None
        The reply's token counts.
    logprobs : list of dict or None
        The tokens' log probabilities, when asked for.
    latency_s : float or None
        Wall time of the whole attempt: every try and the waits between them.
    latency_last_s : float or None
        Wall time of the last try alone.
    retries : int
        Tries beyond the first.
    error_message : str or None
        None when a reply came back.
    status : int or None
        HTTP status of the answer that ended a failed attempt (None otherwise).
    tries : list of str
        Why each failed try failed, in order.
    choices : list of tuple
        Every choice of the reply in index order, ``(text, finish_reason, logprobs)``; the
        first is also above.

    Examples
    --------
    >>> from hce.collect import CallResult
    >>> CallResult(response_text="Total: 14", finish_reason="stop").ok
    True
    """

    response_text: str | None = None
    finish_reason: str | None = None
    model_version: str | None = None
    system_fingerprint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    logprobs: list[dict[str, Any]] | None = None
    latency_s: float | None = None
    latency_last_s: float | None = None
    retries: int = 0
    error_message: str | None = None
    status: int | None = None
    tries: list[str] = field(default_factory=list)  # why each failed try failed, in order
    # Every choice of the reply in index order, (text, finish_reason, logprobs); the first is also above.
    choices: list[tuple[str | None, str | None, list[dict[str, Any]] | None]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether a reply came back."""
        return self.error_message is None


#: The header naming the attempt a call is for (OpenAI accepts it for tracing).
REQUEST_ID_HEADER = "X-Client-Request-Id"


def chat_body(
    messages: Sequence[Mapping[str, Any]],
    *,
    model: str,
    temperature: float | None = None,
    max_tokens: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    n: int = 1,
    prompt_cache_key: str | None = None,
    response_format: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat completion, as sent online and written into a batch file.

    ``n`` above 1 asks for that many choices (sent only then, so a one-sample body is as
    before); ``prompt_cache_key`` and ``response_format`` (a structured reply's JSON schema,
    :mod:`hce.collect.design.reply_schema`) are sent when given.

    Examples
    --------
    >>> chat_body([{"role": "user", "content": "Hi"}], model="o3", max_tokens=50, seed=None)
    {'model': 'o3', 'messages': [{'role': 'user', 'content': 'Hi'}], 'max_completion_tokens': 50}
    """
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    if max_tokens is not None:
        body["max_completion_tokens" if _REASONING_MODEL.match(model) else "max_tokens"] = int(max_tokens)
    for name, value in (("temperature", temperature), ("top_p", top_p), ("seed", seed)):
        if value is not None:
            body[name] = value
    if logprobs:
        body["logprobs"] = True
        if top_logprobs is not None:
            body["top_logprobs"] = int(top_logprobs)
    if n != 1:
        body["n"] = int(n)
    if prompt_cache_key is not None:
        body["prompt_cache_key"] = prompt_cache_key
    if response_format is not None:
        body["response_format"] = dict(response_format)
    return body


class JudgeClient:
    """An OpenAI-compatible endpoint for judge calls.

    Parameters
    ----------
    base_url : str, optional
        The endpoint (``https://api.openai.com/v1``, ``http://127.0.0.1:8000/v1``, an Azure
        ``https://RESOURCE.openai.azure.com/openai/v1/``); default ``$OPENAI_BASE_URL``,
        else OpenAI.
    api_key : str, optional
        Default ``$OPENAI_API_KEY``, but only when the endpoint is OpenAI's own: any other
        endpoint needs its key given (``endpoint_key`` reads it from the variable the
        endpoint names). Local servers accept any non-empty string.
    timeout : float
        Seconds the server may take to answer one call, every try together (60 by default):
        a try still waiting then is given up on, and no try starts after it; the waits
        between tries (backoff, ``Retry-After``) do not count.
    max_retries : int
        Retries of a transient failure after the first try (3: the PRD's retry policy).
    backoff_base, backoff_max : float
        The wait before retry ``k`` (from 0) is ``min(backoff_max, backoff_base * 2**k)``
        times a uniform jitter factor in [0.5, 1]; a ``Retry-After`` header replaces it.
    max_wait : float
        Longest ``Retry-After`` honoured, in seconds.
    random_state : int, optional
        Seeds the jitter.

    Examples
    --------
    >>> client = JudgeClient(base_url="http://127.0.0.1:9/v1", api_key="sk-secret")
    >>> client
    JudgeClient(base_url='http://127.0.0.1:9/v1', api_key=***, timeout=60.0, max_retries=3)
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_wait: float = 120.0,
        random_state: int | None = None,
    ):
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key if api_key is not None else endpoint_key("default", self.base_url, None)
        if not key:
            raise CollectError(f"no API key for {self.base_url}: pass api_key= (a local server accepts any string)")
        if max_retries < 0:
            raise CollectError(f"max_retries must be >= 0, got {max_retries}")
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_wait = float(max_wait)
        self._rng = random.Random(random_state)
        self._secret = key  # used only to strike the key out of messages
        # follow_redirects=False: a redirect must not carry the key to another host (module notes).
        http = openai.DefaultAsyncHttpxClient(follow_redirects=False, timeout=self.timeout)
        self._openai = openai.AsyncOpenAI(
            api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0, http_client=http
        )

    def __repr__(self) -> str:
        return (
            f"JudgeClient(base_url={self.base_url!r}, api_key=***, timeout={self.timeout}, "
            f"max_retries={self.max_retries})"
        )

    def __getstate__(self) -> None:
        raise TypeError("a JudgeClient holds an API key and cannot be pickled")

    async def aclose(self) -> None:
        """Close the HTTP connections (``async with`` does it on exit)."""
        await self._openai.close()

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def scrub(self, text: str) -> str:
        """``text`` with the API key struck out.

        Parameters
        ----------
        text : str

        Returns
        -------
        str
        """
        return text.replace(self._secret, "[API key removed]") if self._secret else text

    async def complete(self, messages: Sequence[Mapping[str, Any]], *, model: str, request_id: str | None = None,
                       **settings: Any) -> CallResult:
        """Send one chat completion, retrying transient failures; never raises on them.

        Parameters
        ----------
        messages : list of {role, content}
        model : str
        request_id : str, optional
            Sent as the ``X-Client-Request-Id`` header (OpenAI's request tracing; the runner
            sends the ``attempt_id``). The simulated judge draws an attempt's reply from it, so
            a seeded dry run gives the same replies whatever order concurrent calls arrive in.
        **settings
            ``temperature``, ``max_tokens``, ``top_p``, ``seed``, ``logprobs``,
            ``top_logprobs``, ``response_format``: the body is ``chat_body``'s.

        Returns
        -------
        CallResult
            The reply with usage, ``model_version`` as returned, latency, logprobs (a list
            of ``{token, logprob, top_logprobs: [{token, logprob}]}`` when asked) and the
            retry count; or, when every try failed, ``error_message``.

        Raises
        ------
        FatalCallError
            On 401, 403 or 404: a wrong key, a forbidden or unknown model.
        """
        kwargs = chat_body(messages, model=model, **settings)
        if request_id is not None:
            kwargs["extra_headers"] = {REQUEST_ID_HEADER: request_id}
        result = CallResult()
        attempt = -1
        begun = time.perf_counter()
        waited = 0.0  # seconds spent waiting on the server, all tries together: at most self.timeout
        while True:
            attempt += 1
            result.retries = attempt
            started = time.perf_counter()
            try:
                # The whole call's deadline bounds each try by wall time too: httpx's timeout is per read, and a
                # server that keeps the request open (llama-server after SIGTERM) would be waited on try after try.
                async with asyncio.timeout(self.timeout - waited):
                    # The raw reply, read as JSON here: the SDK's objects (thousands a reply with
                    # logprobs) cost more CPU than the call itself against a local server (issue 35).
                    raw = await self._openai.chat.completions.with_raw_response.create(**kwargs,
                                                                                       timeout=self.timeout - waited)
                    response = json.loads(raw.http_response.content)
            except openai.APIStatusError as exc:
                waited += _timed(result, begun, started)
                self._refuse_redirect(exc)
                message = self.scrub(status_text(exc))
                if exc.status_code in FATAL_STATUS:
                    raise _refused(self.base_url, exc.status_code, message, model=model) from None
                result.tries.append(message)
                if not _transient(exc.status_code) or attempt == self.max_retries or waited >= self.timeout:
                    result.error_message = _final(message, attempt)
                    result.status = exc.status_code
                    return result
                await asyncio.sleep(self._wait(attempt, _retry_after(exc.response.headers)))
                continue
            except (openai.APITimeoutError, openai.APIConnectionError, TimeoutError) as exc:
                waited += _timed(result, begun, started)
                if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
                    message = self.scrub(f"connection error: {exc}")
                else:
                    message = f"timeout: no answer within the call's {self.timeout:g} s (the endpoint's timeout)"
                result.tries.append(message)
                if attempt == self.max_retries or waited >= self.timeout:
                    result.error_message = _final(message, attempt)
                    return result
                await asyncio.sleep(self._wait(attempt, None))
                continue
            # A reply the SDK could not read (bad JSON, say): an answer, so not a failed call (hce.collect.running.failed).
            except (openai.OpenAIError, ValueError) as exc:
                _timed(result, begun, started)
                result.error_message = self.scrub(f"unreadable response: {type(exc).__name__}: {exc}")
                return result
            _timed(result, begun, started)
            try:
                fill(result, response)
            except (AttributeError, TypeError, ValueError) as exc:  # JSON, but not a chat completion's
                result.error_message = self.scrub(f"unreadable response: {type(exc).__name__}: {exc}")
            return result

    async def models(self) -> list[str]:
        """Model ids the endpoint lists (``GET /models``).

        Returns
        -------
        list of str
        """
        page = await self._openai.models.list()
        return [m.id for m in page.data]

    # The Batch API: the same key hygiene and retries, raising when a control call fails.

    async def upload_batch_file(self, name: str, data: bytes) -> str:
        """Upload a batch input file (``POST /files``, purpose ``batch``).

        Parameters
        ----------
        name : str
            The file's name.
        data : bytes
            Its JSONL content.

        Returns
        -------
        str
            The file id.
        """
        made = await self._control("upload of " + name, lambda: self._openai.files.create(file=(name, data), purpose="batch"))
        return made.id

    async def create_batch(self, input_file_id: str, metadata: Mapping[str, str] | None = None) -> Any:
        """Create a 24-hour chat-completions batch over an uploaded file.

        Parameters
        ----------
        input_file_id : str
            The uploaded file's id.
        metadata : mapping, optional
            Key-value labels stored with the batch.

        Returns
        -------
        openai.types.Batch
        """
        return await self._control(
            "batch creation",
            lambda: self._openai.batches.create(
                input_file_id=input_file_id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata=dict(metadata) if metadata else None,
            ),
        )

    async def find_batch(self, input_file_id: str, *, most: int = 1000) -> Any | None:
        """The batch made over an uploaded file, looking through the ``most`` newest batches.

        Parameters
        ----------
        input_file_id : str
            The uploaded file's id.
        most : int
            How many of the newest batches are looked through.

        Returns
        -------
        openai.types.Batch or None
        """
        after: str | None = None
        for _ in range(max(1, most // 100)):
            extra = {"after": after} if after else {}
            page = await self._control("list of batches", lambda: self._openai.batches.list(limit=100, **extra))
            for batch in page.data:
                if batch.input_file_id == input_file_id:
                    return batch
            if not page.data or not page.has_more:
                return None
            after = page.data[-1].id
        return None

    async def retrieve_batch(self, batch_id: str) -> Any:
        """The batch's current state (status, request counts, output and error file ids).

        Parameters
        ----------
        batch_id : str

        Returns
        -------
        openai.types.Batch
        """
        return await self._control(f"status of batch {batch_id}", lambda: self._openai.batches.retrieve(batch_id))

    async def cancel_batch(self, batch_id: str) -> Any:
        """Ask the provider to cancel a batch; returns the batch as it then is.

        OpenAI answers ``cancelling`` (``cancelled`` follows within about 10 minutes, with
        the requests finished by then in the output file: the API reference of ``POST
        /batches/{batch_id}/cancel``, openai-python ``batches.cancel``). A batch that has
        already ended is refused with HTTP 409 "Cannot cancel a batch with status
        'completed'." (``openai.ConflictError``, as BerriAI/litellm's
        tests/batches_tests/test_openai_batches_and_files.py expects of the live API); that
        is no failure here, so the batch is retrieved and returned as it ended.

        Parameters
        ----------
        batch_id : str

        Returns
        -------
        openai.types.Batch
        """

        async def cancel() -> Any:
            try:
                return await self._openai.batches.cancel(batch_id)
            except openai.ConflictError:  # ended already; 409 is otherwise retried as transient
                return None

        batch = await self._control(f"cancel of batch {batch_id}", cancel)
        return batch if batch is not None else await self.retrieve_batch(batch_id)

    async def file_content(self, file_id: str) -> bytes:
        """The bytes of a file (a batch's output or error file).

        Parameters
        ----------
        file_id : str

        Returns
        -------
        bytes
        """
        reply = await self._control(f"download of {file_id}", lambda: self._openai.files.content(file_id))
        return reply.content

    async def _control(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run a control call with the retries a chat call gets; raise when it still fails."""
        attempt = -1
        while True:
            attempt += 1
            try:
                return await call()
            except openai.APIStatusError as exc:
                self._refuse_redirect(exc)
                message = self.scrub(status_text(exc))
                if exc.status_code in FATAL_STATUS:
                    raise _refused(self.base_url, exc.status_code, message, what=what) from None
                if not _transient(exc.status_code) or attempt == self.max_retries:
                    raise CollectError(f"the {what} failed: {_final(message, attempt)}") from None
                wait = self._wait(attempt, _retry_after(exc.response.headers))
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                kind = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection error"
                message = self.scrub(f"{kind}: {exc}")
                if attempt == self.max_retries:
                    raise CollectError(f"the {what} failed: {_final(message, attempt)}") from None
                wait = self._wait(attempt, None)
            await asyncio.sleep(wait)

    def _refuse_redirect(self, exc: openai.APIStatusError) -> None:
        """Stop at a redirect: following it could hand the key to another host, and every call would repeat it."""
        if 300 <= exc.status_code < 400:
            target = urllib.parse.urlsplit(exc.response.headers.get("location", ""))
            where = f"{target.scheme}://{target.netloc}{target.path}" if target.netloc else (target.path or "nowhere")
            raise FatalCallError(
                f"{self.base_url} answered HTTP {exc.status_code}, a redirect to {self.scrub(where)}; hce never follows "
                "redirects, so a key reaches only its own endpoint", fix="set base_url to the address you mean"
            ) from None

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait)
        return min(self.backoff_max, self.backoff_base * 2**attempt) * self._rng.uniform(0.5, 1.0)


def _transient(status: int) -> bool:
    return status in TRANSIENT_STATUS or (status >= 500 and status not in PERMANENT_5XX)


def client_error(status: int | None) -> bool:
    """Whether an HTTP status is a 4xx that retrying cannot change (a bad request, not 408, 409 or 429)."""
    return status is not None and 400 <= status < 500 and not _transient(status)


def _timed(result: CallResult, begun: float, started: float) -> float:
    """Set the attempt's whole wall time and its last try's; the last try's seconds."""
    now = time.perf_counter()
    result.latency_s, result.latency_last_s = now - begun, now - started
    return now - started


# What a server says in an error body that is not JSON (an HTML page, plain text): kept, shortened.
_TAGS = re.compile(r"(?is)<(script|style)\b.*?</\1>|<[^>]+>")
BODY_CHARS = 300


def status_text(exc: openai.APIStatusError) -> str:
    """``HTTP <status>: <message>``, with the body's own words when it is not JSON (the SDK keeps only the code).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> page = "<html><body><h1>Error response</h1><p>Unsupported method ('POST')</p></body></html>"
    >>> status_text(SimpleNamespace(status_code=501, message="Error code: 501", body=page))  # an APIStatusError's fields
    "HTTP 501: Error code: 501 - Error response Unsupported method ('POST')"
    """
    text = f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc.body, str) and exc.body.strip():
        words = " ".join(html.unescape(_TAGS.sub(" ", exc.body)).split())
        if words:
            text += f" - {words if len(words) <= BODY_CHARS else words[: BODY_CHARS - 3] + '...'}"
    return text


def _final(message: str, attempt: int) -> str:
    return f"{message} (after {attempt + 1} {'try' if attempt == 0 else 'tries'})"


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds asked for by ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def fill(result: CallResult, response: Mapping[str, Any]) -> None:
    """Copy a chat completion (its JSON body) into ``result``: text, usage, logprobs, or why it is unusable."""
    ordered = sorted(response.get("choices") or [], key=lambda c: c.get("index") or 0)
    choice = ordered[0] if ordered else None
    result.model_version = response.get("model")
    result.system_fingerprint = response.get("system_fingerprint")
    result.choices = [_choice(c) for c in ordered]
    if choice is not None:
        result.response_text, result.finish_reason, result.logprobs = result.choices[0]
    usage = response.get("usage")
    if usage is not None:
        result.input_tokens = usage.get("prompt_tokens")
        result.output_tokens = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details")
        result.cached_tokens = (details.get("cached_tokens") or 0) if details is not None else 0
        # newer models bill prompt tokens written to the cache (prompt_tokens_details.cache_write_tokens)
        result.cache_write_tokens = (details.get("cache_write_tokens") or 0) if details is not None else 0
    if choice is None or result.response_text is None:
        result.error_message = f"the reply has no message content (finish_reason={result.finish_reason!r})"


def _choice(choice: Mapping[str, Any]) -> tuple[str | None, str | None, list[dict[str, Any]] | None]:
    """One choice of a chat completion as (text, finish_reason, logprobs as plain lists)."""
    message, logprobs = choice.get("message"), choice.get("logprobs")
    text = message.get("content") if message is not None else None
    content = logprobs.get("content") if logprobs is not None else None
    if content is not None:
        content = [
            {
                "token": t.get("token"),
                "logprob": t.get("logprob"),
                "top_logprobs": [{"token": a.get("token"), "logprob": a.get("logprob")} for a in (t.get("top_logprobs") or [])],
            }
            for t in content
        ]
    return text, choice.get("finish_reason"), content
