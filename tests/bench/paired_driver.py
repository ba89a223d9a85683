"""One round of ``tests/bench/paired.py`` for one tree of kwx: run as a script (by its path), with that
tree first on ``PYTHONPATH`` and as the working directory, ``KWX_PURE_ENGINE=1`` (``--engine
compiled``: without it, and the tree's engine must then be the compiled build).

``python tests/bench/paired_driver.py --tree DIR --url URL --events FILE [--repeat R] [--engine E]`` migrates
the (fresh, empty) database at URL with the tree's own migrations (``services.bootstrap``), then
measures, each after a short untimed warm-up (the file's first 2 tables) and run R times (3), the
best run counting — by the clock, and per CPU second of the process doing kwx's work (this one
in process, ``kwx serve`` over HTTP; PostgreSQL's CPU is not counted):

* ``ingest_store``: every table's events appended through the tree's ``EventStore.append`` in
  100-event batches, one thread (decoded beforehand, untimed), each run on new table ids; events/s;
  also ``ingest_store_db_cpu``: events per CPU second of this process *and* the round database's
  PostgreSQL backends (every process whose title names the database, ``/proc/<pid>/schedstat``) —
  the ingest path's whole cost, where a change moves work between the two (``ingest_http_db_cpu``
  the same for ``kwx serve``);
* ``ingest_http``: the same events, under other table ids, ``POST /v1/tables/{id}/events`` to the
  tree's own ``kwx serve`` (1 worker, projector off), one keep-alive client (bodies encoded
  beforehand); events/s;
* ``replay_state``: ``GET /v1/tables/{id}/state`` of each HTTP table with a support key (the full
  view; no projector runs, so a tree before migration 0015 folds it from event 1, and one from 0015
  on from the last hand's start, whose state the append kept in the event's stored facts: the
  meta's ``replay_state_folded_from`` says which — compare such trees' rates knowing it); events/s;
* ``replay_settlement``: ``GET /v1/tables/{id}/hands/{last}/settlement`` of each HTTP table (the
  route folds the whole table); events/s;
* ``replay_store``: the state of each store table rebuilt in process as the tree's state route
  does it (``projections.replay.state_at``: ``read_table`` pages + the fold); events/s;
* ``fold_engine``: the tree's engine fold of the decoded events in memory, as its reads fold a
  stored event (``domain.engine.replay``, or ``step`` then ``evolve`` on a refusal before it);
  events/s.

This file imports nothing from ``tests``: it runs against a tree whose ``tests`` may differ. Where
the trees' internal APIs differ (the store's reads by tenant, ``state_at``'s arguments, the engine's
fold), :class:`Adapter` picks the tree's own. Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import http.client
import inspect
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BATCH = 100
TENANT = "bench"
WARM = 2  # tables appended (and read) untimed first, under their own ids


class Adapter:
    """The calls whose shape differs between the trees, bound to one container."""

    def __init__(self, container: Any) -> None:
        from domain import engine as domain_engine
        from projections import replay

        self.container = container
        self.domain_engine = domain_engine
        self.state_at = replay.state_at
        # before issue 12: state_at(conn, source, engine, table_id, at), reads by table id only;
        # after: state_at(snap, source, engine, tenant, table_id, at)
        self.tenant_scoped = "tenant" in inspect.signature(replay.state_at).parameters
        self.has_replay = hasattr(domain_engine, "replay")

    def rebuild(self, table_id: str, version: int) -> Any:
        """The table's state after ``version``, from its stored events (no snapshot)."""
        c = self.container
        if self.tenant_scoped:
            return self.state_at(None, c.store, c.engine, TENANT, table_id, version)[0]
        from services.db import reading

        state, _start = reading(
            c.pool, lambda conn: self.state_at(conn, c.store, self.domain_engine, table_id, version)
        )
        return state

    def fold(self, events: list[Any]) -> Any:
        """The events folded as the tree's reads fold stored events."""
        e = self.domain_engine
        state = e.initial()
        if self.has_replay:
            replay = e.replay
            for ev in events:
                state = replay(state, ev)
            return state
        step, evolve = e.step, e.evolve
        for ev in events:
            new, _ruling, accepted = step(state, ev)
            state = new if accepted else evolve(state, ev)
        return state


