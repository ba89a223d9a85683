"""Discovery's reads on a large read model (issue 13, speed): ``GET /v1/tables?player=…`` and
``…/hands`` are one index range each (projections/discovery_queries.py); this measures their
queries at p50/p99 on a ``discovery`` model as large as fits in a minute here.

The model's rows are made in SQL (generate_series), not by projecting events: what the queries
cost depends on the model's rows, not on how they were projected (tests/service/test_discovery.py
checks the projection). ``KWX_BENCH_DISCOVERY_TABLES`` (50,000) tables of 8 hands each, 3 players
of a pool of 2,000, per tenant, two tenants — 400,000 hands a tenant, which at ≈ 50 events a hand
stands for ≈ 20,000,000 events (the issue's ≥ 1,000,000 events are ≈ 20,000 hands, 2,500 such tables).

Run: ``.venv/bin/python -m tests.bench discovery`` (embedded PostgreSQL in a temp dir). Bounded:
``N`` (500) queries per line.

**Over HTTP on a store of ≥ 1,000,000 events** (:func:`run_http`, run after the queries): the two
routes end to end — ``GET /v1/tables?player=P`` and ``GET /v1/tables/{id}/hands`` — against a real
``kwx serve`` (one worker, its collector settled as always, the projector off while measuring),
p50 / p99 over one keep-alive client beside the ``/v1/health`` floor, against the goal p99 ≤ 20
ms. The store: ``BASE`` (40) simulated 8-hand tables appended through ``EventStore.append`` (the
engine's checks, the hash chain), then copied in SQL (``INSERT … SELECT``, one statement) under
new table ids until the events table holds ``KWX_BENCH_DISCOVERY_EVENTS`` (1,000,000) events —
each copy's ``table_opened`` seats three other players of a pool of ``POOL`` (100); and the read
models, ``discovery`` with them, made from all those events by kwx's own projector
(``Projector.catch_up``), as the service makes them. (A copy's stored hashes are its original's:
nothing measured here reads them; ``kwx verify`` would refuse the copies.)
"""

from __future__ import annotations

import os
import random
import re
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench import knob

TABLES = knob("KWX_BENCH_DISCOVERY_TABLES", 50000, 500)
EVENTS = knob("KWX_BENCH_DISCOVERY_EVENTS", 1000000, 10000)
BASE = 40
POOL = 100
GOAL_MS = 20.0
_INDEX = re.compile(r"Index (?:Only )?Scan(?: Backward)? (?:using|on) (\w+)")
HANDS = 8
PLAYERS = 2000
N = knob("KWX_BENCH_DISCOVERY_N", 500, 20)

_FILL = """
INSERT INTO proj_discovery_tables (tenant, table_id, seq, players, preset, hands, first_at, last_at, flags)
SELECT %(tenant)s, 'b' || g, g,
       jsonb_build_array('p' || (g * 7) %% 2000, 'p' || (g * 13 + 1) %% 2000, 'p' || (g * 17 + 2) %% 2000),
       'default', 8, timestamptz '2026-01-01' + g * interval '1 minute',
       timestamptz '2026-01-01' + g * interval '1 minute' + interval '40 minutes',
       (CASE WHEN g %% 3 = 0 THEN 1 ELSE 0 END) | (CASE WHEN g %% 50 = 0 THEN 8 ELSE 0 END)
FROM generate_series(1, %(n)s) g;
INSERT INTO proj_discovery_players (tenant, player_id, seq, table_id)
SELECT DISTINCT t.tenant, p.player, t.seq, t.table_id FROM proj_discovery_tables t
CROSS JOIN LATERAL jsonb_array_elements_text(t.players) p(player) WHERE t.tenant = %(tenant)s;
INSERT INTO proj_discovery_hands (tenant, table_id, hand, ordinal, start_event, end_event, dealer, end_kind,
                                  winners, net, flags, at)
SELECT %(tenant)s, 'b' || g, h, h, 1 + (h - 1) * 50, h * 50, h %% 3, 'hu',
       jsonb_build_array(jsonb_build_object('seat', h %% 3, 'player', 'p1', 'from', null, 'tile', '5p',
         'patterns', jsonb_build_array(jsonb_build_object('id', 'pi_hu', 'x', 1)), 'multiplier', 1,
         'payable', 2, 'event', h * 50, 'violation', null)),
       jsonb_build_array(4, -2, -2), 0, timestamptz '2026-01-01' + g * interval '1 minute'
FROM generate_series(1, %(n)s) g, generate_series(1, 8) h;
"""


