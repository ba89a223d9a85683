"""Migration 0020 (a settled hand's §2 document written once): given a database at 0019 with a table
projected and the read model ``hand_settlements``' checkpoint and parked rows → up to 0020,
``proj_hand_settlements`` is a view that shows every settlement of the table as the engine computes
it, from the feed's entries, the model's checkpoint and parked rows are gone and nothing can write
the view → down to 0019 the table is back, empty and writable, with no checkpoint, so that the kwx
of that schema projects it from position 0."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import psycopg
import pytest

from domain import engine
from domain.events import convert
from services import migrate
from tests.projections.helpers import simulated

pytestmark = pytest.mark.db

COLUMNS = (
    "SELECT column_name, data_type FROM information_schema.columns "
    "WHERE table_name = 'proj_hand_settlements' ORDER BY ordinal_position"
)
CHECKPOINT = "SELECT count(*) FROM projection_checkpoints WHERE name = 'hand_settlements'"
PARKED = "SELECT count(*) FROM projection_parked WHERE model = 'hand_settlements'"
VIEW_COLUMNS = [
    ("tenant", "text"), ("table_id", "text"), ("ordinal", "integer"), ("hand", "integer"),
    ("preset", "text"), ("end_kind", "character varying"), ("dealer", "integer"),
    ("next_dealer", "integer"), ("players", "json"), ("net", "json"), ("house", "bigint"),
    ("settled_event", "integer"), ("settlement", "json"),
]  # fmt: skip


def test_0020_the_settlements_are_the_feeds_and_down_gives_the_model_back_empty(
    pg_cluster: Any, container: Any
) -> None:
    from projections.projector import Projector
    from services.db import make_pool
    from services.store.events import EventStore

    url = pg_cluster.create_database("kwx_migration_0020")
    migrate.upgrade(url, revision="0019")
    events = [convert(e) for e in simulated(2020, hands=3, preset="default", table_id="m20")]
    settlements = engine.fold(events).settlements
    assert len(settlements) >= 2
    pool = make_pool(url, size=2, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)  # type: ignore[attr-defined]
        store.append("acme", "m20", 0, events)
        # the feed: what 0020's view shows (this build's ledger writes a column 0021 added)
        Projector(pool, store, engine, names=["feed"]).catch_up()
    finally:
        pool.close()
    with psycopg.connect(url, autocommit=True) as conn:  # what 0019's kwx kept for its model
        conn.execute(
            "INSERT INTO projection_checkpoints (name, tx_id, position, events, epoch, parked) "
            "SELECT 'hand_settlements', tx_id, position, events, epoch, 1 FROM projection_checkpoints "
            "WHERE name = 'feed'"
        )
        conn.execute(
            "INSERT INTO projection_parked (model, epoch, tx_id, position, tenant, table_id, version, "
            "event_id, error_class, error, parked_at, tries) VALUES ('hand_settlements', 1, 1, 1, 'acme', "
            "'m20', 1, 'e1', 'X', 'x', now(), 1)"
        )

    migrate.upgrade(url, revision="0020")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(COLUMNS).fetchall() == VIEW_COLUMNS  # the table's columns but position
        rows = conn.execute(
            "SELECT tenant, table_id, ordinal, hand, preset, end_kind, dealer, next_dealer, players, net, "
            "house, settlement FROM proj_hand_settlements ORDER BY ordinal"
        ).fetchall()
        assert rows == [
            ("acme", "m20", i, s.hand, "default", s.end, s.dealer, s.next_dealer, list(events[0].players),
             list(s.net), s.house, msgspec.json.decode(msgspec.json.encode(s)))
            for i, s in enumerate(settlements, 1)
        ]  # fmt: skip
        feed_versions = conn.execute(
            "SELECT version FROM proj_feed WHERE kind = 'settlement' ORDER BY seq"
        ).fetchall()
        assert (
            conn.execute("SELECT settled_event FROM proj_hand_settlements ORDER BY ordinal").fetchall()
            == feed_versions
        )
        assert conn.execute(CHECKPOINT).fetchone() == conn.execute(PARKED).fetchone() == (0,)
        conn.execute("SET ROLE kwx_app")
        assert conn.execute("SELECT count(*) FROM proj_hand_settlements").fetchone() == (len(settlements),)
        with pytest.raises(psycopg.Error):  # a view of the feed: nothing writes it
            conn.execute("DELETE FROM proj_hand_settlements")

    migrate.downgrade(url, revision="0019")
    with psycopg.connect(url, autocommit=True) as conn:
        names = [c for c, _ in conn.execute(COLUMNS).fetchall()]
        assert "position" in names and conn.execute(
            "SELECT count(*) FROM proj_hand_settlements"
        ).fetchone() == (0,)
        assert conn.execute(CHECKPOINT).fetchone() == (0,)
        conn.execute("SET ROLE kwx_app")
        conn.execute(
            "INSERT INTO proj_hand_settlements VALUES ('m20', 1, 1, 'acme', 'default', 'hu', 0, 1, "
            "'[]', '[]', 0, 9, 9, '{}')"
        )
    migrate.upgrade(url)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM proj_hand_settlements").fetchone() == (len(settlements),)


def test_rebuilding_the_feed_gives_the_same_settlements(private_db: tuple[Any, str]) -> None:
    """The view's rows are the feed's: a rebuild of ``feed`` alone gives them again, the same."""
    from projections.projector import Projector

    store, url = private_db
    table = "rb20-" + uuid.uuid4().hex[:6]
    store.append("acme", table, 0, [convert(e) for e in simulated(2021, hands=2, table_id=table)])  # type: ignore[attr-defined]
    projector = Projector(store.pool, store, engine)  # type: ignore[attr-defined]
    projector.catch_up()
    sql = "SELECT * FROM proj_hand_settlements WHERE table_id = %s ORDER BY ordinal"
    with psycopg.connect(url) as conn:
        before = conn.execute(sql, (table,)).fetchall()
    assert len(before) == 2
    projector.rebuild(["feed"])
    with psycopg.connect(url) as conn:
        assert conn.execute(sql, (table,)).fetchall() == before
