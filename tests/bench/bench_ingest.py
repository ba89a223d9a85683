"""Ingest speed: kwx's HTTP append of 100-event batches against PostgreSQL's own COPY.

Both in the same run, on the same embedded PostgreSQL (a fresh one in a temporary folder):

* **baseline**: ``COPY`` of the same events (JSON bodies pre-encoded) in 100-event transactions over
  one connection, into a *plain* scratch table (a primary key only) and into an *events-shaped*
  one (the events table's columns, defaults and unique indexes, without kwx's checks);
* **kwx**: ``kwx serve`` in a subprocess (uvicorn, the real app, access logs on) fed by lean
  keep-alive HTTP clients (requests encoded before the clock starts), every batch of 100 events
  decoded, rule-checked by the engine, hash-chained and stored in one statement. Lines: 1 and
  ``KWX_BENCH_CLIENTS`` (4) concurrent clients, each on its own tables, with ``kwx serve``'s default
  worker count (one per core) and with 1 worker, projector off; the default (projector child
  process, nice +10); the projector as a thread (1 worker).

Each line also prints the CPU milliseconds per 100-event batch of ``kwx serve`` (with its workers and
projector child), of PostgreSQL (the postmaster and its backends) and of the clients — where the
cores went, which the rates alone can't say on a shared 2-core machine. With the projector on, a
round's CPU is counted until the processes are quiet again: the read models' work on the round's
last events belongs to it (before 1 Dec 22:50 it was counted up to the clients' last answer only);
and a round starts only once the read models have caught up on the lines before it
(``wait_caught_up``; before 2 Dec the first round did that catching up, and reported its lag).

The events are simulated legal tables (``domain.simulate``, ``KWX_BENCH_TABLES`` ×
``KWX_BENCH_HANDS`` hands, default 96 × 8 ≈ 39,000 events: a round of kwx takes ≈ 1–2 s, a COPY
round ≈ 0.6–1 s; with half that, one checkpoint or scheduler hiccup moved a round's rate by half;
``KWX_BENCH_AT=1``: every event with an ``at``, as a platform that sends its times — tests/bench/__init__.py).
Prints events/s (best of ``KWX_BENCH_REPEAT``, 3) and the ratio kwx / COPY as the median over the
rounds of each kwx round against the COPY round run just before it, once kwx's processes were quiet;
then issue 16's CPU ratio from paired rounds (two ``kwx serve`` at once on two databases, projector
off and the default, ``KWX_BENCH_PAIRS`` (6) pairs of rounds alternating between them: the settings'
own lines run minutes apart and this VM drifts ±30 % in that time), with both sides' CPU split by
process; then the spread of every COPY round of the run; last, issue 3's goal (≥ 0.5 × COPY) for the
ingest path and for the default, against each COPY baseline, with "met" or "below", and issue 16's.

Run: ``.venv/bin/python -m tests.bench ingest`` (or ``make bench``).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from tests.bench import knob
from tests.service.serving import descendants, free_port, process_cpu, tree_cpu, wait_healthy

BATCH = 100
GOAL = 0.5  # issue 3: HTTP ingest at least half of PostgreSQL's own COPY rate
# the lines the closing summary holds, by projector setting: the ingest path alone, and `kwx serve`
# as it runs by default (its projector child folding the same events again on the same cores)
GOAL_LINES = {"off": "ingest path (projector off)", "on": "kwx serve's default (projector child)"}
REPEAT = knob("KWX_BENCH_REPEAT", 3, 1)  # best of N: the machine is shared
PAIRS = knob("KWX_BENCH_PAIRS", 6, 1)  # off/on pairs of rounds for issue 16's CPU ratio
TABLES = knob("KWX_BENCH_TABLES", 96, 8)
HANDS = knob("KWX_BENCH_HANDS", 8, 2)  # ≈ 52 events a hand: tables of ≈ 4 batches


def _tables(count: int = TABLES) -> list[list[dict[str, Any]]]:
    from domain.simulate import simulate_table
    from tests.bench import start

    return [
        simulate_table(random.Random(seed), HANDS, {"preset": "default"}, f"b{seed}", start=start())
        for seed in range(count)
    ]


PLAIN = (
    "CREATE TABLE {name} (position bigserial PRIMARY KEY, table_id text NOT NULL, version bigint NOT NULL, "
    "event_id text NOT NULL, type text NOT NULL, body jsonb NOT NULL, "
    "recorded_at timestamptz NOT NULL DEFAULT now())"
)
# The events table's shape: the same columns, defaults and indexes, without kwx's checks (keys as
# of migration 0006: (tenant, table_id, …); the COPY leaves tenant to its default).
SHAPED = (
    "CREATE TABLE {name} (position bigint GENERATED ALWAYS AS IDENTITY, "
    "tenant text NOT NULL DEFAULT 'bench', table_id text NOT NULL, version bigint NOT NULL, "
    "event_id text NOT NULL, type text NOT NULL, body jsonb NOT NULL, "
    "recorded_at timestamptz NOT NULL DEFAULT now(), "
    "tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(), ruling jsonb, hash bytea, "
    "PRIMARY KEY (tenant, table_id, version), UNIQUE (tenant, table_id, event_id));"
    "CREATE INDEX ON {name} (tx_id, position)"
)


def bench_copy(
    url: str, tables: list[list[dict[str, Any]]], name: str, ddl: str, fixed: dict[str, Any] | None = None
) -> tuple[int, float]:
    """COPY every table's events in 100-event transactions into ``name`` (up to a ``#``: the rest
    tags the table ids), made with ``ddl`` if it is missing. ``fixed``: more columns and the one
    value each row gets in them (kwx's own ``events`` needs a tenant and a hash)."""
    import msgspec
    import psycopg

    extra = tuple((fixed or {}).values())
    rows = [
        [
            (f"{name}-{t}", v, e["id"], e["type"], msgspec.json.encode(e).decode(), *extra)
            for v, e in enumerate(events, 1)
        ]
        for t, events in enumerate(tables)
    ]
    columns = ", ".join(("table_id", "version", "event_id", "type", "body", *(fixed or {})))
    with psycopg.connect(url) as conn:
        table = name.split("#")[0]
        if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,):
            for statement in ddl.format(name=table).split(";"):
                conn.execute(statement)
        # End the transaction the look-up opened: inside it, each ``conn.transaction()`` below would
        # be a savepoint and the whole run one transaction, committed when the connection closes
        # (what this did before 1 Dec 2026 whenever the table already existed: every round but the first).
        conn.commit()
        n = 0
        started = time.perf_counter()
        for table_rows in rows:
            for i in range(0, len(table_rows), BATCH):
                with (
                    conn.transaction(),
                    conn.cursor() as cur,
                    cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
                ):
                    for row in table_rows[i : i + BATCH]:
                        copy.write_row(row)
                n += len(table_rows[i : i + BATCH])
        return n, time.perf_counter() - started


