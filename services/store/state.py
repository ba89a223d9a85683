"""Where a table is, as stored: the engine state at its head, from this process's cache, else the
head's snapshot plus the stored events after it (never a refold of the whole table unless it has no
usable snapshot). Used by both write paths: :func:`tip_from_head` without a lock (the fast path's
second guess), :func:`state_at` under the locked head (the locking path)."""

from __future__ import annotations

from typing import Any

import msgspec
import psycopg
import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from domain.events import decode as decode_event
from projections import stored_facts
from projections.derive import FactCtx, FactsFailed, observe_batch
from services.db import fetch
from services.engine_adapter import Engine
from services.store.batch import decoded_snapshot
from services.store.cache import StateCache, Tip
from services.store.reads import Head, table_is
from services.store.schema import table_heads as heads

# A head at the version the client expects, with its snapshot (the cache-miss fast path).
_READ_HEAD = """
    SELECT version, last_hash, snapshot_version, CASE WHEN snapshot_version > 0 THEN snapshot END,
           CASE WHEN snapshot_version > 0 THEN fact_ctx END
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
    ctx: FactCtx | None,
    start: int,
    version: int,
) -> tuple[Any, FactCtx | None]:
    """``state`` (the table after ``start``) through its stored events up to ``version``, each
    applied as it was accepted (``Engine.replay``, the fold every read uses too), and the fact
    context ``ctx`` moved on with them (their facts are stored already: dropped; None if the
    fact-finder fails — the batch is then stored without facts, for the projector to fold)."""
    if start >= version:
        return state, ctx
    replay = engine.replay
    params = {"tenant": tenant, "t": table_id, "after": start, "upto": version}
    events = [decode_event(body) for (body,) in conn.execute(_READ_BODIES, params)]
    states = [state]
    for event in events:
        state = replay(state, event)
        states.append(state)
    if ctx is not None:
        try:  # the append's own fact-finder, over the stored events; their facts are dropped
            observe_batch(engine, ctx, events, states, {}, start + 1)
        except FactsFailed:  # never fails an append: see services.store.batch._find_facts
            ctx = None
    return state, ctx


def _from_snapshot(
    engine: Engine, tenant: str, table_id: str, snapshot: bytes | None, fact_ctx: bytes | None
) -> tuple[Any, FactCtx] | None:
    """The state and fact context a head's snapshot keeps; None when there is none or it can't be
    used (an older engine's state, or a snapshot stored before facts: no fact context)."""
    if snapshot is None or fact_ctx is None:
        return None
    state = decoded_snapshot(engine, snapshot)
    if state is None:
        return None
    try:
        return state, stored_facts.decode_ctx(bytes(fact_ctx), tenant, table_id)
    except (msgspec.MsgspecError, ValueError, TypeError):
        return None


def state_at(
    conn: psycopg.Connection[Any], engine: Engine, cache: StateCache, head: Head
) -> tuple[Any, FactCtx | None]:
    """The engine state and fact context after ``head.version``: cache, else snapshot + the events
    after it, else a refold from the first event."""
    cached = cache.get((head.tenant, head.table_id), head.version)
    if cached is not None and cached.ctx is not None:
        return cached.state, stored_facts.copy_ctx(cached.ctx)
    found, start = None, 0
    if head.snapshot_version > 0:
        stmt = sa.select(heads.c.snapshot, heads.c.fact_ctx).where(
            *table_is(heads, head.tenant, head.table_id)
        )
        rows = fetch(conn, stmt)
        if rows:
            found = _from_snapshot(engine, head.tenant, head.table_id, rows[0][0], rows[0][1])
            start = head.snapshot_version if found is not None else 0
    if found is None:  # no usable snapshot: refold instead
        found = engine.initial(), FactCtx(table_id=head.table_id, tenant=head.tenant)
    state, ctx = found
    return stepped(conn, engine, head.tenant, head.table_id, state, ctx, start, head.version)


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
            version, last_hash, snapshot_version, snapshot, fact_ctx = row
            state, ctx, start = engine.initial(), FactCtx(table_id=table_id, tenant=tenant), 0
            if snapshot is not None:
                found = _from_snapshot(engine, tenant, table_id, snapshot, fact_ctx)
                if found is None:
                    return None  # a snapshot of an older engine, or of before facts: the locking path refolds
                (state, ctx), start = found, snapshot_version
            state, ctx = stepped(conn, engine, tenant, table_id, state, ctx, start, version)
        finally:
            if not conn.closed:  # a lost connection: its own error says so
                conn.autocommit = False
    tip = Tip(version, state, bytes(last_hash), snapshot_version if snapshot is not None else 0, ctx)
    cache.put((tenant, table_id), tip)
    return tip
