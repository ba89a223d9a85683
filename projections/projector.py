"""The projector: follows the global log gap-free and keeps every read model up to date.

* **Gap-free**: it reads with :func:`projections.log.read_page` — the store's ``read_all``
  predicate (``after=(tx_id, position)``, only events of transactions older than every one still
  running) on the batch's own connection, lean rows — so an event committed late never lands
  behind a checkpoint.
* **Exactly once**: each read model has its own checkpoint row (``projection_checkpoints``). A
  batch is applied in *one* transaction that takes the projector's advisory lock, reads the
  checkpoints, writes every model's rows and moves its checkpoint. A crash rolls the whole batch
  back; a restart resumes at the checkpoints; two projectors (two service processes, or a test
  calling :meth:`Projector.catch_up` while the background one runs) serialise on the lock and
  never apply an event twice.
* **Per-table state**: settlements, 漏胡 and snapshots come from the engine, so the projector
  folds each table — (tenant, table_id), as every log row says — incrementally, keeping its
  :class:`~projections.derive.TableCtx` in a bounded LRU; a table whose cached state is not
  exactly one event behind is refolded from its events.
* **Within a second**: the background :class:`ProjectorRunner` LISTENs on ``kwx_events`` (a
  statement-level trigger on ``events`` NOTIFYs at each append's commit) and also polls every
  ``poll_seconds`` as a safety net. Why not inline in the append: projection work would add to
  append latency and fail appends for read-side reasons, and it would miss events written by
  another process; NOTIFY wakes the projector in milliseconds wherever the append ran. After a
  wake-up it lingers ``linger_seconds`` (50 ms) so that the appends of a burst land in one batch:
  a batch has a fixed cost (its transaction, ≈ 12 statements), and under ingest one batch per
  100-event append cost ≈ 1.8 × the CPU per event of batches of a few hundred.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import psycopg
import structlog
from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert

from projections import registry
from projections.derive import TableCtx, Unreadable, advance_row, new_ctx
from projections.log import read_page
from projections.model import Fact
from projections.schema import OWNED, checkpoints
from projections.sql import Connection, execute_many

log = structlog.get_logger("kwx.projector")

PROJECTOR_LOCK = 0x6B777870  # "kwxp": one projector batch at a time, across processes
CHANNEL = "kwx_events"


class StoredEventLike(Protocol):
    table_id: str
    version: int
    position: int
    tx_id: int
    body: str
    ruling: str | None  # the ruling stored with the event (JSON text), None for a legal event


class EventSource(Protocol):
    """What the projector needs from the event store (services.store.events.EventStore); the log
    itself it reads with :func:`projections.log.read_page`, inside its batch transaction."""

    def read_table(
        self, tenant: str, table_id: str, after: int = 0, limit: int = 100
    ) -> Sequence[StoredEventLike]: ...


Checkpoint = tuple[int, int]


class Projector:
    def __init__(
        self,
        pool: Any,
        source: EventSource,
        engine: Any = None,
        *,
        names: Iterable[str] = registry.NAMES,
        batch_size: int = 1000,
        cache_size: int = 5000,
    ) -> None:
        if engine is None:
            from domain import engine as domain_engine

            engine = domain_engine
        self.pool = pool
        self.source = source
        self.engine = engine
        self.names = tuple(names)
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._tables: OrderedDict[tuple[str, str], TableCtx] = OrderedDict()  # (tenant, table_id)
        self._lock = threading.Lock()
        self.refolds = 0
        self.applied = 0

    # ------------------------------------------------------------------ per-table state
    def _ctx(self, tenant: str, table_id: str, version: int) -> TableCtx:
        """The table's context after ``version − 1`` events (cached, else refolded)."""
        key = (tenant, table_id)
        ctx = self._tables.get(key)
        if ctx is not None and ctx.version == version - 1:
            self._tables.move_to_end(key)
            return ctx
        ctx = self._refold(tenant, table_id, version - 1)
        self._tables[key] = ctx
        while len(self._tables) > self.cache_size:
            self._tables.popitem(last=False)
        return ctx

    def _refold(self, tenant: str, table_id: str, upto: int) -> TableCtx:
        self.refolds += 1
        ctx = new_ctx(self.engine, table_id, tenant)
        after = 0
        while after < upto:
            page = self.source.read_table(tenant, table_id, after=after, limit=min(1000, upto - after))
            if not page:
                break
            for ev in page:
                if ev.version > upto:
                    break
                self._advance(ctx, ev)
                after = ev.version
        return ctx

    def _advance(self, ctx: TableCtx, ev: StoredEventLike) -> list[Fact]:
        """``derive.advance`` with the event's stored ruling; an unreadable event is skipped."""
        try:
            return advance_row(self.engine, ctx, ev.body, ev.ruling, ev.version, ev.position, ev.tx_id)
        except Unreadable as exc:
            _skipped(ev.table_id, ev.version, exc)
            return []

    # ------------------------------------------------------------------ checkpoints
    def _checkpoints(self, conn: Connection, names: Sequence[str]) -> dict[str, Checkpoint]:
        rows = conn.execute(_CHECKPOINTS).fetchall()
        found = {name: (int(tx), int(pos)) for name, tx, pos in rows}
        missing = [n for n in names if n not in found]
        if missing:
            execute_many(
                conn,
                insert(checkpoints).on_conflict_do_nothing(index_elements=["name"]),
                [{"name": n, "tx_id": 0, "position": 0, "events": 0} for n in missing],
            )
            found.update({n: (0, 0) for n in missing})
        return {n: found[n] for n in names}

    def checkpoints(self) -> dict[str, Checkpoint]:
        with self.pool.connection() as conn, conn.transaction():
            return self._checkpoints(conn, self.names)

    # ------------------------------------------------------------------ the loop
    def run_once(self, names: Sequence[str] | None = None) -> int:
        """Apply one batch of new events to the read models; the number of events read."""
        names = tuple(names) if names is not None else self.names
        with self._lock:
            try:
                return self._run_once(names)
            except BaseException:
                self._tables.clear()  # memory may be ahead of the rolled-back checkpoints
                raise

    def _run_once(self, names: Sequence[str]) -> int:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROJECTOR_LOCK,))
            cps = self._checkpoints(conn, names)
            start = min(cps.values())
            events = read_page(conn, start, self.batch_size)
            if not events:
                return 0
            rows: dict[str, list[Any]] = {n: [] for n in names}
            modules = [(n, registry.BY_NAME[n], rows[n], cps[n]) for n in names]
            # Every event read is after ``start``; a model whose checkpoint is further on (a
            # rebuild of some models) counts only the events after its own.
            counts = {
                n: len(events)
                if cps[n] == start
                else sum((tx, pos) > cps[n] for _, _, pos, tx, _, _, _ in events)
                for n in names
            }
            current: str | None = None
            current_tenant: str | None = None
            ctx: TableCtx | None = None
            engine = self.engine
            for table_id, version, position, tx_id, body, ruling, tenant in events:
                # Consecutive events of one table (an append's) reuse its context: _ctx would
                # return the same one, already last in the LRU.
                if (
                    table_id != current
                    or tenant != current_tenant
                    or ctx is None
                    or ctx.version != version - 1
                ):
                    current, current_tenant = table_id, tenant
                    ctx = self._ctx(tenant, table_id, version)
                try:  # (Projector._advance inlined: a call per event)
                    facts = advance_row(engine, ctx, body, ruling, version, position, tx_id)
                except Unreadable as exc:
                    _skipped(table_id, version, exc)
                    continue
                if not facts:
                    continue
                key = (tx_id, position)
                for _name, module, out, cp in modules:
                    if key > cp:
                        for fact in facts:
                            out.extend(module.rows(fact))
            last = (events[-1][3], events[-1][2])  # (tx_id, position)
            moved = [name for name in names if counts[name]]
            # One pipeline for the writes: sent back to back, one round trip (the opening balances'
            # SELECT of the ledger syncs on its own); an error still fails the whole transaction.
            with conn.pipeline():
                for name, module, _, _ in modules:
                    if counts[name]:
                        module.write(conn, rows[name])
                if moved:  # every model's checkpoint in one statement, after its rows
                    conn.execute(_MOVE, (last[0], last[1], moved, [counts[n] for n in moved]))
            self.applied += len(events)
            return len(events)

    def catch_up(self, names: Sequence[str] | None = None, max_seconds: float | None = None) -> int:
        """Run batches until the log has nothing new; the number of events read."""
        total = 0
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        while True:
            n = self.run_once(names)
            total += n
            if n == 0 or (deadline is not None and time.monotonic() > deadline):
                return total

    # ------------------------------------------------------------------ rebuild
    def reset(self, names: Sequence[str]) -> None:
        """Empty the read models ``names`` and move their checkpoints back to position 0 — one
        transaction, under the projector lock."""
        unknown = [n for n in names if n not in registry.BY_NAME]
        if unknown:
            raise KeyError(f"unknown projection(s): {', '.join(unknown)}; known: {', '.join(registry.NAMES)}")
        with self._lock, self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROJECTOR_LOCK,))
            tables = [t.name for n in names for t in OWNED[n]]
            conn.execute(f"TRUNCATE {', '.join(tables)}")
            text_, params = _compiled_delete(names)
            conn.execute(text_, params)
            self._tables.clear()

    def rebuild(self, names: Sequence[str] | None = None) -> int:
        names = tuple(names) if names is not None else self.names
        self.reset(names)
        return self.catch_up(names)