def _ms(fn: Callable[[], Any]) -> list[float]:
    out = []
    for _ in range(N):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _line(name: str, times: list[float]) -> None:
    q = statistics.quantiles(times, n=100)
    print(f"  {name:44} p50 {statistics.median(times):6.2f} ms  p99 {q[98]:6.2f} ms  ({len(times)} queries)")


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import psycopg

    from projections import discovery_queries as dq
    from services import migrate
    from services.api.discovery import decode_cursor, encode_cursor
    from services.db import ensure_database, start_embedded

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-discovery-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        migrate.upgrade(url)
        started = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            for tenant in ("a", "b"):
                for statement in _FILL.split(";")[:3]:
                    conn.execute(statement, {"tenant": tenant, "n": TABLES})  # type: ignore[arg-type]
            conn.execute("ANALYZE")
        made = time.perf_counter() - started
        print(f"discovery model: 2 tenants x {TABLES} tables x {HANDS} hands ({2 * TABLES * HANDS} hand "
              f"rows), made in {made:.0f} s; tenant a's queries:")  # fmt: skip
        rng = random.Random(1)
        with psycopg.connect(url, autocommit=True) as conn:
            _line("tables, first page (50)", _ms(lambda: dq.tables(conn, "a")))
            _line(
                "tables?player=P, first page",
                _ms(lambda: dq.tables(conn, "a", player=f"p{rng.randrange(PLAYERS)}")),
            )

            def deep() -> None:  # a page far down: the cursor of a random place
                before = decode_cursor(encode_cursor(rng.randrange(1, TABLES)))
                dq.tables(conn, "a", player=f"p{rng.randrange(PLAYERS)}", before=before)

            _line("tables?player=P&cursor=(random place)", _ms(deep))
            _line("tables?has=lou_hu (1 in 3 tables)", _ms(lambda: dq.tables(conn, "a", mask=1)))
            _line("tables?has=bao_hu (1 in 50 tables)", _ms(lambda: dq.tables(conn, "a", mask=8)))
            _line(
                "tables/{id}/hands (8 hands)",
                _ms(lambda: dq.hands(conn, "a", f"b{rng.randrange(1, TABLES)}")),
            )
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)
    run_http()


# A copy's players: each of the original's three (``p0`` … ``p99``) moved by the copy's number.
_COPY_EVENTS = """
INSERT INTO events (tenant, table_id, version, event_id, type, body, ruling, hash)
SELECT e.tenant, e.table_id || '-c' || k, e.version, e.event_id, e.type,
       CASE WHEN e.type = 'table_opened' THEN jsonb_set(e.body, '{players}', (
           SELECT jsonb_agg('p' || ((substr(x, 2)::int + k * 7) %% %(pool)s) ORDER BY o)
           FROM jsonb_array_elements_text(e.body -> 'players') WITH ORDINALITY AS a(x, o)))
       ELSE e.body END,
       e.ruling, e.hash
FROM events e CROSS JOIN generate_series(1, %(copies)s) k
WHERE e.tenant = %(tenant)s ORDER BY k, e.table_id, e.version
"""
_COPY_HEADS = """
INSERT INTO table_heads (tenant, table_id, version, last_hash, snapshot_version)
SELECT h.tenant, h.table_id || '-c' || k, h.version, h.last_hash, 0
FROM table_heads h CROSS JOIN generate_series(1, %(copies)s) k WHERE h.tenant = %(tenant)s
"""


def _plans() -> list[tuple[str, str, dict[str, Any] | tuple[Any, ...]]]:
    from projections import discovery_queries as dq

    page = {"tenant": "a", "before": 2**63 - 1, "player": "p1", "preset": None, "mask": 0, "since": None,
            "until": None, "limit": 51}  # fmt: skip
    return [
        ("tables?player=P", dq.tables_sql("p1", None, None, None, 0), page),
        ("tables", dq.tables_sql(None, None, None, None, 0), dict(page, player=None)),
        ("hands (its table)", dq._TABLE_SQL, ("a", "t1-c7")),
        ("hands", dq._HANDS_SQL, ("a", "t1-c7", 0, 501)),
    ]


def _line_http(name: str, times: list[float], goal: bool) -> None:
    p99 = statistics.quantiles(times, n=100)[98]
    verdict = f"  goal p99 ≤ {GOAL_MS:g} ms: {'met' if p99 <= GOAL_MS else 'MISSED'}" if goal else ""
    print(f"  {name:44} p50 {statistics.median(times):6.2f} ms  p99 {p99:6.2f} ms  ({len(times)}){verdict}")


