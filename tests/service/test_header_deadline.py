"""The headers' deadline (services/api/deadline.py, ``KWX_HEADER_TIMEOUT``) on a real ``kwx
serve``, with one worker (``uvicorn.run``) and with two (uvicorn's worker processes): a connection
that sends nothing is closed after the deadline without an answer; headers that trickle past it
get a 408 ``request_timeout`` and the connection closes; headers that arrive in time, and a
keep-alive connection's next request, are served; an idle keep-alive connection is closed quietly.
Before the deadline (uvicorn alone) the first two stayed open for as long as the client liked."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.service.serving import serving

pytestmark = pytest.mark.db

DEADLINE = 1.0  # KWX_HEADER_TIMEOUT for these servers
HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: kwx\r\n\r\n"


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def server(request: Any, pg_cluster: Any) -> Iterator[tuple[int, Path]]:
    """(port, log file) of ``kwx serve --workers N`` with a 1 s headers' deadline."""
    url = pg_cluster.create_database("kwx_deadline")
    out = Path(tempfile.mkdtemp(prefix="kwx-deadline-")) / "serve.out"
    with serving(
        url,
        out,
        workers=request.param,
        KWX_PROJECTOR="off",
        KWX_LOG_LEVEL="info",
        KWX_HEADER_TIMEOUT=str(DEADLINE),
    ) as (_, _, port):
        yield port, out


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=15)


def _until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def _response(s: socket.socket) -> tuple[int, bytes]:
    """One response with a content-length: (status, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += s.recv(65536)
    return int(head.split()[1]), body


def test_a_silent_connection_is_closed_after_the_deadline_without_an_answer(server: tuple[int, Path]) -> None:
    port, _ = server
    with _connect(port) as s:
        started = time.monotonic()
        assert _until_closed(s) == b""  # no stray 408 for a request never sent
        assert DEADLINE * 0.8 <= time.monotonic() - started < DEADLINE + 5


def test_headers_that_trickle_past_the_deadline_get_a_408_and_others_are_served(
    server: tuple[int, Path],
) -> None:
    port, out = server
    stop = threading.Event()
    with _connect(port) as slow:
        slow.sendall(b"GET /v1/health HTTP/1.1\r\nHost: kwx\r\n")

        def trickle() -> None:  # a complete header line every 0.2 s, never the blank line
            while not stop.wait(0.2):
                try:
                    slow.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    return

        th = threading.Thread(target=trickle, daemon=True)
        started = time.monotonic()
        th.start()
        try:
            with _connect(port) as other:  # meanwhile, another client is served at once
                other.sendall(HEALTH)
                assert _response(other)[0] == 200
            answer = _until_closed(slow)
            elapsed = time.monotonic() - started
        finally:
            stop.set()
            th.join(5)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 408 Request Timeout", answer
    assert b"connection: close" in rest.lower()
    body = msgspec.json.decode(rest.partition(b"\r\n\r\n")[2])
    assert body["error"] == "request_timeout" and body["timeout_seconds"] == DEADLINE
    assert "KWX_HEADER_TIMEOUT" in body["message"]
    assert DEADLINE * 0.8 <= elapsed < DEADLINE + 5
    deadline = time.monotonic() + 10
    while "request_headers_timeout" not in out.read_text(errors="replace"):
        assert time.monotonic() < deadline, "no request_headers_timeout in the log"
        time.sleep(0.1)


def test_headers_in_time_and_the_next_request_on_the_connection_are_served(server: tuple[int, Path]) -> None:
    port, _ = server
    with _connect(port) as s:
        for piece in (HEALTH[:10], HEALTH[10:25], HEALTH[25:]):  # 0.2 s in all: well inside the deadline
            s.sendall(piece)
            time.sleep(0.1)
        assert _response(s)[0] == 200
        for _ in range(3):  # each pause well inside the deadline, which starts again per request
            time.sleep(DEADLINE * 0.4)
            s.sendall(HEALTH)
            status, body = _response(s)
            assert status == 200, body


def test_an_idle_keep_alive_connection_is_closed_quietly_at_the_deadline(server: tuple[int, Path]) -> None:
    port, _ = server
    with _connect(port) as s:
        s.sendall(HEALTH)
        assert _response(s)[0] == 200
        started = time.monotonic()
        assert _until_closed(s) == b""
        # the deadline (1 s) closed it, not uvicorn's keep-alive timeout (5 s)
        assert DEADLINE * 0.8 <= time.monotonic() - started < 4
