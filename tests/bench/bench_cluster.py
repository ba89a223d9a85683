"""kwx on a real Citus cluster (issue 14, speed): HTTP ingest against ``COPY`` into the same
distributed table, and ``state?at=N`` on the cluster against one node, in one run.

The cluster is tests/citus_cluster.py's (a coordinator and two workers on this machine, Citus built
once into ``.kwx-citus/pg``), started in its own folder (``.kwx-citus/bench-nodes``: a test cluster
started by hand keeps running) and stopped at the end, whatever fails. Five databases on it, each
migrated by ``services.bootstrap`` as ``kwx serve`` does:

* ``bench_ingest``, a Citus database (the extension on every node, the workers added: what
  ``tests/citus_cluster.CitusDatabases`` does for the tests), which ``kwx serve`` ingests into,
  and ``bench_ingest_one``, a plain one on the coordinator's server (no extension: PostgreSQL 18
  alone, as the same-answers test of tests/citus_test_cluster.py makes its one node);
* ``bench_copy``, a Citus database for the baselines, so that no projector folds what they store:
  ``COPY`` of the same events (JSON bodies pre-encoded) in 100-event transactions over one
  connection into its distributed ``events`` (kwx's own table: its shards, indexes, defaults and
  triggers; tenant and a hash given as constants) and into an *events-shaped* scratch table
  (bench_ingest's ``SHAPED``, distributed on ``table_id`` too);
* ``bench_state``, a Citus database, and ``bench_one``, a plain one, for the reads.

**Ingest.** ``KWX_BENCH_CLUSTER_TABLES`` (48) simulated tables of ``KWX_BENCH_HANDS`` (8) hands
(bench_ingest's generator, ≈ 19,500 events), ``POST``ed in 100-event batches by
``KWX_BENCH_CLIENTS`` (4) lean keep-alive clients (bench_ingest's) to ``kwx serve`` on the
coordinator with its default worker count, projector off (the ingest path alone), then as it runs
by default (its projector child). ``KWX_BENCH_REPEAT`` (3) rounds a line, each paired with the
COPY rounds run just before it, once every process was quiet; the line's ratio is the median of
the per-round ratios, with their range. With the projector off the same ``kwx serve`` on
``bench_ingest_one`` runs in each round too (the order alternating): cluster / one node, per round.
Each line also prints the CPU milliseconds per 100-event
batch of kwx serve (with its children), of the coordinator's server, of the two workers' servers
(their postmasters and backends) and of the clients, counted per process (:func:`cpu_spent`).

**State reads.** ``KWX_BENCH_CLUSTER_READ_TABLES`` (24) other simulated tables appended through the
store in 100-event batches to ``bench_state`` and to ``bench_one``, the projector caught up on each
(the per-hand snapshots ``state?at=N`` starts from), ``VACUUM ANALYZE``; then ``KWX_BENCH_ROUNDS``
(5) paired rounds, the order alternating: ``kwx serve`` (1 worker, projector off) on one database,
``KWX_BENCH_CLUSTER_READS`` (300) ``GET …/state?at=N`` (support) at the same random (table, N)
on both sides of a pair over one keep-alive client — p50 / p99 each, and the cluster / one-node
ratio as the median of the per-pair ratios with their range; and the CPU per read of kwx serve
and of the servers (less moved by the machine's load than latency is).

No goal is judged and nothing is asserted on time. ``python -m tests.bench cluster`` (with Citus
built: ≈ 2.5 min at a load of ≈ 2 on this 2-core machine, 3–5 min at 4–8); larger:
``KWX_BENCH_CLUSTER_TABLES=96 KWX_BENCH_CLUSTER_READS=1000``.
"""

from __future__ import annotations

import os
import random
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

from tests.bench import knob

TABLES = knob("KWX_BENCH_CLUSTER_TABLES", 48, 4)
READ_TABLES = knob("KWX_BENCH_CLUSTER_READ_TABLES", 24, 2)
READS = knob("KWX_BENCH_CLUSTER_READS", 300, 20)
REPEAT = knob("KWX_BENCH_REPEAT", 3, 1)  # ingest rounds
ROUNDS = knob("KWX_BENCH_ROUNDS", 5, 1)  # state-read rounds
CLIENTS = int(os.environ.get("KWX_BENCH_CLIENTS", "4"))
BATCH = 100
# kwx's events need a tenant and a hash: the COPY gives every row these (the hash's bytes are not
# checked by anything on the way in; kwx's append computes a real one per event)
EVENTS_FIXED = {"tenant": "bench", "hash": bytes(32)}


