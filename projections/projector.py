"""The projector: follows the global log gap-free and keeps every read model up to date.

* **Gap-free**: it reads with :func:`projections.log.read_facts_page` — the store's ``read_all``
  predicate (``after=(tx_id, position)``, only events of transactions older than every one still
  running) on the batch's own connection, lean rows — so an event committed late never lands
  behind a checkpoint.
* **Exactly once**: each read model has its own checkpoint row (``projection_checkpoints``). A
  batch is applied in *one* transaction that takes the projector's advisory lock, reads the
  checkpoints, writes every model's rows and moves its checkpoint. A crash rolls the whole batch
  back; a restart resumes at the checkpoints; two projectors (two service processes, or a test
  calling :meth:`Projector.catch_up` while the background one runs) serialise on the lock and
  never apply an event twice.
* **Judged once** (issue 16): settlements, 漏胡 and snapshots come from the engine, which the
  append already ran: it stored each event's facts with it (:mod:`projections.stored_facts`), and
  the projector takes them as stored when their judge is its own. Only an event another judge
  stored (an older or newer kwx, or before migration 0012) is folded here: per table — (tenant,
  table_id), as every log row says — incrementally, keeping its
  :class:`~projections.derive.TableCtx` in a bounded LRU; a table whose cached state is not
  exactly one event behind is refolded from its events.
* **Parked events** (docs/projections.md §1): an event a read model cannot apply (its ``rows``
  raise, or PostgreSQL refuses its rows: a value out of range, a constraint) is *parked* for that
  model (``projection_parked``, :mod:`projections.parked`) and the model moves on. The batch is
  applied whole as before; only when it fails is it applied again in one transaction with a
  savepoint per model, and per event for a model whose rows fail, which isolates the poison. A
  later event of a table with a parked event is parked behind it for that model, in order, until
  ``retry`` applies them. Errors of the database itself (a lost connection, a timeout) are not
  poison: the batch fails and is tried again, as before.
* **Log epochs**: the log's order is ``(epoch, tx_id, position)`` (docs/operations.md); a
  checkpoint ahead of anything the log can produce in the current epoch is *stale*, logged
  (``projector_checkpoint_stale``) and shown by ``kwx projections status`` and health.
* **Within a second**: the background :class:`ProjectorRunner` LISTENs on ``kwx_events`` (a
  statement-level trigger on ``events`` NOTIFYs at each append's commit) and also polls every
  ``poll_seconds`` as a safety net. Why not inline in the append: projection work would add to
  append latency and fail appends for read-side reasons, and it would miss events written by
  another process; NOTIFY wakes the projector in milliseconds wherever the append ran. After a
  wake-up it gathers the appends that follow: it waits until none has come for ``linger_seconds``
  (50 ms: a burst has committed) or until ``gather_seconds`` (``KWX_PROJECTOR_GATHER``) have
  passed under appends that keep coming, then reads them all in one batch. A batch has a fixed
  cost (its transaction, ≈ 19 statements, ≈ 7 ms of CPU): under ingest one batch per 100-event
  append cost ≈ 3 × the CPU per event of batches of ≈ 400, and ≈ 6 × that of 4000-event pages.
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

from domain.engine import Replayer
from projections import feed, parked, registry
from projections.derive import TableCtx, Unreadable, advance_row, new_ctx
from projections.log import CHECKPOINTS, LogPlace, read_facts_page, stale
from projections.model import Fact
from projections.parked import Park, parkable
from projections.schema import OWNED, checkpoints
from projections.sql import Connection, execute_many
from projections.stored_facts import JUDGE
from projections.stored_facts import decode as decode_facts

log = structlog.get_logger("kwx.projector")

PROJECTOR_LOCK = 0x6B777870  # "kwxp": one projector batch at a time, across processes
CHANNEL = "kwx_events"


class StoredEventLike(Protocol):
    @property
    def table_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def tx_id(self) -> int: ...
    @property
    def body(self) -> str: ...
    @property
    def ruling(self) -> str | None: ...  # the ruling stored with the event (JSON text), None: legal


class EventSource(Protocol):
    """The event store (services.store.events.EventStore). The projector reads the log with
    :func:`projections.log.read_facts_page` and a table's events for a refold with its own statement,
    both on the batch's connection: no second pooled connection while it holds one."""

    def read_table(
        self, tenant: str, table_id: str, after: int = 0, limit: int = 100
    ) -> Sequence[StoredEventLike]: ...


