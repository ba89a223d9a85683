"""The fast path of an append: a batch stepped from a *tip* (where the table is believed to be) and
stored by one autocommit statement that moves the head only if it is still at the tip's version
(``UPDATE … WHERE version = …``; a new table: ``INSERT … ON CONFLICT DO NOTHING``). Zero rows
inserted — the tip was wrong, or an id is already stored — and the caller takes the next strategy
(``EventStore.append``); this path never answers a conflict, a replay or a refusal itself.

Two ways to run the statement: on a pooled connection (:func:`run`, the store's ``append``), or —
the HTTP service — :class:`AsyncFastPath`: the batch stepped in the event loop's thread from this
process's cached tip and the statement awaited on an async pool of that loop, without a thread hop;
anything it cannot place goes to ``EventStore.append`` on an executor thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from domain.events import Event
from projections import stored_facts
from projections.arrays import bytea_array
from projections.derive import FactCtx
from services import tracing
from services.db import RetryIfLost
from services.engine_adapter import Engine
from services.errors import IllegalEvent
from services.logs import get_logger
from services.store import batch as batches
from services.store import chain, distributed
from services.store.batch import AppendResult, Batch
from services.store.cache import StateCache, Tip

if TYPE_CHECKING:
    from services.store.events import EventStore

# the log of the HTTP append (its lines ride on the request's access line: services.api.app)
log = get_logger("kwx.api")

# A table's first batch: create the head with the batch's outcome; 0 rows if the table exists.
_CREATE_HEAD = """
    INSERT INTO table_heads (table_id, tenant, version, last_hash, snapshot, snapshot_version, fact_ctx)
    VALUES (%(t)s, %(tenant)s, %(new)s, %(hash)s, %(snap)s::bytea,
            CASE WHEN %(snap)s::bytea IS NULL THEN 0 ELSE %(new)s END, %(fctx)b::bytea)
    ON CONFLICT (tenant, table_id) DO NOTHING
    RETURNING 1
"""

# One round trip, one implicit transaction: move the head only if it is still where the cache
# says, and insert the batch only if the head moved. 0 rows inserted → take the locking path.
_MOVE_HEAD = """
    UPDATE table_heads
       SET version = %(new)s, last_hash = %(hash)s, updated_at = now(),
           snapshot = CASE WHEN %(snap)s::bytea IS NULL THEN snapshot ELSE %(snap)s::bytea END,
           snapshot_version = CASE WHEN %(snap)s::bytea IS NULL THEN snapshot_version ELSE %(new)s END,
           fact_ctx = CASE WHEN %(snap)s::bytea IS NULL THEN fact_ctx ELSE %(fctx)b::bytea END
     WHERE tenant = %(tenant)s AND table_id = %(t)s AND version = %(old)s
    RETURNING 1
"""

_INSERT = """
INSERT INTO events (tenant, table_id, version, event_id, type, body, ruling, hash, facts, judge)
SELECT %(tenant)s, %(t)s, %(old)s + e.i, e.body ->> 'id', e.body ->> 'type', e.body,
       NULLIF(%(rulings)s::jsonb -> (e.i - 1)::int, 'null'::jsonb),
       substring(%(hashes)s::bytea FROM ((e.i - 1) * 32 + 1)::int FOR 32),
       (%(facts)b::bytea[])[array_position(%(facts_at)s::integer[], e.i::integer)],
       CASE WHEN e.i = ANY(%(unknown)s::integer[]) THEN NULL ELSE %(judge)s::integer END
  FROM head, jsonb_array_elements(%(bodies)s::jsonb) WITH ORDINALITY AS e(body, i)
 ORDER BY e.i
"""

CREATE = "WITH head AS (" + _CREATE_HEAD + ")" + _INSERT
MOVE = "WITH head AS (" + _MOVE_HEAD + ")" + _INSERT


@dataclass(slots=True)
class FastPlan:
    """A batch stepped from a tip, and the one statement that stores it if the tip is right."""

    tenant: str
    table_id: str
    tip: Tip
    batch: Batch
    snapshot: bool  # the statement also stores the state snapshot
    count: int
    sql: str
    params: dict[str, Any]


def guess(
    engine: Engine, tenant: str, table_id: str, tip: Tip | None, expected_version: int | None
) -> tuple[Tip, bool] | None:
    """Where this process's cached ``tip`` of the table says it is, as (tip, the table is new);
    None when it can't say (not cached and not new, behind ``expected_version``)."""
    if tip is not None and expected_version in (None, tip.version):
        return tip, False
    if tip is None and expected_version in (None, 0):
        return Tip(
            0, engine.initial(), chain.genesis(table_id), 0, FactCtx(table_id=table_id, tenant=tenant)
        ), True
    return None


