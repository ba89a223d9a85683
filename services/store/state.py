"""Where a table is, as stored: the engine state at its head, from this process's cache, else the
head's snapshot plus the stored events after it (never a refold of the whole table unless it has no
usable snapshot). Used by both write paths: :func:`tip_from_head` without a lock (the fast path's
second guess), :func:`state_at` under the locked head (the locking path)."""

from __future__ import annotations

from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from domain.events import decode as decode_event
from services.db import fetch
from services.engine_adapter import Engine
from services.store.batch import decoded_snapshot
from services.store.cache import StateCache, Tip
from services.store.reads import Head, table_is
from services.store.schema import table_heads as heads

# A head at the version the client expects, with its snapshot (the cache-miss fast path).
_READ_HEAD = """
    SELECT version, last_hash, snapshot_version, CASE WHEN snapshot_version > 0 THEN snapshot END
      FROM table_heads
     WHERE tenant = %(tenant)s AND table_id = %(t)s AND (version = %(v)s OR %(v)s::bigint IS NULL)
"""
_READ_BODIES = """
    SELECT body::text FROM events
     WHERE tenant = %(tenant)s AND table_id = %(t)s AND version > %(after)s AND version <= %(upto)s
     ORDER BY version
"""


def stepped(
    conn: psycopg.Connection[Any],
    engine: Engine,
    tenant: str,
    table_id: str,
    state: Any,
    start: int,
    version: int,
) -> Any:
    """``state`` (the table after ``start``) through its stored events up to ``version``, each
    applied as it was accepted (``Engine.replay``, the fold every read uses too)."""
    if start < version:
        replay = engine.replay
        params = {"tenant": tenant, "t": table_id, "after": start, "upto": version}
        for (body,) in conn.execute(_READ_BODIES, params):
            state = replay(state, decode_event(body))
    return state


def state_at(conn: psycopg.Connection[Any], engine: Engine, cache: StateCache, head: Head) -> Any:
    """The engine state after ``head.version``: cache, else snapshot + the events after it."""
    cached = cache.get((head.tenant, head.table_id), head.version)
    if cached is not None:
        return cached.state
    state, start = None, 0
    if head.snapshot_version > 0:
        stmt = sa.select(heads.c.snapshot).where(*table_is(heads, head.tenant, head.table_id))
        rows = fetch(conn, stmt)
        if rows and rows[0][0] is not None:
            state = decoded_snapshot(engine, rows[0][0])
            start = head.snapshot_version if state is not None else 0
    if state is None:  # no snapshot, or one of an older engine: refold instead
        state = engine.initial()
    return stepped(conn, engine, head.tenant, head.table_id, state, start, head.version)


def tip_from_head(
    pool: ConnectionPool, engine: Engine, cache: StateCache, tenant: str, table_id: str, version: int | None
) -> Tip | None:
    """The table's tip as stored, when its head is at ``version`` (None: wherever it is): the
    head's snapshot plus the events after it, read without a lock (two round trips at most), and
    put in the cache. None when there is no such head or the snapshot can't be used; the caller
    then takes the locking path. The tip is only a guess like any cached one: the conditional
    ``UPDATE`` checks it."""
    with pool.connection() as conn:
        conn.autocommit = True
        try:
            row = conn.execute(_READ_HEAD, {"tenant": tenant, "t": table_id, "v": version}).fetchone()
            if row is None:
                return None
            version, last_hash, snapshot_version, snapshot = row
            state, start = engine.initial(), 0
            if snapshot is not None:
                state, start = decoded_snapshot(engine, snapshot), snapshot_version
                if state is None:
                    return None  # a snapshot of an older engine: the locking path refolds
            state = stepped(conn, engine, tenant, table_id, state, start, version)
        finally:
            if not conn.closed:  # a lost connection: its own error says so
                conn.autocommit = False
    tip = Tip(version, state, bytes(last_hash), snapshot_version if snapshot is not None else 0)
    cache.put((tenant, table_id), tip)
    return tip