Checkpoint = LogPlace  # (epoch, tx_id, position) of the last event a model applied


class Projector:
    def __init__(
        self,
        pool: Any,
        source: EventSource,
        engine: Replayer | None = None,
        *,
        names: Iterable[str] = registry.NAMES,
        batch_size: int = 4000,  # log events a batch passes over (≈ 5 % of them with facts)
        cache_size: int = 5000,
        judge: int | None = JUDGE,
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
        self._parked_now: dict[str, int] = {}  # each model's parked count, as last read
        self._parked_key: tuple[int, ...] | None = None
        self._blocked: dict[tuple[str, str, str], int] | None = None
        self._stale_said: dict[str, Checkpoint] = {}
        # Whose stored facts it takes as its own (projections.stored_facts): events another judge
        # stored — an older or newer kwx, or none (before migration 0012) — are folded instead;
        # None: fold everything (``kwx projections rebuild --refold``).
        self.judge = judge
        self.refolds = 0
        self.applied = 0
        self.stored_facts = 0  # events whose stored facts were applied
        self.folded = 0  # events folded here
        # Called after each committed batch with (model → events applied, events parked with an
        # error): the service's metrics (services/metrics.py); this package stays free of them.
        self.on_batch: Callable[[dict[str, int], int], None] | None = None

    # ------------------------------------------------------------------ per-table state
    def _ctx(self, tenant: str, table_id: str, version: int, conn: Connection | None = None) -> TableCtx:
        """The table's context after ``version − 1`` events (cached, else refolded on ``conn``,
        the caller's connection; without one, on a connection of its own)."""
        key = (tenant, table_id)
        ctx = self._tables.get(key)
        if ctx is not None and ctx.version == version - 1:
            self._tables.move_to_end(key)
            return ctx
        if conn is None:
            with self.pool.connection() as own:
                ctx = self._refold(own, tenant, table_id, version - 1)
        else:
            ctx = self._refold(conn, tenant, table_id, version - 1)
        self._tables[key] = ctx
        while len(self._tables) > self.cache_size:
            self._tables.popitem(last=False)
        return ctx

    def _refold(self, conn: Connection, tenant: str, table_id: str, upto: int) -> TableCtx:
        self.refolds += 1
        ctx = new_ctx(self.engine, table_id, tenant)
        self._fold(conn, ctx, upto)
        return ctx

    def _fold(
        self, conn: Connection, ctx: TableCtx, upto: int, keep: frozenset[int] = frozenset()
    ) -> dict[int, list[Fact]]:
        """Advance ``ctx`` over its table's stored events up to version ``upto``, read on ``conn``;
        the facts of the versions in ``keep`` (the rest are dropped)."""
        kept: dict[int, list[Fact]] = {}
        after = ctx.version
        while after < upto:
            page = conn.execute(
                _TABLE_EVENTS, (ctx.tenant, ctx.table_id, after, upto, min(1000, upto - after))
            ).fetchall()
            if not page:
                break
            for version, position, tx_id, body, ruling in page:
                try:
                    facts = advance_row(self.engine, ctx, body, ruling, version, position, tx_id)
                except Unreadable as exc:
                    _skipped(ctx.table_id, version, exc)
                    facts = []
                if version in keep:
                    kept[version] = facts
                after = version
        return kept

    # ------------------------------------------------------------------ checkpoints
    def _checkpoints(self, conn: Connection, names: Sequence[str]) -> dict[str, Checkpoint]:
        rows = conn.execute(_CHECKPOINTS).fetchall()
        found = {name: (int(ep), int(tx), int(pos)) for name, ep, tx, pos, *_ in rows}
        self._parked_now = {name: int(n) for name, _, _, _, n, *_ in rows}
        if rows:
            self._note_stale(found, int(rows[0][5]), int(rows[0][6]))
        missing = [n for n in names if n not in found]
        if missing:
            execute_many(
                conn,
                insert(checkpoints).on_conflict_do_nothing(index_elements=["name"]),
                [{"name": n, "epoch": 0, "tx_id": 0, "position": 0, "events": 0} for n in missing],
            )
            found.update({n: (0, 0, 0) for n in missing})
        return {n: found[n] for n in names}

    def checkpoints(self) -> dict[str, Checkpoint]:
        with self.pool.connection() as conn, conn.transaction():
            return self._checkpoints(conn, self.names)

    def _note_stale(self, found: dict[str, Checkpoint], epoch: int, next_xid: int) -> None:
        """Log each checkpoint ahead of anything the log can produce (once, until it changes)."""
        for name, cp in found.items():
            if stale(cp, epoch, next_xid):
                if self._stale_said.get(name) != cp:
                    self._stale_said[name] = cp
                    log.error(
                        "projector_checkpoint_stale", projection=name, checkpoint=list(cp), epoch=epoch,
                        next_xid=next_xid, help="restored or copied checkpoints: kwx projections rebuild",
                    )  # fmt: skip
            else:
                self._stale_said.pop(name, None)

    def _blocked_tables(self, conn: Connection, names: Sequence[str]) -> dict[tuple[str, str, str], int]:
        """(model, tenant, table) → position of its first parked event; reloaded only when a
        model's parked count (read with the checkpoints) changed."""
        key = tuple(self._parked_now.get(n, 0) for n in names)
        if key != self._parked_key or self._blocked is None:
            self._blocked = parked.blocked(conn) if any(key) else {}
            self._parked_key = key
        return self._blocked

    def status(self) -> list[dict[str, Any]]:
        """Per model: its checkpoint, how many stored events are after it (the log's order), its
        parked events (count, when the oldest was parked) and whether the checkpoint is stale — the
        read side's :class:`projections.queries.freshness.Status`, after giving a model without a
        checkpoint row its row at 0 (as a batch would)."""
        from projections.queries.freshness import Status

        with self.pool.connection() as conn, conn.transaction():
            self._checkpoints(conn, self.names)
            return Status(self.names)(conn)

    # ------------------------------------------------------------------ the loop
    def run_once(self, names: Sequence[str] | None = None) -> int:
        """Apply one batch of new events to the read models; the number of events read."""
        names = tuple(names) if names is not None else self.names
        with self._lock:
            try:
                try:
                    return self._run_once(names, careful=False)
                except Exception as exc:
                    if not parkable(exc):
                        raise
                    # Some model's rows failed: the batch rolled back. Once more, isolating them.
                    self._tables.clear()  # memory is ahead of the rolled-back checkpoints
                    log.warning("projector_batch_isolating", error=repr(exc)[:500])
                    return self._run_once(names, careful=True)
            except BaseException:
                self._tables.clear()  # memory may be ahead of the rolled-back checkpoints
                raise

    def _run_once(self, names: Sequence[str], careful: bool) -> int:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(_LOCK_BATCH, (PROJECTOR_LOCK,))
            cps = self._checkpoints(conn, names)
            start = min(cps.values())
            # The models furthest behind go first, up to where the next one is (a rebuild of some
            # models beside the others): every model a batch moves starts at the same checkpoint.
            ahead = [cp for cp in cps.values() if cp > start]
            names = [n for n in names if cps[n] == start]
            events = read_facts_page(conn, start, self.batch_size, self.judge, min(ahead) if ahead else None)
            if not events:
                return 0
            passed = events[-1][10]
            # this batch's own blocks join a copy (the shared one changes only when parks commit)
            blocked = dict(self._blocked_tables(conn, names))
            parks: list[Park] = []
            rows: dict[str, list[Any]] = {n: [] for n in names}
            # careful: each event's rows as a span (first, end, its Park if it must be parked)
            spans: dict[str, list[tuple[int, int, Park]]] = {n: [] for n in names}
            modules = [(n, registry.BY_NAME[n], rows[n], spans[n] if careful else None) for n in names]
            counts = {n: passed for n in names}
            current: str | None = None
            current_tenant: str | None = None
            ctx: TableCtx | None = None
            engine = self.engine
            for table_id, version, position, tx_id, body, ruling, tenant, epoch, known, stored, _ in events:
                if known:  # judged once, by the append: its facts as stored (None: it gave none)
                    if stored is None:
                        continue
                    facts = decode_facts(stored, position, tx_id, states=False)
                    self.stored_facts += 1
                else:
                    # Folded here: consecutive events of one table (an append's) reuse its context;
                    # _ctx would return the same one, already last in the LRU.
                    if (
                        table_id != current
                        or tenant != current_tenant
                        or ctx is None
                        or ctx.version != version - 1
                    ):
                        current, current_tenant = table_id, tenant
                        ctx = self._ctx(tenant, table_id, version, conn)
                    try:
                        facts = advance_row(engine, ctx, body or "", ruling, version, position, tx_id)
                    except Unreadable as exc:
                        _skipped(table_id, version, exc)
                        continue
                    self.folded += 1
                if not facts:
                    continue
                key = (epoch, tx_id, position)
                for name, module, out, span in modules:
                    n = len(out)
                    try:
                        for fact in facts:
                            out.extend(module.rows(fact))
                    except Exception as exc:  # this model cannot apply this event: park it
                        del out[n:]
                        first = blocked.get((name, tenant, table_id)) if blocked else None
                        if first is None:
                            blocked[(name, tenant, table_id)] = position
                        parks.append(Park(name, key, tenant, table_id, version, first, exc))
                        continue
                    if len(out) == n:
                        continue
                    if blocked:
                        first = blocked.get((name, tenant, table_id))
                        if first is not None:  # behind a parked event of its table
                            del out[n:]
                            parks.append(Park(name, key, tenant, table_id, version, first, None))
                            continue
                    if span is not None:
                        span.append((n, len(out), Park(name, key, tenant, table_id, version, None, None)))
            last = (events[-1][7], events[-1][3], events[-1][2])  # (epoch, tx_id, position)
            moved = [name for name in names if counts[name]]
            if careful:
                for name, module, out, span in modules:
                    if counts[name] and out:
                        assert span is not None
                        parks += _write_isolating(conn, name, module, out, span, blocked)
                self._write_parks(conn, parks, names)
                if moved:
                    conn.execute(_MOVE, (*last, moved, [counts[n] for n in moved], _parked_by(moved, parks)))
            else:
                # One pipeline for the writes: sent back to back, one round trip (the opening balances'
                # SELECT of the ledger syncs on its own); an error still fails the whole transaction.
                with conn.pipeline():
                    for name, module, _, _ in modules:
                        if counts[name]:
                            module.write(conn, rows[name])
                    if parks:
                        self._write_parks(conn, parks, names)
                    if moved:  # every model's checkpoint in one statement, after its rows
                        conn.execute(
                            _MOVE, (*last, moved, [counts[n] for n in moved], _parked_by(moved, parks))
                        )
            if parks:
                self._parked_key = None  # the blocked tables are read again next batch
            self.applied += passed
            if self.on_batch is not None:
                self.on_batch({name: counts[name] for name in moved}, sum(p.error is not None for p in parks))
            return passed

    def _write_parks(self, conn: Connection, parks: list[Park], names: Sequence[str] = ()) -> None:
        if not parks:
            return
        parked.insert(conn, parks)
        if feed.NAME in names:  # the tenants' feeds announce them (projections/feed.py)
            feed.write(conn, feed.parked_rows(parks))
        for p in parks:
            if p.error is not None:
                log.error(
                    "projection_event_parked", projection=p.model, tenant=p.tenant, table_id=p.table_id,
                    version=p.version, error=f"{type(p.error).__name__}: {p.error}"[:500],
                )  # fmt: skip
        behind = sum(1 for p in parks if p.error is None)
        if behind:
            log.warning("projection_events_parked_behind", events=behind)

    def catch_up(
        self,
        names: Sequence[str] | None = None,
        max_seconds: float | None = None,
        *,
        full_pages: bool = False,
    ) -> int:
        """Run batches until the log has nothing new; the number of events read. ``full_pages``
        (the background runner): stop after a page that was not full too — under steady ingest the
        next page would hold only what committed during this one, and a batch's fixed cost (its
        transaction, ≈ 12 statements) would be paid for a few events; the runner lingers for the
        next notification instead."""
        total = 0
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        while True:
            n = self.run_once(names)
            total += n
            if n == 0 or (full_pages and n < self.batch_size):
                return total
            if deadline is not None and time.monotonic() > deadline:
                return total

    # ------------------------------------------------------------------ parked events
    def retry(
        self, model: str | None = None, table_id: str | None = None, tenant: str | None = None
    ) -> dict[str, dict[str, int]]:
        """Apply parked events again (all, or one model's, one table's), one transaction under the
        projector lock: each table is folded once from its first event; per (model, table), its
        parked events in version order, each in a savepoint. One that applies leaves the parked
        table; the first that fails again stays with ``tries`` + 1 and its new error, and every
        later one of its table stays behind it. Per model: {"applied": …, "parked": … still}."""
        if model is not None and model not in registry.BY_NAME:
            raise KeyError(f"unknown projection: {model}; known: {', '.join(registry.NAMES)}")
        out: dict[str, dict[str, int]] = {}
        with self._lock, self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROJECTOR_LOCK,))
            rows = conn.execute(_PARKED_FOR_RETRY, {"m": model, "t": table_id, "tenant": tenant}).fetchall()
            by_table: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
            for name, ten, tid, version, position in rows:
                by_table.setdefault((ten, tid), []).append((name, int(version), int(position)))
            for (ten, tid), parks in by_table.items():
                ctx = new_ctx(self.engine, tid, ten)
                facts = self._fold(conn, ctx, max(v for _, v, _ in parks), frozenset(v for _, v, _ in parks))
                for name in sorted({n for n, _, _ in parks}):
                    counts = out.setdefault(name, {"applied": 0, "parked": 0})
                    mine = sorted((v, pos) for n, v, pos in parks if n == name)
                    applied = self._retry_table(conn, name, tid, facts, mine)
                    counts["applied"] += applied
                    counts["parked"] += len(mine) - applied
            if out:
                names = sorted(out)
                conn.execute(_UNPARK, (names, [-out[n]["applied"] for n in names]))
            self._parked_key = None
        for name, counts in out.items():
            log.info("projection_parked_retried", projection=name, **counts)
        return out

    def _retry_table(
        self,
        conn: Connection,
        name: str,
        table_id: str,
        facts: dict[int, list[Fact]],
        parks: list[tuple[int, int]],
    ) -> int:
        """One model's parked events of one table, in version order; how many applied."""
        module = registry.BY_NAME[name]
        for i, (version, position) in enumerate(parks):
            error: Exception | None = None
            try:  # the model's pure rows: any exception is this event's
                rows = [row for fact in facts.get(version, []) for row in module.rows(fact)]
            except Exception as exc:
                error = exc
            if error is None:
                try:
                    with conn.transaction():
                        module.write(conn, rows)
                        conn.execute(_DELETE_PARKED, (name, position))
                    continue
                except Exception as exc:
                    if not parkable(exc):
                        raise
                    error = exc
            error_class, message = parked.describe(error)
            conn.execute(_FAILED_AGAIN, (error_class, message, name, position))
            conn.execute(_BEHIND, (position, name, [pos for _, pos in parks[i + 1 :]]))
            log.error(
                "projection_parked_still_failing", projection=name, table_id=table_id, version=version,
                error=f"{error_class}: {message}"[:500],
            )  # fmt: skip
            return i
        return len(parks)

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
            parked.forget(conn, names)  # a rebuild applies them again from the log
            self._tables.clear()
            self._parked_key = None

    def rebuild(self, names: Sequence[str] | None = None) -> int:
        names = tuple(names) if names is not None else self.names
        self.reset(names)
        return self.catch_up(names)


