"""Soak: the memory of ``kwx serve``'s workers and of its projector child while many distinct tables
are appended (docs/faults.md, Process faults: sustained load).

Both keep per-table state in bounded LRUs: each worker its head cache (services/store/cache.py,
20,000 tables), the projector its table contexts (projections/projector.py, 5,000). Past those
bounds their resident memory must stop growing with the number of tables. The bench appends
``KWX_SOAK_TABLES`` (60,000) tables of two events (table_opened, hand_started: a table with a dealt
hand, the state the caches hold), ``KWX_SOAK_CLIENTS`` (4) keep-alive clients that reconnect every
500 requests (so both workers get tables), ``kwx serve --workers KWX_SOAK_WORKERS`` (2) with the
projector child on; every ``KWX_SOAK_STEP`` (10,000) tables it waits until the projector has caught
up and prints each process's RSS (``/proc/PID/status`` VmRSS). The closing line compares the growth
over the last steps, once every cache is full, with the growth over the first steps.

A bench, not a test: 60,000 appends take ≈ 1–2 min on 2 cores (the test suite's budget is under one).
Run: ``.venv/bin/python -m tests.bench soak``.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from tests.bench import knob
from tests.service.serving import descendants, free_port, projector_behind, wait_healthy

TABLES = knob("KWX_SOAK_TABLES", 60000, 400)
STEP = knob("KWX_SOAK_STEP", 10000, 200)
CLIENTS = int(os.environ.get("KWX_SOAK_CLIENTS", "4"))
WORKERS = int(os.environ.get("KWX_SOAK_WORKERS", "2"))
RECONNECT = 500
HEAD_CACHE, PROJECTOR_CACHE = 20_000, 5_000  # services/store/cache.py, projections/projector.py


def _bodies(variants: int = 16) -> list[bytes]:
    """Request bodies of a table's first two events (a few different deals; event ids are unique per
    table only, so every table may reuse them)."""
    import msgspec

    from domain.simulate import simulate_table

    bodies = []
    for seed in range(variants):
        wire = simulate_table(random.Random(seed), 1, {"preset": "default"}, f"soak{seed}")[:2]
        assert [e["type"] for e in wire] == ["table_opened", "hand_started"]
        bodies.append(msgspec.json.encode({"expected_version": 0, "events": wire}))
    return bodies


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def _append(host: str, port: int, key: str, names: range, bodies: list[bytes], errors: list[str]) -> None:
    from tests.bench.bench_ingest import _read_response

    sock = None
    answers = None
    try:
        for n, t in enumerate(names):
            if n % RECONNECT == 0:
                if sock is not None:
                    sock.close()
                sock = socket.create_connection((host, port), timeout=60)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                answers = sock.makefile("rb")
            body = bodies[t % len(bodies)]
            head = (f"POST /v1/tables/soak-{t}/events HTTP/1.1\r\nHost: {host}\r\n"
                    f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
            assert sock is not None and answers is not None
            sock.sendall(head.encode() + body)
            status, payload = _read_response(answers)
            if status != 201:
                errors.append(f"soak-{t}: {status} {payload[:200]!r}")
                return
    finally:
        if sock is not None:
            sock.close()


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    from services.bootstrap import bootstrap
    from services.db import ensure_database, start_embedded
    from services.settings import Settings

    bodies = _bodies()
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-soak-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    proc = None
    try:
        ensure_database(server.get_uri("postgres"), "soak")
        url = server.get_uri("soak")
        container = bootstrap(Settings(database_url=url, log_level="warning"))
        key = container.keys.create("soak", "platform")
        container.close()
        port = free_port()
        # (one key, as fast as it goes: past the default 1000 requests a second per key, a 429)
        env = dict(os.environ, DATABASE_URL=url, KWX_PROJECTOR="on", KWX_LOG_LEVEL="warning",
                   KWX_RATE_LIMIT_KEY="off", KWX_RATE_LIMIT_TENANT="off")  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--workers", str(WORKERS)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_healthy(f"http://127.0.0.1:{port}", proc, 90)
        time.sleep(2)
        family = descendants(proc.pid)
        workers = sorted(p for p in family if b"spawn_main" in _cmdline(p))
        projector = next(p for p in family if b"projections\0follow" in _cmdline(p))
        print(f"{TABLES} tables of 2 events, {CLIENTS} clients, {len(workers)} workers + projector child; "
              f"caches: head {HEAD_CACHE} tables per worker, projector {PROJECTOR_CACHE}")  # fmt: skip
        print(f"{'tables':>8} {'s':>6} {'tables/s':>8} " + " ".join(f"{'worker ' + str(i) + ' MiB':>13}"
              for i in range(len(workers))) + f" {'projector MiB':>14}")  # fmt: skip
        samples: list[tuple[int, list[int]]] = []

        def sample(done: int, seconds: float, rate: float) -> None:
            rss = [_rss_kib(p) for p in (*workers, projector)]
            samples.append((done, rss))
            columns = " ".join(f"{r / 1024:>13.1f}" for r in rss[:-1])
            print(f"{done:>8} {seconds:>6.1f} {rate:>8.0f} {columns} {rss[-1] / 1024:>14.1f}", flush=True)

        sample(0, 0.0, 0.0)
        started = time.perf_counter()
        for first in range(0, TABLES, STEP):
            last = min(first + STEP, TABLES)
            errors: list[str] = []
            t0 = time.perf_counter()
            jobs = [range(first + c, last, CLIENTS) for c in range(CLIENTS)]
            threads = [threading.Thread(target=_append, args=("127.0.0.1", port, key, job, bodies, errors))
                       for job in jobs]  # fmt: skip
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            if errors:
                raise RuntimeError(f"kwx refused an append: {errors[0]}")
            rate = (last - first) / (time.perf_counter() - t0)
            deadline = time.monotonic() + 300
            while projector_behind(url) and time.monotonic() < deadline:
                time.sleep(0.5)
            sample(last, time.perf_counter() - started, rate)
        alive = [p for p in (*workers, projector) if _rss_kib(p)]
        print(f"processes still the same: {len(alive) == len(workers) + 1} (no worker or projector replaced)")
        if len(samples) >= 4:
            third = max(1, (len(samples) - 1) // 3)
            first_growth = [b - a for a, b in zip(samples[0][1], samples[third][1], strict=True)]
            last_growth = [b - a for a, b in zip(samples[-1 - third][1], samples[-1][1], strict=True)]
            names = [f"worker {i}" for i in range(len(workers))] + ["projector"]
            for name, g1, g2 in zip(names, first_growth, last_growth, strict=True):
                print(f"{name}: +{g1 / 1024:.1f} MiB over the first {samples[third][0]} tables, "
                      f"+{g2 / 1024:.1f} MiB over the last {samples[-1][0] - samples[-1 - third][0]} "
                      f"({'bounded' if g2 <= max(g1 * 0.25, 8 * 1024) else 'STILL GROWING'})")  # fmt: skip
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    run()
