"""The verifiable export (issue 13, docs/verify.md): what it costs against the plain NDJSON read of
the same events, that it streams (memory does not grow with the table), and how fast ``kwx verify
--file`` checks against bare hashlib over the same bytes.

* ``export / events ndjson``: ``GET …/export`` against ``GET …/events`` with ``Accept:
  application/x-ndjson`` on a 200-hand table (medians of ``REPEAT``; both read pages of 1000 and
  stream). The export sends one chunk a page; the events' NDJSON sends one chunk a line, and each
  chunk of a sync iterator is a hop to the thread pool, which is most of its time.
* ``export / the store's pages``: the export against reading the same pages from the store in
  process (``store.read_table``, no HTTP, no encoding): the floor of the database reads.
* ``peak memory 200 / 20 hands``: tracemalloc's peak while the export's generator runs to the end
  (lines thrown away) on a 200-hand and a 20-hand table; streaming keeps the ratio near 1 (a page
  of 1000 events), not near 10.
* ``hand export 200-hand / 8-hand table``: ``…/hands/{n}/export`` of a middle hand: a hand's export
  costs its hand, plus one index range over the table's ``hand_started`` rows.
* ``hand report 200-hand / 8-hand table``: ``…/hands/{n}/report`` of a middle hand. The audit's
  fold (projections/audit.py) runs from event 1 to the hand's end, and the state at the head comes
  from the latest snapshot (none here: the projector is off), so it grows with the table.
* ``verify / hashlib``: ``services.store.export.verify`` over the 200-hand export against a loop
  that only hashes each line's event bytes (the floor: the SHA-256 work itself).

Run: ``.venv/bin/python -m tests.bench export`` (embedded PostgreSQL in a temp dir, or
``TEST_DATABASE_URL``'s server: a fresh database, dropped after).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench import knob

REPEAT = knob("KWX_BENCH_REPEAT", 5, 1)


def _median_s(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _peak(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    from fastapi.testclient import TestClient

    from domain.events import convert
    from domain.simulate import simulate_table
    from services import migrate
    from services.api import export as export_api
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from services.store import export
    from tests.conftest import with_database

    base_dir: Path | None = None
    server = None
    admin = os.environ.get("TEST_DATABASE_URL")
    if admin is None:
        base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-export-"))
        server = start_embedded(base_dir / "pg", cleanup_mode="delete")
        admin = server.get_uri("postgres")
    name = f"kwx_bench_export_{os.getpid()}"
    ensure_database(admin, name)
    url = with_database(admin, name)  # (a socket URL names its folder in the query: not a path to cut)
    container = None
    try:
        migrate.upgrade(url)
        container = bootstrap(
            Settings(database_url=url, projector="off", log_level="warning"), url=url, migrate=False
        )
        sizes = {"t200": 200, "t20": 20, "t8": 8}
        counts = {}
        for table_id, hands in sizes.items():
            events = [
                convert(e)
                for e in simulate_table(random.Random(hands), hands, {"preset": "default"}, table_id)
            ]
            for start in range(0, len(events), 500):
                container.store.append("bench", table_id, start, events[start : start + 500])
            counts[table_id] = len(events)
        key = {"Authorization": f"Bearer {container.keys.create('bench', 'support')}"}
        print(f"  tables: {', '.join(f'{t} {counts[t]} events' for t in sizes)}")
        with TestClient(create_app(container=container)) as client:
            body = client.get("/v1/tables/t200/export", headers=key).content
            t_export = _median_s(lambda: client.get("/v1/tables/t200/export", headers=key).content)
            t_events = _median_s(
                lambda: (
                    client.get(
                        "/v1/tables/t200/events", headers={**key, "Accept": "application/x-ndjson"}
                    ).content
                )
            )
            print(f"  export / events ndjson (200 hands)           {t_export * 1000:8.1f} ms / "
                  f"{t_events * 1000:8.1f} ms = {t_export / t_events:5.2f}×")  # fmt: skip

            def pages() -> None:
                after = 0
                while page := container.store.read_table("bench", "t200", after, 1000):  # type: ignore[union-attr]
                    after = page[-1].version

            t_pages = _median_s(pages)
            print(f"  export / the store's pages, no HTTP          {t_export * 1000:8.1f} ms / "
                  f"{t_pages * 1000:8.1f} ms = {t_export / t_pages:5.2f}×")  # fmt: skip
            t_hand_big = _median_s(
                lambda: client.get("/v1/tables/t200/hands/100/export", headers=key).content
            )
            t_hand_small = _median_s(lambda: client.get("/v1/tables/t8/hands/4/export", headers=key).content)
            print(f"  hand export 200-hand / 8-hand table          {t_hand_big * 1000:8.1f} ms / "
                  f"{t_hand_small * 1000:8.1f} ms = {t_hand_big / t_hand_small:5.2f}×")  # fmt: skip
            t_rep_big = _median_s(lambda: client.get("/v1/tables/t200/hands/100/report", headers=key).content)
            t_rep_small = _median_s(lambda: client.get("/v1/tables/t8/hands/4/report", headers=key).content)
            print(f"  hand report 200-hand / 8-hand table          {t_rep_big * 1000:8.1f} ms / "
                  f"{t_rep_small * 1000:8.1f} ms = {t_rep_big / t_rep_small:5.2f}×")  # fmt: skip

        def drain(table_id: str) -> Callable[[], None]:
            def go() -> None:
                head = container.store.head("bench", table_id)  # type: ignore[union-attr]
                for _ in export_api._lines(container, "bench", table_id, 1, head.version, b"", b"\0" * 32):
                    pass

            return go

        big, small = _peak(drain("t200")), _peak(drain("t20"))
        print(f"  peak memory while exporting 200 / 20 hands   {big / 1e6:8.2f} MB / {small / 1e6:8.2f} MB "
              f"= {big / small:5.2f}× (the tables: {counts['t200'] / counts['t20']:.1f}×)")  # fmt: skip

        lines = body.splitlines()
        assert export.verify(lines).ok
        t_verify = _median_s(lambda: export.verify(lines))

        def floor() -> None:
            h = b"\0" * 32
            for line in lines[1:]:
                h = hashlib.sha256(h + line.split(b'"event":', 1)[1][:-1]).digest()

        t_floor = _median_s(floor)
        n = len(lines) - 1
        rate = n / t_verify
        print(f"  verify / hashlib ({n} events)              {t_verify * 1000:8.1f} ms / "
              f"{t_floor * 1000:8.1f} ms = {t_verify / t_floor:5.2f}×  ({rate:,.0f} events/s)")  # fmt: skip
    finally:
        if container is not None:
            container.close()
        if server is not None:
            server.cleanup()
        else:
            import psycopg

            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
        if base_dir is not None:
            shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
