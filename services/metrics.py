"""Prometheus metrics (issue 15), with ``prometheus_client``.

Every serving process counts into its own files when ``PROMETHEUS_MULTIPROC_DIR`` is set (``kwx
serve`` sets it to a fresh folder before the workers and the projector child start, so all of them
count, and a scrape of any worker sums them: ``prometheus_client``'s multiprocess mode); without it
(an app built in process, the tests) they count in this process's default registry.

What is measured, by name (units as Prometheus and OpenTelemetry name them: ``_seconds``,
``_total``):

* ``kwx_http_requests_total{route, method, status}`` and ``kwx_http_request_duration_seconds{route,
  method}``: ``route`` is the route's template (``/v1/tables/{table_id}/events``), never the raw
  path; a path no route matches is the one label ``unmatched``, an unknown method ``OTHER``.
* ``kwx_events_appended_total``, ``kwx_append_batches_total{outcome}`` (stored, replayed,
  version_conflict, id_conflict, illegal, malformed, refused), ``kwx_append_refusals_total{rule}``
  (illegal events by rule), ``kwx_recorded_violations_total{rule}``, ``kwx_append_duration_seconds``.
* ``kwx_projection_events_total{model}``, ``kwx_projection_batches_total`` (its transactions that
  moved a checkpoint: events per batch is what a batch's fixed cost is spread over) and
  ``kwx_projection_parked_total`` (the projector's own counts); read from the database at each
  scrape: ``kwx_projection_lag_seconds{model}``,
  ``kwx_projection_behind_events{model}``, ``kwx_projection_parked_events{model}``,
  ``kwx_projection_stale{model}``, ``kwx_database_up``.
* ``kwx_db_pool_connections{pool}``, ``kwx_db_pool_connections_in_use{pool}``,
  ``kwx_db_pool_waits_total{pool}`` (``pool``: ``sync``, or ``async`` for the append's own pool).
* with a read replica (``DATABASE_READ_URL``, services/replica.py): ``kwx_replica_reads_total``
  (reads it answered), ``kwx_replica_fallbacks_total{reason}`` (reads the primary answered
  instead: ``down``, ``behind`` — not at the table's version within ``KWX_READ_REPLICA_WAIT`` —
  or ``error``), ``kwx_replica_state_changes_total{to}`` (marked ``down``, ``up`` again); read at
  each scrape: ``kwx_replica_up``, ``kwx_replica_lag_seconds``, ``kwx_replica_lag_bytes``.
* ``kwx_chain_verification_failures_total``: tables whose hash chain failed a check in a serving
  process (the audit checks it).
* ``kwx_build_info{version, engine, judge}`` (1, with a ``pid`` label per process under ``kwx
  serve``): what each process runs — its engine ``compiled`` or ``interpreted``, its ``judge``.
* ``kwx_feeds_open``: live feeds (``GET /v1/feed``, SSE streams and NDJSON long-polls) open now,
  summed over the processes (services/api/feed.py; ``KWX_FEED_MAX`` bounds each process's).
* under ``kwx serve``, read from ``/proc`` at each scrape: ``kwx_process_cpu_seconds_total{role,
  pid}`` and ``kwx_process_resident_memory_bytes{role, pid}`` of each of its processes — ``role``
  ``worker`` (serves HTTP), ``projector`` (the child that keeps the read models) or
  ``supervisor`` (``kwx serve`` itself with ``--workers`` ≥ 2: it serves nothing). What the read
  models cost on the real load is the projector's share of the CPU (docs/operations.md, Metrics).

The gauges summed over live processes (the pools, the feeds) forget a process that has died (a
worker replaced, the projector restarted) at the next scrape; its counts stay in the totals.

No label ever holds a tenant, a table id, a key or a player: ``/metrics`` needs no key.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from services.metrics_dir import MULTIPROC_ENV, running

CONTENT_TYPE = CONTENT_TYPE_LATEST
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
UNMATCHED = "unmatched"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "kwx_http_requests", "HTTP requests answered, by route template, method and status",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_DURATION = Histogram(
    "kwx_http_request_duration_seconds", "Time to answer an HTTP request, by route template and method",
    ["route", "method"], buckets=_BUCKETS,
)  # fmt: skip
EVENTS_APPENDED = Counter("kwx_events_appended", "Events stored by appends (replays not counted)")
APPEND_BATCHES = Counter("kwx_append_batches", "Append requests by outcome", ["outcome"])
APPEND_REFUSALS = Counter("kwx_append_refusals", "Illegal events refused, by rule", ["rule"])
RECORDED_VIOLATIONS = Counter(
    "kwx_recorded_violations", "Rule violations stored with their ruling (violations: record)", ["rule"]
)
APPEND_DURATION = Histogram(
    "kwx_append_duration_seconds", "Time to check and store one append batch", buckets=_BUCKETS
)
PROJECTION_EVENTS = Counter("kwx_projection_events", "Events applied by the projector, by model", ["model"])
PROJECTION_BATCHES = Counter("kwx_projection_batches", "Projector batches committed that moved a checkpoint")
PROJECTION_PARKED = Counter("kwx_projection_parked", "Events the projector parked with an error")
FEEDS_OPEN = Gauge("kwx_feeds_open", "Live feeds (GET /v1/feed) open", multiprocess_mode="livesum")
BUILD = Gauge(
    "kwx_build_info", "1 for each running process: its kwx version, rules engine and judge (stored facts')",
    ["version", "engine", "judge"], multiprocess_mode="liveall",
)  # fmt: skip
CHAIN_FAILURES = Counter(
    "kwx_chain_verification_failures", "Tables whose hash chain failed a check in a serving process"
)
POOL_CONNECTIONS = Gauge(
    "kwx_db_pool_connections", "Database connections open in the pools", ["pool"], multiprocess_mode="livesum"
)
POOL_IN_USE = Gauge(
    "kwx_db_pool_connections_in_use", "Database connections lent out", ["pool"], multiprocess_mode="livesum"
)
REPLICA_READS = Counter("kwx_replica_reads", "Reads answered from the read replica (DATABASE_READ_URL)")
REPLICA_FALLBACKS = Counter(
    "kwx_replica_fallbacks", "Reads answered from the primary though a replica is configured, by reason "
    "(down, behind: not at the table's version within KWX_READ_REPLICA_WAIT, error)", ["reason"],
)  # fmt: skip
REPLICA_UP_CHANGES = Counter("kwx_replica_state_changes", "The replica marked down or up again", ["to"])
POOL_WAITS = Counter("kwx_db_pool_waits", "Requests for a connection that had to wait", ["pool"])

# The append outcomes a refusal's error code maps to (anything else: "refused").
_OUTCOMES = {"version_conflict": "version_conflict", "id_conflict": "id_conflict", "illegal_event": "illegal",
             "malformed": "malformed", "bad_rules": "malformed"}  # fmt: skip


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


# ---------------------------------------------------------------------------------- recording
def mark_build() -> None:
    """This process's ``kwx_build_info``: its kwx version, whether its rules engine is the mypyc
    build, and its judge (``projections.stored_facts.JUDGE``: the facts it stores and takes). Two
    judges at once — a process started after the code changed on disk, a rolling deploy — mean the
    projector folds the other judge's events instead of taking their facts (docs/projections.md §1)."""
    from importlib.metadata import PackageNotFoundError, version

    from projections.stored_facts import JUDGE
    from services import compiled_engine

    try:
        release = version("kwx")
    except PackageNotFoundError:  # run from a tree that was never installed
        release = "unknown"
    BUILD.labels(release, "compiled" if compiled_engine.active() else "interpreted", str(JUDGE)).set(1)


