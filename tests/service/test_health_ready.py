"""Liveness and readiness apart (issue 15): ``/v1/health/live`` answers without the database;
``/v1/health/ready`` is 200 only when the database answers, its schema is at this code's migration
head, and the read models lag less than ``KWX_READY_MAX_LAG`` with no stale checkpoint — else 503
with ``Retry-After`` and a reason an operator can act on. Against a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services import migrate
from tests.service.streams import legal_table

pytestmark = pytest.mark.db


def _served(url: str, **settings: Any) -> Iterator[tuple[Any, Any]]:
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings(database_url=url, projector="off", **settings), url=url, migrate=False)
    try:
        with TestClient(create_app(container=container)) as client:
            yield client, container
    finally:
        container.close()


@pytest.fixture()
def fresh_db(pg_cluster: Any, request: Any) -> str:
    url: str = pg_cluster.create_database(f"kwx_ready_{abs(hash(request.node.name)) % 10**8}")
    return url


def _newest_migration() -> str:
    """The revision of the newest file in migrations/versions (files are named by revision)."""
    versions = Path(migrate.__file__).parents[1] / "migrations" / "versions"
    names = sorted(p.name for p in versions.glob("0*.py"))
    return names[-1].split("_", 1)[0]


def test_the_code_expects_the_last_migration() -> None:
    assert migrate.heads() == (_newest_migration(),)


def test_live_answers_without_a_key(client: Any) -> None:
    answer = client.get("/v1/health/live")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}


def test_live_needs_no_database(fresh_db: str) -> None:
    migrate.upgrade(fresh_db)
    for client, container in _served(fresh_db):
        container.pool.close()  # the database is gone for this process
        assert client.get("/v1/health/live").status_code == 200
        answer = client.get("/v1/health/ready")
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        body = answer.json()
        assert body["status"] == "not_ready" and body["checks"]["database"] == "unreachable"
        assert body["reasons"] == ["the database does not answer"]


def test_ready_at_head_and_caught_up(fresh_db: str) -> None:
    migrate.upgrade(fresh_db)
    for client, _ in _served(fresh_db):
        answer = client.get("/v1/health/ready")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["status"] == "ready" and body["reasons"] == []
        checks = body["checks"]
        assert checks["database"] == "ok" and checks["migrations"] == "ok"
        assert checks["schema_revision"] == checks["expected_revision"] == _newest_migration()
        assert checks["projections"] == "ok" and checks["lag_seconds"] == 0.0
        assert checks["max_lag_seconds"] == 60.0


def test_not_ready_while_the_schema_is_behind(fresh_db: str) -> None:
    migrate.upgrade(fresh_db, revision="0009")
    for client, _ in _served(fresh_db):
        answer = client.get("/v1/health/ready")
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        body = answer.json()
        assert body["checks"]["migrations"] == "behind" and body["checks"]["database"] == "ok"
        assert any("kwx migrate" in r for r in body["reasons"]), body
        assert client.get("/v1/health").status_code == 200  # /v1/health keeps its answer


def test_not_ready_while_the_read_models_lag_past_the_bound(fresh_db: str) -> None:
    from domain.events import convert

    migrate.upgrade(fresh_db)
    for client, container in _served(fresh_db, ready_max_lag=30.0):
        container.store.append("acme", "ready-1", 0, [convert(e) for e in legal_table(7)[:10]])
        with psycopg.connect(fresh_db, autocommit=True) as conn:  # recorded an hour ago, never projected
            conn.execute("SET session_replication_role = replica")  # past the immutability trigger
            conn.execute("UPDATE events SET recorded_at = recorded_at - interval '1 hour'")
        body = client.get("/v1/health/ready").json()
        assert body["status"] == "not_ready" and body["checks"]["projections"] == "lagging"
        assert body["checks"]["lag_seconds"] >= 3600 and body["checks"]["max_lag_seconds"] == 30.0
        assert body["reasons"] == [
            f"the read models lag {body['checks']['lag_seconds']:.1f} s, more than KWX_READY_MAX_LAG=30"
        ]
        assert "acme" not in str(body) and "ready-1" not in str(body)  # no tenant, no table

        from domain import engine
        from projections.projector import Projector

        Projector(container.pool, container.store, engine).catch_up()
        assert client.get("/v1/health/ready").status_code == 200


def test_not_ready_with_a_stale_checkpoint(fresh_db: str) -> None:
    from domain import engine
    from projections.projector import Projector

    migrate.upgrade(fresh_db)
    for client, container in _served(fresh_db):
        Projector(container.pool, container.store, engine).catch_up()
        with psycopg.connect(fresh_db, autocommit=True) as conn:  # a copied checkpoint from a later epoch
            conn.execute("UPDATE projection_checkpoints SET epoch = epoch + 5 WHERE name = 'ledger'")
        body = client.get("/v1/health/ready").json()
        assert body["checks"]["projections"] == "stale"
        assert any("ledger" in r and "kwx projections rebuild" in r for r in body["reasons"]), body


def test_the_bound_is_a_setting() -> None:
    from services.settings import Settings, SettingsError

    assert Settings.from_env({"KWX_READY_MAX_LAG": "5"}).ready_max_lag == 5.0
    with pytest.raises(SettingsError, match="KWX_READY_MAX_LAG"):
        Settings.from_env({"KWX_READY_MAX_LAG": "0"})