def check_tree(tree: Path, engine: str = "interpreted") -> dict[str, Any]:
    """The tree's packages are the ones imported, and its engine is ``engine`` (interpreted, or the
    compiled build: only when the tree's ``domain/`` is the one it was built from)."""
    import domain
    import projections
    import services
    from services import compiled_engine

    for module in (services, domain, projections):
        where = Path(module.__file__ or "").resolve()
        if tree.resolve() not in where.parents:
            raise SystemExit(f"paired_driver: {module.__name__} came from {where}, not from {tree}")
    if engine == "interpreted" and compiled_engine.active():
        raise SystemExit("paired_driver: the compiled engine is active (KWX_PURE_ENGINE=1 was not set)")
    if engine == "compiled" and not compiled_engine.active():
        raise SystemExit(
            "paired_driver: --engine compiled, but this tree's engine is interpreted: its domain/ is not "
            "the one .venv's compiled build was made from"
        )
    return {"engine": engine, "python": sys.version.split()[0]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def own_cpu() -> float:
    return time.process_time()


def cpu_of(pid: int) -> Callable[[], float]:
    """The CPU seconds (user + system) the process ``pid`` has used so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return read


def best(
    rates: dict[str, float],
    name: str,
    fn: Callable[[int], int],
    cpu: Callable[[], float],
    repeat: int,
    db: Callable[[], float] | None = None,
) -> None:
    """``fn(r)`` for r = 0 … repeat − 1 (each returns the events it handled); ``rates[name]``: the best
    events/s by the clock, ``rates[name + "_cpu"]``: the best events per CPU second of the process
    doing the work (``cpu``); with ``db`` (PostgreSQL's CPU seconds so far, read outside ``cpu``'s
    interval: it walks /proc), ``rates[name + "_db_cpu"]``: per CPU second of both. Best of: on a
    shared machine the other work only ever slows a run."""
    for r in range(repeat):
        db_before = db() if db is not None else 0.0
        cpu_before = cpu()
        started = time.perf_counter()
        n = fn(r)
        wall = n / (time.perf_counter() - started)
        used = cpu() - cpu_before
        rates[name] = max(rates.get(name, 0.0), wall)
        if used > 0:  # /proc counts in clock ticks (10 ms): a very short run may show none
            rates[name + "_cpu"] = max(rates.get(name + "_cpu", 0.0), n / used)
        if db is not None and (both := used + db() - db_before) > 0:
            rates[name + "_db_cpu"] = max(rates.get(name + "_db_cpu", 0.0), n / both)


def database_cpu(url: str) -> Callable[[], float]:
    """The CPU seconds (user + system, ns-exact from ``/proc/<pid>/schedstat``) used so far by the
    live PostgreSQL processes of the database at ``url``: those whose title names it (``postgres:
    user dbname host(port) state``; also its autovacuum workers). The round's database is its own,
    so nothing else is counted; a backend that exited takes its CPU with it (the store's pool keeps
    its connections for the round)."""
    from psycopg.conninfo import conninfo_to_dict

    needle = f" {conninfo_to_dict(url)['dbname']} ".encode()

    def read() -> float:
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes()
                if title.startswith(b"postgres:") and needle in title:
                    total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):  # exited meanwhile
                continue
        return total / 1e9

    return read


class Client:
    """One keep-alive HTTP/1.1 connection to ``kwx serve`` (http.client: the same client for both trees)."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.auth = {"Authorization": f"Bearer {key}"}

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = dict(self.auth)
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=body, headers=headers)
        answer = self.conn.getresponse()
        return answer.status, answer.read()

    def close(self) -> None:
        self.conn.close()


