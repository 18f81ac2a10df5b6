"""The simulated judge served over HTTP/1.1 on loopback, as an OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import re
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

from hce.sim.judge import SimJudge
from hce.sim.reply import error_reply
from hce.sim.settings import LOOPBACK
from hce.errors import HceError

_REASONS = {200: "OK", 307: "Temporary Redirect", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _multipart(raw: bytes, content_type: str) -> dict[str, Any]:
    """The fields of a ``multipart/form-data`` body: text as str, a file as ``(filename, bytes)``."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if found is None:
        raise ValueError("multipart body without a boundary")
    fields: dict[str, Any] = {}
    for part in raw.split(b"--" + found.group(1).encode("latin-1"))[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        data = data.removesuffix(b"\r\n")
        names = re.search(rb'name="([^"]*)"(?:; filename="([^"]*)")?', head)
        if names is None:
            raise ValueError("multipart part without a name")
        name = names.group(1).decode("utf-8")
        fields[name] = (names.group(2).decode("utf-8"), data) if names.group(2) is not None else data.decode("utf-8")
    return fields


class SimServer:
    """Serve a :class:`SimJudge` over HTTP/1.1 (keep-alive) on 127.0.0.1.

    ``start()`` runs it in a background thread (for tests and notebooks) and returns
    itself; ``url`` is the ``base_url`` to give a client. ``start(process=True)`` serves from
    a forked child process instead, so the judge works on another core beside a client in
    this process (``hce demo``, ``hce study run --simulate``); ``keys_seen`` then stays empty. ``serve()`` runs it in the
    current event loop (the CLI). Port 0 picks a free port. With ``api_key`` set, a request
    without that bearer key gets a 401 whose message quotes the key it got, as a careless
    server might: a test that the client keeps keys out of what it records. ``keys_seen``
    counts the bearer keys presented (tests check that a key reached only its own server).

    Parameters
    ----------
    judge : SimJudge, optional
        The judge served (default ``SimJudge()``).
    port : int
        The port; 0 picks a free one.
    host : str
        Loopback only.
    api_key : str, optional
        The bearer key requests must present.

    Examples
    --------
    >>> with SimServer(SimJudge(seed=0)).start() as server:
    ...     server.url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(self, judge: SimJudge | None = None, *, port: int = 0, host: str = LOOPBACK, api_key: str | None = None):
        if host not in (LOOPBACK, "localhost", "::1"):
            raise HceError(f"the simulated judge serves on loopback only; host {host!r} is not allowed")
        self.judge = judge or SimJudge()
        self.host = host
        self.port = port
        self.api_key = api_key
        self.keys_seen: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._process: multiprocessing.process.BaseProcess | None = None

    @property
    def url(self) -> str:
        """The ``base_url`` to give a client."""
        return f"http://{self.host}:{self.port}/v1"

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve(self, on_ready: Callable[[SimServer], None] | None = None) -> None:
        """Serve until cancelled, in the current event loop (the CLI).

        Parameters
        ----------
        on_ready : callable, optional
            Called with the server once the port is bound.
        """
        await self._open()
        if on_ready is not None:
            on_ready(self)
        async with self._server:
            await self._server.serve_forever()

    def start(self, *, process: bool = False) -> SimServer:
        """Serve in a background thread (tests, notebooks), or a child process, until :meth:`stop`.

        Parameters
        ----------
        process : bool
            Serve from a forked child process: a client in this process and the judge no
            longer take turns on one interpreter lock. Linux only (elsewhere a thread, as
            forking a process with threads is not safe there).

        Returns
        -------
        SimServer
            Itself, bound (its ``url`` is ready), and a context manager that stops it.
        """
        if process and sys.platform.startswith("linux"):
            return self._start_process()
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._open())
            except OSError as exc:  # the port is taken, say
                failed.append(exc)
                loop.close()
                return
            finally:
                ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="hce-sim-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise HceError("the simulated judge did not start within 10 s")
        if failed:
            raise HceError(f"the simulated judge cannot serve on {self.host}:{self.port}: {failed[0]}")
        self._loop = self._server.get_loop()
        return self

    def _start_process(self) -> SimServer:
        context = multiprocessing.get_context("fork")  # the judge as built here (its truth, its profiles): not pickled
        receive, send = context.Pipe(duplex=False)
        with warnings.catch_warnings():
            # Python 3.12+ warns about forking a process with threads: here BLAS's idle pools,
            # which re-initialise in a fork; the child serves the judge in its own event loop.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            self._process = context.Process(target=self._serve_child, args=(send,), name="hce-sim-server", daemon=True)
            self._process.start()
        send.close()
        port = receive.recv() if receive.poll(10) else "no answer within 10 s"
        receive.close()
        if not isinstance(port, int):
            self.stop()
            raise HceError(f"the simulated judge cannot serve on {self.host}:{self.port}: {port}")
        self.port = port
        return self

    def _serve_child(self, send: Any) -> None:
        try:
            asyncio.run(self.serve(on_ready=lambda server: send.send(server.port)))
        except OSError as exc:  # the port is taken, say
            send.send(str(exc))

    def stop(self) -> None:
        """Stop serving and join the background thread or process (a no-op when not started)."""
        if self._process is not None:
            self._process.terminate()
            self._process.join(10)
            self._process = None
        if self._loop is None:
            return
        stop_serving(self._server, self._loop, self._thread)
        self._loop = None

    def __enter__(self) -> SimServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line.strip():
                    break
                method, target, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", 0) or 0))
                presented = headers.get("authorization", "").removeprefix("Bearer ")
                self.keys_seen[presented] += 1
                content_type = headers.get("content-type", "")
                try:
                    if content_type.startswith("multipart/form-data"):
                        body = _multipart(raw, content_type)
                    else:
                        body = json.loads(raw) if raw else None
                except ValueError:
                    reply = error_reply(400, "the request body is not valid JSON or multipart", "invalid_request_error")
                else:
                    if self.api_key is not None and presented != self.api_key:
                        reply = error_reply(401, f"Incorrect API key provided: {presented}", "invalid_request_error")
                    else:
                        reply = self.judge.respond(method, target, body, request_id=headers.get("x-client-request-id"))
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode("utf-8")
                head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}"]
                head += [f"Content-Type: {reply.content_type}", f"Content-Length: {len(data)}"]
                head += [f"{k}: {v}" for k, v in reply.headers.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away (a timed-out try) or sent garbage
        finally:
            writer.close()


def stop_serving(server: asyncio.base_events.Server, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Stop a server whose event loop runs forever in ``thread``: close it, cancel its connections'
    tasks, stop and close the loop, and join the thread (each wait at most 10 s)."""

    async def close() -> None:
        server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0)  # let the closed transports finish closing

    asyncio.run_coroutine_threadsafe(close(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()
