"""``FastAppend`` (services/api/tables.py) answers ``POST /v1/tables/{id}/events`` without FastAPI's
per-request machinery. It must be invisible: every answer — status, body, headers, log line — the
same as the documented FastAPI route gives (the app built with ``fast_append=False``)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import APIRouter
from psycopg_pool import PoolTimeout

from domain.events import convert
from services.api.app import create_app
from services.settings import Settings
from services.store.events import AppendResult
from services.store.keys import Principal
from tests.service.streams import legal_table

Headers = dict[str, str]


def _body(events: list[dict[str, Any]], expected: int | None = None, **extra: Any) -> bytes:
    body: dict[str, Any] = {"events": events, **extra}
    if expected is not None:
        body["expected_version"] = expected
    return json.dumps(body).encode()


def _cases(keys: dict[str, Headers]) -> list[tuple[str, str, Headers, bytes]]:
    """(name, table id or "" for a fresh one, headers, body): one request each, in order."""
    wire = legal_table(41)
    illegal = [wire[0], wire[1], {**wire[2], "id": "x-bad", "seat": 2}]  # seat 1 deals: out of turn
    json_ct = {"Content-Type": "application/json"}
    platform = {**keys["platform"], **json_ct}
    return [
        ("no key", "", json_ct, _body(wire[:2])),
        ("basic auth", "", {"Authorization": "Basic dXNlcjpwYXNz", **json_ct}, _body(wire[:2])),
        ("bearer without key", "", {"Authorization": "Bearer ", **json_ct}, _body(wire[:2])),
        ("unknown key", "", {"Authorization": "Bearer kwx_000000000000_nope", **json_ct}, _body(wire[:2])),
        ("support key", "", {**keys["support"], **json_ct}, _body(wire[:2])),
        ("bad table id", "bad.id", platform, _body(wire[:2])),
        ("long table id", "t" * 65, platform, _body(wire[:2])),
        ("bad table id and no key", "bad.id", json_ct, _body(wire[:2])),
        ("text/plain", "", {**keys["platform"], "Content-Type": "text/plain"}, _body(wire[:2])),
        ("no content type", "", keys["platform"], _body(wire[:2])),
        ("+json type", "", {**keys["platform"], "Content-Type": "application/x+json"}, _body(wire[:2])),
        ("not json", "", platform, b"{events: nope"),
        ("empty body", "", platform, b""),
        ("unknown top field", "", platform, _body(wire[:2], surprise=1)),
        ("no events", "", platform, _body([])),
        ("negative expected", "", platform, _body(wire[:2], -1)),
        ("unknown event type", "", platform, _body([{**wire[0], "type": "teleport"}])),
        ("too large", "", platform, _body(wire[:1], pad="x" * 300_000)),
        ("too many events", "", platform, _body(wire[:1] * 501)),
        ("duplicate ids", "", platform, _body([wire[0], wire[0]])),
        ("NUL in a field", "", platform, _body([{**wire[0], "id": "a\x00b"}])),
        ("illegal event", "", platform, _body(illegal)),
        ("legal batch", "A", platform, _body(wire[:5], 0)),
        ("idempotent resend", "A", platform, _body(wire[:5], 0)),
        ("stale expected version", "A", platform, _body(wire[5:8], 2)),
        ("id reused with other content", "A", platform, _body([{**wire[0], "base": 6}])),
        ("next batch", "A", platform, _body(wire[5:8])),
        # issue 11 §4: another tenant's id is free for this one: its own new table
        ("other tenant, same id", "A", {**keys["other"], **json_ct}, _body(wire[:5], 0)),
        ("other tenant, its next batch", "A", {**keys["other"], **json_ct}, _body(wire[5:8], 5)),
    ]


@pytest.mark.db
def test_the_fast_path_answers_exactly_as_the_documented_route(
    container: Any, make_key: Callable[..., Headers], tenant: str, table_id: str
) -> None:
    from fastapi.testclient import TestClient

    keys = {
        "platform": make_key(tenant, "platform"),
        "support": make_key(tenant, "support"),
        "other": make_key(tenant + "x", "platform"),
    }
    answers: dict[bool, list[tuple[int, str, Any]]] = {}
    for fast in (True, False):
        app = create_app(container=container, fast_append=fast)
        if fast:  # no routes at all behind FastAppend: only it can answer (anything else is a 404)
            app.router = APIRouter()
        with TestClient(app) as client:
            answers[fast] = []
            for n, (name, table, headers, body) in enumerate(_cases(keys)):
                tid = f"{table_id}-{fast:d}-{table or n}" if table in ("", "A") else table
                answer = client.post(f"/v1/tables/{tid}/events", content=body, headers=headers)
                text = answer.text.replace(tid, "TABLE")
                answers[fast].append((answer.status_code, answer.headers["content-type"], json.loads(text)))
                assert answer.headers["x-request-id"], name
    statuses = [status for status, _, _ in answers[True]]
    assert statuses == [401, 401, 401, 401, 403, 422, 422, 401, 415, 201, 201, 400, 400, 422, 422, 422,
                        422, 413, 413, 422, 422, 422, 201, 201, 409, 409, 201, 201, 201]  # fmt: skip
    for (name, *_), fast, route in zip(_cases(keys), answers[True], answers[False], strict=True):
        assert fast == route, name
    codes = {c[0]: a[2].get("error") for c, a in zip(_cases(keys), answers[True], strict=True)}
    assert codes["illegal event"] == "illegal_event"
    assert codes["id reused with other content"] == "id_conflict"
    assert codes["bad table id and no key"] == "unauthorized"  # the key is checked first, as by the route


class _Keys:
    def cached(self, key: str) -> tuple[bool, Principal | None]:
        return True, Principal("k1", "acme", "platform") if key == "good" else None


class _Store:
    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    def append(self, *args: Any) -> AppendResult:
        raise self.failure


class _Container:
    def __init__(self, failure: Exception) -> None:
        self.settings = Settings(log_level="warning")
        self.store, self.keys = _Store(failure), _Keys()
        from services.api.ratelimit import RateLimits

        self.rate_limits = RateLimits.from_settings(self.settings)  # as Container builds them

    def start_projector(self) -> None:  # no projector: these tests watch the append
        pass

    def stop_projector(self) -> None:
        pass


@pytest.fixture()
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Every log line of the app while the test runs. The modules' loggers are replaced by fresh
    ones: a logger already used elsewhere is cached with the real processors and would not see
    ``capture_logs``."""
    import structlog
    from structlog.testing import capture_logs

    from services.api import answers, app

    level = structlog.get_config()["wrapper_class"]  # another test may have configured "warning"
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as captured:
            for module in (answers, app):
                monkeypatch.setattr(module, "log", structlog.get_logger("kwx.api"))
            yield captured
    finally:
        structlog.configure(wrapper_class=level)


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [
        (PoolTimeout("no connection in 30 s"), 503, "unavailable"),
        (RuntimeError("a bug"), 500, "internal"),
    ],
)
def test_a_failing_store_is_answered_as_the_handlers_answer_it(
    failure: Exception, status: int, code: str, logs: list[dict[str, Any]]
) -> None:
    from fastapi.testclient import TestClient

    body = _body(legal_table(42)[:2])
    headers = {"Authorization": "Bearer good", "Content-Type": "application/json"}
    seen = []
    for fast in (True, False):
        with TestClient(create_app(container=_Container(failure), fast_append=fast),  # type: ignore[arg-type]
                        raise_server_exceptions=False) as client:  # fmt: skip
            answer = client.post("/v1/tables/t1/events", content=body, headers=headers)
        seen.append((answer.status_code, answer.json()))
    assert seen[0] == seen[1]
    assert seen[0][0] == status and seen[0][1]["error"] == code
    assert "a bug" not in json.dumps(seen[0][1])  # internals stay in the log
    access = [line for line in logs if line["event"] == "request"]
    assert [line["status"] for line in access] == [status, status]
    assert all(line["table_id"] == "t1" for line in access)
    if status == 500:
        assert [line["event"] for line in logs].count("unexpected_error") == 2


