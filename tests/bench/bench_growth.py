"""How cost grows with the store (issue 14, "Growth and speed"): one node, the same work at an
empty store and at ≥ ``KWX_BENCH_EVENTS`` (5,000,000) stored events, in one run.

Two databases of one embedded PostgreSQL: one empty, one grown to ``KWX_BENCH_EVENTS``. The probe
(``PROBE`` simulated 8-hand tables, ≈ 410 events each, the same events every time under other
table ids) is measured in ``KWX_BENCH_ROUNDS`` (3) paired rounds, one on each database, the order
alternating, against a real ``kwx serve`` on it (1 worker, projector off):

* **append**: every probe table ``POST``ed in 100-event batches by one keep-alive client —
  events/s by the clock, and the CPU per batch of kwx serve and of PostgreSQL;
* **catch-up**: then kwx's projector (in this process) applies the probe's events — events/s;
* **step**: ``GET …/state?at=N`` (support) at ``KWX_BENCH_READS`` (1000) random (table, N) of the
  probe — p50 / p99.

The full store: ``BASE`` tables simulated and appended through the store, then copied in SQL under
other ids until the log holds ``KWX_BENCH_EVENTS`` events (the copies carry no stored facts: the
projector folds them, and that catch-up's rate is printed too), then ``VACUUM ANALYZE``. Goal: the
full store's append rate and step latency within 10 % of the empty store's (medians of the
per-pair ratios). ``python -m tests.bench growth`` (``KWX_BENCH_EVENTS=500000`` for a quick look).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from tests.bench import knob

EVENTS = knob("KWX_BENCH_EVENTS", 5000000, 20000)
PROBE = knob("KWX_BENCH_PROBE", 24, 4)
BASE = 100
HANDS = 8
READS = knob("KWX_BENCH_READS", 1000, 100)  # p99: the 10th slowest, not the 3rd of 300
BATCH = 100

_COPY_EVENTS = """
INSERT INTO events (tenant, table_id, version, event_id, type, body, ruling, hash)
SELECT e.tenant, e.table_id || '-c' || k, e.version, e.event_id, e.type, e.body, e.ruling, e.hash
FROM events e CROSS JOIN generate_series(1, %(copies)s) k
WHERE e.tenant = %(tenant)s ORDER BY k, e.table_id, e.version
"""
_COPY_HEADS = """
INSERT INTO table_heads (tenant, table_id, version, last_hash, snapshot_version)
SELECT h.tenant, h.table_id || '-c' || k, h.version, h.last_hash, 0
FROM table_heads h CROSS JOIN generate_series(1, %(copies)s) k WHERE h.tenant = %(tenant)s
"""


def _tables(n: int, seed: int) -> list[list[dict[str, Any]]]:
    from domain.simulate import simulate_table

    rng = random.Random(seed)
    return [simulate_table(rng, HANDS, {"preset": "default"}, f"x{i}") for i in range(n)]


def _probe(
    url: str,
    base: str,
    keys: dict[str, str],
    probe: list[list[dict[str, Any]]],
    tag: str,
    pids: tuple[int, int],
) -> dict[str, float]:
    import httpx

    from domain import engine
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.settings import Settings
    from tests.bench.bench_ingest import tree_cpu

    out: dict[str, float] = {}
    events = sum(len(t) for t in probe)
    batches = sum(-(-len(t) // BATCH) for t in probe)
    with httpx.Client(base_url=base, timeout=120) as client:
        platform = {"Authorization": f"Bearer {keys['platform']}", "Content-Type": "application/json"}
        cpu0 = (tree_cpu(pids[0]), tree_cpu(pids[1]))
        started = time.perf_counter()
        for i, table in enumerate(probe):
            for v in range(0, len(table), BATCH):
                r = client.post(f"/v1/tables/{tag}{i}/events", headers=platform,
                                json={"expected_version": v, "events": table[v : v + BATCH]})  # fmt: skip
                assert r.status_code == 201, r.text
        seconds = time.perf_counter() - started
        cpu1 = (tree_cpu(pids[0]), tree_cpu(pids[1]))
        out["append"] = events / seconds
        out["append_kwx_ms"] = (cpu1[0] - cpu0[0]) / batches * 1000
        out["append_pg_ms"] = (cpu1[1] - cpu0[1]) / batches * 1000

        container = bootstrap(Settings(database_url=url, log_level="warning", projector="off"), url=url)
        try:
            projector = Projector(container.pool, container.store, engine)
            started = time.perf_counter()
            applied = projector.catch_up()
            out["catch_up"] = applied / (time.perf_counter() - started)
        finally:
            container.close()

        support = {"Authorization": f"Bearer {keys['support']}"}
        pick = random.Random(3)
        for _ in range(20):  # warm: the worker's first reads
            client.get(f"/v1/tables/{tag}0/state", params={"at": 5}, headers=support)
        times = []
        cpu0 = (tree_cpu(pids[0]), tree_cpu(pids[1]))
        for _ in range(READS):
            i = pick.randrange(len(probe))
            at = pick.randrange(1, len(probe[i]) + 1)
            t = time.perf_counter()
            r = client.get(f"/v1/tables/{tag}{i}/state", params={"at": at}, headers=support)
            times.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, r.text
        cpu1 = (tree_cpu(pids[0]), tree_cpu(pids[1]))
        out["step_kwx_ms"] = (cpu1[0] - cpu0[0]) / READS * 1000
        out["step_pg_ms"] = (cpu1[1] - cpu0[1]) / READS * 1000
        times.sort()
        out["step_p50"] = statistics.median(times)
        out["step_p99"] = times[min(len(times) - 1, int(0.99 * len(times)))]
    return out


def _say(label: str, r: dict[str, float]) -> None:
    print(f"{label}: append {r['append']:8,.0f} events/s (CPU per batch: kwx serve "
          f"{r['append_kwx_ms']:.2f} ms, PostgreSQL {r['append_pg_ms']:.2f} ms); projector catch-up "
          f"{r['catch_up']:8,.0f} events/s; state?at=N p50 {r['step_p50']:.1f} ms, "
          f"p99 {r['step_p99']:.1f} ms (CPU per read: kwx serve {r['step_kwx_ms']:.2f} ms, "
          f"PostgreSQL {r['step_pg_ms']:.2f} ms)")  # fmt: skip


ROUNDS = knob("KWX_BENCH_ROUNDS", 3, 1)


def _grow(url: str) -> tuple[int, int, float, int, float]:
    """``BASE`` tables appended through the store, copied in SQL up to ``EVENTS``, the projector
    caught up (the copies carry no stored facts: folded), ``VACUUM ANALYZE``. (stored, copies,
    seconds to grow, events the projector applied, its seconds)."""
    import psycopg

    from domain import engine
    from domain.events import convert
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.settings import Settings

    started = time.perf_counter()
    container = bootstrap(Settings(database_url=url, log_level="warning", projector="off"), url=url)
    try:
        made = 0
        for i, wire in enumerate(_tables(BASE, 29)):
            decoded = [convert(e) for e in wire]
            for j in range(0, len(decoded), 500):
                container.store.append("grow", f"g{i}", j, decoded[j : j + 500])
            made += len(decoded)
        copies = max(0, -(-(EVENTS - made) // made))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_COPY_EVENTS, {"tenant": "grow", "copies": copies})
            conn.execute(_COPY_HEADS, {"tenant": "grow", "copies": copies})
            stored = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])  # type: ignore[index]
        grown = time.perf_counter() - started
        t0 = time.perf_counter()
        applied = Projector(container.pool, container.store, engine).catch_up()
        caught = time.perf_counter() - t0
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE)")
    finally:
        container.close()
    return stored, copies, grown, applied, caught


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import psycopg

    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from tests.bench.bench_ingest import postmaster_pid, start_server, stop

    probe = _tables(PROBE, 11)
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-growth-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        urls, keys = {}, {}
        for name in ("empty", "full"):  # two databases of one server: the same machine, the same buffers
            ensure_database(server.get_uri("postgres"), f"bench_{name}")
            urls[name] = server.get_uri(f"bench_{name}")
            container = bootstrap(Settings(database_url=urls[name], log_level="warning", projector="off"),
                                  url=urls[name])  # fmt: skip
            keys[name] = {role: container.keys.create("bench", role) for role in ("platform", "support")}
            container.close()
        postgres = postmaster_pid(base_dir)
        print(f"probe: {PROBE} simulated {HANDS}-hand tables, {sum(len(t) for t in probe):,} events; "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
        stored, copies, grown, applied, caught = _grow(urls["full"])
        with psycopg.connect(urls["full"]) as conn:
            size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()
        print(f"the full store: {stored:,} events in {grown:.0f} s ({BASE} tables appended, {copies} copies "
              f"in SQL); the projector caught up on {applied:,} events in {caught:.0f} s = "
              f"{applied / caught:,.0f} events/s (the copies carry no stored facts: folded); "
              f"database {size[0] if size else '?'}")  # fmt: skip

        runs: dict[str, list[dict[str, float]]] = {"empty": [], "full": []}
        for r in range(ROUNDS):  # paired rounds, the order alternating
            for name in ("empty", "full") if r % 2 == 0 else ("full", "empty"):
                proc, base = start_server(urls[name], "off", 1)
                try:
                    result = _probe(urls[name], base, keys[name], probe, f"r{r}-", (proc.pid, postgres))
                finally:
                    stop(proc)
                runs[name].append(result)
                _say(f"round {r + 1}, {name} store", result)
        lines = (("append", "append rate", True), ("step_p50", "state?at=N p50", False),
                 ("step_p99", "state?at=N p99", False), ("catch_up", "catch-up rate", True),
                 ("step_kwx_ms", "CPU per read, kwx serve", False),
                 ("step_pg_ms", "CPU per read, PostgreSQL", False))  # fmt: skip
        print(f"full ({stored:,} events) / empty, median of the {ROUNDS} paired rounds [range]:")
        for name, label, higher in lines:
            if not all(e[name] for e in runs["empty"]):  # CPU in 10-ms ticks: a short round may count none
                print(f"    {label}: no ratio (a round of the empty store counted 0 ticks: too few reads)")
                continue
            ratios = sorted(f[name] / e[name] for e, f in zip(runs["empty"], runs["full"], strict=True))
            ratio = statistics.median(ratios)
            worse = (1 - ratio) if higher else (ratio - 1)
            goal = (
                ""
                if name == "catch_up" or name.endswith("_ms")
                else " (goal: within 10 %: " + ("met" if worse <= 0.10 else "missed") + ")"
            )
            print(f"    {label}: {ratio:.2f} [{ratios[0]:.2f}–{ratios[-1]:.2f}]{goal}")
        print(f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
