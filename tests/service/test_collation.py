"""Answers ordered by ids come in the ids' byte order on every server (docs/projections.md, "Orders
are byte orders"): on a database whose default collation is ICU's root locale — there "a" < "A" <
"b" < "B" — the leaderboard's ties, the key list and ``kwx verify`` still give "A" < "B" < "a" < "b".

The embedded PostgreSQL is built without ICU and this machine has only the C locales, so no
database there can sort ids any other way: the tests need a server with ICU collations and skip
without one. ``.ci/run`` runs them against the system PostgreSQL (``TEST_DATABASE_URL``)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PgCluster, with_database

pytestmark = pytest.mark.db

ICU_ROOT = "und-x-icu"
IDS = ["b", "B", "a", "A"]  # inserted in this order
BYTE_ORDER = sorted(IDS)  # A, B, a, b


@pytest.fixture(scope="module")
def icu_database(pg_cluster: PgCluster) -> Iterator[tuple[Any, str]]:
    """(container, owner URL) on a fresh database whose default collation is ICU's root locale."""
    from services import migrate
    from services.bootstrap import bootstrap
    from services.settings import Settings

    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_collation WHERE collname = %s", (ICU_ROOT,)).fetchone() is None:
            pytest.skip("this PostgreSQL has no ICU collations; TEST_DATABASE_URL=<a server with ICU>")
        name = f"kwx_icu_{os.getpid()}_{secrets.token_hex(4)}"
        admin.execute(
            sql.SQL(
                "CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' "
                "LOCALE_PROVIDER icu ICU_LOCALE 'und'"
            ).format(sql.Identifier(name))
        )
    pg_cluster.created.append(name)
    url = with_database(pg_cluster.admin_url, name)
    migrate.upgrade(url)
    with psycopg.connect(url) as conn:  # the premise: this database does not sort by bytes
        rows = conn.execute("SELECT x FROM unnest(%s::text[]) AS x ORDER BY x", (IDS,)).fetchall()
        assert [r[0] for r in rows] == ["a", "A", "b", "B"]
    container = bootstrap(Settings(database_url=url, pool_size=2), url=url, migrate=False)
    yield container, url
    container.close()


def test_leaderboard_ties_are_in_byte_order(icu_database: tuple[Any, str]) -> None:
    from fastapi.testclient import TestClient

    from services.api.app import create_app

    container, url = icu_database
    with psycopg.connect(url) as owner:
        for player in IDS:
            owner.execute(
                "INSERT INTO proj_player_stats (tenant, player_id, preset, net_coins, hands_played) "
                "VALUES ('acme', %s, 'default', 7, 1)",
                (player,),
            )
    key = container.keys.create("acme", "dashboard")
    with TestClient(create_app(container=container)) as client:
        answer = client.get("/v1/leaderboard?by=net_coins", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    players = answer.json()["players"]
    assert [p["player_id"] for p in players] == BYTE_ORDER
    assert [p["rank"] for p in players] == [1, 2, 3, 4]
    assert {p["net_coins"] for p in players} == {7}


def test_key_list_is_in_byte_order_of_tenants(icu_database: tuple[Any, str]) -> None:
    container, _ = icu_database
    for tenant in IDS:
        container.keys.create(f"t{tenant}", "platform")
    tenants = [k.tenant for k in container.keys.list_keys() if k.tenant in {f"t{t}" for t in IDS}]
    assert tenants == [f"t{t}" for t in BYTE_ORDER]


def test_verify_reports_tables_in_byte_order(icu_database: tuple[Any, str]) -> None:
    container, url = icu_database
    with psycopg.connect(url) as owner:  # heads whose hash is not their (empty) chain's
        for table in IDS:
            owner.execute(
                "INSERT INTO table_heads (tenant, table_id, version, last_hash) VALUES ('acme', %s, 0, %s)",
                (f"{table}-1", b"\x00" * 32),
            )
    tables, _, broken = container.store.verify()
    assert tables == len(IDS)
    assert [b.table_id for b in broken] == [f"{t}-1" for t in BYTE_ORDER]
    assert {b.reason for b in broken} == {"head hash differs from the chain"}
