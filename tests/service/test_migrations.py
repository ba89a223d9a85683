"""Every migration is reversible: upgrade → downgrade → upgrade on a fresh database."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from services import migrate

pytestmark = pytest.mark.db

OURS = ("events", "table_heads", "api_keys")


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


def test_upgrade_downgrade_upgrade(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("kwx_migrations")
    migrate.upgrade(url)
    head = migrate.current(url)
    assert head is not None and set(OURS) <= tables(url)
    migrate.downgrade(url, revision="base")
    assert migrate.current(url) is None
    assert not (set(OURS) & tables(url))
    migrate.upgrade(url)
    assert migrate.current(url) == head and set(OURS) <= tables(url)


def test_each_step_down_and_up(pg_cluster: Any) -> None:
    from alembic.script import ScriptDirectory

    from services.migrate import _config

    url = pg_cluster.create_database("kwx_migration_steps")
    script = ScriptDirectory.from_config(_config(url, "kwx_app"))
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    for revision in revisions:
        migrate.upgrade(url, revision=revision)
        assert migrate.current(url) == revision
        migrate.downgrade(url, revision="-1")
        migrate.upgrade(url, revision=revision)
        assert migrate.current(url) == revision


# ---------------------------------------------------------------------------------- 0006 (issue 11 §4)
PER_TABLE = ("events", "table_heads", "proj_hand_settlements", "proj_discrepancies", "proj_table_snapshots")


def _unique_keys(conn: psycopg.Connection[Any]) -> dict[str, list[list[str]]]:
    """Every primary and unique index of the per-table tables: its columns in order."""
    rows = conn.execute(
        "SELECT c.relname, i.indexrelid, a.attname FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indrelid "
        "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
        "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
        "WHERE i.indisunique AND c.relname = ANY(%s) ORDER BY c.relname, i.indexrelid, k.n",
        (list(PER_TABLE),),
    ).fetchall()
    out: dict[str, dict[int, list[str]]] = {}
    for table, index, column in rows:
        out.setdefault(table, {}).setdefault(index, []).append(column)
    return {table: list(indexes.values()) for table, indexes in out.items()}


def _old_rows(owner: psycopg.Connection[Any], engine: Any) -> dict[str, list[Any]]:
    """Two tenants' tables with true hash chains, written as revision 0005 stored them (no tenant on
    events), plus read-model rows and events whose head is gone."""
    from domain.events import canonical_bytes, convert
    from services.store import chain
    from tests.service.streams import legal_table

    stored: dict[str, list[Any]] = {}
    for tenant, table_id, seed in (("acme", "m-1", 61), ("beta", "m-2", 62), ("acme", "m-3", 63)):
        events = [engine.pin(convert(e)) for e in legal_table(seed)[:8]]
        canon = [canonical_bytes(e) for e in events]
        hashes = chain.links(chain.genesis(table_id), canon)
        owner.execute(
            "INSERT INTO table_heads (table_id, tenant, version, last_hash) VALUES (%s, %s, %s, %s)",
            (table_id, tenant, len(events), hashes[-1]),
        )
        for v, (e, c, h) in enumerate(zip(events, canon, hashes, strict=True), 1):
            owner.execute(
                "INSERT INTO events (table_id, version, event_id, type, body, hash) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (table_id, v, e.id, type(e).__struct_config__.tag, c.decode(), h),
            )
        stored[table_id] = events
    owner.execute(
        "INSERT INTO events (table_id, version, event_id, type, body, hash) "
        "VALUES ('ghost', 1, 'g1', 'table_closed', '{}', decode(repeat('00', 32), 'hex'))"
    )
    for table_id, reported, tenant, position in (("m-3", 5, "acme", 30), ("m-1", 7, "acme", 10),
                                                 ("m-2", 4, "beta", 20)):  # fmt: skip
        owner.execute(
            "INSERT INTO proj_discrepancies (table_id, reported_event, hand, tenant, position, lines, "
            "net_computed, net_reported, reported) VALUES (%s, %s, 1, %s, %s, '[]', '{}', '{}', '[]')",
            (table_id, reported, tenant, position),
        )
    for table_id in ("m-1", "m-2", "ghost"):
        owner.execute("INSERT INTO proj_table_snapshots (table_id, version, hand, state) "
                      "VALUES (%s, 2, 1, '\\x00')", (table_id,))  # fmt: skip
    return stored


def test_0006_moves_the_data_to_tenant_keys_and_down_refuses_a_shared_id(
    pg_cluster: Any, container: Any
) -> None:
    from domain.events import convert
    from services.db import make_pool
    from services.store.events import EventStore
    from tests.service.streams import legal_table

    url = pg_cluster.create_database("kwx_migration_0006")
    migrate.upgrade(url, revision="0005_snapshot_external")
    with psycopg.connect(url) as owner:
        stored = _old_rows(owner, container.engine)
    migrate.upgrade(url, revision="0006")
    with psycopg.connect(url) as owner:
        tenants = owner.execute(
            "SELECT table_id, array_agg(DISTINCT tenant), count(*) FROM events GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert tenants == [("ghost", [""], 1), ("m-1", ["acme"], 8), ("m-2", ["beta"], 8),
                           ("m-3", ["acme"], 8)]  # fmt: skip
        feed = owner.execute(
            "SELECT tenant, feed_seq, table_id FROM proj_discrepancies ORDER BY tenant, feed_seq"
        ).fetchall()
        assert feed == [("acme", 1, "m-1"), ("acme", 2, "m-3"), ("beta", 1, "m-2")]  # by position
        snapshots = owner.execute("SELECT tenant, table_id FROM proj_table_snapshots ORDER BY 2").fetchall()
        assert snapshots == [("acme", "m-1"), ("beta", "m-2")]  # a cache: the headless one is gone
        # distribution-ready (issue 14): every primary / unique key of a per-table table starts
        # with (tenant, table_id), so it can be distributed on table_id
        keys = _unique_keys(owner)
        assert set(keys) == set(PER_TABLE)
        assert all(k[:2] == ["tenant", "table_id"] for ks in keys.values() for k in ks), keys
        assert sorted(keys["events"]) == [["tenant", "table_id", "event_id"],
                                          ["tenant", "table_id", "version"]]  # fmt: skip
    pool = make_pool(url, size=1, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        ids = [e.event_id for e in store.read_table("acme", "m-1", 0, 100)]
        assert ids == [e.id for e in stored["m-1"]]
        assert store.read_table("beta", "m-1") == [] and store.head("beta", "m-1") is None
        tables, checked, broken = store.verify()  # the chains as stored before 0006 still verify
        assert (tables, checked) == (4, 24)
        ghost = ("", "ghost", "events without a table head row")
        assert [(b.tenant, b.table_id, b.reason) for b in broken] == [ghost]
    finally:
        pool.close()
    migrate.upgrade(url)  # today's store writes today's columns: append at the head, then come back
    pool = make_pool(url, size=1, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        more = store.append("acme", "m-1", 8, [convert(e) for e in legal_table(61)[8:10]])
        assert more.version == 10
        theirs = store.append("beta", "m-1", 0, [convert(e) for e in legal_table(64)[:3]])
        assert theirs.version == 3
    finally:
        pool.close()
    migrate.downgrade(url, revision="0006")
    with pytest.raises(Exception, match=r"cannot be undone.*'m-1': acme, beta"):
        migrate.downgrade(url, revision="0005_snapshot_external")
    assert migrate.current(url) == "0006"  # refused whole: nothing of the downgrade ran
    with psycopg.connect(url) as owner:  # take beta's m-1 away behind kwx's back: then it can go down
        owner.execute("ALTER TABLE events DISABLE TRIGGER events_immutable")
        owner.execute("DELETE FROM events WHERE tenant = 'beta' AND table_id = 'm-1'")
        owner.execute("ALTER TABLE events ENABLE TRIGGER events_immutable")
        owner.execute("DELETE FROM table_heads WHERE tenant = 'beta' AND table_id = 'm-1'")
    migrate.downgrade(url, revision="0005_snapshot_external")
    with psycopg.connect(url) as owner:
        columns = {r[0] for r in owner.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
        ).fetchall()}  # fmt: skip
        assert "tenant" not in columns
        assert owner.execute("SELECT count(*) FROM events").fetchone() == (27,)
        pkey = owner.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'events'::regclass AND i.indisprimary"
        ).fetchall()
        assert pkey == [("position",)]
    migrate.upgrade(url, revision="0006")
    assert migrate.current(url) == "0006"
