"""PostgreSQL's CPU per 100-event append: the fast path's one statement against ``COPY`` of the same
rows, measured on the backend that runs them (docs/operations.md, Speed, PostgreSQL's share).

One fresh embedded PostgreSQL (autovacuum off, so its workers don't pollute), migrated by kwx's
migrations. The batches are the bench tables (``KWX_BENCH_TABLES`` × ``KWX_BENCH_HANDS``, default
48 × 8 ≈ 221 batches), stepped and planned beforehand by ``EventStore.plan_cached`` (what the HTTP
service runs: ``plan.sql`` / ``plan.params``); each sample stores them twice (≈ 440 batches) under
fresh ids on one connection per line, and reads the backend's utime + stime (``/proc/<pid>/stat``)
and run time (``/proc/<pid>/schedstat``) before and after, and the WAL bytes written. Lines:

* **COPY** (the baseline): the same rows ``COPY``'d into ``events`` in one transaction per batch
  (the locking path's ``COPY``, without its head update);
* **statement**: the fast path's statement, as stored today (snapshot ``STORAGE EXTERNAL``, 0005);
* **statement, snapshot compressed**: the same with the column set back to ``EXTENDED`` (pglz;
  the storage before migration 0005) for its samples only.

The lines take turns, ``KWX_BENCH_REPEAT`` (4) rounds after one warm-up round, reversing the order
every round; printed: ms of backend CPU per batch (median), the ratio to COPY and to the statement
(medians of the paired rounds), WAL KB per batch. Walwriter and checkpointer work is not counted.

Run: ``.venv/bin/python -m tests.bench append_sql``.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench import knob

BATCH = 100
REPEAT = knob("KWX_BENCH_REPEAT", 4, 1)
TABLES = knob("KWX_BENCH_TABLES", 48, 4)
HANDS = knob("KWX_BENCH_HANDS", 8, 2)


def _backend_cpu(pid: int) -> float:
    """Seconds on a CPU of process ``pid`` (schedstat: ns, finer than the 10 ms ticks of stat)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import msgspec
    import psycopg

    from domain.events import decode
    from domain.simulate import simulate_table
    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from services.store import locked as store_locked

    simulated = [
        simulate_table(random.Random(s), HANDS, {"preset": "default"}, f"b{s}") for s in range(TABLES)
    ]
    tables = [[decode(msgspec.json.encode(e)) for e in events] for events in simulated]
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-sql-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET autovacuum = off")
            admin.execute("SELECT pg_reload_conf()")
        container = bootstrap(Settings(database_url=url, log_level="warning", pool_size=1))
        store = container.store
        counter = iter(range(1_000_000))

        def plans() -> list[Any]:
            out = []
            for _ in range(2):
                tag = f"s{next(counter)}"
                for t, events in enumerate(tables):
                    for i in range(0, len(events), BATCH):
                        plan = store.plan_cached("bench", f"{tag}-{t}", i, events[i : i + BATCH])
                        assert plan is not None
                        store.finish_fast(plan, plan.count)  # the cache moves on, as after the statement
                        out.append(plan)
            return out

        def statement(conn: Any, plan: Any) -> None:
            assert conn.execute(plan.sql, plan.params).rowcount == plan.count

        def copy(conn: Any, plan: Any) -> None:
            with conn.transaction(), conn.cursor() as cur, cur.copy(store_locked.COPY) as cp:
                for row in plan.batch.rows(plan.tenant, plan.table_id):
                    cp.write_row(row)

        lines: dict[str, tuple[Callable[[Any, Any], None], str]] = {
            "COPY": (copy, "EXTERNAL"),
            "statement": (statement, "EXTERNAL"),
            "statement, snapshot compressed": (statement, "EXTENDED"),
        }
        owner = psycopg.connect(url, autocommit=True)
        conns = {}
        for name in lines:
            conn = psycopg.connect(url, autocommit=True)
            conn.execute("SET ROLE kwx_app")
            conns[name] = (conn, conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        cpu: dict[str, list[float]] = {n: [] for n in lines}
        wal: dict[str, list[float]] = {n: [] for n in lines}
        order = list(lines)
        for r in range(REPEAT + 1):  # round 0 warms every connection up (psycopg prepares at 5)
            for name in order if r % 2 else order[::-1]:
                run_one, storage = lines[name]
                owner.execute(f"ALTER TABLE table_heads ALTER COLUMN snapshot SET STORAGE {storage}")
                batch_plans = plans()
                conn, pid = conns[name]
                lsn = owner.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
                before = _backend_cpu(pid)
                for plan in batch_plans:
                    run_one(conn, plan)
                spent = _backend_cpu(pid) - before
                written = owner.execute(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)
                ).fetchone()[0]
                if r:
                    cpu[name].append(spent / len(batch_plans) * 1e3)
                    wal[name].append(float(written) / len(batch_plans) / 1e3)
        owner.execute("ALTER TABLE table_heads ALTER COLUMN snapshot SET STORAGE EXTERNAL")
        n = len(batch_plans)
        print(f"{n} batches of ≤ {BATCH} events per sample, {REPEAT} alternating rounds; "
              "backend CPU per batch:")  # fmt: skip
        for name in lines:
            to_copy = statistics.median(a / b for a, b in zip(cpu[name], cpu["COPY"], strict=True))
            to_stmt = statistics.median(a / b for a, b in zip(cpu[name], cpu["statement"], strict=True))
            print(f"  {name:32} {statistics.median(cpu[name]):.3f} ms  × COPY {to_copy:.2f}  "
                  f"× statement {to_stmt:.3f}  WAL {statistics.median(wal[name]):.1f} KB")  # fmt: skip
        for conn, _ in conns.values():
            conn.close()
        owner.close()
        container.close()
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
