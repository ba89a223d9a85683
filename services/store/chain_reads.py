"""Reads for the export (services/store/export.py): a table's events with their stored chain hashes,
in version order and in pages, the stored hash just before a version, and where a hand starts and
ends. Every read keys by (tenant, table_id) (``reads.table_is``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from services.db import read_rows
from services.store import chain
from services.store.reads import table_is
from services.store.schema import events as ev


def hashed_page(
    pool: ConnectionPool, tenant: str, table_id: str, after: int, upto: int, limit: int
) -> list[tuple[int, bytes, bytes]]:
    """(version, canonical event bytes, stored hash) of versions ``after`` < v ≤ ``upto``, at most
    ``limit``. The canonical bytes are the stored JSON re-encoded canonically (``chain.canonical_json``:
    what the chain hashed)."""
    stmt = (
        sa.select(ev.c.version, sa.cast(ev.c.body, sa.Text), ev.c.hash)
        .where(*table_is(ev, tenant, table_id), ev.c.version > after, ev.c.version <= upto)
        .order_by(ev.c.version)
        .limit(limit)
    )
    return [(v, chain.canonical_json(body), bytes(h)) for v, body, h in read_rows(pool, stmt)[0]]


def hash_before(pool: ConnectionPool, tenant: str, table_id: str, version: int) -> bytes:
    """The stored chain hash of ``version - 1`` (the genesis before version 1)."""
    if version <= 1:
        return chain.genesis(table_id)
    stmt = sa.select(ev.c.hash).where(*table_is(ev, tenant, table_id), ev.c.version == version - 1)
    rows = read_rows(pool, stmt)[0]
    return bytes(rows[0][0]) if rows else chain.genesis(table_id)


def opened(pool: ConnectionPool, tenant: str, table_id: str) -> dict[str, Any] | None:
    """The table's ``table_opened`` event (version 1) as JSON, or None."""
    import msgspec

    stmt = sa.select(sa.cast(ev.c.body, sa.Text)).where(
        *table_is(ev, tenant, table_id), ev.c.version == 1, ev.c.type == "table_opened"
    )
    rows = read_rows(pool, stmt)[0]
    return msgspec.json.decode(rows[0][0]) if rows else None


def hand_range(
    pool: ConnectionPool, tenant: str, table_id: str, hand: int, upto: int
) -> tuple[int, int] | None:
    """(first, last) version of hand ``hand``: from its ``hand_started`` to the event before the
    next hand's ``hand_started`` (or the table's last event, ``upto``), so the hand's own trailing
    events (``ma_drawn``, ``wall_revealed``, ``settlement_reported``, …) are in it; None when the
    hand never started. Hand numbers are 1, 2, … consecutive (CONTRACT.md §1)."""
    started = sa.cast(ev.c.body["hand"].astext, sa.BigInteger)
    stmt = (
        sa.select(started, sa.func.min(ev.c.version))
        .where(
            *table_is(ev, tenant, table_id),
            ev.c.type == "hand_started",
            ev.c.version <= upto,
            started.in_([hand, hand + 1]),
        )
        .group_by(started)
    )
    found = dict(read_rows(pool, stmt)[0])
    if hand not in found:
        return None
    first = int(found[hand])
    last = int(found[hand + 1]) - 1 if hand + 1 in found else upto
    return first, last
