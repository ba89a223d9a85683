"""The append-only event store (docs/operations.md, The append path).

``append`` stores a batch whole or not at all, by one of two paths:

* **fast** (the usual case): step the batch from the table's *tip* — the in-process cache of this
  process's last append, or on a cache miss with ``expected_version`` (and once after a failed guess
  without it) the head's snapshot plus the events after it, read without a lock — and store it in
  one autocommit statement that moves the head only if it is still at the tip's version
  (``UPDATE … WHERE version = …``; a new table: ``INSERT … ON CONFLICT DO NOTHING``);
* **locking** (a version conflict, an illegal event, a re-send, a guess the database refused):
  one transaction: lock the head row (``FOR UPDATE``), check the expected version, step every
  event through the engine from the state at the locked head (the cache if it matches, else the
  snapshot plus the events after it), ``COPY`` the batch with its hash chain, move the head.
  Any failure rolls everything back.

Never a refold of the whole table per request (unless it has no usable snapshot).

A table is ``(tenant, table_id)`` (issue 11 §4): every statement, the cache and the locks key by both,
so two tenants' tables of the same id are two tables, and another tenant's table is never seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec
import psycopg
import sqlalchemy as sa
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from domain.events import Event, canonical_bytes
from domain.events import decode as decode_event
from services.db import connection_lost, fetch, read_rows
from services.engine_adapter import Engine
from services.errors import IdConflict, IllegalEvent, Malformed, VersionConflict
from services.store import chain
from services.store.cache import StateCache, Tip
from services.store.schema import events as ev
from services.store.schema import table_heads as heads
from services.store.verify import BrokenLink

_json = msgspec.json.Encoder()

_COPY = "COPY events (tenant, table_id, version, event_id, type, body, ruling, hash) FROM STDIN"


@dataclass(frozen=True, slots=True)
class Head:
    tenant: str
    table_id: str
    version: int
    last_hash: bytes
    snapshot_version: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    table_id: str
    version: int  # the table's version after the batch (the last event's version)
    first_version: int
    count: int
    rulings: list[dict[str, Any]] = field(default_factory=list)  # recorded violations, with index
    replayed: bool = False  # True when every event was already stored (idempotent re-send)

    def body(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "version": self.version, "first_version": self.first_version,
                "count": self.count, "rulings": self.rulings}  # fmt: skip


@dataclass(frozen=True, slots=True)
class StoredEvent:
    table_id: str
    version: int
    position: int
    tx_id: int
    recorded_at: datetime
    event_id: str
    type: str
    body: str  # the event as JSON text (jsonb output)
    ruling: str | None  # JSON text, or None
    tenant: str = ""
    epoch: int = 1  # the log epoch (read_all fills it in; docs/operations.md, the gap-free read)


def _json_array(texts: list[str | None]) -> str:
    return "[" + ",".join(t or "null" for t in texts) + "]"


def _tag(event: Event) -> str:
    return str(type(event).__struct_config__.tag)


@dataclass(slots=True)
class _Batch:
    """A batch stepped through the engine: what to store and where the table ends up."""

    events: Sequence[Event]  # as stored (pinned)
    canon: list[bytes]  # their canonical bytes (the stored bodies)
    hashes: list[bytes]  # their chain hashes
    ruling_texts: list[str | None] | None  # each event's ruling as JSON; None: no event has one
    rulings: list[dict[str, Any]]  # the recorded violations, with index and version (the answer)
    state: Any
    version: int  # the last event's
    last_hash: bytes

    def rows(self, tenant: str, table_id: str) -> list[tuple[Any, ...]]:
        """The rows for ``COPY`` (``_COPY``'s columns)."""
        first = self.version - len(self.events) + 1
        texts = self.ruling_texts or [None] * len(self.events)
        return [
            (tenant, table_id, first + i, e.id, _tag(e), c.decode(), texts[i], h)
            for i, (e, c, h) in enumerate(zip(self.events, self.canon, self.hashes, strict=True))
        ]


# A table's first batch: create the head with the batch's outcome; 0 rows if the table exists.
_FAST_CREATE_HEAD = """
    INSERT INTO table_heads (table_id, tenant, version, last_hash, snapshot, snapshot_version)
    VALUES (%(t)s, %(tenant)s, %(new)s, %(hash)s, %(snap)s::bytea,
            CASE WHEN %(snap)s::bytea IS NULL THEN 0 ELSE %(new)s END)
    ON CONFLICT (tenant, table_id) DO NOTHING
    RETURNING 1
"""

# One round trip, one implicit transaction: move the head only if it is still where the cache
# says, and insert the batch only if the head moved. 0 rows inserted → take the locking path.
_FAST_MOVE_HEAD = """
    UPDATE table_heads
       SET version = %(new)s, last_hash = %(hash)s, updated_at = now(),
           snapshot = CASE WHEN %(snap)s::bytea IS NULL THEN snapshot ELSE %(snap)s::bytea END,
           snapshot_version = CASE WHEN %(snap)s::bytea IS NULL THEN snapshot_version ELSE %(new)s END
     WHERE tenant = %(tenant)s AND table_id = %(t)s AND version = %(old)s
    RETURNING 1
"""

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

_FAST_INSERT = """
INSERT INTO events (tenant, table_id, version, event_id, type, body, ruling, hash)
SELECT %(tenant)s, %(t)s, %(old)s + e.i, e.body ->> 'id', e.body ->> 'type', e.body,
       NULLIF(%(rulings)s::jsonb -> (e.i - 1)::int, 'null'::jsonb),
       substring(%(hashes)s::bytea FROM ((e.i - 1) * 32 + 1)::int FOR 32)
  FROM head, jsonb_array_elements(%(bodies)s::jsonb) WITH ORDINALITY AS e(body, i)
 ORDER BY e.i
"""

_FAST_CREATE = "WITH head AS (" + _FAST_CREATE_HEAD + ")" + _FAST_INSERT
_FAST_MOVE = "WITH head AS (" + _FAST_MOVE_HEAD + ")" + _FAST_INSERT


@dataclass(slots=True)
class FastPlan:
    """A batch stepped from a tip, and the one statement that stores it if the tip is right."""

    tenant: str
    table_id: str
    tip: Tip
    batch: _Batch
    snapshot: bool  # the statement also stores the state snapshot
    count: int
    sql: str
    params: dict[str, Any]


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
        appended once more on another connection (``retry``): it was stored or it was not, and the
        second try either stores it or recognises it as stored (idempotent by event id). The
        cached tip is dropped first: the database, not this process, says where the table is."""
        try:
            return self._append(tenant, table_id, expected_version, events)
        except psycopg.OperationalError as exc:
            if not (retry and connection_lost(exc)):
                raise
            self.cache.drop((tenant, table_id))
            self.retried_appends += 1
            return self._append(tenant, table_id, expected_version, events)

    def _append(
        self, tenant: str, table_id: str, expected_version: int | None, events: Sequence[Event]
    ) -> AppendResult:
        # The stored form: a table_opened carries its rules pinned (every resolved option). The hash,
        # the stored body and the idempotency check are all over the pinned event, so re-sending
        # the original (unpinned) batch is recognised as a replay.
        events, canon = self._prepare(events)
        tip = self.cache.peek((tenant, table_id))
        guess = self._cached_guess(table_id, tip, expected_version)
        fast = None
        if guess is not None:
            fast = self._run_fast(self._plan_fast(tenant, table_id, *guess, events, canon))
        elif expected_version is not None and expected_version > 0:
            # Not in this process's cache, or behind (another worker appended): read the head and
            # its snapshot without locking, then take the same conditional fast path from there.
            stored = self._tip_from_head(tenant, table_id, expected_version)
            if stored is not None:
                fast = self._run_fast(self._plan_fast(tenant, table_id, stored, False, events, canon))
        if fast is None and expected_version is None:
            # No expected version and the guess failed: the cached tip was behind (another worker
            # appended) or the "new" table exists. Once more from the head as stored — unless it is
            # where the guess was (then the batch itself is the problem: the locking path says why).
            stored = self._tip_from_head(tenant, table_id, None)
            moved = stored is not None and (tip is None or stored.version != tip.version)
            if stored is not None and moved:
                fast = self._run_fast(self._plan_fast(tenant, table_id, stored, False, events, canon))
        if fast is not None:
            return fast
        return self._append_locked(tenant, table_id, expected_version, events, canon)

    def _prepare(self, events: Sequence[Event]) -> tuple[list[Event], list[bytes]]:
        """The batch as it is stored (pinned) and its canonical bytes; a repeated id is malformed."""
        pin = self.engine.pin
        pinned = [pin(e) for e in events]
        canon = [canonical_bytes(e) for e in pinned]
        seen: dict[str, int] = {}
        for i, e in enumerate(pinned):
            if e.id in seen:
                message = f"event id {e.id!r} appears twice in the batch (indexes {seen[e.id]} and {i})"
                raise Malformed(message, field=f"$.events[{i}].id", index=i)
            seen[e.id] = i
        return pinned, canon

    def plan_cached(
        self, tenant: str, table_id: str, expected_version: int | None, events: Sequence[Event]
    ) -> FastPlan | None:
        """CPU only, no database: the fast path's statement when this process's cache says where the
        table is (or that it is new), for a caller that runs the statement itself (the HTTP
        service, on an async connection: services/api/tables.py). None: no such guess — call
        :meth:`append`. Run the plan, then hand the row count to :meth:`finish_fast`."""
        guess = self._cached_guess(table_id, self.cache.peek((tenant, table_id)), expected_version)
        if guess is None:
            return None  # nothing prepared: append does it
        events, canon = self._prepare(events)
        return self._plan_fast(tenant, table_id, *guess, events, canon)

    def _cached_guess(
        self, table_id: str, tip: Tip | None, expected_version: int | None
    ) -> tuple[Tip, bool] | None:
        """Where this process's cached ``tip`` of the table says it is, as (tip, the table is new);
        None when it can't say (not cached and not new, behind ``expected_version``)."""
        if tip is not None and expected_version in (None, tip.version):
            return tip, False
        if tip is None and expected_version in (None, 0):
            return Tip(0, self.engine.initial(), chain.genesis(table_id), 0), True
        return None

    def _run_fast(self, plan: FastPlan | None) -> AppendResult | None:
        """The common case: the tip is where the table is (this process appended its last batch, or
        the tip was just read from the head). Store the batch stepped from it in one statement
        conditional on the head still being at ``tip.version`` (or on the table not existing yet).
        None: no plan (the batch is illegal from the tip), the guess was wrong, or the batch needs
        the careful path (refusal, replay, conflict)."""
        if plan is None:
            return None
        with self.pool.connection() as conn:
            conn.autocommit = True
            try:
                inserted = conn.execute(plan.sql, plan.params).rowcount
            except pg_errors.UniqueViolation:
                inserted = 0  # an id already stored: the locking path answers (replay or conflict)
            finally:
                if not conn.closed:  # a lost connection: its own error says so
                    conn.autocommit = False
        return self.finish_fast(plan, inserted)

    def _plan_fast(
        self, tenant: str, table_id: str, tip: Tip, create: bool, events: Sequence[Event], canon: list[bytes]
    ) -> FastPlan | None:
        """The batch stepped from ``tip`` and the statement that stores it (``create``: the head
        row is inserted, for a new table); None if the batch is illegal from there."""
        try:
            batch = self._step_batch(tip.version, tip.last_hash, tip.state, events, canon)
        except IllegalEvent:
            return None  # re-checked under the lock, where a replay is recognised too
        snapshot = None
        if batch.version - tip.snapshot_version >= self.snapshot_every:
            snapshot = self.engine.encode_state(batch.state)
        # The batch travels as three values, not 7 arrays of 100: the canonical bodies as one JSON
        # array (id and type are read back from them), the rulings as one JSON array (or NULL), and
        # the 32-byte hashes concatenated.
        params = {
            "t": table_id, "tenant": tenant, "old": tip.version, "new": batch.version,
            "hash": batch.last_hash, "snap": snapshot,
            "bodies": (b"[" + b",".join(batch.canon) + b"]").decode(),
            "rulings": _json_array(batch.ruling_texts) if batch.ruling_texts else None,
            "hashes": b"".join(batch.hashes),
        }  # fmt: skip
        return FastPlan(tenant, table_id, tip, batch, snapshot is not None, len(events),
                        _FAST_CREATE if create else _FAST_MOVE, params)  # fmt: skip

    def finish_fast(self, plan: FastPlan, inserted: int) -> AppendResult | None:
        """The outcome of a plan's statement that inserted ``inserted`` rows (0 after a unique
        violation): the answer, with the cache moved on; or None (the cache dropped) — then
        :meth:`append` answers (replay, conflict, or the head read / locking path)."""
        batch, tip = plan.batch, plan.tip
        key = (plan.tenant, plan.table_id)
        if inserted != plan.count:
            self.cache.drop(key)
            return None
        self.fast_appends += 1
        snapshot_version = batch.version if plan.snapshot else tip.snapshot_version
        self.cache.put(key, Tip(batch.version, batch.state, batch.last_hash, snapshot_version))
        return AppendResult(plan.table_id, batch.version, tip.version + 1, plan.count, batch.rulings)

    def _tip_from_head(self, tenant: str, table_id: str, version: int | None) -> Tip | None:
        """The table's tip as stored, when its head is at ``version`` (None: wherever it is): the
        head's snapshot plus the events after it, read without a lock (two round trips at most).
        None when there is no such head or the snapshot can't be used; the caller then takes the
        locking path. The tip is only a guess like any cached one: the conditional ``UPDATE``
        checks it."""
        with self.pool.connection() as conn:
            conn.autocommit = True
            try:
                row = conn.execute(_READ_HEAD, {"tenant": tenant, "t": table_id, "v": version}).fetchone()
                if row is None:
                    return None
                version, last_hash, snapshot_version, snapshot = row
                state, start = self.engine.initial(), 0
                if snapshot is not None:
                    state, start = self._decoded(snapshot), snapshot_version
                    if state is None:
                        return None  # a snapshot of an older engine: the locking path refolds
                state = self._stepped(conn, tenant, table_id, state, start, version)
            finally:
                if not conn.closed:  # a lost connection: its own error says so
                    conn.autocommit = False
        tip = Tip(version, state, bytes(last_hash), snapshot_version if snapshot is not None else 0)
        self.cache.put((tenant, table_id), tip)
        return tip

    def _append_locked(
        self, tenant: str, table_id: str, expected: int | None, events: Sequence[Event], canon: list[bytes]
    ) -> AppendResult:
        with self.pool.connection() as conn:
            try:
                with conn.transaction():
                    result, tip = self._append_tx(conn, tenant, table_id, expected, events, canon)
            except pg_errors.UniqueViolation as exc:
                constraint = exc.diag.constraint_name
                with conn.transaction():
                    if constraint == "events_table_event_id":
                        replay = self._replay(conn, tenant, table_id, events, canon)
                        if replay is not None:
                            return replay
                    current = self._current_version(conn, tenant, table_id)
                raise VersionConflict(
                    "the table moved on while appending; read it and retry", current_version=current
                ) from None
        self.locked_appends += 1
        if tip is not None:
            self.cache.put((tenant, table_id), tip)
        return result

    def _step_batch(
        self,
        version: int,
        previous: bytes,
        state: Any,
        events: Sequence[Event],
        canon: list[bytes],
    ) -> _Batch:
        stepped = self.engine.step_batch(state, events)
        if stepped.refused is not None:
            i = stepped.refused
            ruling = dict(stepped.refusal or {"rule": "sequence", "message": "refused"})
            message = str(ruling.pop("message", "illegal event"))
            raise IllegalEvent(message, index=i, event_id=events[i].id, **ruling)
        hashes = chain.links(previous, canon)
        rulings: list[dict[str, Any]] = []
        texts: list[str | None] | None = None
        if stepped.rulings:
            texts = [None] * len(events)
            for i, ruling in stepped.rulings:
                rulings.append({"index": i, "version": version + 1 + i, **ruling})
                texts[i] = _json.encode(ruling).decode()
        last = hashes[-1] if hashes else previous
        return _Batch(events, canon, hashes, texts, rulings, stepped.state, version + len(events), last)

    def _append_tx(
        self,
        conn: psycopg.Connection[Any],
        tenant: str,
        table_id: str,
        expected: int | None,
        events: Sequence[Event],
        canon: list[bytes],
    ) -> tuple[AppendResult, Tip | None]:
        head = self._lock_head(conn, tenant, table_id)
        if head is None:
            conn.execute(
                "INSERT INTO table_heads (tenant, table_id, version, last_hash) VALUES (%s, %s, 0, %s) "
                "ON CONFLICT (tenant, table_id) DO NOTHING",
                (tenant, table_id, chain.genesis(table_id)),
            )
            head = self._lock_head(conn, tenant, table_id)
            assert head is not None
        if expected is not None and expected != head.version:
            replay = self._replay(conn, tenant, table_id, events, canon)
            if replay is not None:
                return replay, None
            raise VersionConflict(
                f"expected version {expected}, the table is at {head.version}", current_version=head.version
            )
        state = self._state_at(conn, head)
        try:
            batch = self._step_batch(head.version, head.last_hash, state, events, canon)
        except IllegalEvent:
            replay = self._replay(conn, tenant, table_id, events, canon)
            if replay is not None:
                return replay, None
            raise
        with conn.cursor() as cur, cur.copy(_COPY) as copy:
            for row in batch.rows(tenant, table_id):
                copy.write_row(row)
        snapshot_version = head.snapshot_version
        if batch.version - head.snapshot_version >= self.snapshot_every:
            snapshot_version = batch.version
            conn.execute(
                "UPDATE table_heads SET version = %s, last_hash = %s, snapshot = %s, snapshot_version = %s, "
                "updated_at = now() WHERE tenant = %s AND table_id = %s",
                (
                    batch.version,
                    batch.last_hash,
                    self.engine.encode_state(batch.state),
                    batch.version,
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
        return result, Tip(batch.version, batch.state, batch.last_hash, snapshot_version)

    def _lock_head(self, conn: psycopg.Connection[Any], tenant: str, table_id: str) -> Head | None:
        row = conn.execute(
            "SELECT version, last_hash, snapshot_version FROM table_heads"
            " WHERE tenant = %s AND table_id = %s FOR UPDATE",
            (tenant, table_id),
        ).fetchone()
        if row is None:
            return None
        return Head(tenant, table_id, row[0], bytes(row[1]), row[2])

    def _current_version(self, conn: psycopg.Connection[Any], tenant: str, table_id: str) -> int:
        rows = fetch(conn, sa.select(heads.c.version).where(*_table_is(heads, tenant, table_id)))
        return int(rows[0][0]) if rows else 0

    def _state_at(self, conn: psycopg.Connection[Any], head: Head) -> Any:
        """The engine state after ``head.version``: cache, else snapshot + the events after it."""
        cached = self.cache.get((head.tenant, head.table_id), head.version)
        if cached is not None:
            return cached.state
        state, start = None, 0
        if head.snapshot_version > 0:
            stmt = sa.select(heads.c.snapshot).where(*_table_is(heads, head.tenant, head.table_id))
            rows = fetch(conn, stmt)
            if rows and rows[0][0] is not None:
                state = self._decoded(rows[0][0])
                start = head.snapshot_version if state is not None else 0
        if state is None:  # no snapshot, or one of an older engine: refold instead
            state = self.engine.initial()
        return self._stepped(conn, head.tenant, head.table_id, state, start, head.version)

    def _decoded(self, snapshot: bytes) -> Any:
        """A stored state snapshot, or None when this engine cannot read it (an older format)."""
        try:
            return self.engine.decode_state(bytes(snapshot))
        except (msgspec.MsgspecError, ValueError, TypeError, KeyError):
            return None

    def _stepped(
        self, conn: psycopg.Connection[Any], tenant: str, table_id: str, state: Any, start: int, version: int
    ) -> Any:
        """``state`` (the table after ``start``) stepped through its stored events up to ``version``."""
        if start < version:
            step = self.engine.step
            params = {"tenant": tenant, "t": table_id, "after": start, "upto": version}
            for (body,) in conn.execute(_READ_BODIES, params):
                state = step(state, decode_event(body)).state
        return state

    def _replay(
        self,
        conn: psycopg.Connection[Any],
        tenant: str,
        table_id: str,
        events: Sequence[Event],
        canon: list[bytes],
    ) -> AppendResult | None:
        """The original answer when every event of the batch is already stored with the same
        content; ``IdConflict`` when an id is stored with other content (or only part of the batch
        is stored); None when none of the ids is stored."""
        ids = [e.id for e in events]
        stmt = sa.select(
            ev.c.event_id, ev.c.version, sa.cast(ev.c.body, sa.Text), sa.cast(ev.c.ruling, sa.Text)
        ).where(*_table_is(ev, tenant, table_id), ev.c.event_id.in_(ids))
        found = {row[0]: row for row in fetch(conn, stmt)}
        if not found:
            return None
        for i, e in enumerate(events):
            row = found.get(e.id)
            if row is not None and _canonical_text(row[2]) != canon[i]:
                raise IdConflict(
                    f"event id {e.id!r} is already stored (version {row[1]}) with other content",
                    index=i, event_id=e.id, version=row[1],
                )  # fmt: skip
        if len(found) != len(events):
            first = next(i for i, e in enumerate(events) if e.id in found)
            raise IdConflict(
                "part of this batch is already stored: re-send only the events that are not",
                index=first, event_id=events[first].id, version=found[events[first].id][1],
            )  # fmt: skip
        versions = [found[e.id][1] for e in events]
        if versions != list(range(versions[0], versions[0] + len(versions))):
            raise IdConflict("these events are stored, but not as one batch in this order", index=0,
                             event_id=events[0].id)  # fmt: skip
        rulings = [
            {"index": i, "version": found[e.id][1], **msgspec.json.decode(found[e.id][3])}
            for i, e in enumerate(events)
            if found[e.id][3] is not None
        ]
        return AppendResult(table_id, versions[-1], versions[0], len(events), rulings, replayed=True)

    # ------------------------------------------------------------------ reads
    def head(self, tenant: str, table_id: str) -> Head | None:
        """The tenant's table ``table_id``, or None (another tenant's table of that id is not it)."""
        stmt = sa.select(heads.c.version, heads.c.last_hash, heads.c.snapshot_version).where(
            *_table_is(heads, tenant, table_id)
        )
        rows = self._fetch(stmt)
        if not rows:
            return None
        version, last_hash, snapshot_version = rows[0]
        return Head(tenant, table_id, version, bytes(last_hash), snapshot_version)

    def read_table(self, tenant: str, table_id: str, after: int = 0, limit: int = 100) -> list[StoredEvent]:
        """Events of the tenant's table with version > ``after``, in version order."""
        stmt = (
            _stored_columns()
            .where(*_table_is(ev, tenant, table_id), ev.c.version > after)
            .order_by(ev.c.version)
            .limit(limit)
        )
        return [_stored(row) for row in self._fetch(stmt)]

    def _fetch(self, stmt: sa.Select[Any]) -> list[tuple[Any, ...]]:
        """A read's rows; once more on another connection if the first one broke under it."""
        return read_rows(self.pool, stmt)[0]

    def read_all(self, after: tuple[int, int, int] = (0, 0, 0), limit: int = 1000) -> list[StoredEvent]:
        """The global log, gap-free: events committed by transactions older than every transaction
        still running (in the current log epoch; every event of an older one), in (epoch, tx_id,
        position) order, strictly after the checkpoint ``after`` = (epoch, tx_id, position) of the
        last event seen. Pass the last event's ``(epoch, tx_id, position)`` back as the next
        ``after``; an event committed late can never land before it (docs/operations.md). Reads
        on one pooled connection, held for this statement only."""
        from projections.log import fence

        epoch, tx, pos = after
        stmt = (
            _stored_columns()
            .add_columns(sa.literal_column("events.epoch"))
            .where(
                sa.text(
                    "(events.epoch, events.tx_id, events.position) > (:epoch, CAST(:tx AS xid8), :pos)"
                ).bindparams(epoch=epoch, tx=str(tx), pos=pos),
                sa.text(fence("events")),
            )
            .order_by(sa.text("events.epoch, events.tx_id, events.position"))
            .limit(limit)
        )
        with self.pool.connection() as conn:
            return [_stored(row[:-1], row[-1]) for row in fetch(conn, stmt)]

    # ------------------------------------------------------------------ verify
    def verify(
        self, table_id: str | None = None, *, tenant: str | None = None
    ) -> tuple[int, int, list[BrokenLink]]:
        """Recompute the hash chain of every table (of ``tenant``, of id ``table_id``, when given):
        ``services.store.verify``."""
        from services.store.verify import verify

        return verify(self.pool, table_id, tenant=tenant)


def _table_is(t: sa.Table, tenant: str, table_id: str) -> tuple[Any, Any]:
    """The WHERE clauses of one table in ``t`` (a table is (tenant, table_id))."""
    return (t.c.tenant == tenant, t.c.table_id == table_id)


def _canonical_text(body: str) -> bytes:
    return chain.canonical_json(body)


def _stored_columns() -> sa.Select[Any]:
    return sa.select(
        ev.c.table_id,
        ev.c.version,
        ev.c.position,
        sa.cast(ev.c.tx_id, sa.Text),
        ev.c.recorded_at,
        ev.c.event_id,
        ev.c.type,
        sa.cast(ev.c.body, sa.Text),
        sa.cast(ev.c.ruling, sa.Text),
        ev.c.tenant,
    )


def _stored(row: tuple[Any, ...], epoch: int = 1) -> StoredEvent:
    return StoredEvent(
        row[0], row[1], row[2], int(row[3]), row[4], row[5], row[6], row[7], row[8], row[9], epoch
    )
