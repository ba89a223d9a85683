"""The locking path of an append — a version conflict, an illegal event, a re-send, a guess the
database refused: one transaction that locks the head row (``FOR UPDATE``), checks the expected
version, steps every event from the state at the locked head (``services.store.state``), ``COPY``s
the batch with its hash chain and moves the head (with a snapshot every ``snapshot_every`` events).
Any failure rolls everything back.

Replay detection lives here too (:func:`replay`): a batch whose every event is already stored with
the same content is answered as it was the first time; an id stored with other content is an
``id_conflict``. Driver errors end here: a unique violation becomes a replay or a conflict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import psycopg
import sqlalchemy as sa
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from domain.events import Event
from projections import stored_facts
from services.db import fetch
from services.engine_adapter import Engine
from services.errors import IdConflict, IllegalEvent, VersionConflict
from services.store import batch as batches
from services.store import chain, distributed
from services.store.batch import AppendResult
from services.store.cache import StateCache, Tip
from services.store.reads import Head, table_is
from services.store.schema import events as ev
from services.store.schema import table_heads as heads
from services.store.state import state_at

COPY = "COPY events (tenant, table_id, version, event_id, type, body, ruling, hash, facts, judge) FROM STDIN"


def append(
    pool: ConnectionPool,
    engine: Engine,
    cache: StateCache,
    snapshot_every: int,
    tenant: str,
    table_id: str,
    expected: int | None,
    events: Sequence[Event],
    canon: list[bytes],
) -> tuple[AppendResult, bool]:
    """The batch stored in one locking transaction (or recognised as stored), the cache moved on;
    and whether the transaction went through (False: a replay found after a unique violation)."""
    with pool.connection() as conn:
        try:
            with conn.transaction():
                citus = distributed.on_citus(pool, conn)
                result, tip = _append_tx(conn, engine, cache, snapshot_every, tenant, table_id,
                                         expected, events, canon, citus=citus)  # fmt: skip
        except pg_errors.UniqueViolation as exc:
            constraint = exc.diag.constraint_name
            with conn.transaction():
                if constraint == "events_table_event_id":
                    found = replay(conn, tenant, table_id, events, canon)
                    if found is not None:
                        return found, False
                current = current_version(conn, tenant, table_id)
            raise VersionConflict(
                "the table moved on while appending; read it and retry", current_version=current
            ) from None
    if tip is not None:
        cache.put((tenant, table_id), tip)
    return result, True


def _append_tx(
    conn: psycopg.Connection[Any],
    engine: Engine,
    cache: StateCache,
    snapshot_every: int,
    tenant: str,
    table_id: str,
    expected: int | None,
    events: Sequence[Event],
    canon: list[bytes],
    *,
    citus: bool = False,
) -> tuple[AppendResult, Tip | None]:
    head = lock_head(conn, tenant, table_id)
    if head is None:
        conn.execute(
            "INSERT INTO table_heads (tenant, table_id, version, last_hash) VALUES (%s, %s, 0, %s) "
            "ON CONFLICT (tenant, table_id) DO NOTHING",
            (tenant, table_id, chain.genesis(table_id)),
        )
        head = lock_head(conn, tenant, table_id)
        assert head is not None
    if expected is not None and expected != head.version:
        found = replay(conn, tenant, table_id, events, canon)
        if found is not None:
            return found, None
        raise VersionConflict(
            f"expected version {expected}, the table is at {head.version}", current_version=head.version
        )
    state, ctx = state_at(conn, engine, cache, head)
    try:
        batch = batches.step(engine, head.version, head.last_hash, state, events, canon, ctx)
    except IllegalEvent:
        found = replay(conn, tenant, table_id, events, canon)
        if found is not None:
            return found, None
        raise
    if citus:  # router statements only (one-phase commit): docs/SCALING.md
        distributed.insert_rows(conn, batch.rows(tenant, table_id))
    else:
        with conn.cursor() as cur, cur.copy(COPY) as copy:
            for row in batch.rows(tenant, table_id):
                copy.write_row(row)
    snapshot_version = head.snapshot_version
    if batch.version - head.snapshot_version >= snapshot_every:
        snapshot_version = batch.version
        conn.execute(
            "UPDATE table_heads SET version = %s, last_hash = %s, snapshot = %s, snapshot_version = %s, "
            "fact_ctx = %s, updated_at = now() WHERE tenant = %s AND table_id = %s",
            (
                batch.version,
                batch.last_hash,
                engine.encode_state(batch.state),
                batch.version,
                stored_facts.encode_ctx(batch.ctx) if batch.ctx is not None else None,
                tenant,
                table_id,
            ),
        )
    else:
        conn.execute(
            "UPDATE table_heads SET version = %s, last_hash = %s, updated_at = now()"
            " WHERE tenant = %s AND table_id = %s",
            (batch.version, batch.last_hash, tenant, table_id),
        )
    result = AppendResult(table_id, batch.version, head.version + 1, len(events), batch.rulings)
    return result, Tip(batch.version, batch.state, batch.last_hash, snapshot_version, batch.ctx)


def lock_head(conn: psycopg.Connection[Any], tenant: str, table_id: str) -> Head | None:
    row = conn.execute(
        "SELECT version, last_hash, snapshot_version FROM table_heads"
        " WHERE tenant = %s AND table_id = %s FOR UPDATE",
        (tenant, table_id),
    ).fetchone()
    if row is None:
        return None
    return Head(tenant, table_id, row[0], bytes(row[1]), row[2])


def current_version(conn: psycopg.Connection[Any], tenant: str, table_id: str) -> int:
    rows = fetch(conn, sa.select(heads.c.version).where(*table_is(heads, tenant, table_id)))
    return int(rows[0][0]) if rows else 0


def replay(
    conn: psycopg.Connection[Any], tenant: str, table_id: str, events: Sequence[Event], canon: list[bytes]
) -> AppendResult | None:
    """The original answer when every event of the batch is already stored with the same
    content; ``IdConflict`` when an id is stored with other content (or only part of the batch
    is stored); None when none of the ids is stored."""
    ids = [e.id for e in events]
    stmt = sa.select(
        ev.c.event_id, ev.c.version, sa.cast(ev.c.body, sa.Text), sa.cast(ev.c.ruling, sa.Text)
    ).where(*table_is(ev, tenant, table_id), ev.c.event_id.in_(ids))
    found = {row[0]: row for row in fetch(conn, stmt)}
    if not found:
        return None
    # Every conflict says the table's stored version (``stored_version``): a client that re-sends a
    # stream after an interruption resumes with the events after it (``kwx push`` does).
    for i, e in enumerate(events):
        row = found.get(e.id)
        if row is not None and chain.canonical_json(row[2]) != canon[i]:
            raise IdConflict(
                f"event id {e.id!r} is already stored (version {row[1]}) with other content",
                index=i, event_id=e.id, version=row[1],
                stored_version=current_version(conn, tenant, table_id),
            )  # fmt: skip
    if len(found) != len(events):
        first = next(i for i, e in enumerate(events) if e.id in found)
        stored = current_version(conn, tenant, table_id)
        raise IdConflict(
            f"part of this batch is already stored: the table is at version {stored}; re-send only "
            "the events after it",
            index=first, event_id=events[first].id, version=found[events[first].id][1], stored_version=stored,
        )  # fmt: skip
    versions = [found[e.id][1] for e in events]
    if versions != list(range(versions[0], versions[0] + len(versions))):
        stored = current_version(conn, tenant, table_id)
        raise IdConflict("these events are stored, but not as one batch in this order", index=0,
                         event_id=events[0].id, stored_version=stored)  # fmt: skip
    rulings = [
        {"index": i, "version": found[e.id][1], **msgspec.json.decode(found[e.id][3])}
        for i, e in enumerate(events)
        if found[e.id][3] is not None
    ]
    return AppendResult(table_id, versions[-1], versions[0], len(events), rulings, replayed=True)