def bench_http(
    base: str, key: str, tables: list[list[dict[str, Any]]], clients: int, tag: str
) -> tuple[int, float]:
    """POST every table's events in 100-event batches, ``clients`` connections at once (each its own
    tables, in order, with ``expected_version``); every answer must be 201 with the right version.

    The clients are lean on purpose: HTTP/1.1 keep-alive over a plain socket, the requests encoded
    before the clock starts, only the status line, the headers and the JSON answer read back. On
    this 2-core machine the clients share the cores with the server and PostgreSQL, and a full
    HTTP client library (httpx: ≈ 2 ms of CPU per request) would measure itself (docs/benchmarks.md).
    """
    import msgspec

    host, port = base.removeprefix("http://").rsplit(":", 1)
    jobs: list[list[tuple[bytes, int]]] = [[] for _ in range(clients)]
    for t, events in enumerate(tables):
        table = f"{tag}-{t}"
        for i in range(0, len(events), BATCH):
            body = msgspec.json.encode({"expected_version": i, "events": events[i : i + BATCH]})
            head = (
                f"POST /v1/tables/{table}/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            jobs[t % clients].append((head.encode() + body, i + len(events[i : i + BATCH])))
    errors: list[str] = []

    def client(job: list[tuple[bytes, int]]) -> None:
        with socket.create_connection((host, int(port)), timeout=60) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            answers = sock.makefile("rb")
            for request, version in job:
                sock.sendall(request)
                status, payload = _read_response(answers)
                if status != 201 or msgspec.json.decode(payload).get("version") != version:
                    errors.append(f"{status} {payload[:200]!r} (expected 201, version {version})")
                    return

    threads = [threading.Thread(target=client, args=(job,)) for job in jobs]
    started = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"kwx refused a batch: {errors[0]}")
    return sum(len(e) for e in tables), elapsed


