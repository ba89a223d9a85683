"""Rate limits per key and per tenant (services/api/ratelimit.py, ``KWX_RATE_LIMIT_*``; issue 11
§5): over a limit, ``429 rate_limited`` with ``Retry-After`` and nothing done — on the routes and
on the append fast path; ``/v1/health`` never limited; ``off`` switches a limit off; memory counts
are per process, a Redis storage shares one count between processes (tested when a Redis answers
at 127.0.0.1:6379) and a storage that does not answer lets requests through.

The windows are a minute long, so that no test depends on how fast it runs."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.service.streams import legal_table

pytestmark = pytest.mark.db

Headers = dict[str, str]


@contextmanager
def serving(database_url: str, **limits: str) -> Iterator[Any]:
    """A TestClient on an app of its own (its own container, so its own in-memory counts)."""
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.settings import Settings

    settings = Settings(database_url=database_url, projector="off", pool_size=2, **limits)  # type: ignore[arg-type]
    container = bootstrap(settings, url=database_url, migrate=False)
    try:
        with TestClient(create_app(container=container)) as client:
            yield client
    finally:
        container.close()


def _stats(client: Any, key: Headers) -> Any:
    return client.get("/v1/leaderboard", headers=key)


def _is_429(answer: Any, scope: str) -> int:
    assert answer.status_code == 429, answer.text
    body = answer.json()
    assert body["error"] == "rate_limited" and body["scope"] == scope, body
    retry = int(answer.headers["retry-after"])
    assert 1 <= retry <= 60 and body["retry_after"] == retry
    return retry


def test_a_key_over_its_limit_gets_429_with_retry_after_and_other_keys_do_not(
    database_url: str, make_key: Callable[..., Headers], tenant: str
) -> None:
    one, two = make_key(tenant, "dashboard"), make_key(tenant, "dashboard")
    with serving(database_url, rate_limit_key="5/minute", rate_limit_tenant="") as client:
        assert [_stats(client, one).status_code for _ in range(5)] == [200] * 5
        answer = _stats(client, one)
        _is_429(answer, "key")
        assert "KWX_RATE_LIMIT_KEY" in answer.json()["message"] and answer.json()["limit"] == "5 per 1 minute"
        assert answer.json()["message_zh"].startswith("此密钥的请求超过每分钟 5 次（KWX_RATE_LIMIT_KEY）")
        assert _stats(client, two).status_code == 200  # per key
        assert all(client.get("/v1/health").status_code == 200 for _ in range(20))  # never limited


def test_the_append_fast_path_is_limited_and_a_refused_batch_is_not_stored(
    database_url: str, make_key: Callable[..., Headers], tenant: str, table_id: str
) -> None:
    key = make_key(tenant, "platform")
    wire = legal_table(41)
    with serving(database_url, rate_limit_key="3/minute", rate_limit_tenant="") as client:
        for _ in range(3):
            assert client.get(f"/v1/tables/{table_id}/events", headers=key).status_code == 404
        answer = client.post(f"/v1/tables/{table_id}/events", json={"events": wire[:10]}, headers=key)
        _is_429(answer, "key")
        assert answer.headers["content-type"] == "application/json"
    with serving(database_url, rate_limit_key="", rate_limit_tenant="") as client:
        assert client.get(f"/v1/tables/{table_id}/events", headers=key).status_code == 404  # nothing stored


def test_a_tenants_keys_share_the_tenant_limit_and_other_tenants_are_not_touched(
    database_url: str, make_key: Callable[..., Headers], tenant: str
) -> None:
    ours = [make_key(tenant, "dashboard") for _ in range(2)]
    theirs = make_key(tenant + "o", "dashboard")
    with serving(database_url, rate_limit_key="", rate_limit_tenant="8/minute") as client:
        assert [_stats(client, ours[i % 2]).status_code for i in range(8)] == [200] * 8
        _is_429(_stats(client, ours[0]), "tenant")
        _is_429(_stats(client, ours[1]), "tenant")
        assert _stats(client, theirs).status_code == 200


def test_off_means_no_limit(database_url: str, make_key: Callable[..., Headers], tenant: str) -> None:
    key = make_key(tenant, "dashboard")
    with serving(database_url, rate_limit_key="", rate_limit_tenant="") as client:
        assert vars(client.app.state.container).get("rate_limits", "unbuilt") in (None, "unbuilt")
        assert all(_stats(client, key).status_code == 200 for _ in range(50))
        assert vars(client.app.state.container)["rate_limits"] is None  # built on first use: off


def test_memory_counts_are_per_process(
    database_url: str, make_key: Callable[..., Headers], tenant: str
) -> None:
    """Two apps (as two workers would be), each with its own count: a key gets the limit in each."""
    key = make_key(tenant, "dashboard")
    with (
        serving(database_url, rate_limit_key="4/minute") as a,
        serving(database_url, rate_limit_key="4/minute") as b,
    ):
        assert [_stats(a, key).status_code for _ in range(4)] == [200] * 4
        assert [_stats(b, key).status_code for _ in range(4)] == [200] * 4
        _is_429(_stats(a, key), "key")


def _redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def test_a_redis_storage_shares_one_count_between_processes(
    database_url: str, make_key: Callable[..., Headers], tenant: str
) -> None:
    if not _redis_answers():
        pytest.skip("no Redis answers at 127.0.0.1:6379 (the memory storage is tested above)")
    key = make_key(tenant, "dashboard")
    shared = {"rate_limit_key": "6/minute", "rate_limit_storage": "redis://127.0.0.1:6379"}
    with serving(database_url, **shared) as a, serving(database_url, **shared) as b:
        assert [_stats(c, key).status_code for c in (a, b, a, b, a, b)] == [200] * 6
        _is_429(_stats(a, key), "key")
        _is_429(_stats(b, key), "key")


def test_a_storage_that_does_not_answer_lets_requests_through(
    database_url: str, make_key: Callable[..., Headers], tenant: str
) -> None:
    key = make_key(tenant, "dashboard")
    with serving(database_url, rate_limit_key="1/minute", rate_limit_storage="redis://127.0.0.1:1") as client:
        assert [_stats(client, key).status_code for _ in range(3)] == [200] * 3


def test_counting_a_request_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory counts are awaited on the event loop and start no thread. The threaded storage
    of ``limits`` started a ``threading.Timer`` (its sweep of expired counts) whenever the last one
    had ended, 10 ms on: a worker serving a request every 10 ms or slower started an OS thread per
    request, on the event loop, which waited for it to start. The requests here come 15 ms apart."""
    import asyncio
    import inspect
    import threading

    from services.api.ratelimit import RateLimits
    from services.errors import RateLimited
    from services.store.keys import Principal

    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    limits = RateLimits("5/minute", "")
    caller = Principal("kwx_000000000001", "threads", "platform")

    async def requests() -> list[str]:
        said = []
        for _ in range(6):
            await asyncio.sleep(0.015)
            try:
                counting = limits.check(caller)
                if inspect.isawaitable(counting):  # (it was a plain call)
                    await counting
                said.append("ok")
            except RateLimited as refused:
                assert refused.extra["scope"] == "key" and 1 <= refused.extra["retry_after"] <= 60
                said.append("429")
        return said

    assert asyncio.run(requests()) == ["ok"] * 5 + ["429"]  # still counted, the sixth refused
    assert started == [], started