def _skipped(table_id: str, version: int, exc: Unreadable) -> None:
    # One corrupted row must not stop every read model: skip it, say so (kwx verify finds it).
    log.error("projector_event_unreadable", table_id=table_id, version=version, error=str(exc))


# A batch takes the lock and commits without waiting for its WAL to reach the disk
# (synchronous_commit off, for this transaction only): a crash may lose the last batches a
# projector committed, rows and checkpoints together (one transaction), and the restarted projector
# applies them again from the log — read models are derived, the events' own appends stay
# synchronous. It saves each batch the WAL flush wait.
_LOCK_BATCH = "SELECT pg_advisory_xact_lock(%s), set_config('synchronous_commit', 'off', true)"
_CHECKPOINTS = CHECKPOINTS  # with the current epoch and next xid: no extra round trip
_MOVE = (
    f"UPDATE {checkpoints.name} c SET epoch = %s, tx_id = %s, position = %s, events = c.events + u.n, "
    "parked = c.parked + u.p FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS u(name, n, p) "
    "WHERE c.name = u.name"
)
_PARKED_FOR_RETRY = (
    "SELECT model, tenant, table_id, version, position FROM projection_parked "
    "WHERE (%(m)s::text IS NULL OR model = %(m)s::text) "
    "AND (%(t)s::text IS NULL OR table_id = %(t)s::text) "
    "AND (%(tenant)s::text IS NULL OR tenant = %(tenant)s::text) "
    "ORDER BY tenant, table_id, model, version FOR UPDATE"
)
_DELETE_PARKED = "DELETE FROM projection_parked WHERE model = %s AND position = %s"
_FAILED_AGAIN = (
    "UPDATE projection_parked SET tries = tries + 1, retried_at = now(), behind = NULL, "
    "error_class = %s, error = %s WHERE model = %s AND position = %s"
)
_BEHIND = "UPDATE projection_parked SET behind = %s WHERE model = %s AND position = ANY(%s)"
_UNPARK = (
    "UPDATE projection_checkpoints c SET parked = c.parked + u.d "
    "FROM unnest(%s::text[], %s::bigint[]) AS u(name, d) WHERE c.name = u.name"
)
_TABLE_EVENTS = (
    "SELECT version, position, tx_id::text::int8, body::text, ruling::text FROM events "
    "WHERE tenant = %s AND table_id = %s AND version > %s AND version <= %s ORDER BY version LIMIT %s"
)