def ratio_summary(ratios: list[float]) -> str:
    """``median [lowest–highest]`` of per-pair ratios: the form every line here prints."""
    ordered = sorted(ratios)
    return f"{statistics.median(ordered):.2f} [{ordered[0]:.2f}–{ordered[-1]:.2f}]"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_of(roots: list[int]) -> list[dict[int, float]]:
    """Per root: CPU seconds so far of it and of each live descendant, by pid."""
    from tests.service.serving import descendants

    out = []
    for root in roots:
        seen = {}
        for pid in (root, *descendants(root)):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            seen[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
        out.append(seen)
    return out


def cpu_spent(before: list[dict[int, float]], after: list[dict[int, float]]) -> list[float]:
    """Per root, the CPU seconds its processes used between two :func:`cpu_of`: a process that
    started in between counts from zero, one that ended in between not at all (a backend of the
    previous round's server exiting lazily must not make a worker's share negative)."""
    return [sum(cpu - b.get(pid, 0.0) for pid, cpu in a.items()) for b, a in zip(before, after, strict=True)]


def _postmaster(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().split()[0])


def _database(cluster: Any, name: str, citus: bool) -> str:
    """``name`` on the cluster's coordinator — a Citus database (on every node, the workers added)
    or a plain one — migrated as ``kwx serve`` migrates it; its URL."""
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.citus_cluster import CitusDatabases
    from tests.conftest import with_database

    admin = cluster.coordinator.url()
    ensure_database(admin, name)
    if citus:
        CitusDatabases([w.url() for w in cluster.workers]).prepare(admin, name)
    url = with_database(admin, name)
    bootstrap(Settings(database_url=url, log_level="warning", projector="off"), url=url).close()
    return url


def _key(url: str, role: str) -> str:
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings(database_url=url, log_level="warning", projector="off"), url=url)
    try:
        return str(container.keys.create("bench", role))
    finally:
        container.close()


