"""The projector's lean log read (``projections.log.read_page``) walks the log exactly like the
store's gap-free ``EventStore.read_all``: same events, same (tx_id, position) order — also where the
xids cross a power of ten — and it holds back events behind a transaction still running."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from projections.log import read_page
from services.store.events import EventStore

pytestmark = pytest.mark.db

RULING = '{"rule": "not_a_winning_hand", "kind": "rule", "event": 2, "message": "m", "detail": {"seat": 1}}'
RULING_TEXT = (
    '{"kind": "rule", "rule": "not_a_winning_hand", "event": 2, "detail": {"seat": 1}, "message": "m"}'
)


def _insert(
    conn: psycopg.Connection[Any],
    table: str,
    version: int,
    tx_id: int | None = None,
    ruling: str | None = None,
) -> int:
    cols = "tenant, table_id, version, event_id, type, body, hash, ruling" + (
        ", tx_id" if tx_id is not None else ""
    )
    vals = (
        "'acme', %s, %s, %s, 'table_closed', '{\"type\": \"table_closed\"}', "
        "decode(repeat('00', 32), 'hex'), %s"
    )
    params: tuple[Any, ...] = (table, version, f"e{version}", ruling)
    if tx_id is not None:
        vals += ", %s::text::xid8"
        params += (str(tx_id),)
    row = conn.execute(f"INSERT INTO events ({cols}) VALUES ({vals}) RETURNING position", params).fetchone()
    assert row is not None
    return int(row[0])


Row = tuple[str, int, int, int, str, str | None, str, int]


def _walk_store(store: EventStore, size: int) -> list[Row]:
    out, after = [], (0, 0, 0)
    while page := store.read_all(after, size):
        out += [
            (e.table_id, e.version, e.position, e.tx_id, e.body, e.ruling, e.tenant, e.epoch) for e in page
        ]
        after = (page[-1].epoch, page[-1].tx_id, page[-1].position)
    return out


def _walk_lean(conn: psycopg.Connection[Any], size: int) -> list[Row]:
    out: list[Row] = []
    after = (0, 0, 0)
    while page := read_page(conn, after, size):
        out += page  # (table_id, version, position, tx_id, body, ruling, tenant, epoch)
        after = (page[-1][7], page[-1][3], page[-1][2])
    return out


def test_read_page_walks_the_log_like_read_all_across_xid_digit_boundaries(
    private_db: tuple[EventStore, str],
) -> None:
    store, url = private_db
    table = "lean-" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as conn:
        (current,) = conn.execute("SELECT pg_current_xact_id()::text").fetchone()  # type: ignore[misc]
        assert int(current) > 100, "the explicit xids below must be older than every running one"
        # written in this order, so positions do not follow the xids: (tx_id, position) must sort
        # the xids as numbers (9 < 10 < 99 < 100), not as text
        for version, tx in enumerate((100, 99, 10, 9, 100, 10, 99), start=1):
            _insert(conn, table, version, tx, RULING if version in (2, 5) else None)
        for version in range(8, 12):  # and some with the real xid of their transaction
            _insert(conn, table, version)
        for size in (1, 2, 3, 1000):
            lean = _walk_lean(conn, size)
            assert lean == _walk_store(store, size)
        mine = [row for row in lean if row[0] == table]
        assert [row[3] for row in mine][:7] == [9, 10, 10, 99, 99, 100, 100]
        assert len(mine) == 11
        # the stored ruling comes as the store's text (jsonb output), None where there is none
        assert {row[1] for row in mine if row[5] is not None} == {2, 5}
        assert (
            {row[5] for row in mine if row[1] == 2}
            == {store.read_table("acme", table, 1, 1)[0].ruling}
            == {RULING_TEXT}
        )


def test_read_page_holds_back_events_behind_a_running_transaction(private_db: tuple[EventStore, str]) -> None:
    _, url = private_db
    a_table, b_table = "hold-a-" + uuid.uuid4().hex[:8], "hold-b-" + uuid.uuid4().hex[:8]
    with (
        psycopg.connect(url, autocommit=True) as reader,
        psycopg.connect(url) as a,
        psycopg.connect(url) as b,
    ):
        start = (0, 0, 0)
        while page := read_page(reader, start, 1000):
            start = (page[-1][7], page[-1][3], page[-1][2])
        _insert(a, a_table, 1)  # A: the older xid, still running
        _insert(b, b_table, 1)
        b.commit()
        assert read_page(reader, start, 1000) == []  # B waits until nothing older can commit
        with reader.transaction():  # inside a transaction that has an xid of its own, too
            reader.execute("SELECT pg_current_xact_id()")
            assert read_page(reader, start, 1000) == []
        a.commit()
        assert [r[0] for r in read_page(reader, start, 1000)] == [a_table, b_table]