def _parked_by(names: Sequence[str], parks: Sequence[Park]) -> list[int]:
    return [sum(1 for p in parks if p.model == n) for n in names]


def _write_isolating(
    conn: Connection,
    name: str,
    module: Any,
    out: list[Any],
    spans: list[tuple[int, int, Park]],
    blocked: dict[tuple[str, str, str], int],
) -> list[Park]:
    """A model's rows of a batch that failed: all at once in a savepoint; if they fail, event by
    event, each in a savepoint, parking the ones that fail — and, after one, the later events of its
    table (behind it). Errors of the database itself are raised (the batch is tried again)."""
    try:
        with conn.transaction():
            module.write(conn, out)
        return []
    except Exception as exc:
        if not parkable(exc):
            raise
    parks: list[Park] = []
    for first, end, park in spans:
        table = (name, park.tenant, park.table_id)
        if table in blocked:
            parks.append(park.behind_of(blocked[table]))
            continue
        try:
            with conn.transaction():
                module.write(conn, out[first:end])
        except Exception as exc:
            if not parkable(exc):
                raise
            parks.append(park.failed(exc))
            blocked[table] = park.place[2]
    return parks


def _compiled_delete(names: Sequence[str]) -> tuple[str, dict[str, Any]]:
    from projections.sql import compiled

    return compiled(delete(checkpoints).where(checkpoints.c.name.in_(list(names))))


