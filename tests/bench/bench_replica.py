"""Reads from a streaming replica against the same reads on the primary (docs/SCALING.md, "A
streaming read replica"; docs/benchmarks.md, The read replica).

A primary and its ``pg_basebackup -R`` replica of the embedded wheel's PostgreSQL 18 on this
machine (tests/replica_pair.py), ``TABLES`` (20) simulated 3-hand tables appended and projected,
the replica caught up; then two in-process apps on the same primary — one with
``DATABASE_READ_URL`` at the replica, one without — answer the same reads, alternating one read of
each, ``N`` (300) per route and side: p50 / p99 in ms, and where the answers were read
(``Kwx-Read-From``). Both servers share this machine's cores with the service, so this measures
what the routing costs a read (the primary's head read, the replica's version check), not what a
replica on its own machine saves the primary.

Run: ``.venv/bin/python -m tests.bench replica``.
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

from tests.bench import knob

TABLES = knob("KWX_BENCH_REPLICA_TABLES", 20, 2)
N = knob("KWX_BENCH_REPLICA_N", 300, 20)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run() -> None:
    warnings.filterwarnings("ignore")
    from fastapi.testclient import TestClient

    from domain import engine
    from domain.events import convert
    from projections.projector import Projector
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.replica_pair import Pair
    from tests.service.streams import legal_table

    pair = Pair()
    containers: list[Any] = []
    try:
        pair.start()
        print(f"pair up in {pair.seconds:.1f} s (primary :{pair.primary.port}, replica :{pair.replica.port})")
        ensure_database(pair.primary.url(), "kwx")
        url = pair.primary.url("kwx")
        primary = bootstrap(Settings(database_url=url, projector="off", log_level="warning"), url=url)
        containers.append(primary)
        pair.wait_replayed()
        with_replica = Settings(database_url=url, database_read_url=pair.replica.url("kwx"), projector="off",
                                log_level="warning")  # fmt: skip
        replicated = bootstrap(with_replica, url=url, migrate=False)
        containers.append(replicated)
        tables = []
        for i in range(TABLES):
            wire = legal_table(500 + i, 3)
            primary.store.append("bench", f"r{i}", 0, [convert(e) for e in wire])
            tables.append((f"r{i}", len(wire), wire[0]["players"][0]))
        Projector(primary.pool, primary.store, engine).catch_up()
        pair.wait_replayed()
        key = {"Authorization": f"Bearer {primary.keys.create('bench', 'support')}"}
        routes = {
            "state (latest)": lambda t: f"/v1/tables/{t[0]}/state",
            "state?at=N/2": lambda t: f"/v1/tables/{t[0]}/state?at={t[1] // 2}",
            "events page (100)": lambda t: f"/v1/tables/{t[0]}/events?limit=100",
            "player stats": lambda t: f"/v1/players/{t[2]}/stats",
        }
        ours_app, direct_app = create_app(container=replicated), create_app(container=primary)
        with TestClient(ours_app) as ours, TestClient(direct_app) as direct:
            print(f"{'read':<20} {'replica p50':>12} {'p99':>8} {'primary p50':>12} {'p99':>8}  read from")
            for name, path_of in routes.items():
                took: dict[str, list[float]] = {"replica": [], "primary": []}
                sources: set[str] = set()
                for i in range(N):
                    path = path_of(tables[i % len(tables)])
                    for side, client in (("replica", ours), ("primary", direct))[:: 1 if i % 2 else -1]:
                        started = time.perf_counter()
                        answer = client.get(path, headers=key)
                        took[side].append((time.perf_counter() - started) * 1000)
                        assert answer.status_code == 200, answer.text
                        if side == "replica":
                            sources.add(answer.headers["kwx-read-from"])
                r, p = took["replica"], took["primary"]
                where = ", ".join(sorted(sources))
                print(f"{name:<20} {statistics.median(r):>12.2f} {_p(r, 0.99):>8.2f} "
                      f"{statistics.median(p):>12.2f} {_p(p, 0.99):>8.2f}  {where}")  # fmt: skip
    finally:
        for container in reversed(containers):
            container.close()
        pair.close()


if __name__ == "__main__":
    run()
