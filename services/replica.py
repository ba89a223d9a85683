"""Reads from a streaming replica (``DATABASE_READ_URL``; docs/SCALING.md, "A streaming read
replica"): which database answers a read, and what happens when the replica is behind or gone.

Two kinds of read, two rules:

* **A table's read** (its state, events, a hand's settlement, audit, timeline, an export) is fixed
  by the table's version: the route reads the table's head on the primary first (as it always
  did), and the replica may answer once *its* head of that table has reached the version the
  read needs. Events are immutable and a table's events and head are written in one transaction,
  so such a replica answers with the primary's bytes — and a client that just appended sees its
  own write, since the version comes from the primary. A replica behind is waited for, polling,
  at most ``KWX_READ_REPLICA_WAIT`` seconds; then the primary answers.
* **A read model's read** (stats, ledgers, the leaderboard, the discrepancy feed, the table
  finder): asynchronous already (the projector's lag), so the replica answers whatever it holds;
  /v1/health and /metrics show the replica's lag beside the projector's.

A replica that fails (cannot connect, the connection breaks, a recovery conflict cancels the
query) costs the read nothing but a retry on the primary; a fault of the connection also marks
the replica down (logged once), and until a background probe connects again every read goes straight
to the primary, without trying. Every answer says which database it was read from: the
``Kwx-Read-From`` header (``services.api.deps.ReadHeaders``), from :data:`READ_FROM`.

Without ``DATABASE_READ_URL`` nothing here makes a round trip: every read runs on the primary as
before, and only the header is added.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from services.db import (
    POOL_WAIT,
    RECONNECT_TIMEOUT,
    Pool,
    Unreachable,
    _tracked,
    connection_lost,
    describe,
    reachability,
    reading,
)
from services.logs import get_logger

if TYPE_CHECKING:
    from services.engine_adapter import Engine
    from services.store.events import EventStore

log = get_logger("kwx.replica")
T = TypeVar("T")

PRIMARY, REPLICA = "primary", "replica"
PROBE_EVERY = 0.5  # seconds between the probes of a replica marked down
CONNECT_TIMEOUT = 2  # seconds: a replica that does not answer is down, not a request's long wait
REPLICA_POOL_WAIT = 2.0  # seconds a read waits for a free replica connection (then the primary)
IMPATIENT_FOR = 1.0  # seconds after a wait ran out in which table reads do not wait for the replica

# Where this request's answer was read: the middleware sets a fresh list per request, the read
# appends PRIMARY or REPLICA to it (the list, not the variable: a sync route runs in a worker
# thread with a copy of the context, which shares the list).
READ_FROM: ContextVar[list[str] | None] = ContextVar("kwx_read_from", default=None)


def said(where: str) -> None:
    box = READ_FROM.get()
    if box is not None:
        box.append(where)


@dataclass(frozen=True, slots=True)
class Source:
    """One database to read from: its pool, a store whose reads use that pool, the engine."""

    name: str  # PRIMARY or REPLICA
    pool: ConnectionPool
    store: EventStore
    engine: Engine


_HEAD_VERSION = "SELECT version FROM table_heads WHERE tenant = %s AND table_id = %s"
_LAG = """
SELECT pg_is_in_recovery(),
       pg_last_wal_replay_lsn()::text,
       CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)::float8 END,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END
"""


def make_read_pool(url: str, *, size: int, role: str | None) -> Pool:
    """A pool on the replica, configured as the primary's (``SET ROLE``, the statement timeout) but
    read-only (``default_transaction_read_only``: a DATABASE_READ_URL that names a writable server
    is still never written), without the log-epoch check (which writes), and in autocommit: a read
    on it is its statements alone, no ``BEGIN`` and ``COMMIT`` round trips around them (under
    READ COMMITTED each statement has its own snapshot either way, and a read that wants a
    transaction opens one: the chain check's cursor). Opened without waiting: a replica down at
    startup is a fallback to the primary, not a service that fails to start."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        if role:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        conn.execute("SET statement_timeout = '30s'")
        conn.execute("SET default_transaction_read_only = on")

    reach = reachability(url)
    pool = Pool(
        url,
        min_size=min(2, size),
        max_size=size,
        kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True},
        configure=configure,
        connection_class=_tracked(psycopg.Connection, reach),
        open=False,
        name="kwx-replica",
        timeout=min(POOL_WAIT, REPLICA_POOL_WAIT),
        reconnect_timeout=RECONNECT_TIMEOUT,
    )
    pool.reach = reach
    pool.open(wait=False)
    return pool