def ingest(cluster: Any, urls: dict[str, str], copy_url: str) -> None:
    """The ingest lines (the module's docstring); ``urls``: the kwx databases, "cluster" and "one node"."""
    import contextlib

    import psycopg

    from services.settings import Settings
    from tests.bench.bench_ingest import (
        SHAPED,
        _tables,
        bench_copy,
        bench_http,
        start_server,
        stop,
        wait_quiet,
    )

    tables = _tables(TABLES)
    total = sum(len(t) for t in tables)
    batches = sum(-(-len(t) // BATCH) for t in tables)
    print(f"ingest: {total:,} events in {TABLES} simulated tables, batches of {BATCH}, {CLIENTS} clients")
    with psycopg.connect(copy_url, autocommit=True) as conn:
        for statement in SHAPED.format(name="bench_shaped").split(";"):
            conn.execute(statement)
        conn.execute("SELECT create_distributed_table('bench_shaped', 'table_id')")
    copies = (
        ("the distributed events", "events", EVENTS_FIXED),
        ("an events-shaped distributed", "bench_shaped", None),
    )
    copy_runs: dict[str, list[float]] = {label: [] for label, *_ in copies}

    def copy_round(tag: str) -> dict[str, float]:
        rates = {}
        for label, name, fixed in copies:
            n, seconds = bench_copy(copy_url, tables, f"{name}#{tag}", "", fixed)  # the tables exist
            rates[label] = n / seconds
            copy_runs[label].append(rates[label])
        return rates

    for r in range(REPEAT):
        copy_round(f"head{r}")
    for label, runs in copy_runs.items():
        print(f"COPY into {label} table, 100-event tx: {max(runs):9,.0f} events/s (best of {REPEAT})")

    nodes = [_postmaster(node.data) for node in cluster.nodes]  # coordinator, worker 1, worker 2
    keys = {side: _key(url, "platform") for side, url in urls.items()}
    workers = Settings.from_env().serving_workers()
    print(f"kwx serve on the coordinator: {workers} worker(s) (its default here); each round after the "
          "COPY rounds it is paired with, every process quiet first; on one node: the same kwx serve "
          "on the plain database, in the same round, the order alternating:")  # fmt: skip
    # (projector, the sides measured): the one-node side only for the ingest path, projector off
    for projector, sides in (("off", ("cluster", "one node")), ("on", ("cluster",))):
        with contextlib.ExitStack() as servers:
            started = {}
            for side in sides:
                proc, base = start_server(urls[side], projector, workers)
                servers.callback(stop, proc)
                started[side] = (proc, base)
                bench_http(base, keys[side], tables[:4], 2, f"warm{projector}")
            rates: dict[str, list[float]] = {side: [] for side in sides}
            paired: dict[str, list[float]] = {label: [] for label in copy_runs}
            against_one: list[float] = []
            cpu = {side: [0.0] * 5 for side in sides}  # kwx serve, coordinator, worker 1, worker 2, clients
            for r in range(REPEAT):
                wait_quiet((*(proc.pid for proc, _ in started.values()), *nodes))  # a projector, a checkpoint
                baseline = copy_round(f"{projector}r{r}")
                for side in sides if r % 2 == 0 else sides[::-1]:
                    proc, base = started[side]
                    if side != sides[0]:
                        wait_quiet((proc.pid, *nodes))
                    before, clock = cpu_of([proc.pid, *nodes]), time.process_time()
                    n, seconds = bench_http(base, keys[side], tables, CLIENTS, f"{projector}r{r}")
                    spent = [*cpu_spent(before, cpu_of([proc.pid, *nodes])), time.process_time() - clock]
                    rates[side].append(n / seconds)
                    cpu[side] = [c + d for c, d in zip(cpu[side], spent, strict=True)]
                for label, rate in baseline.items():
                    paired[label].append(rates["cluster"][-1] / rate)
                if "one node" in rates:
                    against_one.append(rates["cluster"][-1] / rates["one node"][-1])
        per = REPEAT * batches / 1000
        print(f"kwx HTTP on the cluster, projector {projector:3}: {max(rates['cluster']):7,.0f} events/s "
              f"(best of {REPEAT}); x COPY, median of the paired rounds [range]: "
              + ", ".join(f"{ratio_summary(v)} into {k} table" for k, v in paired.items()))  # fmt: skip
        if against_one:
            best = max(rates["one node"])
            print(f"kwx HTTP on one node,    projector {projector:3}: {best:7,.0f} events/s "
                  f"(best of {REPEAT}); cluster / one node {ratio_summary(against_one)}")  # fmt: skip
        for side in sides:
            kwx, coordinator, w1, w2, clients = (c / per for c in cpu[side])
            where = (f"coordinator {coordinator:.2f}, workers {w1:.2f} + {w2:.2f}" if side == "cluster"
                     else f"PostgreSQL (the coordinator's server) {coordinator:.2f}")  # fmt: skip
            print(f"    {side}, CPU ms per batch: kwx serve (with its children) {kwx:.2f}, {where}, "
                  f"clients {clients:.2f}")  # fmt: skip
    for label, runs in copy_runs.items():
        print(f"COPY into {label} table over all {len(runs)} rounds: best {max(runs):,.0f}, "
              f"median {statistics.median(runs):,.0f}, lowest {min(runs):,.0f} events/s")  # fmt: skip


def _store(url: str, tables: list[list[dict[str, Any]]]) -> tuple[float, float]:
    """Every table appended through the store in 100-event batches, then the projector caught up,
    then ``VACUUM ANALYZE``: (seconds appending, seconds catching up)."""
    import psycopg

    from domain import engine
    from domain.events import convert
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings(database_url=url, log_level="warning", projector="off"), url=url)
    try:
        started = time.perf_counter()
        for i, wire in enumerate(tables):
            decoded = [convert(e) for e in wire]
            for j in range(0, len(decoded), BATCH):
                container.store.append("bench", f"s{i}", j, decoded[j : j + BATCH])
        appended = time.perf_counter() - started
        started = time.perf_counter()
        Projector(container.pool, container.store, engine).catch_up()
        caught = time.perf_counter() - started
    finally:
        container.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    return appended, caught


def _reads(
    base: str, key: str, tables: list[list[dict[str, Any]]], seed: int, pids: list[int]
) -> dict[str, Any]:
    import httpx

    support = {"Authorization": f"Bearer {key}"}
    pick = random.Random(seed)  # the same reads on both sides of a pair
    with httpx.Client(base_url=base, timeout=60) as client:
        for _ in range(20):  # warm: the worker's first reads, its pool's connections
            client.get("/v1/tables/s0/state", params={"at": 5}, headers=support)
        times = []
        before = cpu_of(pids)
        for _ in range(READS):
            i = pick.randrange(len(tables))
            at = pick.randrange(1, len(tables[i]) + 1)
            started = time.perf_counter()
            answer = client.get(f"/v1/tables/s{i}/state", params={"at": at}, headers=support)
            times.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                raise RuntimeError(f"state?at={at} of s{i}: {answer.status_code} {answer.text[:200]}")
        cpu = [spent / READS * 1000 for spent in cpu_spent(before, cpu_of(pids))]
    return {"p50": statistics.median(times), "p99": percentile(times, 0.99), "cpu": cpu}


def state_reads(cluster: Any, urls: dict[str, str]) -> None:
    from tests.bench.bench_growth import _tables
    from tests.bench.bench_ingest import start_server, stop, wait_quiet

    tables = _tables(READ_TABLES, 17)
    total = sum(len(t) for t in tables)
    for side, url in urls.items():
        appended, caught = _store(url, tables)
        print(f"state reads, {side}: {READ_TABLES} simulated tables, {total:,} events appended through "
              f"the store in {appended:.1f} s ({total / appended:,.0f} events/s), the projector caught "
              f"up in {caught:.1f} s ({total / caught:,.0f} events/s)")  # fmt: skip
    keys = {side: _key(url, "support") for side, url in urls.items()}
    nodes = [_postmaster(node.data) for node in cluster.nodes]
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in urls}
    print(f"state?at=N, {READS} reads a round at random (table, N), kwx serve 1 worker, projector off:")
    for r in range(ROUNDS):
        for side in list(urls) if r % 2 == 0 else list(urls)[::-1]:
            wait_quiet(tuple(nodes))  # the previous server's backends gone, a checkpoint done
            proc, base = start_server(urls[side], "off", 1)
            try:
                result = _reads(base, keys[side], tables, 100 + r, [proc.pid, *nodes])
            finally:
                stop(proc)
            runs[side].append(result)
            kwx, coordinator, *workers = result["cpu"]
            print(f"    round {r + 1}, {side:8}: p50 {result['p50']:6.2f} ms, p99 {result['p99']:6.2f} ms;"
                  f"  CPU ms per read: kwx serve {kwx:.2f}, coordinator {coordinator:.2f}, workers "
                  + " + ".join(f"{w:.2f}" for w in workers))  # fmt: skip
    cluster_side, one = runs["cluster"], runs["one node"]
    for q in ("p50", "p99"):
        ratios = [c[q] / o[q] for c, o in zip(cluster_side, one, strict=True)]
        print(f"state?at=N {q}: cluster {statistics.median(c[q] for c in cluster_side):.2f} ms, one node "
              f"{statistics.median(o[q] for o in one):.2f} ms (medians); cluster / one node "
              f"{ratio_summary(ratios)} (median of the {ROUNDS} paired rounds [range])")  # fmt: skip
    # CPU moves less with the machine's load than latency does: the servers' share per read
    kwx = [statistics.median(r["cpu"][0] for r in side) for side in (cluster_side, one)]
    servers = [statistics.median(sum(r["cpu"][1:]) for r in side) for side in (cluster_side, one)]
    print(f"CPU ms per read (medians of the rounds), cluster / one node: kwx serve {kwx[0]:.2f} / "
          f"{kwx[1]:.2f}, "
          f"PostgreSQL (coordinator + workers) {servers[0]:.2f} / {servers[1]:.2f}")  # fmt: skip


def run() -> None:
    warnings.filterwarnings("ignore", module="platformdirs")
    from tests.citus_cluster import Cluster

    print(f"load average before {_load()}")
    cluster = Cluster(folder="bench-nodes")
    try:
        cluster.start()
        kwx = {"cluster": _database(cluster, "bench_ingest", citus=True),
               "one node": _database(cluster, "bench_ingest_one", citus=False)}  # fmt: skip
        ingest(cluster, kwx, _database(cluster, "bench_copy", citus=True))
        print(f"load average {_load()}")
        urls = {"cluster": _database(cluster, "bench_state", citus=True),
                "one node": _database(cluster, "bench_one", citus=False)}  # fmt: skip
        state_reads(cluster, urls)
    finally:
        cluster.stop()
    print(f"load average after {_load()}")


if __name__ == "__main__":
    run()