def run_http() -> None:
    """The two discovery routes over HTTP, a real ``kwx serve``, on a store of ≥ ``EVENTS`` events."""
    warnings.filterwarnings("ignore", module="platformdirs")
    from datetime import UTC, datetime, timedelta

    import httpx
    import psycopg

    from domain import engine
    from domain.events import convert
    from domain.simulate import simulate_table
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from tests.bench.bench_ingest import start_server, stop

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-discovery-http-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        container = bootstrap(
            Settings(database_url=url, log_level="warning", projector="off"), url=url, migrate=True
        )
        started = time.perf_counter()
        rng = random.Random(5)
        base_events = 0
        start = datetime(2026, 11, 1, tzinfo=UTC)
        for i in range(BASE):
            players = [f"p{n}" for n in rng.sample(range(POOL), 3)]
            wire = simulate_table(rng, HANDS, {"preset": "default"}, f"t{i}",
                                  start=start + timedelta(hours=i), players=players)  # fmt: skip
            decoded = [convert(e) for e in wire]
            for j in range(0, len(decoded), 500):
                container.store.append("a", f"t{i}", j, decoded[j : j + 500])
            base_events += len(decoded)
        copies = max(0, -(-EVENTS // base_events) - 1)
        simulated = time.perf_counter() - started
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_COPY_EVENTS, {"tenant": "a", "copies": copies, "pool": POOL})
            conn.execute(_COPY_HEADS, {"tenant": "a", "copies": copies})
            stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]  # type: ignore[index]
        copied = time.perf_counter() - started - simulated
        Projector(container.pool, container.store, engine).catch_up()
        projected = time.perf_counter() - started - simulated - copied
        key = container.keys.create("a", "support")
        container.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
            tables, hands = conn.execute(
                "SELECT (SELECT count(*) FROM proj_discovery_tables),"
                " (SELECT count(*) FROM proj_discovery_hands)"
            ).fetchone()  # type: ignore[misc]
            print(f"store: {stored:,} events ({BASE} simulated {HANDS}-hand tables, {base_events:,} events, "
                  f"appended in {simulated:.0f} s; {copies} copies of them in SQL in {copied:.0f} s); "
                  f"discovery projected by kwx's projector in {projected:.0f} s: {tables:,} tables, "
                  f"{hands:,} hands; players p0…p{POOL - 1}")  # fmt: skip
            for name, sql, params in _plans():
                plan = [r[0] for r in conn.execute("EXPLAIN (ANALYZE) " + sql, params)]  # type: ignore[call-overload]
                used = sorted({m.group(1) for line in plan if (m := _INDEX.search(line))})
                if not used:
                    print("\n".join("    " + line for line in plan))
                took = next((line.strip() for line in plan if line.startswith("Execution Time")), "")
                print(f"  EXPLAIN ANALYZE {name}: {', '.join(used) or 'no index: ' + plan[0]}; {took}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        proc, base = start_server(url, "off", 1)
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                headers = {"Authorization": f"Bearer {key}"}
                pick = random.Random(9)
                ids = [f"t{pick.randrange(BASE)}" + (f"-c{k}" if (k := pick.randrange(copies + 1)) else "")
                       for _ in range(N)]  # fmt: skip

                def timed(path: str, params: dict[str, Any] | None = None) -> float:
                    t = time.perf_counter()
                    answer = client.get(path, params=params, headers=headers)
                    took = (time.perf_counter() - t) * 1000
                    assert answer.status_code == 200, answer.text
                    return took

                for _ in range(20):  # warm: the worker's first requests, the pool's connections
                    timed("/v1/health")
                    timed("/v1/tables", {"player": "p1"})
                _line_http("floor: GET /v1/health", [timed("/v1/health") for _ in range(N)], False)
                players = [f"p{pick.randrange(POOL)}" for _ in range(N)]
                _line_http("GET /v1/tables?player=P (first page, 50)",
                           [timed("/v1/tables", {"player": p}) for p in players], True)  # fmt: skip
                deep = []
                for _ in range(N // 5):  # a player's second page: the cursor of the first
                    player = f"p{pick.randrange(POOL)}"
                    first = client.get("/v1/tables", params={"player": player}, headers=headers).json()
                    if first["next_cursor"]:
                        deep.append(timed("/v1/tables", {"player": player, "cursor": first["next_cursor"]}))
                if len(deep) >= 2:
                    _line_http("GET /v1/tables?player=P&cursor=(next page)", deep, True)
                _line_http("GET /v1/tables (first page, 50)", [timed("/v1/tables") for _ in range(N)], True)
                _line_http(f"GET /v1/tables/{{id}}/hands ({HANDS} hands)",
                           [timed(f"/v1/tables/{t}/hands") for t in ids], True)  # fmt: skip
        finally:
            stop(proc)
        print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
