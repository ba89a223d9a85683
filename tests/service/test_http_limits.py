"""The HTTP edge's limits on a real ``kwx serve`` (services/api/deadline.py; issue 11 §5):

- a request line + headers over ``KWX_MAX_HEADER_BYTES``, or more than ``KWX_MAX_HEADERS`` lines,
  get a JSON 431 ``request_header_fields_too_large`` and the connection closes; a flood of 16 MiB
  headers leaves the worker's memory flat (before: every one was read whole, answered, and grew
  the worker by 56–170 MiB for good);
- framing the parser refuses (a bad or duplicated ``Content-Length``, ``Content-Length`` with
  chunked, a bad ``Transfer-Encoding``) gets the JSON 400 ``bad_request`` with ``field``, not
  uvicorn's plain text;
- what is inside the limits is served as before: big-but-allowed heads, bodies (not counted as
  head), pipelined requests."""

from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.service.serving import serving, wait_for
from tests.service.streams import legal_table

pytestmark = pytest.mark.db

MAX_HEADER_BYTES = 8192  # KWX_MAX_HEADER_BYTES for these servers
MAX_HEADERS = 40


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def server(request: Any, pg_cluster: Any) -> Iterator[tuple[int, Path, int, str]]:
    """(port, log file, pid of the process that serves, a platform key) of ``kwx serve --workers N``."""
    from services.bootstrap import bootstrap
    from services.settings import Settings

    url = pg_cluster.create_database("kwx_limits")
    out = Path(tempfile.mkdtemp(prefix="kwx-limits-")) / "serve.out"
    with serving(
        url,
        out,
        workers=request.param,
        KWX_PROJECTOR="off",
        KWX_LOG_LEVEL="info",
        KWX_MAX_HEADER_BYTES=str(MAX_HEADER_BYTES),
        KWX_MAX_HEADERS=str(MAX_HEADERS),
    ) as (proc, _, port):
        keys = bootstrap(Settings(database_url=url, pool_size=1), url=url, migrate=False)
        key = keys.keys.create("limits", "platform")
        keys.close()
        yield port, out, proc.pid, key


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def _until_closed(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def _exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` whole, read until the server closes: (status, headers, body)."""
    with _connect(port) as s:
        s.sendall(request)
        answer = _until_closed(s)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _health(*headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return f"GET /v1/health HTTP/1.1\r\nHost: kwx\r\n{extra}Connection: close\r\n\r\n".encode()


def test_headers_over_the_byte_limit_get_a_json_431_and_the_connection_closes(
    server: tuple[int, Path, int, str],
) -> None:
    port, out, _, _ = server
    status, headers, body = _exchange(port, _health("X-Big: " + "a" * (MAX_HEADER_BYTES + 100)))
    assert status == 431
    assert headers["connection"] == "close" and headers["content-type"] == "application/json"
    answer = msgspec.json.decode(body)
    assert answer["error"] == "request_header_fields_too_large"
    assert answer["limit"] == MAX_HEADER_BYTES and "KWX_MAX_HEADER_BYTES" in answer["message"]
    # a 1 MB Authorization header is refused the same way, before any key lookup
    status, _, body = _exchange(port, _health("Authorization: Bearer " + "k" * 1_000_000))
    assert status == 431 and msgspec.json.decode(body)["error"] == "request_header_fields_too_large"
    wait_for(lambda: "request_headers_too_large" in out.read_text(errors="replace"), 15, "no log line")


def test_too_many_header_lines_get_a_431(server: tuple[int, Path, int, str]) -> None:
    port, _, _, _ = server
    status, _, body = _exchange(port, _health(*(f"X-H{i}: 1" for i in range(MAX_HEADERS))))
    answer = msgspec.json.decode(body)
    assert status == 431 and answer["limit"] == MAX_HEADERS and "KWX_MAX_HEADERS" in answer["message"]


def test_heads_inside_the_limits_bodies_and_pipelined_requests_are_served(
    server: tuple[int, Path, int, str],
) -> None:
    port, _, _, key = server
    lines = (f"X-H{i}: 1" for i in range(MAX_HEADERS - 4))
    near = _health("X-Big: " + "a" * (MAX_HEADER_BYTES - 600), *lines)
    assert len(near) < MAX_HEADER_BYTES
    assert _exchange(port, near)[0] == 200
    # a body far larger than the head limit is the body's business (its own limit), not the head's
    body = msgspec.json.encode({"events": legal_table(7, 12)})
    assert len(body) > 3 * MAX_HEADER_BYTES
    post = (b"POST /v1/tables/limits-1/events HTTP/1.1\r\nHost: kwx\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
            % (key.encode(), len(body))) + body  # fmt: skip
    status, _, answer = _exchange(port, post)
    assert status == 201, answer  # head and body in one write: only the head is counted
    keep = b"GET /v1/health HTTP/1.1\r\nHost: kwx\r\n\r\n"
    with _connect(port) as s:
        s.sendall(keep * 3 + _health())  # four pipelined requests in one write
        answer = _until_closed(s)
    assert answer.count(b"HTTP/1.1 200 OK") == 4, answer[:500]


@pytest.mark.parametrize(
    ("framing", "field"),
    [
        (b"Content-Length: 5\r\nContent-Length: 5\r\n", "header.content-length"),
        (b"Content-Length: 5x\r\n", "header.content-length"),
        (b"Content-Length: -1\r\n", "header.content-length"),
        (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "header.transfer-encoding"),
        (b"Transfer-Encoding: chunked, gzip\r\n", "header.transfer-encoding"),
    ],
    ids=["duplicated", "not-a-number", "negative", "with-chunked", "bad-transfer-encoding"],
)
def test_bad_framing_gets_the_json_400_naming_the_header(
    server: tuple[int, Path, int, str], framing: bytes, field: str
) -> None:
    port, _, _, _ = server
    request = b"POST /v1/tables/t-1/events HTTP/1.1\r\nHost: kwx\r\n" + framing + b"\r\nhello"
    status, headers, body = _exchange(port, request)
    assert status == 400 and headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    answer = msgspec.json.decode(body)
    assert answer["error"] == "bad_request" and answer["field"] == field, answer


def test_not_http_at_all_gets_the_json_400(server: tuple[int, Path, int, str]) -> None:
    port, _, _, _ = server
    status, _, body = _exchange(port, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n")
    assert status == 400 and msgspec.json.decode(body)["field"] == "request"


def _rss_kib(pids: set[int], field: str = "VmRSS:") -> int:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            total += next(int(line.split()[1]) for line in f if line.startswith(field))
    return total


def test_a_flood_of_16_mib_headers_leaves_the_workers_memory_flat(server: tuple[int, Path, int, str]) -> None:
    """20 clients at once each try to send a 16 MiB header; the server reads at most the limit (and
    one read) of each, answers 431 or is found closed, and the serving processes' RSS — now and its
    high-water mark (VmHWM) — stays within a generous bound."""
    from tests.service.serving import descendants

    port, _, pid, _ = server
    serving = {pid} | descendants(pid)  # with 2 workers: the supervisor and its workers
    for _ in range(20):  # warm every worker: the first requests allocate what any request does
        assert _exchange(port, _health())[0] == 200
    for _ in range(4):  # and the refusal's path
        assert _exchange(port, _health("X-Big: " + "a" * 40_000))[0] == 431
    before, peak = _rss_kib(serving), _rss_kib(serving, "VmHWM:")
    huge = b"GET /v1/health HTTP/1.1\r\nHost: kwx\r\nX-Huge: " + b"x" * (16 << 20) + b"\r\n\r\n"
    outcomes: list[str] = []

    def flood() -> None:
        try:
            with _connect(port) as s:
                with contextlib.suppress(OSError):  # closed while we were still sending: refused
                    s.sendall(huge)
                try:
                    answer = _until_closed(s)
                except OSError:
                    answer = b""
            refused = answer.startswith(b"HTTP/1.1 431")
            outcomes.append("431" if refused else "closed" if not answer else "other")
        except OSError as exc:
            outcomes.append(f"error {exc}")

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert sorted(set(outcomes)) <= ["431", "closed"] and len(outcomes) == 20, outcomes
    assert _exchange(port, _health())[0] == 200  # and it still serves
    grown, peaked = _rss_kib(serving) - before, _rss_kib(serving, "VmHWM:") - peak
    # less than one such header, now and at the flood's peak (before: every header read whole, the
    # peak +376 MiB with 1 worker; after, measured: +0.0–0.3 MiB either way)
    assert grown < 16 * 1024 and peaked < 16 * 1024, f"grew by {grown} KiB, peak by {peaked} KiB"