def _read_response(answers: Any) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length (what uvicorn sends for these answers)."""
    status_line = answers.readline()
    if not status_line:
        raise RuntimeError("kwx closed the connection")
    status = int(status_line.split(None, 2)[1])
    length = 0
    while (line := answers.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, answers.read(length)


def postmaster_pid(base_dir: Path) -> int:
    return int(next(base_dir.rglob("postmaster.pid")).read_text().split()[0])


def projector_counts(base: str) -> tuple[float, float]:
    """(batches, events) the projector has committed, from kwx serve's ``/metrics`` (the events:
    the most any kept model counts — every batch moves each kept model; ``KWX_READ_MODELS``)."""
    import urllib.request

    with urllib.request.urlopen(base + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    batches = events = 0.0
    for line in text.splitlines():
        if line.startswith("kwx_projection_batches_total "):
            batches = float(line.split()[-1])
        elif line.startswith("kwx_projection_events_total{"):
            events = max(events, float(line.split()[-1]))
    return batches, events


def wait_quiet(pids: tuple[int, ...], timeout: float = 20.0) -> None:
    """Until the processes (and their children) use under 5 % of a core over 0.2 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = sum(tree_cpu(pid) for pid in pids)
        time.sleep(0.2)
        if sum(tree_cpu(pid) for pid in pids) - before < 0.01:
            return


def wait_caught_up(base: str, timeout: float = 600.0) -> None:
    """Until ``/v1/health/ready`` says the read models have nothing left to apply (``lag_seconds``
    0). Each line's ``kwx serve`` starts on the database the lines before it filled with the projector
    off; a round that began while the projector was still catching up on those events counted that
    work as its own and sampled their age as its lag (45 s, a whole first round, before 2 Dec)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready_lag(base) == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the read models did not catch up in {timeout:g} s")


def ready_lag(base: str, timeout: float = 10) -> float | None:
    """``/v1/health/ready``'s ``lag_seconds`` (None when it has none: no database answer); its 503
    (lagging, not ready) says the lag too. Other errors (a refused connection) are raised."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base}/v1/health/ready", timeout=timeout) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read())
    lag = (body.get("checks") or body).get("lag_seconds")
    return float(lag) if isinstance(lag, (int, float)) else None