class Replica:
    """The replica's pool and store, whether it is up, and how far behind the primary it is."""

    def __init__(self, url: str, engine: Engine, *, size: int, role: str | None, wait: float) -> None:
        from services.store.events import EventStore

        self.url = url
        self.wait = wait
        self.pool = make_read_pool(url, size=size, role=role)
        # reads only: its pool's sessions are read-only and a replica refuses writes anyway
        self.store = EventStore(self.pool, engine)
        self.source = Source(REPLICA, self.pool, self.store, engine)
        self._lock = threading.Lock()
        self._down = False
        self._closed = threading.Event()
        self._probe: threading.Thread | None = None
        self.impatient_for = IMPATIENT_FOR
        self._impatient_until = 0.0  # monotonic; see holds

    # ------------------------------------------------------------------ up and down
    @property
    def up(self) -> bool:
        """Worth trying: not marked down, and the pool's last attempt to connect did not fail."""
        if self._down:
            return False
        if self.pool.reach.down:  # e.g. down since startup: no read has to find it out first
            self.mark_down(self.pool.reach.last_error)
            return False
        return True

    def mark_down(self, why: object) -> None:
        """Logged once per outage; a probe thread watches for it to come back."""
        from services import metrics

        with self._lock:
            if self._down or self._closed.is_set():
                return
            self._down = True
            metrics.REPLICA_UP_CHANGES.labels("down").inc()
            self._probe = threading.Thread(target=self._watch, name="kwx-replica-probe", daemon=True)
            self._probe.start()
        reason = why if isinstance(why, str) else (str(why).strip().splitlines() or [type(why).__name__])[0]
        log.warning("replica down: reads go to the primary", replica=describe(self.url), error=reason[:200])

    def _watch(self) -> None:
        while not self._closed.wait(PROBE_EVERY):
            try:
                with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT) as conn:
                    conn.execute("SELECT 1")
            except psycopg.Error:
                continue
            self._mark_up()
            return

    def _mark_up(self) -> None:
        from services import metrics

        self.pool.reach.ok()
        self.pool.check()  # the sessions of before the outage are gone: replace them now
        with self._lock:
            self._down = False
            self._probe = None
        metrics.REPLICA_UP_CHANGES.labels("up").inc()
        log.info("replica back: reads use it again", replica=describe(self.url))

    def close(self) -> None:
        self._closed.set()
        probe = self._probe
        if probe is not None:
            probe.join(timeout=CONNECT_TIMEOUT + 1)
        self.pool.close()

    # ------------------------------------------------------------------ the table fence
    def version_of(self, tenant: str, table_id: str) -> int:
        """The replica's head version of the tenant's table (0: it has none yet)."""

        def read(conn: psycopg.Connection[Any]) -> int:
            row = conn.execute(_HEAD_VERSION, (tenant, table_id)).fetchone()
            return int(row[0]) if row else 0

        return reading(self.pool, read)

    def holds(self, tenant: str, table_id: str, version: int) -> bool:
        """Whether the replica holds the table up to ``version``, waiting (polling, backing off from
        2 ms to 50 ms) at most ``wait`` seconds for it to replay that far. Once a wait has run out
        the replica is behind by more than the wait: for the next ``impatient_for`` seconds reads
        look once and do not wait, so a replica far behind costs one wait a second, not one a read."""
        now = time.monotonic()
        wait = 0.0 if now < self._impatient_until else self.wait
        deadline = now + wait
        pause = 0.002
        while True:
            if self.version_of(tenant, table_id) >= version:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                if wait > 0:
                    self._impatient_until = time.monotonic() + self.impatient_for
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)

    # ------------------------------------------------------------------ lag
    def lag(self, primary: ConnectionPool) -> dict[str, Any]:
        """How far behind the primary the replica is: ``status`` ok / down / error; ``lag_seconds`` (0 when
        it has replayed all it received, else the age of the last transaction it replayed);
        ``lag_bytes`` (the primary's WAL position minus the replica's replay position: what it
        still has to receive and replay); ``replay_paused``; ``in_recovery`` (false: not a
        replica — promoted, or a primary named by mistake)."""
        body: dict[str, Any] = {"status": "down", "in_recovery": None, "lag_seconds": None,
                                "lag_bytes": None, "replay_paused": None}  # fmt: skip
        if not self.up:
            return body
        try:
            with self.pool.connection(timeout=CONNECT_TIMEOUT) as conn:
                recovery, replayed, seconds, paused = conn.execute(_LAG).fetchone() or (None,) * 4
        except psycopg.Error as exc:
            if isinstance(exc, Unreachable) or connection_lost(exc):
                self.mark_down(exc)
            else:
                body["status"] = "error"  # it answers, but not this (a statement timeout …)
            return body
        body.update(status="ok", in_recovery=recovery, lag_seconds=round(float(seconds or 0), 3),
                    replay_paused=paused)  # fmt: skip
        if replayed is not None:
            try:
                with primary.connection(timeout=CONNECT_TIMEOUT) as conn:
                    row = conn.execute(
                        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", (replayed,)
                    ).fetchone()
                    conn.rollback()
                body["lag_bytes"] = max(0, int(row[0])) if row else None
            except psycopg.Error:
                pass  # the primary's own health says so
        return body