def wait_healthy(port: int, proc: subprocess.Popen[bytes], seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"paired_driver: kwx serve exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/v1/health")
            if conn.getresponse().status == 200:
                conn.close()
                return
            conn.close()
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"paired_driver: kwx serve not healthy after {seconds:.0f} s")


def requests(tables: list[list[dict[str, Any]]], prefix: str) -> list[tuple[str, bytes, int]]:
    """(path, body, the version it must answer) of every 100-event batch, encoded before the clock."""
    out = []
    for t, events in enumerate(tables):
        for i in range(0, len(events), BATCH):
            batch = events[i : i + BATCH]
            body = json.dumps({"expected_version": i, "events": batch}).encode()
            out.append((f"/v1/tables/{prefix}-{t}/events", body, i + len(batch)))
    return out


def post(client: Client, batches: list[tuple[str, bytes, int]]) -> int:
    n = 0
    for path, body, version in batches:
        status, payload = client.call("POST", path, body)
        if status != 201 or json.loads(payload).get("version") != version:
            raise SystemExit(f"paired_driver: POST {path}: {status} {payload[:300]!r}")
        n += int(json.loads(payload)["count"])
    return n


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--events", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (the best counts)")
    parser.add_argument("--engine", choices=("interpreted", "compiled"), default="interpreted")
    args = parser.parse_args(argv)
    meta = check_tree(args.tree, args.engine)

    from services.bootstrap import bootstrap
    from services.settings import Settings

    tables: list[list[dict[str, Any]]] = json.loads(args.events.read_text())
    env = {"DATABASE_URL": args.url, "KWX_LOG_LEVEL": "warning", "KWX_PROJECTOR": "off"}
    started = time.perf_counter()
    container = bootstrap(Settings.from_env(env))  # migrates the tree's own schema
    meta["migrate_s"] = round(time.perf_counter() - started, 2)
    rates: dict[str, float] = {}
    try:
        measure = Round(container, tables, args.repeat, rates, meta, database_cpu(args.url))
        measure.in_process()
        measure.over_http(args.tree, args.url, args.events.with_name(f"serve-{os.getpid()}.out"))
    finally:
        container.close()
    print(json.dumps({"rates": rates, "meta": meta}, sort_keys=True))
    return 0


