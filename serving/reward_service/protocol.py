"""The HTTP protocol uvicorn runs for the service: httptools, with the bounds it lacks.

Why: uvicorn's httptools protocol buffers a request head of any size, and gives a client as long as
it likes to finish it; both happen before the API key is checked, since the key is a header. Twenty
connections each holding an unfinished 16 MB header took the service from 87 to 458 MB and were all
still open after 90 s (issue 38 §2). h11 has a size bound (`h11_max_incomplete_event_size`) but no
time bound, and spends most of its time buffering the service's 10-60 MB bodies (pyproject's
service extra), so the service keeps httptools and bounds it here:

- a head (request line and headers) over `max_head_bytes` is answered 431 and the connection closed;
  the memory it can take is that bound plus one socket read (at most 256 kB; two for a head
  pipelined behind another request);
- a head not finished `head_timeout_s` after its first byte (or after the connection opened, for a
  client that sends nothing) is answered 408 and the connection closed;
- a close while the client is still sending its body (a refusal before the body: 401, 413, 429,
  408) lingers: the answer goes out with a FIN, and what the client still sends is read and thrown
  away for at most `linger_s`. Closing at once, with unread bytes in the socket, makes the kernel
  send a reset, and a client that is still writing may then lose the answer (issue 38 §8).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def _answer(status: str, kind: str, message: str) -> bytes:
    """A whole answer with the service's error body."""
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


class _Lingering:
    """The transport as uvicorn's request cycle sees it: `close()` lingers (see the module)."""

    def __init__(self, transport: asyncio.Transport, protocol: BoundedHttpTools) -> None:
        self._transport, self._protocol = transport, protocol

    def close(self) -> None:
        self._protocol.close_lingering()

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded head and a lingering close (see the module).
    `bounded_protocol` makes the subclass that carries a service's bounds."""

    max_head_bytes = 64 * 1024
    head_timeout_s = 10.0
    linger_s = 2.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_head = False  # between a request's first byte and the end of its headers
        self.head_bytes = 0
        self.in_body = False  # between the end of the headers and the end of the body
        self.ended_in_read = False  # a message ended within the read being parsed
        self.lingering = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._raw: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw = transport
        self.transport = _Lingering(transport, self)  # type: ignore[assignment]
        self._arm_head_timer()  # a connection that sends nothing is dropped as a slow head

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            return  # read and dropped: the answer has gone out
        was_in_head, self.ended_in_read = self.in_head, False
        super().data_received(data)
        # A head that began after a message ended in this same read (pipelining) is not counted for
        # this read: part of it was that message's body. Otherwise the whole read is head.
        if self.in_head and not self.lingering and (was_in_head or not self.ended_in_read):
            self.head_bytes += len(data)
            if self.head_bytes > self.max_head_bytes:
                self._refuse_head("431 Request Header Fields Too Large", "too_large",
                                  f"request head over {self.max_head_bytes} bytes")

    def eof_received(self) -> bool | None:
        if self.lingering:
            self._close_now()
        return None  # the transport closes itself

    # ---- parser callbacks ---------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.in_head, self.head_bytes, self.in_body = True, 0, False
        if self._head_timer is None:
            self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self.in_head, self.in_body = False, True
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.in_body, self.ended_in_read = False, True
        super().on_message_complete()

    # ---- bounds -------------------------------------------------------------------------------
    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._raw is None or self._raw.is_closing() or self.lingering:
            return
        if self.in_head:
            self._refuse_head("408 Request Timeout", "timeout", f"request head not received within {self.head_timeout_s:g}s")
        elif self.cycle is None:  # never sent a byte
            self._close_now()

    def _refuse_head(self, status: str, kind: str, message: str) -> None:
        self._cancel_head_timer()
        assert self._raw is not None
        self._raw.write(_answer(status, kind, message))
        self.close_lingering()

    def close_lingering(self) -> None:
        """Close; while the client is still sending its request, answer with a FIN first and read
        (and drop) what it sends for up to `linger_s`."""
        raw = self._raw
        if raw is None or raw.is_closing() or self.lingering:
            return
        if not (self.in_head or self.in_body):
            raw.close()
            return
        self.lingering = True
        self._cancel_head_timer()
        if raw.can_write_eof():
            raw.write_eof()
        raw.resume_reading()
        self.loop.call_later(self.linger_s, self._close_now)

    def _close_now(self) -> None:
        if self._raw is not None and not self._raw.is_closing():
            self._raw.close()


def bounded_protocol(*, max_head_bytes: int, head_timeout_s: float, linger_s: float) -> type[BoundedHttpTools]:
    """The protocol class for uvicorn's `http=` with these bounds."""
    return type("ServiceHttpProtocol", (BoundedHttpTools,), {
        "max_head_bytes": max_head_bytes, "head_timeout_s": head_timeout_s, "linger_s": linger_s})