class LagSampler:
    """``/v1/health/ready``'s ``lag_seconds`` (how long ago the oldest event the read models have
    not applied was recorded) every ``every`` seconds while ingest runs: issue 16's freshness."""

    def __init__(self, base: str, every: float = 0.1) -> None:
        self.base, self.every = base, every
        self.lags: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                lag = ready_lag(self.base, timeout=5)
            except Exception:  # no answer this time (a timeout): no sample
                lag = None
            if lag is not None:
                self.lags.append(lag)
            self._stop.wait(self.every)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def start_server(url: str, projector: str, workers: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``kwx serve`` with ``KWX_PROJECTOR=projector`` (on: a child process; thread; off) and
    ``workers`` HTTP worker processes (None: ``KWX_WORKERS`` as set, else kwx's default)."""
    port = free_port()
    env = dict(os.environ, DATABASE_URL=url, KWX_PROJECTOR=projector)
    if workers is not None:
        env["KWX_WORKERS"] = str(workers)
    env.setdefault("KWX_LOG_LEVEL", "info")
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, 60)
    except AssertionError:
        proc.kill()
        raise RuntimeError("kwx serve did not start") from None
    return proc, base


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    from services.db import ensure_database, start_embedded
    from services.settings import Settings
    from tests.bench import said

    tables = _tables()
    total = sum(len(t) for t in tables)
    print(f"events: {total} in {TABLES} simulated tables of {HANDS} hands, batches of {BATCH}{said()}")
    base_dir = Path(tempfile.mkdtemp(prefix="kwx-bench-"))
    server = start_embedded(base_dir / "pg", cleanup_mode="delete")
    try:
        ensure_database(server.get_uri("postgres"), "bench")
        url = server.get_uri("bench")
        key = _platform_key(url)

        copies = (("plain", "bench_plain", PLAIN), ("events-shaped", "bench_shaped", SHAPED))
        copy_runs: dict[str, list[float]] = {label: [] for label, _, _ in copies}

        def copy_round(tag: str) -> dict[str, float]:
            rates = {}
            for label, name, ddl in copies:
                n, seconds = bench_copy(url, tables, f"{name}#{tag}", ddl)
                rates[label] = n / seconds
                copy_runs[label].append(rates[label])
            return rates

        for r in range(REPEAT):
            copy_round(f"head{r}")
        for label, runs in copy_runs.items():
            print(f"COPY into a {label} table, 100-event tx: {max(runs):9,.0f} events/s (best of {REPEAT})")

        postgres = postmaster_pid(base_dir)
        log_autovacuum(server.get_uri("postgres"))
        batches_per_run = sum(-(-len(t) // BATCH) for t in tables)
        many = int(os.environ.get("KWX_BENCH_CLIENTS", "4"))
        default = Settings.from_env().serving_workers()  # what `kwx serve` would run here
        # (projector, workers, client counts); a projector thread needs a single worker
        lines = [("off", default, (1, many)), ("on", default, (many,)), ("thread", 1, (many,))]
        if default > 1:
            lines.insert(1, ("off", 1, (many,)))
        print(f"kwx serve: {default} worker(s) by default on this machine (KWX_WORKERS)")
        from services.settings import read_models

        kept = os.environ.get("KWX_READ_MODELS") or "all"
        print(f"read models kept (KWX_READ_MODELS={kept}): {', '.join(read_models(kept)) or 'none'}")
        print("each kwx round is paired with a COPY round just before it (kwx's processes quiet first):")
        goal: dict[str, dict[str, float]] = {}  # line → baseline → median paired ratio
        cpu_per_batch: dict[str, float] = {}  # projector setting → kwx + PostgreSQL CPU ms per batch
        lags: list[float] = []  # the read models' lag under full load, projector child on
        for projector, workers, runs in lines:
            proc, base = start_server(url, projector, workers)
            try:
                tag = f"{projector[:2]}{workers}"
                bench_http(base, key, tables[:4], 2, f"warm{tag}")
                for clients in runs:
                    rates, cpu, paired, folds = [], [0.0, 0.0, 0.0], [], [0.0, 0.0]
                    for r in range(REPEAT):
                        if projector != "off":  # the earlier lines' events, projected before the clock
                            wait_caught_up(base)
                        wait_quiet((proc.pid, postgres))  # e.g. the projector catching up
                        baseline = copy_round(f"{tag}{clients}r{r}")
                        counted = projector_counts(base) if projector != "off" else (0.0, 0.0)
                        before = (tree_cpu(proc.pid), tree_cpu(postgres), time.process_time())
                        sampling = projector == "on" and clients == many
                        with LagSampler(base) if sampling else contextlib.nullcontext() as sampler:
                            n, seconds = bench_http(base, key, tables, clients, f"{tag}{clients}r{r}")
                        if sampler is not None:
                            lags += sampler.lags
                        if projector != "off":  # the read models' work on this round's last events too
                            wait_quiet((proc.pid, postgres))
                        after = (tree_cpu(proc.pid), tree_cpu(postgres), time.process_time())
                        if projector != "off":
                            now = projector_counts(base)
                            folds = [f + b - a for f, a, b in zip(folds, counted, now, strict=True)]
                        rates.append(n / seconds)
                        paired.append({k: n / seconds / v for k, v in baseline.items()})
                        cpu = [c + b - a for c, a, b in zip(cpu, before, after, strict=True)]
                    medians = {k: statistics.median(p[k] for p in paired) for k in copy_runs}
                    ratios = "  ".join(f"{k} {v:.2f}" for k, v in medians.items())
                    if clients == many and workers == default and projector in GOAL_LINES:
                        goal[GOAL_LINES[projector]] = medians
                    batches = REPEAT * batches_per_run / 1000
                    print(f"kwx HTTP, {clients} client(s), {workers} worker(s), projector {projector:6}: "
                          f"{max(rates):9,.0f} events/s (best of {REPEAT});  kwx/COPY, median of the "
                          f"paired rounds: {ratios}")  # fmt: skip
                    print(f"    CPU ms per batch: kwx serve (with its children) {cpu[0] / batches:.2f}, "
                          f"PostgreSQL {cpu[1] / batches:.2f}, clients {cpu[2] / batches:.2f}")  # fmt: skip
                    if folds[0]:
                        per = folds[1] / folds[0]
                        print(f"    the projector: {folds[0]:,.0f} batches, {per:,.0f} events per batch "
                              "(kwx_projection_batches_total)")  # fmt: skip
                    if clients == many and workers == default:
                        cpu_per_batch[projector] = (cpu[0] + cpu[1]) / batches
            finally:
                stop(proc)
        paired_cpu = _paired_on_off(
            server, tables=tables, clients=many, workers=default, postgres=postgres, log=Path(server.log)
        )
        for label, runs in copy_runs.items():
            print(f"COPY into a {label} table over all {len(runs)} rounds: best {max(runs):,.0f}, "
                  f"median {statistics.median(runs):,.0f}, lowest {min(runs):,.0f} events/s")  # fmt: skip
        print(f"issue 3's goal, kwx HTTP ingest >= {GOAL} x COPY in 100-event transactions "
              f"({many} clients, {default} worker(s); medians of the paired rounds):")  # fmt: skip
        for line, medians in goal.items():
            verdicts = ", ".join(
                f"{v:.2f} x {k} COPY ({'met' if v >= GOAL else 'below'})" for k, v in medians.items()
            )
            print(f"    {line}: {verdicts}")
        _issue16(goal, cpu_per_batch, lags, many, paired_cpu)
    finally:
        server.cleanup()
        shutil.rmtree(base_dir, ignore_errors=True)


def _platform_key(url: str) -> str:
    """A platform key of tenant ``bench`` on the database ``url`` (migrated on the way)."""
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings(database_url=url, log_level="warning"))
    try:
        return container.keys.create("bench", "platform")
    finally:
        container.close()


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _postgres_kind(cmdline: str, databases: tuple[str, ...] = ("bench_on", "bench_off")) -> str:
    """What a PostgreSQL process is, from its title (``postgres: checkpointer``, ``postgres: postgres
    bench_on 127.0.0.1(…) idle``, ``postgres: autovacuum worker bench_on``): a client backend of
    one of ``databases`` is "backends of <database>"."""
    if "autovacuum worker" in cmdline:
        return "autovacuum"
    for db in databases:
        if f" {db} " in cmdline:
            return f"backends of {db}"
    if cmdline.startswith("postgres: postgres "):
        return "other backends"
    return "background (checkpointer, WAL writer, …)"


def postgres_by_kind(postgres: int) -> dict[str, float]:
    """PostgreSQL's CPU seconds so far by kind of process (:func:`_postgres_kind`); the postmaster's
    own and every exited process's (its parent's reaped children's time) as "postmaster and
    exited". The values sum to :func:`tree_cpu` of the postmaster, from one walk of /proc."""
    kinds: dict[str, float] = {"postmaster and exited": process_cpu(postgres, reaped=True)}
    for pid in descendants(postgres):
        own = process_cpu(pid)
        kind = _postgres_kind(_cmdline(pid))
        kinds[kind] = kinds.get(kind, 0.0) + own
        kinds["postmaster and exited"] += process_cpu(pid, reaped=True) - own
    return kinds


def log_autovacuum(admin_url: str) -> None:
    """Have the server log every autovacuum run with its CPU (``log_autovacuum_min_duration = 0``):
    :func:`autovacuum_cpu` reads them back by database."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_autovacuum_min_duration = 0")
        conn.execute("SELECT pg_reload_conf()")


_AUTOVACUUM_RUN = re.compile(r'LOG:  automatic (?:vacuum|analyze) of table "([^".]+)\.')
_AUTOVACUUM_CPU = re.compile(r"system usage: CPU: user: ([0-9.]+) s, system: ([0-9.]+) s")


def log_size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def autovacuum_cpu(log: Path, start: int, end: int | None = None) -> dict[str, float]:
    """CPU seconds of the autovacuum runs the server logged between the byte offsets ``start`` and
    ``end`` (None: the end of the log), by database. Each run is one message: its
    ``automatic vacuum|analyze of table "db.schema.table"`` line, then, indented, its
    ``system usage: CPU: user: … s, system: … s``."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read(None if end is None else max(0, end - start)).decode(errors="replace")
    out: dict[str, float] = {}
    database: str | None = None
    for line in text.splitlines():
        if found := _AUTOVACUUM_RUN.search(line):
            database = found.group(1)
        elif database is not None and (cpu := _AUTOVACUUM_CPU.search(line)):
            out[database] = out.get(database, 0.0) + float(cpu.group(1)) + float(cpu.group(2))
            database = None
    return out


def _paired_on_off(
    server: Any,
    *,
    tables: list[list[dict[str, Any]]],
    clients: int,
    workers: int,
    postgres: int,
    log: Path,
) -> list[tuple[float, float]]:
    """The issue-16 CPU ratio from paired rounds: two ``kwx serve`` at once, each on a database of its
    own on the same PostgreSQL — the projector off on one, the default (projector child) on the
    other — and rounds that alternate between them (off, on, off, on, …), each round's CPU counted
    until both are quiet. A drift of the machine between two phases (this VM's CPU per batch moved
    ±30 % from one minute to the next) then moves both sides of a pair alike. Prints each side's
    CPU per batch, both sides' split by process (the HTTP workers, the projector child,
    PostgreSQL: where the read models' cost lands), and returns the (off, on) CPU ms per batch of
    every pair.

    Autovacuum is counted by database, from the server's log (:func:`autovacuum_cpu`): a round's
    PostgreSQL CPU is what its processes used less the autovacuum runs logged during it, and each
    side gets its own database's autovacuum over the whole phase, spread evenly over its rounds.
    Counted as it lands instead, a run on the other side's database, or on the database the lines
    above filled (analyzing a grown ``events`` costs ≈ 0.4 s), goes to whichever round is running:
    the rounds as measured are printed too."""
    from services.db import ensure_database

    servers: dict[str, tuple[subprocess.Popen[bytes], str, str]] = {}
    try:
        for mode in ("off", "on"):
            ensure_database(server.get_uri("postgres"), f"bench_{mode}")
            url = server.get_uri(f"bench_{mode}")
            key = _platform_key(url)
            proc, base = start_server(url, mode, workers)
            servers[mode] = (proc, base, key)
            bench_http(base, key, tables[:4], 2, f"pairwarm{mode}")
        batches = sum(-(-len(t) // BATCH) for t in tables) / 1000
        pairs: list[tuple[float, float]] = []
        split = {mode: {"workers": 0.0, "projector": 0.0, "postgres": 0.0} for mode in ("off", "on")}
        pg_split: dict[str, dict[str, float]] = {mode: {} for mode in ("off", "on")}
        pids = (servers["off"][0].pid, servers["on"][0].pid, postgres)
        wait_quiet(pids)
        phase_start = log_size(log)
        measured: list[tuple[float, float]] = []  # (off, on) as the rounds' processes used it
        rounds: list[dict[str, float]] = []  # each pair's CPU seconds without any autovacuum
        for r in range(PAIRS):
            got: dict[str, float] = {}
            bare: dict[str, float] = {}
            for mode in ("off", "on"):
                proc, base, key = servers[mode]
                wait_quiet(pids)
                children = sorted(descendants(proc.pid))
                own = {pid: process_cpu(pid) for pid in children}
                kinds0 = postgres_by_kind(postgres)
                kwx0 = tree_cpu(proc.pid)
                start = log_size(log)
                bench_http(base, key, tables, clients, f"pair{mode}{r}")
                wait_quiet(pids)
                kwx1, kinds1 = tree_cpu(proc.pid), postgres_by_kind(postgres)
                during = sum(autovacuum_cpu(log, start).values())
                pg = sum(kinds1.values()) - sum(kinds0.values())
                got[mode] = (kwx1 - kwx0 + pg) / batches
                bare[mode] = kwx1 - kwx0 + pg - during
                split[mode]["postgres"] += (pg - during) / batches
                for kind, cpu in kinds1.items():
                    delta = (cpu - kinds0.get(kind, 0.0)) / batches
                    pg_split[mode][kind] = pg_split[mode].get(kind, 0.0) + delta
                for pid in children:
                    which = "projector" if "projections follow" in _cmdline(pid) else "workers"
                    split[mode][which] += (process_cpu(pid) - own[pid]) / batches
            measured.append((got["off"], got["on"]))
            rounds.append(bare)
        wait_quiet(pids)
        vacuumed = autovacuum_cpu(log, phase_start)
        own_vacuum = {mode: vacuumed.get(f"bench_{mode}", 0.0) for mode in ("off", "on")}
        for bare in rounds:  # each side with its own database's autovacuum, spread over its rounds
            off, on = ((bare[m] + own_vacuum[m] / PAIRS) / batches for m in ("off", "on"))
            pairs.append((off, on))
        for mode in ("off", "on"):
            split[mode]["postgres"] += own_vacuum[mode] / batches
        ratios = ", ".join(f"{on / off:.2f}" for off, on in sorted(pairs, key=lambda p: p[1] / p[0]))
        off_ms, on_ms = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        print(f"paired rounds, {clients} clients, {workers} worker(s), projector off and on alternating "
              f"({PAIRS} pairs, a database each): CPU ms per batch (kwx serve with its children + "
              f"PostgreSQL) off {off_ms:.2f}, on {on_ms:.2f}; on / off per pair {ratios}")  # fmt: skip
        others = sum(v for k, v in vacuumed.items() if k not in ("bench_off", "bench_on"))
        all_batches = PAIRS * batches
        raw = ", ".join(f"{on / off:.2f}" for off, on in sorted(measured, key=lambda p: p[1] / p[0]))
        vacuum = {m: v / all_batches for m, v in own_vacuum.items()}
        print(f"    autovacuum over the paired rounds, CPU ms per batch (from the server's log): bench_off "
              f"{vacuum['off']:.2f}, bench_on {vacuum['on']:.2f} (each on its own side), other databases "
              f"{others / all_batches:.2f} (left out); the rounds as measured, "
              f"autovacuum wherever it landed: off {statistics.median(p[0] for p in measured):.2f}, on "
              f"{statistics.median(p[1] for p in measured):.2f}, on / off per pair {raw}")  # fmt: skip
        off_split, on_split = ({k: v / PAIRS for k, v in split[m].items()} for m in ("off", "on"))
        print(f"    the default's CPU ms per batch by process: HTTP workers {on_split['workers']:.2f}, "
              f"projector child {on_split['projector']:.2f}, PostgreSQL {on_split['postgres']:.2f}; "
              f"projector off: HTTP workers {off_split['workers']:.2f}, "
              f"PostgreSQL {off_split['postgres']:.2f}")  # fmt: skip
        for mode in ("off", "on"):
            kinds = "; ".join(f"{kind} {cpu / PAIRS:.2f}" for kind, cpu in sorted(pg_split[mode].items()))
            print(f"    PostgreSQL's CPU ms per batch by process, projector {mode}: {kinds}")
        return pairs
    finally:
        for proc, _, _ in servers.values():
            stop(proc)


def _issue16(
    goal: dict[str, dict[str, float]],
    cpu: dict[str, float],
    lags: list[float],
    many: int,
    paired: list[tuple[float, float]] | None = None,
) -> None:
    """Issue 16's goals from the lines above: the read models' CPU on top of the ingest path (from
    the paired rounds when there are some: the lines above run minutes apart), the default's rate
    against both COPYs, the lag under full load."""
    print(f"issue 16's goals ({many} clients, judge once: the projector reads the facts stored at append):")
    if paired:
        off_ms = statistics.median(p[0] for p in paired)
        on_ms = statistics.median(p[1] for p in paired)
        ratio = statistics.median(p[1] / p[0] for p in paired)
        print(f"    CPU per batch (kwx serve with children + PostgreSQL), read models live / projector off: "
              f"{on_ms:.2f} / {off_ms:.2f} ms = {ratio:.2f} x, median of {len(paired)} paired rounds "
              f"(goal <= 1.15: {'met' if ratio <= 1.15 else 'missed'})")  # fmt: skip
    elif "on" in cpu and "off" in cpu:
        ratio = cpu["on"] / cpu["off"]
        print(f"    CPU per batch (kwx serve with children + PostgreSQL), read models live / projector off: "
              f"{cpu['on']:.2f} / {cpu['off']:.2f} ms = {ratio:.2f} x (goal <= 1.15: "
              f"{'met' if ratio <= 1.15 else 'missed'})")  # fmt: skip
    on = goal.get(GOAL_LINES["on"], {})
    for label, want in (("events-shaped", 0.75), ("plain", 0.45)):
        if label in on:
            v = on[label]
            verdict = "met" if v >= want else "missed"
            print(f"    kwx serve's default: {v:.2f} x {label} COPY (goal >= {want}: {verdict})")
    if lags:
        ordered = sorted(lags)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(f"    projection lag under full load (/v1/health/ready every 0.1 s, {len(lags)} samples): "
              f"median {statistics.median(ordered):.3f} s, p99 {p99:.3f} s, max {ordered[-1]:.3f} s "
              f"(goal p99 < 1 s: {'met' if p99 < 1.0 else 'missed'})")  # fmt: skip


if __name__ == "__main__":
    run()