def test_the_access_line_of_an_append_says_what_was_stored(logs: list[dict[str, Any]]) -> None:
    from fastapi.testclient import TestClient

    class Stores(_Store):
        def append(self, tenant: str, table_id: str, expected: int | None, events: list[Any]) -> AppendResult:
            return AppendResult(table_id, 7 + len(events), 8, len(events), [{"index": 0, "rule": "x"}])

    container = _Container(RuntimeError())
    container.store = Stores(RuntimeError())
    with TestClient(create_app(container=container)) as client:  # type: ignore[arg-type]
        answer = client.post("/v1/tables/t2/events", content=_body(legal_table(43)[:3], 7),
                             headers={"Authorization": "Bearer good", "X-Request-ID": "req-1"})  # fmt: skip
    assert answer.status_code == 201
    assert answer.json() == {"table_id": "t2", "version": 10, "first_version": 8, "count": 3,
                             "rulings": [{"index": 0, "rule": "x"}]}  # fmt: skip
    assert answer.headers["x-request-id"] == "req-1"
    (line,) = [line for line in logs if line["event"] == "request"]
    assert line["request_id"] == "req-1" and line["status"] == 201 and line["path"] == "/v1/tables/t2/events"
    assert (line["outcome"], line["count"], line["version"]) == ("stored", 3, 10)
    assert line["recorded_violations"] == 1