def _json_array(texts: list[str | None]) -> str:
    return "[" + ",".join(t or "null" for t in texts) + "]"


def plan(
    engine: Engine,
    snapshot_every: int,
    tenant: str,
    table_id: str,
    tip: Tip,
    create: bool,
    events: Sequence[Event],
    canon: list[bytes],
) -> FastPlan | None:
    """The batch stepped from ``tip`` and the statement that stores it (``create``: the head row is
    inserted, for a new table); None if the batch is illegal from there (re-checked under the lock,
    where a replay is recognised too)."""
    try:
        batch = batches.step(engine, tip.version, tip.last_hash, tip.state, events, canon, tip.ctx)
    except IllegalEvent:
        return None
    snapshot = fact_ctx = None
    if batch.version - tip.snapshot_version >= snapshot_every:
        snapshot = engine.encode_state(batch.state)
        fact_ctx = stored_facts.encode_ctx(batch.ctx) if batch.ctx is not None else None
    # The facts travel as the few that there are, with their 1-based indexes in the batch — as a
    # bytea[] already in PostgreSQL's binary form and an int[] literal: psycopg's own list
    # adaptation cost ≈ 45 µs per batch (docs/projections.md §6, "The ingest path, judged once").
    facts = facts_at = None
    if batch.facts:
        found = [(i, f) for i, f in enumerate(batch.facts, start=1) if f is not None]
        if found:
            facts_at, facts = _int_array([i for i, _ in found]), bytea_array([f for _, f in found])
    # The batch travels as three values, not 7 arrays of 100: the canonical bodies as one JSON
    # array (id and type are read back from them), the rulings as one JSON array (or NULL), and
    # the 32-byte hashes concatenated.
    params = {
        "t": table_id, "tenant": tenant, "old": tip.version, "new": batch.version,
        "hash": batch.last_hash, "snap": snapshot, "fctx": fact_ctx,
        "facts": facts, "facts_at": facts_at, "judge": batch.judge,
        "unknown": _int_array(batch.unknown) if batch.unknown else None,
        "bodies": (b"[" + b",".join(batch.canon) + b"]").decode(),
        "rulings": _json_array(batch.ruling_texts) if batch.ruling_texts else None,
        "hashes": b"".join(batch.hashes),
    }  # fmt: skip
    return FastPlan(tenant, table_id, tip, batch, snapshot is not None, len(events),
                    CREATE if create else MOVE, params)  # fmt: skip


def _int_array(items: Sequence[int]) -> str:
    """An ``integer[]`` literal (``{1,5,9}``), cast by the statement: a str is sent as it is."""
    return "{" + ",".join(map(str, items)) + "}"


def run(pool: ConnectionPool, plan: FastPlan) -> int:
    """The plan's statement on a pooled connection (autocommit); the rows it inserted (0 after a
    unique violation: an id already stored — the locking path says replay or conflict)."""
    with pool.connection() as conn:
        conn.autocommit = True
        try:
            if distributed.on_citus(pool, conn):
                return _run_citus(conn, plan)
            return conn.execute(plan.sql, plan.params).rowcount
        except pg_errors.UniqueViolation:
            return 0
        finally:
            if not conn.closed:  # a lost connection: its own error says so
                conn.autocommit = False


async def run_async(pool: AsyncConnectionPool, plan: FastPlan) -> int:
    """:func:`run` on an async pool (whose connections are autocommit)."""
    try:
        async with pool.connection() as conn:
            if await distributed.on_citus_async(pool, conn):
                return await _run_citus_async(conn, plan)
            return (await conn.execute(plan.sql, plan.params)).rowcount
    except pg_errors.UniqueViolation:
        return 0


# On Citus (services/store/distributed.py): the same outcome as the one statement, from router
# statements in one single-node transaction (one-phase commit): the head first, then the events
# only if it moved.
def _head_sql(plan: FastPlan) -> str:
    return _CREATE_HEAD if plan.sql == CREATE else _MOVE_HEAD


def _run_citus(conn: Any, plan: FastPlan) -> int:
    with conn.transaction():
        if conn.execute(_head_sql(plan), plan.params).rowcount != 1:
            return 0
        return distributed.insert_rows(conn, plan.batch.rows(plan.tenant, plan.table_id))


async def _run_citus_async(conn: Any, plan: FastPlan) -> int:
    rows = plan.batch.rows(plan.tenant, plan.table_id)
    async with conn.transaction():
        if (await conn.execute(_head_sql(plan), plan.params)).rowcount != 1:
            return 0
        return await distributed.insert_rows_async(conn, rows)