class Round:
    """Every measurement of one round, on one tree's container (its store, keys, adapter)."""

    def __init__(
        self,
        container: Any,
        tables: list[list[dict[str, Any]]],
        repeat: int,
        rates: dict[str, float],
        meta: dict[str, Any],
        db: Callable[[], float] | None = None,
    ) -> None:
        from domain.events import convert

        self.container, self.repeat, self.rates, self.meta = container, repeat, rates, meta
        self.db = db  # the round database's PostgreSQL CPU so far (database_cpu), for the ingest lines
        self.warm, self.tables = tables[:WARM], tables[WARM:]
        self.total = sum(len(t) for t in self.tables)
        self.decoded = [[convert(e) for e in events] for events in tables]
        self.adapter = Adapter(container)
        self.platform = container.keys.create(TENANT, "platform")
        self.support = container.keys.create(TENANT, "support")
        meta["events"] = self.total

    def append(self, ids: str, which: list[list[Any]]) -> int:
        rulings = 0
        for t, events in enumerate(which):
            for i in range(0, len(events), BATCH):
                result = self.container.store.append(TENANT, f"{ids}-{t}", i, events[i : i + BATCH])
                if result.version != i + len(events[i : i + BATCH]):
                    raise SystemExit(f"paired_driver: append {ids}-{t} at {i}: version {result.version}")
                rulings += len(result.rulings)
        self.meta["rulings"] = rulings
        return sum(len(e) for e in which)

    def rebuild(self, ids: str, which: list[list[Any]]) -> int:
        for t, events in enumerate(which):
            state = self.adapter.rebuild(f"{ids}-{t}", len(events))
            if int(state.version) != len(events):
                raise SystemExit(f"paired_driver: {ids}-{t} at {state.version}, not {len(events)}")
        return sum(len(e) for e in which)

    def fold(self, which: list[list[Any]]) -> int:
        for events in which:
            self.adapter.fold(events)
        return sum(len(e) for e in which)

    def in_process(self) -> None:
        """ingest_store (each run on new table ids; also counting PostgreSQL's CPU), replay_store (the
        first run's tables), fold_engine."""
        warm, timed_tables = self.decoded[:WARM], self.decoded[WARM:]
        self.append("warm-store", warm)
        best(
            self.rates,
            "ingest_store",
            lambda r: self.append(f"store{r}", timed_tables),
            own_cpu,
            self.repeat,
            self.db,
        )
        self.rebuild("warm-store", warm)
        best(self.rates, "replay_store", lambda r: self.rebuild("store0", timed_tables), own_cpu, self.repeat)
        self.fold(warm)
        best(self.rates, "fold_engine", lambda r: self.fold(timed_tables), own_cpu, self.repeat)

    def over_http(self, tree: Path, url: str, said: Path) -> None:
        """ingest_http, replay_state, replay_settlement through the tree's own ``kwx serve``."""
        port = free_port()
        env = dict(os.environ, DATABASE_URL=url, KWX_PROJECTOR="off", KWX_WORKERS="1")
        with said.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
                env=env, cwd=tree, stdout=out, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            wait_healthy(port, proc)
            engine_line = next((x for x in said.read_text().splitlines() if "rules engine" in x), "")
            want = "interpreted" if self.meta["engine"] == "interpreted" else "compiled"
            if want not in engine_line:
                raise SystemExit(f"paired_driver: kwx serve's engine is not {want}: {engine_line!r}")
            self.meta["serve_engine"] = engine_line.removeprefix("kwx: ")
            served = cpu_of(proc.pid)  # one process: 1 worker, serving in-process, no projector child
            self.http(port, served)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def http(self, port: int, served: Callable[[], float]) -> None:
        writer, reader = Client(port, self.platform), Client(port, self.support)
        post(writer, requests(self.warm, "warm-http"))
        runs = [requests(self.tables, f"http{r}") for r in range(self.repeat)]  # encoded before the clock
        best(self.rates, "ingest_http", lambda r: post(writer, runs[r]), served, self.repeat, self.db)
        writer.close()
        hands = [sum(1 for e in events if e["type"] == "hand_started") for events in self.warm + self.tables]

        def states(ids: str, which: list[list[dict[str, Any]]]) -> int:
            for t, events in enumerate(which):
                status, payload = reader.call("GET", f"/v1/tables/{ids}-{t}/state")
                body = json.loads(payload) if status == 200 else {}
                if status != 200 or body.get("at") != len(events):
                    raise SystemExit(f"paired_driver: state of {ids}-{t}: {status} {payload[:300]!r}")
                self.meta["replay_state_folded_from"] = (
                    "event 1" if body.get("folded_from") == 0 else "a hand's snapshot"
                )
            return sum(len(e) for e in which)

        def settlements(ids: str, which: list[list[dict[str, Any]]], counts: list[int]) -> int:
            for t, n in enumerate(counts):
                status, payload = reader.call("GET", f"/v1/tables/{ids}-{t}/hands/{n}/settlement")
                if status != 200:
                    raise SystemExit(f"paired_driver: settlement {ids}-{t}: {status} {payload[:300]!r}")
            return sum(len(e) for e in which)

        states("warm-http", self.warm)
        settlements("warm-http", self.warm, hands[:WARM])
        best(self.rates, "replay_state", lambda r: states("http0", self.tables), served, self.repeat)
        best(self.rates, "replay_settlement", lambda r: settlements("http0", self.tables, hands[WARM:]),
             served, self.repeat)  # fmt: skip
        reader.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