def _fell_back(replica: Replica, exc: psycopg.Error) -> str:
    """A replica read failed: a fault of the connection (it cannot be reached, the session ended:
    ``services.db.connection_lost``) marks the replica down; anything else — a recovery conflict
    cancelled the query, a statement timeout, no free replica connection in time — is logged
    and leaves it up. The fallback's reason."""
    if isinstance(exc, Unreachable) or connection_lost(exc):
        replica.mark_down(exc)
        return "down"
    text = str(exc).strip().splitlines()
    error = (text[0] if text else type(exc).__name__)[:200]
    log.warning("replica read failed: answered from the primary", error=error)
    return "error"


def _on_primary(primary: Source, read: Callable[[Source], T], reason: str) -> T:
    """``read`` on the primary though a replica is configured; counted by ``reason``."""
    from services import metrics

    metrics.REPLICA_FALLBACKS.labels(reason).inc()
    said(PRIMARY)
    return read(primary)


def _on_replica(replica: Replica, primary: Source, read: Callable[[Source], T]) -> T:
    from services import metrics

    try:
        answer = read(replica.source)
    except psycopg.Error as exc:  # nothing was sent yet: the read is safe to repeat on the primary
        return _on_primary(primary, read, _fell_back(replica, exc))
    metrics.REPLICA_READS.inc()
    said(REPLICA)
    return answer


def table_read(
    primary: Source, replica: Replica | None, tenant: str, table_id: str, version: int,
    read: Callable[[Source], T],
) -> T:  # fmt: skip
    """``read(source)`` of the tenant's table, which needs the table up to ``version`` (from the
    primary's head): on the replica when it holds that version (waited for, bounded), else on the
    primary."""
    if replica is None:
        said(PRIMARY)
        return read(primary)
    if not replica.up:
        return _on_primary(primary, read, "down")
    try:
        holds = replica.holds(tenant, table_id, version)
    except psycopg.Error as exc:
        return _on_primary(primary, read, _fell_back(replica, exc))
    if not holds:
        return _on_primary(primary, read, "behind")
    return _on_replica(replica, primary, read)


def model_read(primary: Source, replica: Replica | None, read: Callable[[Source], T]) -> T:
    """``read(source)`` of the read models: on the replica when it is up, whatever it holds (they
    are behind the log anyway: the projector's lag plus the replica's), else on the primary."""
    if replica is None:
        said(PRIMARY)
        return read(primary)
    if not replica.up:
        return _on_primary(primary, read, "down")
    return _on_replica(replica, primary, read)