def observe_request(route: str | None, method: str, status: int, seconds: float) -> None:
    method = method if method in METHODS else "OTHER"
    route = route or UNMATCHED
    HTTP_REQUESTS.labels(route, method, str(status)).inc()
    HTTP_DURATION.labels(route, method).observe(seconds)


def observe_append(result: Any, seconds: float) -> None:
    """A stored (or replayed) batch: ``services.store.batch.AppendResult``."""
    APPEND_DURATION.observe(seconds)
    if getattr(result, "replayed", False):
        APPEND_BATCHES.labels("replayed").inc()
        return
    APPEND_BATCHES.labels("stored").inc()
    EVENTS_APPENDED.inc(result.count)
    for ruling in result.rulings:
        RECORDED_VIOLATIONS.labels(str(ruling.get("rule") or ruling.get("code") or "unknown")).inc()


def observe_refusal(body: dict[str, Any], seconds: float) -> None:
    """An append answered with an error ``body`` (``{"error": code, …}``)."""
    APPEND_DURATION.observe(seconds)
    code = str(body.get("error", ""))
    APPEND_BATCHES.labels(_OUTCOMES.get(code, "refused")).inc()
    if code == "illegal_event":
        APPEND_REFUSALS.labels(str(body.get("rule") or "unknown")).inc()


def observe_projection(applied: dict[str, int], parked: int) -> None:
    """The projector's ``on_batch`` hook."""
    moved = False
    for model, count in applied.items():
        if count:
            PROJECTION_EVENTS.labels(model).inc(count)
            moved = True
    if moved:
        PROJECTION_BATCHES.inc()
    if parked:
        PROJECTION_PARKED.inc(parked)


