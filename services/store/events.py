"""The append-only event store (docs/operations.md, The append path; docs/ARCHITECTURE.md).

``EventStore.append`` stores a batch whole or not at all, trying its strategies in order:

1. **fast, from this process's cache** (the usual case): step the batch from the table's cached tip
   (or, for a new table, from nothing) and store it with one conditional statement
   (``services.store.fast``);
2. **fast, from the head as stored**: on a cache miss with ``expected_version`` (or once after a
   failed guess without it, if the head moved) read the head's snapshot plus the events after it
   without a lock (``services.store.state``) and try the same statement from there;
3. **locking** (a version conflict, an illegal event, a re-send, a guess the database refused):
   one transaction under ``FOR UPDATE`` that answers every case (``services.store.locked``).

What is stored is prepared once, purely (``services.store.batch``); the reads are
``services.store.reads``. Never a refold of the whole table per request (unless it has no usable
snapshot). A table is ``(tenant, table_id)`` (issue 11 §4): every statement, the cache and the locks
key by both, so two tenants' tables of the same id are two tables.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from psycopg_pool import ConnectionPool

from domain.events import Event
from services.db import RetryIfLost
from services.engine_adapter import Engine
from services.store import batch as batches
from services.store import fast, locked, reads
from services.store.batch import AppendResult
from services.store.cache import StateCache, Tip
from services.store.fast import FastPlan
from services.store.reads import Head, StoredEvent
from services.store.state import tip_from_head
from services.store.verify import BrokenLink

__all__ = ["AppendResult", "EventStore", "FastPlan", "Head", "StoredEvent"]


class EventStore:
    def __init__(self, pool: ConnectionPool, engine: Engine, *, snapshot_every: int = 50) -> None:
        self.pool = pool
        self.engine = engine
        self.snapshot_every = max(1, snapshot_every)
        self.cache = StateCache()
        self.fast_appends = self.locked_appends = 0
        self.retried_appends = 0  # appends tried again after their connection broke (append)

    # ------------------------------------------------------------------ append
    def append(
        self,
        tenant: str,
        table_id: str,
        expected_version: int | None,
        events: Sequence[Event],
        *,
        retry: bool = True,
    ) -> AppendResult:
        """Store ``events`` after ``expected_version`` (None: wherever the table is), whole or not at
        all; the answer, a replay's answer, or a ``ServiceError``. When the connection breaks under
        it (``services.db.connection_lost``: the server ended the session, restarted …) the batch is
        appended once more on another connection (``retry``; ``services.db.RetryIfLost``): it was
        stored or it was not, and the second try either stores it or recognises it as stored
        (idempotent by event id). The cached tip is dropped first: the database, not this
        process, says where the table is."""
        if not retry:
            return self._append(tenant, table_id, expected_version, events)
        with RetryIfLost(lambda _exc: self._lost(tenant, table_id)):
            return self._append(tenant, table_id, expected_version, events)
        return self._append(tenant, table_id, expected_version, events)

    def _lost(self, tenant: str, table_id: str) -> None:
        self.cache.drop((tenant, table_id))
        self.retried_appends += 1

    def _append(
        self, tenant: str, table_id: str, expected_version: int | None, events: Sequence[Event]
    ) -> AppendResult:
        events, canon = batches.prepare(self.engine, events)
        for tip, create in self._tips(tenant, table_id, expected_version):
            result = self._run_fast(self._plan_fast(tenant, table_id, tip, create, events, canon))
            if result is not None:
                return result
        result, committed = locked.append(self.pool, self.engine, self.cache, self.snapshot_every,
                                          tenant, table_id, expected_version, events, canon)  # fmt: skip
        self.locked_appends += committed
        return result

    def _tips(self, tenant: str, table_id: str, expected_version: int | None) -> Iterator[tuple[Tip, bool]]:
        """The tips to try the fast path from, as (tip, the table is new), each read only when the
        one before failed: the cached guess; else, with an expected version, the head at it; after
        a failed guess without one, the head as stored — unless it is where the guess was (then the
        batch itself is the problem: the locking path says why)."""
        cached = self.cache.peek((tenant, table_id))
        guess = fast.guess(self.engine, tenant, table_id, cached, expected_version)
        if guess is not None:
            yield guess
            if expected_version is None:  # the cached tip was behind (another worker appended)
                stored = tip_from_head(self.pool, self.engine, self.cache, tenant, table_id, None)
                if stored is not None and (cached is None or stored.version != cached.version):
                    yield stored, False
        elif expected_version is not None and expected_version > 0:
            # not in this process's cache, or behind (another worker appended)
            stored = tip_from_head(self.pool, self.engine, self.cache, tenant, table_id, expected_version)
            if stored is not None:
                yield stored, False

    def _plan_fast(
        self, tenant: str, table_id: str, tip: Tip, create: bool, events: Sequence[Event], canon: list[bytes]
    ) -> FastPlan | None:
        return fast.plan(self.engine, self.snapshot_every, tenant, table_id, tip, create, events, canon)

    def _run_fast(self, plan: FastPlan | None) -> AppendResult | None:
        return None if plan is None else self.finish_fast(plan, fast.run(self.pool, plan))

    def plan_cached(
        self, tenant: str, table_id: str, expected_version: int | None, events: Sequence[Event]
    ) -> FastPlan | None:
        """CPU only, no database: the fast path's statement when this process's cache says where the
        table is (or that it is new), for a caller that runs the statement itself
        (``fast.AsyncFastPath``, on an async connection). None: no such guess — call
        :meth:`append`. Run the plan, then hand the row count to :meth:`finish_fast`."""
        guess = fast.guess(
            self.engine, tenant, table_id, self.cache.peek((tenant, table_id)), expected_version
        )
        if guess is None:
            return None  # nothing prepared: append does it
        events, canon = batches.prepare(self.engine, events)
        return self._plan_fast(tenant, table_id, *guess, events, canon)

    def finish_fast(self, plan: FastPlan, inserted: int) -> AppendResult | None:
        """The outcome of a plan's statement that inserted ``inserted`` rows (0 after a unique
        violation): the answer, with the cache moved on; or None (the cache dropped) — then
        :meth:`append` answers (replay, conflict, or the head read / locking path)."""
        result = fast.finish(self.cache, plan, inserted)
        self.fast_appends += result is not None
        return result

    # ------------------------------------------------------------------ reads
    def head(self, tenant: str, table_id: str) -> Head | None:
        """The tenant's table ``table_id``, or None (another tenant's table of that id is not it)."""
        return reads.head(self.pool, tenant, table_id)

    def read_table(self, tenant: str, table_id: str, after: int = 0, limit: int = 100) -> list[StoredEvent]:
        """Events of the tenant's table with version > ``after``, in version order."""
        return reads.read_table(self.pool, tenant, table_id, after, limit)

    def read_all(self, after: tuple[int, int, int] = (0, 0, 0), limit: int = 1000) -> list[StoredEvent]:
        """The global log, gap-free: events committed by transactions older than every transaction
        still running (in the current log epoch; every event of an older one), in (epoch, tx_id,
        position) order, strictly after the checkpoint ``after`` = (epoch, tx_id, position) of the
        last event seen. Pass the last event's ``(epoch, tx_id, position)`` back as the next
        ``after``; an event committed late can never land before it (docs/operations.md). Reads
        on one pooled connection, held for this statement only."""
        return reads.read_all(self.pool, after, limit)

    # ------------------------------------------------------------------ verify
    def verify(
        self, table_id: str | None = None, *, tenant: str | None = None
    ) -> tuple[int, int, list[BrokenLink]]:
        """Recompute the hash chain of every table (of ``tenant``, of id ``table_id``, when given):
        ``services.store.verify``."""
        from services import metrics
        from services.store.verify import verify

        tables, events, broken = verify(self.pool, table_id, tenant=tenant)
        metrics.chain_failures(len(broken))
        return tables, events, broken
