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
  408 it never asked for as the answer to it — what uvicorn's keep-alive timeout does too). After
  a 408 the close lingers (below), so a client still trickling reads its 408 instead of a reset.
  Either way the log says ``request_headers_timeout``.

The same protocol bounds how *much* a request's head may be (issue 11 §5), counted as the bytes
are fed to the parser, before it buffers them:

- a request line and headers over ``KWX_MAX_HEADER_BYTES`` (16 KiB), or more than
  ``KWX_MAX_HEADERS`` (100) header lines, are answered **431 ``request_header_fields_too_large``**
  (JSON, ``limit``, ``Connection: close``) and the connection is closed: at most the limit (plus one
  read) is ever held for a request's head, however much the client sends (uvicorn alone buffered a
  16 MiB header whole, and the worker kept the memory);
- framing the parser refuses — a bad or duplicated ``Content-Length``, ``Content-Length`` with
  ``Transfer-Encoding``, a bad ``Transfer-Encoding`` — is answered **400 ``bad_request``** in the
  service's JSON shape, with ``field`` ``header.content-length`` or ``header.transfer-encoding``
  (any other bytes that are not HTTP: ``field`` ``request``), instead of uvicorn's plain-text 400;
  the connection is closed (after a framing error nobody knows where the next request would begin).
  The log says ``request_headers_too_large`` or ``bad_framing``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.errors import BadRequest, RequestHeaderFieldsTooLarge, RequestTimeout, ServiceError
from services.logs import get_logger

log = get_logger("kwx.http")


LINGER_SECONDS = 2.0  # after a 431 / 400: how long, and how much, of what still comes is dropped
LINGER_BYTES = 4 << 20


class _TooManyHeaders(Exception):
    """Raised in the parser's ``on_header`` to stop it (httptools re-raises it from ``feed_data``)."""


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline for each request's headers and bounds on their
    size and count, and JSON answers for what the parser refuses (module docstring)."""

    header_timeout: float = 10.0  # seconds; kwx serve sets them from Settings in every process
    max_header_bytes: int = 16 * 1024
    max_headers: int = 100

    @classmethod
    def configure(
        cls, header_timeout: float, max_header_bytes: int, max_headers: int
    ) -> type[HeaderDeadline]:
        """Set this process's limits (from Settings); the class, for uvicorn's ``http=``."""
        cls.header_timeout, cls.max_header_bytes = header_timeout, max_header_bytes
        cls.max_headers = max_headers
        return cls

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._begun = False  # bytes of the awaited request have arrived
        self._in_head = True  # the bytes coming belong to a request line or headers
        self._head_bytes = 0  # of the current request's head, fed to the parser
        self._header_count = 0
        self._lingering: int | None = None  # bytes dropped after a refusal (None: not refused)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, fed in pieces: while a request's head is coming, no more than what is left of
        ``max_header_bytes`` at a time, so an oversized head is refused before the parser holds it."""
        if self._lingering is not None:  # refused: dropped, up to a bound
            self._lingering += len(data)
            if self._lingering > LINGER_BYTES:
                self.transport.close()
            return
        if self._deadline is not None:
            self._begun = True
        self._unset_keepalive_if_required()
        view = memoryview(data)
        while view and self.parser is not None and not self.transport.is_closing():
            if not self._in_head:
                self._feed(view)
                return
            room = self.max_header_bytes - self._head_bytes
            if room <= 0:
                message = (f"the request line and headers are larger than {self.max_header_bytes} "
                           "bytes (KWX_MAX_HEADER_BYTES)")  # fmt: skip
                error = RequestHeaderFieldsTooLarge(message, limit=self.max_header_bytes)
                self._refuse(error, "request_headers_too_large")
                return
            piece, view = view[:room], view[room:]
            self._head_bytes += len(piece)
            if not self._feed(piece):
                return

    def _feed(self, data: memoryview) -> bool:
        """``data`` to the parser; False when the connection is done with (refused, upgraded)."""
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _TooManyHeaders):
                self._refuse(RequestHeaderFieldsTooLarge(
                    f"more than {self.max_headers} header lines (KWX_MAX_HEADERS)", limit=self.max_headers,
                ), "request_headers_too_large")  # fmt: skip
            else:
                self._refuse(_framing(str(exc)), "bad_framing")
            return False
        return True

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_count = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.max_headers:
            raise _TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._cancel()
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_bytes = True, 0  # what comes next is the next request's head

    def _refuse(self, error: ServiceError, event: str) -> None:
        """Answer ``error`` as JSON with ``Connection: close`` and close the connection — after a
        short lingering close: our side is shut for writing at once (the client reads the answer,
        then end of file), and what the client still sends is read and dropped for up to
        ``LINGER_SECONDS`` / ``LINGER_BYTES``. Closing with unread bytes would send a reset, which
        can destroy the answer before the client reads it (nginx's ``lingering_close``)."""
        self._cancel()
        client = f"{self.client[0]}:{self.client[1]}" if self.client else None
        log.warning(event, client=client, detail=error.message)
        self._answer(error)
        self._close_lingering()

    def _close_lingering(self) -> None:
        """Shut our side for writing (the client reads what was sent, then end of file), drop what
        still comes for up to ``LINGER_SECONDS`` / ``LINGER_BYTES``, then close."""
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._lingering = 0
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _answer(self, error: ServiceError) -> None:
        body = msgspec.json.encode(error.body())
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % (error.status, _REASONS[error.status], len(body)) + body
        )

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
            self._answer(error)
            self._close_lingering()  # a client still trickling must not reset the 408 away
            return
        self.transport.close()


_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def _framing(reason: str) -> BadRequest:
    """The parser's refusal as a 400 naming the header at fault."""
    lowered = reason.lower()
    header = next((h for h in ("transfer-encoding", "content-length") if h in lowered), None)
    if header is None:
        what, field = "this is not an HTTP/1.1 request the server can read", "request"
    else:  # one name per parameter, as everywhere: header.NAME
        what, field = f"the request's framing is ambiguous or malformed ({header})", f"header.{header}"
    return BadRequest(f"{what}: {reason}; the connection is closed", field=field)
