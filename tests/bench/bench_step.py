"""The replay page's step (issue 17, speed): one ``GET …/state?at=N`` per step, against a real
``kwx serve`` (one worker, its projector child: the per-hand snapshots are there) on an embedded
PostgreSQL in a temporary folder, for a 200-hand table (≈ 10,000 events).

Per line: p50 / p99 of ``KWX_BENCH_STEP_N`` (300) reads at random N over the whole table (support's
full view, and seat 1's view), beside the ``/v1/health`` floor measured in the same run over the
same keep-alive client; the goal line (≤ 20 ms p99) for each. The client takes gzip (httpx's
default, as a browser does); the last line asks for the answer unzipped (``Accept-Encoding:
identity``): on loopback the difference is what the compression costs.

Run: ``.venv/bin/python -m tests.bench step``.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from tests.bench import knob

N = knob("KWX_BENCH_STEP_N", 300, 20)
HANDS = knob("KWX_BENCH_STEP_HANDS", 200, 12)
GOAL_MS = 20.0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    import httpx

    from domain.simulate import simulate_table
    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from tests.bench.bench_ingest import start_server, stop
    from tests.service.serving import wait_for

    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-step-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        container = bootstrap(Settings(database_url=url, log_level="warning"))
        key = container.keys.create("bench", "support")
        platform = container.keys.create("bench", "platform")
        container.close()
        events = simulate_table(random.Random(3), HANDS, {"preset": "default"}, "step")
        proc, base = start_server(url, "on", 1)
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                appending = {"Authorization": f"Bearer {platform}"}
                for i in range(0, len(events), 500):
                    body = {"events": events[i : i + 500], "expected_version": i}
                    answer = client.post("/v1/tables/step/events", headers=appending, json=body)
                    assert answer.status_code == 201, answer.text

                def caught_up() -> bool:
                    return bool(client.get("/v1/health").json()["projections"]["caught_up"])

                wait_for(caught_up, 300, "the projector did not catch up")
                headers = {"Authorization": f"Bearer {key}"}
                rng = random.Random(11)
                print(f"table: {HANDS} hands, {len(events)} events; {N} reads a line, random N")

                def line(
                    label: str, path: str, params: dict[str, object] | None, zipped: bool = True
                ) -> None:
                    took = []
                    asked = headers if zipped else {**headers, "Accept-Encoding": "identity"}
                    for _ in range(N):
                        query = None if params is None else {"at": rng.randint(1, len(events)), **params}
                        started = time.perf_counter()
                        answer = client.get(path, params=query, headers=asked)
                        took.append((time.perf_counter() - started) * 1000)
                        assert answer.status_code == 200, answer.text
                    p99 = _p(took, 0.99)
                    verdict = "met" if p99 <= GOAL_MS else "missed"
                    goal = "" if params is None else f"  goal p99 ≤ {GOAL_MS:g} ms: {verdict}"
                    print(f"  {label:34} p50 {statistics.median(took):7.2f} ms  p99 {p99:7.2f} ms{goal}")

                line("floor: GET /v1/health", "/v1/health", None)
                line("state?at=N (support)", "/v1/tables/step/state", {})
                line("state?at=N&seat=1", "/v1/tables/step/state", {"seat": 1})
                # the same reads unzipped: what gzip costs on loopback, where it saves no transfer
                line("state?at=N (support), identity", "/v1/tables/step/state", {}, zipped=False)
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            stop(proc)
    finally:
        server.cleanup()
