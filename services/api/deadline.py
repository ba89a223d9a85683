"""A deadline for a request's headers (``KWX_HEADER_TIMEOUT``, 10 s; docs/faults.md).

uvicorn bounds how *large* a request's headers may be, not how *long* they may take, and it never
times out a new connection that sends nothing: both used to stay open for as long as the client
liked — one costs a file descriptor and blocks nobody, thousands exhaust the descriptors. kwx
serves with :class:`HeaderDeadline`, uvicorn's httptools protocol plus one timer per connection:

- armed when the connection opens, and again whenever a response is complete and the connection
  waits for its next request (when uvicorn arms its keep-alive timer);
- cancelled as soon as a request's headers are complete: the body has a deadline of its own
  (``KWX_BODY_TIMEOUT``, 408 from the append), and a request being answered is never cut;
- when it fires: a connection on which part of a request had arrived is answered **408
  ``request_timeout``** (JSON, ``Connection: close``) and closed; one that sent nothing of a next
  request is closed without an answer (a client may be about to send one on it, and would take a
  408 it never asked for as the answer to it — what uvicorn's keep-alive timeout does too).
  Either way the log says ``request_headers_timeout``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.errors import RequestTimeout
from services.logs import get_logger

log = get_logger("kwx.http")


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline for each request's headers (module docstring)."""

    header_timeout: float = 10.0  # seconds; kwx serve sets it from Settings in every process

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._begun = False  # bytes of the awaited request have arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is not None:
            self._begun = True
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._cancel()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # idle: waiting for the next request
            self._arm()

    def _arm(self) -> None:
        self._cancel()
        self._begun = False
        self._deadline = self.loop.call_later(self.header_timeout, self._expired)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        client = f"{self.client[0]}:{self.client[1]}" if self.client else None
        log.warning("request_headers_timeout", client=client, timeout_seconds=self.header_timeout,
                    answered=self._begun)  # fmt: skip
        if self._begun:
            error = RequestTimeout(  # the body's 408 (services/api/tables.py, read_body), for headers
                f"the request's headers did not arrive within {self.header_timeout:g} s (KWX_HEADER_TIMEOUT)",
                timeout_seconds=self.header_timeout,
            )
            body = msgspec.json.encode(error.body())
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
        self.transport.close()