@pytest.mark.db
def test_a_batch_the_cache_can_place_is_stored_on_the_async_pool_without_the_executor(
    container: Any, make_key: Callable[..., Headers], tenant: str, table_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """After a table's first batch this process knows where the table is: the next batch is stepped
    in the event loop and stored by one statement on FastAppend's async pool — ``EventStore.append``
    (the executor path) is not called. A batch it cannot place still goes there."""
    from fastapi.testclient import TestClient

    from services.store.events import EventStore

    wire = legal_table(44)
    headers = {**make_key(tenant, "platform"), "Content-Type": "application/json"}
    calls: list[str] = []
    real = EventStore.append

    def counted(self: EventStore, tenant: str, table: str, *args: Any) -> Any:
        calls.append(table)
        return real(self, tenant, table, *args)

    monkeypatch.setattr(EventStore, "append", counted)
    with TestClient(create_app(container=container)) as client:
        first = client.post(f"/v1/tables/{table_id}/events", content=_body(wire[:5], 0), headers=headers)
        second = client.post(f"/v1/tables/{table_id}/events", content=_body(wire[5:9], 5), headers=headers)
        assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
        assert second.json()["version"] == 9 and calls == []
        # another process (worker) appends v10-12 behind this one's back
        other = EventStore(container.pool, container.engine)
        other.append(tenant, table_id, 9, [convert(e) for e in wire[9:12]])
        calls.clear()
        # no expected version: the cached guess (v9) is refused by the database; the store's append
        # reads the head and stores v13-15
        moved = client.post(f"/v1/tables/{table_id}/events", content=_body(wire[12:15]), headers=headers)
        assert moved.status_code == 201 and moved.json()["version"] == 15 and calls == [table_id]
        # a stale expected version: no cached guess fits, the store's append answers (409)
        stale = client.post(f"/v1/tables/{table_id}/events", content=_body(wire[15:18], 12), headers=headers)
        assert stale.status_code == 409 and calls == [table_id] * 2
        # a re-send of the first batch: no guess fits either; the store's append says replay
        again = client.post(f"/v1/tables/{table_id}/events", content=_body(wire[:5], 0), headers=headers)
        assert again.status_code == 201 and again.json() == first.json() and calls == [table_id] * 3
    assert container.store.verify(table_id)[2] == []


@pytest.mark.parametrize(
    ("ending", "status", "outcome"),
    [("returns", 499, "client_gone"), ("cancelled", 499, "cancelled"), ("raises", 500, None)],
)
def test_a_request_left_without_an_answer_is_logged_499_unless_the_app_failed(
    ending: str, status: int, outcome: str | None, logs: list[dict[str, Any]]
) -> None:
    """The access line of a request that got no answer: the client left first (the app returned:
    FastAppend on a disconnect) or the request was cancelled (the shutdown grace was over) is
    499, not 500 — no 500 was sent, and alerts count 500s; an exception of the app stays 500."""
    import asyncio

    from services.api.app import RequestContext

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if ending == "cancelled":
            raise asyncio.CancelledError
        if ending == "raises":
            raise RuntimeError("a bug")

    async def call() -> None:
        scope = {"type": "http", "method": "POST", "path": "/v1/tables/t/events", "headers": []}
        await RequestContext(app)(scope, None, None)  # type: ignore[arg-type]

    expected = pytest.raises((asyncio.CancelledError, RuntimeError))
    with expected if ending != "returns" else contextlib.nullcontext():
        asyncio.run(call())
    (line,) = [line for line in logs if line["event"] == "request"]
    assert line["status"] == status
    assert line.get("outcome") == outcome


@pytest.mark.parametrize("fast", [True, False])
def test_a_body_that_does_not_arrive_in_time_is_a_408(fast: bool, logs: list[dict[str, Any]]) -> None:
    """A client that sends its headers and then trickles (here: stops) its body is answered 408
    ``request_timeout`` after ``KWX_BODY_TIMEOUT`` seconds, by the fast path and the route alike,
    instead of holding the connection for as long as it likes; nothing reaches the store."""
    import asyncio

    container = _Container(RuntimeError("the store must not be called"))
    container.settings = Settings(log_level="warning", body_timeout=0.2)
    app = create_app(container=container, fast_append=fast)  # type: ignore[arg-type]
    first = [{"type": "http.request", "body": b'{"events": [', "more_body": True}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if first:
            return first.pop()
        await asyncio.sleep(30)  # the rest of the body never comes
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def call() -> None:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/tables/t9/events", "raw_path": b"/v1/tables/t9/events",
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1), "server": ("x", 80),
                 "headers": [(b"authorization", b"Bearer good"), (b"content-type", b"application/json"),
                             (b"content-length", b"5000")], "app": app}  # fmt: skip
        await asyncio.wait_for(app(scope, receive, send), 10)

    asyncio.run(call())
    assert sent[0]["status"] == 408, sent
    body = json.loads(sent[1]["body"])
    assert body["error"] == "request_timeout" and body["timeout_seconds"] == 0.2, body
    assert "12 bytes came" in body["message"], body
    (line,) = [line for line in logs if line["event"] == "request"]
    assert line["status"] == 408
