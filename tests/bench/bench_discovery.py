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
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

TABLES = int(os.environ.get("KWX_BENCH_DISCOVERY_TABLES", "50000"))
HANDS = 8
PLAYERS = 2000
N = 500

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


if __name__ == "__main__":
    run()