def _skipped(table_id: str, version: int, exc: Unreadable) -> None:
    # One corrupted row must not stop every read model: skip it, say so (kwx verify finds it).
    log.error("projector_event_unreadable", table_id=table_id, version=version, error=str(exc))


_CHECKPOINTS = f"SELECT name, tx_id, position FROM {checkpoints.name}"
_MOVE = (
    f"UPDATE {checkpoints.name} c SET tx_id = %s, position = %s, events = c.events + u.n "
    "FROM unnest(%s::text[], %s::bigint[]) AS u(name, n) WHERE c.name = u.name"
)


def _compiled_delete(names: Sequence[str]) -> tuple[str, dict[str, Any]]:
    from projections.sql import compiled

    return compiled(delete(checkpoints).where(checkpoints.c.name.in_(list(names))))


class ProjectorRunner:
    """Runs a :class:`Projector` in a background thread: LISTEN ``kwx_events`` + a poll."""

    def __init__(
        self,
        projector: Projector,
        conninfo: str,
        *,
        poll_seconds: float = 1.0,
        linger_seconds: float = 0.05,
        configure: Callable[[psycopg.Connection[Any]], None] | None = None,
        heartbeat: Callable[[], None] | None = None,
    ) -> None:
        self.projector = projector
        # called once per turn of the loop (at least every poll_seconds + one catch-up): the
        # process supervising `kwx projections follow` restarts a child whose beats stop
        self.heartbeat = heartbeat
        self.conninfo = conninfo
        self.poll_seconds = poll_seconds
        self.linger_seconds = linger_seconds
        self.configure = configure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.wakeups = 0

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="kwx-projector", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _listen(self) -> psycopg.Connection[Any] | None:
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True)
            conn.execute(f"LISTEN {CHANNEL}")
            return conn
        except psycopg.Error as exc:
            log.warning("projector_listen_failed", error=str(exc))
            return None

    def _run(self) -> None:
        listener = self._listen()
        try:
            while not self._stop.is_set():
                if self.heartbeat is not None:
                    self.heartbeat()
                try:
                    self.projector.catch_up(max_seconds=5.0)
                except Exception as exc:  # keep the service up; the next wake-up retries
                    log.error("projector_batch_failed", error=repr(exc)[:500])
                    self._stop.wait(1.0)
                self._wait(listener)
                if listener is None or listener.closed:
                    listener = self._listen()
        finally:
            if listener is not None:
                listener.close()

    def _wait(self, listener: psycopg.Connection[Any] | None) -> None:
        """Until a notification, ``poll_seconds``, or stop — checking for stop every 50 ms."""
        deadline = time.monotonic() + self.poll_seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            if listener is None or listener.closed:
                self._stop.wait(0.05)
                continue
            try:
                woken = any(True for _ in listener.notifies(timeout=0.05, stop_after=1))
                if woken:  # (outside the generator: it holds the connection's lock)
                    self.wakeups += 1
                    self._linger(listener)
                    return
            except psycopg.Error as exc:
                log.warning("projector_listen_lost", error=str(exc))
                listener.close()

    def _linger(self, listener: psycopg.Connection[Any]) -> None:
        """Let the rest of a burst of appends commit, then drop their notifications: the batch
        that follows reads them all (one wake-up, not one per append)."""
        if self.linger_seconds <= 0 or self._stop.wait(self.linger_seconds):
            return
        for _ in listener.notifies(timeout=0.001):
            pass