def chain_failures(count: int) -> None:
    if count:
        CHAIN_FAILURES.inc(count)


class PoolWatch:
    """Sets the pool gauges from ``psycopg_pool``'s stats, at most once a second per process (the
    request path calls :meth:`maybe`; a scrape calls :meth:`now`)."""

    def __init__(self) -> None:
        self._pools: dict[str, Any] = {}
        self._next = 0.0
        self._waits: dict[str, int] = {}

    def add(self, name: str, pool: Any) -> None:
        if pool is not None and hasattr(pool, "get_stats"):
            self._pools[name] = pool

    def maybe(self) -> None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + 1.0
            self.now()

    def now(self) -> None:
        for name, pool in list(self._pools.items()):
            try:
                stats = pool.get_stats()
            except Exception:  # a closed pool
                continue
            size = int(stats.get("pool_size", 0))
            POOL_CONNECTIONS.labels(name).set(size)
            POOL_IN_USE.labels(name).set(max(0, size - int(stats.get("pool_available", 0))))
            queued = int(stats.get("requests_queued", 0))
            seen = self._waits.get(name, 0)
            if queued > seen:
                POOL_WAITS.labels(name).inc(queued - seen)
            self._waits[name] = max(seen, queued)


POOLS = PoolWatch()


# ---------------------------------------------------------------------------------- exposition
class _Default(Collector):
    """This process's default registry (no multiprocess mode): its metrics and the process's own."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


class _Replica(Collector):
    """Read at each scrape, with a read replica (DATABASE_READ_URL): whether it is up, its lag."""

    def __init__(self, replica: Any, pool: Any) -> None:
        self.replica, self.pool = replica, pool

    def collect(self) -> Iterable[Any]:
        lag = self.replica.lag(self.pool)
        up = GaugeMetricFamily("kwx_replica_up", "1 when the read replica answered this scrape, else 0")
        up.add_metric([], 1 if lag["status"] == "ok" else 0)
        yield up
        if lag["lag_seconds"] is not None:
            seconds = GaugeMetricFamily(
                "kwx_replica_lag_seconds", "Age of the last transaction the replica replayed (0: idle)"
            )
            seconds.add_metric([], lag["lag_seconds"])
            yield seconds
        if lag["lag_bytes"] is not None:
            behind = GaugeMetricFamily("kwx_replica_lag_bytes", "WAL the replica has yet to replay (bytes)")
            behind.add_metric([], lag["lag_bytes"])
            yield behind


class _Database(Collector):
    """Read at each scrape: how far each read model is behind, its parked events, whether its
    checkpoint is stale, and whether the database answers. Log-wide numbers only (no tenant). Of
    the kept read models (``kept``, KWX_READ_MODELS; None: all): one not kept is behind on purpose."""

    def __init__(self, pool: Any, kept: Sequence[str] | None = None) -> None:
        self.pool, self.kept = pool, kept

    def collect(self) -> Iterable[Any]:
        up = GaugeMetricFamily("kwx_database_up", "1 when the database answered this scrape, else 0")
        lag = GaugeMetricFamily(
            "kwx_projection_lag_seconds", "Age of the oldest stored event a read model lacks (0: caught up)",
            labels=["model"],
        )  # fmt: skip
        behind = GaugeMetricFamily(
            "kwx_projection_behind_events", "Stored events a read model has not applied yet", labels=["model"]
        )
        parked = GaugeMetricFamily(
            "kwx_projection_parked_events", "Events parked for a read model (docs/projections.md §1)",
            labels=["model"],
        )  # fmt: skip
        stale = GaugeMetricFamily(
            "kwx_projection_stale", "1 when a read model's checkpoint is ahead of the log (restored)",
            labels=["model"],
        )  # fmt: skip
        try:
            from projections.queries.freshness import PerModel

            with self.pool.connection(timeout=2.0) as conn:
                models = (PerModel() if self.kept is None else PerModel(names=self.kept))(conn)
        except Exception:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for m in models:
            lag.add_metric([m["projection"]], m["lag_seconds"])
            behind.add_metric([m["projection"]], m["behind"])
            parked.add_metric([m["projection"]], m["parked"])
            stale.add_metric([m["projection"]], 1 if m["stale"] else 0)
        yield from (up, lag, behind, parked, stale)


class _Live(Collector):
    """``prometheus_client``'s multiprocess collector, after forgetting the processes that have died:
    a gauge summed over live processes (``livesum``: the pools' connections, the feeds open) keeps a
    file per process, which only ``mark_process_dead`` removes — without it, a replaced worker's last
    values were summed into every later scrape (2 workers, one killed and replaced: the pools'
    connections went 5 → 7; with the pruning 4 → 4). Counters and histograms are cumulative and keep the dead
    processes' counts."""

    def __init__(self, path: str) -> None:
        from prometheus_client import multiprocess as mp

        self.path, self.inner = path, mp.MultiProcessCollector(None, path)

    def collect(self) -> Iterable[Any]:
        from prometheus_client import multiprocess as mp

        for pid in _pids(self.path):
            if _gone(pid):
                mp.mark_process_dead(pid, self.path)
        return self.inner.collect()


class _Processes(Collector):
    """Each live process of this ``kwx serve`` — ``kwx serve`` itself and its children, found by
    the files they count into — with its CPU time and resident memory, read from ``/proc`` at the
    scrape (prometheus_client's own process collector reads only the process it runs in, and is not
    offered in multiprocess mode). Nothing where ``/proc`` is not."""

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self) -> Iterable[Any]:
        cpu = CounterMetricFamily("kwx_process_cpu_seconds_total",
                                  "CPU time (user + system) of each of kwx serve's processes",
                                  labels=["role", "pid"])  # fmt: skip
        memory = GaugeMetricFamily("kwx_process_resident_memory_bytes",
                                   "Resident memory of each of kwx serve's processes",
                                   labels=["role", "pid"])  # fmt: skip
        serve = int(os.environ.get("KWX_SERVE_PID") or 0)  # set by kwx serve for --workers >= 2
        top = serve or os.getpid()  # one worker: the serving process is kwx serve itself
        for pid in sorted({top, *_pids(self.path)}):
            stat = _stat(pid)
            if stat is None or (pid != top and stat[0] != top):
                continue  # gone, or not ours (another server's folder, a reused pid)
            role = "supervisor" if pid == serve else "projector" if _is_projector(pid) else "worker"
            cpu.add_metric([role, str(pid)], stat[1])
            memory.add_metric([role, str(pid)], stat[2])
        yield cpu
        yield memory


