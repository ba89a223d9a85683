"""Every read route answers with a pool of ONE connection (issue 11 §3): no code path holds one
pooled connection while it waits for another (before, the state route took a second connection
inside the first and, with the pool at one, waited its whole 10 s and answered 503).

The tables and read models are written by a container with a pool of its own; the app under test
serves from a container built with ``pool_size=1``."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.service.streams import legal_table

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def pool_of_one(pg_cluster: Any) -> Iterator[tuple[Any, dict[str, dict[str, str]], str, str]]:
    from fastapi.testclient import TestClient

    from domain import engine
    from domain.events import convert
    from projections.projector import Projector
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.settings import Settings

    url = pg_cluster.create_database("kwx_pool1")
    loader = bootstrap(Settings(database_url=url, projector="off", snapshot_every=20), url=url)
    one = bootstrap(Settings(database_url=url, projector="off", pool_size=1), url=url, migrate=False)
    try:
        wire = legal_table(31, 3)
        assert len(wire) > 40  # so that the state is folded from a snapshot
        loader.store.append("acme", "one-1", 0, [convert(e) for e in wire])
        Projector(loader.pool, loader.store, engine).catch_up()
        keys = {role: {"Authorization": f"Bearer {loader.keys.create('acme', role)}"}
                for role in ("platform", "support", "dashboard")}  # fmt: skip
        assert one.pool.max_size == 1
        with TestClient(create_app(container=one)) as client:
            yield client, keys, "one-1", wire[0]["players"][0]
    finally:
        one.close()
        loader.close()


def _routes(table_id: str, player: str) -> list[tuple[str, str, dict[str, str]]]:
    """(role, path, extra headers) of every read route (openapi.json's GETs). The default preset
    charges no service fee, so the house's ledger is empty: read from the database all the same."""
    t = f"/v1/tables/{table_id}"
    return [
        ("platform", "/v1/health", {}),
        ("platform", f"{t}/state", {}),
        ("platform", f"{t}/state?at=45", {}),
        ("platform", f"{t}/state?seat=1", {}),
        ("support", f"{t}/state", {}),
        ("platform", f"{t}/hands/1/settlement", {}),
        ("platform", f"{t}/hands/1/settlement?rules=xiangyang", {}),
        ("support", f"{t}/audit", {}),
        ("support", f"{t}/hands/1/audit", {}),
        ("platform", f"{t}/events?limit=1000", {}),
        ("platform", f"{t}/events", {"Accept": "application/x-ndjson"}),
        ("dashboard", f"/v1/players/{player}/stats", {}),
        ("dashboard", f"/v1/players/{player}/ledger", {}),
        ("dashboard", "/v1/house/ledger", {}),
        ("dashboard", "/v1/leaderboard", {}),
        ("support", "/v1/discrepancies", {}),
        ("platform", f"{t}/export", {}),
        ("support", f"{t}/hands/2/export", {}),
        ("support", f"{t}/hands/2/report", {}),
    ]


def test_every_read_route_answers_with_a_pool_of_one(pool_of_one: Any) -> None:
    client, keys, table_id, player = pool_of_one
    for role, path, extra in _routes(table_id, player):
        answer = client.get(path, headers={**keys[role], **extra})
        assert answer.status_code == _expected(path), (path, answer.status_code, answer.text[:300])
    state = client.get(f"/v1/tables/{table_id}/state", headers=keys["platform"]).json()
    assert state["folded_from"] > 0  # the snapshot was read, then the events after it


def test_concurrent_reads_with_a_pool_of_one_all_answer(pool_of_one: Any) -> None:
    """Eight threads at once on the one connection: each waits its turn for it (none holds it while
    waiting for a second), so every answer is a 200."""
    client, keys, table_id, player = pool_of_one
    routes = _routes(table_id, player) * 2

    def get(route: tuple[str, str, dict[str, str]]) -> tuple[str, int]:
        role, path, extra = route
        return path, client.get(path, headers={**keys[role], **extra}).status_code

    with ThreadPoolExecutor(8) as threads:
        answers = list(threads.map(get, routes, timeout=120))
    assert [a for a in answers if a[1] != _expected(a[0])] == []


def _expected(path: str) -> int:
    return 200  # every route, the house's empty ledger too