def finish(cache: StateCache, plan: FastPlan, inserted: int) -> AppendResult | None:
    """The outcome of a plan's statement that inserted ``inserted`` rows: the answer, with the
    cache moved on; or None (the cache dropped)."""
    batch, tip = plan.batch, plan.tip
    key = (plan.tenant, plan.table_id)
    if inserted != plan.count:
        cache.drop(key)
        return None
    snapshot_version = batch.version if plan.snapshot else tip.snapshot_version
    if batch.ctx is None:  # facts not found (services.store.batch._find_facts): the next append refolds
        cache.drop(key)
    else:
        cache.put(key, Tip(batch.version, batch.state, batch.last_hash, snapshot_version, batch.ctx))
    return AppendResult(plan.table_id, batch.version, tip.version + 1, plan.count, batch.rulings)


# A plain executor, not anyio's run_in_threadpool (≈ 0.1 ms of bookkeeping per call in the event
# loop's thread); up to 40 appends at once, as anyio's default limiter allowed.
_THREADS = ThreadPoolExecutor(max_workers=40, thread_name_prefix="kwx-append")  # threads start on use


async def in_thread(
    store: EventStore,
    tenant: str,
    table_id: str,
    expected_version: int | None,
    events: Sequence[Event],
    *,
    retry: bool = True,
) -> AppendResult:
    """``store.append`` on an executor thread (``retry=False``: its one retry
    after a lost connection is already spent)."""
    call = store.append if retry else partial(store.append, retry=False)
    if tracing.active():  # the thread's spans (the engine, the SQL) in the request's trace
        call = partial(contextvars.copy_context().run, call)
    return await asyncio.get_running_loop().run_in_executor(
        _THREADS, call, tenant, table_id, expected_version, events
    )


class AsyncFastPath:
    """The HTTP append for an event loop: a batch this process's cache can place is stepped in the
    loop's thread (CPU work that would hold the GIL in any thread) and its one conditional
    statement awaited on this loop's async pool (opened on first use; none without a database URL,
    or if it cannot be opened: then the executor serves); anything else — no cached guess, the
    database refused the guess — goes to ``EventStore.append`` on an executor thread (head read,
    replay, conflict, refusal). One per app; :meth:`close` at the lifespan's end."""

    def __init__(self, url: str | None, *, size: int, role: str | None) -> None:
        self.url, self.size, self.role = url, size, role
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Task[AsyncConnectionPool | None]] = {}

    async def append(
        self,
        store: EventStore,
        tenant: str,
        table_id: str,
        expected_version: int | None,
        events: Sequence[Event],
    ) -> AppendResult:
        """``store.append``'s answer, without a thread when the cache can place
        the batch. When the connection breaks under the statement, stored or not, nobody knows: the
        store's append finds out on another connection (the same batch again: stored now, or
        recognised as stored — a replay), and that is the one retry (docs/faults.md)."""
        pool = await self._pool()
        result = None
        lost = RetryIfLost(partial(self._lost, store, tenant, table_id))
        if pool is not None:
            with lost:
                result = await self._planned(store, pool, tenant, table_id, expected_version, events)
        if result is None:
            result = await in_thread(
                store, tenant, table_id, expected_version, events, retry=lost.lost is None
            )
        return result

    @staticmethod
    async def _planned(
        store: EventStore,
        pool: AsyncConnectionPool,
        tenant: str,
        table_id: str,
        expected: int | None,
        events: Sequence[Event],
    ) -> AppendResult | None:
        plan = store.plan_cached(tenant, table_id, expected, events)
        if plan is None:
            return None
        return store.finish_fast(plan, await run_async(pool, plan))

    @staticmethod
    def _lost(store: EventStore, tenant: str, table_id: str, exc: BaseException) -> None:
        store.cache.drop((tenant, table_id))
        log.warning("append_connection_lost", detail=str(exc)[:200])
        structlog.contextvars.bind_contextvars(retried=True)

    async def _pool(self) -> AsyncConnectionPool | None:
        """This event loop's async pool, opened on first use."""
        if self.url is None:
            return None
        loop = asyncio.get_running_loop()
        task = self._pools.get(loop)
        if task is None:
            task = self._pools[loop] = loop.create_task(self._open())
        return await asyncio.shield(task)

    async def _open(self) -> AsyncConnectionPool | None:
        from services.db import open_async_pool

        assert self.url is not None
        try:
            pool = await open_async_pool(self.url, size=self.size, role=self.role)
        except Exception:  # the sync pool and the executor still serve; say so once
            log.warning("async_pool_unavailable", exc_info=True)
            return None
        from services import metrics

        metrics.POOLS.add("async", pool)
        return pool

    async def close(self) -> None:
        """Close this event loop's async pool, if it has one."""
        task = self._pools.pop(asyncio.get_running_loop(), None)
        pool = await task if task is not None else None
        if pool is not None:
            await pool.close()