_PID_FILE = re.compile(r"[a-z_]+_(\d+)\.db")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _pids(path: str) -> set[int]:
    """The processes that have counted into the multiprocess folder (by its files' names)."""
    try:
        names = os.listdir(path)
    except OSError:
        return set()
    return {int(m.group(1)) for n in names if (m := _PID_FILE.fullmatch(n))}


def _stat(pid: int) -> tuple[int, float, int] | None:
    """(parent pid, CPU seconds, resident bytes) of a running process, from ``/proc``; None when it
    has exited (no entry, or a zombie not yet reaped) or ``/proc`` cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        with open(f"/proc/{pid}/statm", "rb") as f:
            resident = int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, …
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS, resident


def _gone(pid: int) -> bool:
    """The process has exited (a zombie counts as exited). Without ``/proc`` (not Linux): whether
    signal 0 misses it."""
    if os.path.isdir("/proc/self"):
        return _stat(pid) is None
    return not running(pid)


def _is_projector(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return b"projections" in argv and b"follow" in argv


def _registry(pool: Any, replica: Any = None, kept: Sequence[str] | None = None) -> CollectorRegistry:
    """Every metric of this process (or, in multiprocess mode, every process's, summed), with the
    database's read at each scrape when ``pool`` is given (the kept read models': ``kept``)."""
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess():
        path = os.environ[MULTIPROC_ENV]
        registry.register(_Live(path))
        registry.register(_Processes(path))
    else:
        registry.register(_Default())
    if pool is not None:
        registry.register(_Database(pool, kept))
        if replica is not None:
            registry.register(_Replica(replica, pool))
    return registry


def render(pool: Any, replica: Any = None, kept: Sequence[str] | None = None) -> bytes:
    """The text exposition of :func:`_registry` (the pools' gauges set first)."""
    if pool is not None:
        POOLS.now()
    return generate_latest(_registry(pool, replica, kept))


def route_of(scope: dict[str, Any]) -> str | None:
    """The matched route's template (FastAPI puts the route in the scope), else None."""
    route = scope.get("route")
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    return path if isinstance(path, str) else None


def serve_port(
    port: int, host: str, pool: Any, replica: Any = None, kept: Sequence[str] | None = None
) -> None:
    """``KWX_METRICS=PORT``: the same exposition on a port of its own (a thread of ``kwx serve``)."""
    from prometheus_client import start_http_server

    start_http_server(port, addr=host, registry=_registry(pool, replica, kept))
