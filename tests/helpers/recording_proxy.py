"""A counting HTTP proxy on loopback: what an endpoint answered (and so billed), whatever the client did with it."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from hce.sim.server import stop_serving


class RecordingProxy:
    """Forward HTTP/1.1 requests to ``upstream`` (host, port) and count the answers by status.

    ``answered[200]`` is the number of replies the endpoint sent back: a provider bills
    those, whether or not the client read them.
    """

    def __init__(self, upstream_url: str):
        host_port = upstream_url.split("://", 1)[1].split("/", 1)[0]
        host, port = host_port.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.answered: Counter[int] = Counter()
        self.replies: list[bytes] = []  # every answer as sent (status line, headers, body)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> RecordingProxy:
        self._thread.start()
        server = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(10)
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        stop_serving(self._server, self._loop, self._thread)  # as the simulated judge's server stops

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        try:
            while True:
                request = await _message(reader)
                if request is None:
                    break
                up_writer.write(request)
                await up_writer.drain()
                answer = await _message(up_reader)
                if answer is None:
                    break
                self.answered[int(answer.split(b" ", 2)[1])] += 1  # counted before the client can read it
                self.replies.append(answer)
                writer.write(answer)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            up_writer.close()
            writer.close()


async def _message(reader: asyncio.StreamReader) -> bytes | None:
    """One HTTP/1.1 message with a Content-Length body, as bytes; None at the end of the stream."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head.strip():
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return head + await reader.readexactly(length)