# How long the runner may gather appends that keep coming after a wake-up (ProjectorRunner._linger):
# the read models' lag under steady ingest grows by at most this, their CPU per event falls.
GATHER_SECONDS = 0.5
# How many lingers after a wake-up notifications may keep coming with no quiet gap before the runner
# takes the appends for steady ingest and stops listening for the rest of its gather
# (ProjectorRunner._linger); a shorter burst ends the gather at its first quiet gap, as before.
BUSY_LINGERS = 4


class ProjectorRunner:
    """Runs a :class:`Projector` in a background thread: LISTEN ``kwx_events`` + a poll."""

    def __init__(
        self,
        projector: Projector,
        conninfo: str,
        *,
        poll_seconds: float = 1.0,
        linger_seconds: float = 0.05,
        gather_seconds: float = GATHER_SECONDS,
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
        self.gather_seconds = gather_seconds
        self.configure = configure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listening = False  # the listener's LISTEN is on (a busy gather turns it off)
        self.wakeups = 0
        self.unlistens = 0  # gathers that stopped listening: appends kept coming

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
            self._listening = True
            return conn
        except psycopg.Error as exc:
            log.warning("projector_listen_failed", error=str(exc))
            return None

    def _set_listening(self, listener: psycopg.Connection[Any], on: bool) -> bool:
        """``LISTEN`` (``on``) or ``UNLISTEN`` on the listener; False, the listener closed, if the
        connection failed (the loop connects again)."""
        try:
            listener.execute(f"{'LISTEN' if on else 'UNLISTEN'} {CHANNEL}")
        except psycopg.Error as exc:
            log.warning("projector_listen_lost", error=str(exc))
            listener.close()
            return False
        self._listening = on
        return True

    def _relisten(self, listener: psycopg.Connection[Any] | None) -> None:
        """LISTEN again after a gather that stopped listening (:meth:`_linger`) — before the
        catch-up, so that an append committed after the catch-up's read still wakes the runner."""
        if listener is not None and not listener.closed and not self._listening:
            self._set_listening(listener, True)

    def _run(self) -> None:
        listener = self._listen()
        try:
            while not self._stop.is_set():
                if self.heartbeat is not None:
                    self.heartbeat()
                self._relisten(listener)
                try:
                    self.projector.catch_up(max_seconds=5.0, full_pages=True)
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
        """Gather the appends that keep coming before the batch that reads them all: wait until
        no notification has come for ``linger_seconds`` (a burst has committed), or until
        ``gather_seconds`` after the wake-up (steady ingest), whichever is first, dropping the
        notifications (one wake-up, not one per append). A batch has a fixed cost — its
        transaction and ≈ 19 statements, ≈ 7 ms of the projector's and PostgreSQL's CPU, as much
        as ≈ 480 events' rows (docs/projections.md, Gathering) — which the 50 ms of a linger
        alone paid per ≈ 250 events under full load.

        When appends are still coming :data:`BUSY_LINGERS` lingers after the wake-up (no quiet gap
        since: steady ingest, not a burst), the runner stops listening (``UNLISTEN``) and sleeps out
        the gather: a notification costs its listener's backend a wake-up and a message, and under
        full load one came per append — ≈ 1 µs of PostgreSQL's CPU per ingested event, for wake-ups
        the runner only dropped (docs/projections.md §6, "Listening less"). The loop LISTENs again
        before its next catch-up."""
        if self.linger_seconds <= 0:
            return
        woken = time.monotonic()
        end = woken + max(self.gather_seconds, self.linger_seconds)
        steady = woken + BUSY_LINGERS * self.linger_seconds
        while not self._stop.is_set():
            quiet = min(self.linger_seconds, end - time.monotonic())
            if quiet <= 0 or not any(True for _ in listener.notifies(timeout=quiet, stop_after=1)):
                break
            if self._listening and time.monotonic() >= steady:
                if not self._set_listening(listener, False):
                    return
                self.unlistens += 1
                while not self._stop.is_set() and (left := end - time.monotonic()) > 0:
                    self._stop.wait(min(left, 0.05))
                break
        for _ in listener.notifies(timeout=0.001):
            pass
