"""One round of ``tests/bench/paired.py`` for one tree of kwx: run as a script (by its path), with that
tree first on ``PYTHONPATH`` and as the working directory, ``KWX_PURE_ENGINE=1``.

``python tests/bench/paired_driver.py --tree DIR --url URL --events FILE`` migrates the (fresh,
empty) database at URL with the tree's own migrations (``services.bootstrap``), then measures, each
with a short untimed warm-up first:

* ``ingest_store``: every table's events appended through the tree's ``EventStore.append`` in
  100-event batches, one thread (decoded beforehand, untimed); events/s;
* ``ingest_http``: the same events, under other table ids, ``POST /v1/tables/{id}/events`` to the
  tree's own ``kwx serve`` (1 worker, projector off), one keep-alive client; events/s;
* ``replay_state``: ``GET /v1/tables/{id}/state`` of each HTTP table with a support key (the full
  view, folded from event 1: no projector, so no snapshot; checked by ``folded_from``); events/s;
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


def check_tree(tree: Path) -> dict[str, Any]:
    """The tree's packages are the ones imported, and its engine is interpreted."""
    import domain
    import projections
    import services
    from services import compiled_engine

    for module in (services, domain, projections):
        where = Path(module.__file__ or "").resolve()
        if tree.resolve() not in where.parents:
            raise SystemExit(f"paired_driver: {module.__name__} came from {where}, not from {tree}")
    if compiled_engine.active():
        raise SystemExit("paired_driver: the compiled engine is active (KWX_PURE_ENGINE=1 was not set)")
    return {"engine": "interpreted", "python": sys.version.split()[0]}


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


def timed(rates: dict[str, float], name: str, fn: Callable[[], int], cpu: Callable[[], float]) -> None:
    """``rates[name]``: events/s of ``fn`` (which returns the events it handled) by the clock, and
    ``rates[name + "_cpu"]``: events per CPU second of the process that does the work (``cpu``)."""
    cpu_before = cpu()
    started = time.perf_counter()
    n = fn()
    rates[name] = n / (time.perf_counter() - started)
    rates[name + "_cpu"] = n / max(cpu() - cpu_before, 1e-3)


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
    args = parser.parse_args(argv)
    meta = check_tree(args.tree)

    from domain.events import convert
    from services.bootstrap import bootstrap
    from services.settings import Settings

    tables: list[list[dict[str, Any]]] = json.loads(args.events.read_text())
    warm, timed_tables = tables[:WARM], tables[WARM:]
    total = sum(len(t) for t in timed_tables)
    env = {"DATABASE_URL": args.url, "KWX_LOG_LEVEL": "warning", "KWX_PROJECTOR": "off"}
    started = time.perf_counter()
    container = bootstrap(Settings.from_env(env))  # migrates the tree's own schema
    meta["migrate_s"] = round(time.perf_counter() - started, 2)
    rates: dict[str, float] = {}
    try:
        platform = container.keys.create(TENANT, "platform")
        support = container.keys.create(TENANT, "support")
        store, adapter = container.store, Adapter(container)
        decoded = [[convert(e) for e in events] for events in tables]
        rulings = 0

        def append(ids: str, which: list[list[Any]]) -> int:
            nonlocal rulings
            for t, events in enumerate(which):
                for i in range(0, len(events), BATCH):
                    result = store.append(TENANT, f"{ids}-{t}", i, events[i : i + BATCH])
                    if result.version != i + len(events[i : i + BATCH]):
                        raise SystemExit(f"paired_driver: append {ids}-{t} at {i}: version {result.version}")
                    rulings += len(result.rulings)
            return sum(len(e) for e in which)

        append("warm-store", decoded[:WARM])
        rulings = 0
        timed(rates, "ingest_store", lambda: append("store", decoded[WARM:]), own_cpu)
        meta["rulings"] = rulings

        def rebuild() -> int:
            for t, events in enumerate(timed_tables):
                state = adapter.rebuild(f"store-{t}", len(events))
                if int(state.version) != len(events):
                    raise SystemExit(f"paired_driver: store-{t} at {state.version}, not {len(events)}")
            return total

        adapter.rebuild("warm-store-0", len(warm[0]))
        timed(rates, "replay_store", rebuild, own_cpu)

        def fold() -> int:
            for events in decoded[WARM:]:
                adapter.fold(events)
            return total

        adapter.fold(decoded[0])
        timed(rates, "fold_engine", fold, own_cpu)

        port = free_port()
        serve_env = dict(os.environ, DATABASE_URL=args.url, KWX_PROJECTOR="off", KWX_WORKERS="1")
        said = args.events.with_name(f"serve-{os.getpid()}.out")
        with said.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "services.cli", "serve", "--port", str(port)],
                env=serve_env, cwd=args.tree, stdout=out, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            wait_healthy(port, proc)
            engine_line = next((x for x in said.read_text().splitlines() if "rules engine" in x), "")
            if "interpreted" not in engine_line:
                raise SystemExit(f"paired_driver: kwx serve's engine is not interpreted: {engine_line!r}")
            meta["serve_engine"] = engine_line.removeprefix("kwx: ")
            served = cpu_of(proc.pid)  # one process: 1 worker, serving in-process, no projector child
            client = Client(port, platform)
            post(client, requests(warm, "warm-http"))
            batches = requests(timed_tables, "http")
            timed(rates, "ingest_http", lambda: post(client, batches), served)
            client.close()
            reader = Client(port, support)
            hands = [sum(1 for e in events if e["type"] == "hand_started") for events in tables]

            def states(ids: str, which: list[list[dict[str, Any]]]) -> int:
                for t, events in enumerate(which):
                    status, payload = reader.call("GET", f"/v1/tables/{ids}-{t}/state")
                    body = json.loads(payload) if status == 200 else {}
                    if status != 200 or body.get("folded_from") != 0 or body.get("at") != len(events):
                        raise SystemExit(f"paired_driver: state of {ids}-{t}: {status} {payload[:300]!r}")
                return sum(len(e) for e in which)

            def settlements(ids: str, which: list[list[dict[str, Any]]], counts: list[int]) -> int:
                for t, n in enumerate(counts[: len(which)]):
                    status, payload = reader.call("GET", f"/v1/tables/{ids}-{t}/hands/{n}/settlement")
                    if status != 200:
                        raise SystemExit(f"paired_driver: settlement {ids}-{t}: {status} {payload[:300]!r}")
                return sum(len(e) for e in which)

            states("warm-http", warm)
            settlements("warm-http", warm, hands[:WARM])
            timed(rates, "replay_state", lambda: states("http", timed_tables), served)
            timed(rates, "replay_settlement", lambda: settlements("http", timed_tables, hands[WARM:]), served)
            reader.close()
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        container.close()
    meta["events"] = total
    print(json.dumps({"rates": rates, "meta": meta}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
