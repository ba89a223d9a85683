"""kwx on the Citus cluster while a node fails under concurrent ingest (issue 14's fault part;
``make test-citus``; docs/SCALING.md, "A worker down" and "The coordinator restarted").

Not collected by ``make test`` (the name does not start with ``test_``). Each test runs a real
``kwx serve`` (two workers, the projector on) on a database of its own, and four client threads
that append tables spread over both workers in batches, re-sending a batch answered 503 until it
is accepted, as a platform would. In the middle a node is stopped (``immediate``: like a crash, or
``fast``), ingest goes on, the node is started again, ingest goes on to the end. The phases are
sequenced by what the clients have seen (conditions, never delays), so "an append to the other
worker was accepted while this one was down" is certain, not likely.

At the end: every answer was 201 or 503, every 503 carried ``Retry-After``; each table holds
exactly its events (versions 1..n, each once, in order; ``kwx verify`` finds every chain whole);
a batch answered 503 although it was stored (its worker died after the commit) came back as a
replay, not as a second copy; the global log read sees every event exactly once; the projector
catches up by itself and each table's settlements equal the domain's fold.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from domain import engine as domain_engine
from domain.events import convert
from tests import citus_cluster
from tests.service.serving import serving, wait_for
from tests.service.streams import legal_table, relabel
from tests.service.test_global_read import drain

pytestmark = pytest.mark.db

CLIENTS = 4
PER_WORKER = 2  # tables of each client on each worker
BATCH = 5
BOUND = 300.0  # seconds: a bound on a stuck run, never an expectation


@pytest.fixture(scope="module", autouse=True)
def _on_the_cluster() -> None:
    if not os.environ.get("KWX_TEST_CITUS_WORKERS"):
        pytest.fail("tests/citus_test_faults.py runs on the Citus cluster: `make test-citus`")


@dataclass
class Sent:
    """One request's answer, and the phases of the run when it was sent and when it was answered."""

    table: str
    start: int
    phase: str
    answered: str
    status: int
    retry_after: str | None
    at: float  # time.monotonic() when answered
    took: float  # seconds from sending to the answer


@dataclass
class Ingest:
    """The client threads and what they saw. ``phase`` is set by the test after each step of the
    fault has finished (``down`` once ``pg_ctl stop`` returned, ``starting`` just before ``pg_ctl
    start`` is called, ``back`` once it returned); each answer is recorded with the phases read just
    before its request was sent and just after its answer came."""

    base: str
    key: str
    tables: dict[str, list[dict[str, Any]]]
    groups: list[list[str]]
    phase: str = "before"
    sent: list[Sent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        self.threads = [threading.Thread(target=self._client, args=(g,), daemon=True) for g in self.groups]
        for th in self.threads:
            th.start()

    def set_phase(self, phase: str) -> None:
        with self.changed:
            self.phase = phase
            self.changed.notify_all()

    def wait(self, what: str, check: Callable[[list[Sent]], bool]) -> None:
        """Until ``check(answers so far)`` holds (re-checked at each answer); fails after BOUND."""
        with self.changed:
            ok = self.changed.wait_for(lambda: check(self.sent) or bool(self.problems), BOUND)
        assert not self.problems, self.problems
        assert ok, f"not seen within {BOUND:.0f} s: {what}"

    def join(self) -> None:
        deadline = time.monotonic() + BOUND
        for th in self.threads:
            th.join(max(0.1, deadline - time.monotonic()))
        still = [th.name for th in self.threads if th.is_alive()]
        assert not still, f"clients still appending after {BOUND:.0f} s: {still}"
        assert not self.problems, self.problems

    def _client(self, names: list[str]) -> None:
        try:
            self._append(names)
        except Exception as exc:  # not an HTTP answer (the service went away …): said, with the rest
            with self.changed:
                self.problems.append(f"client {names}: {exc!r}")
                self.changed.notify_all()

    def _append(self, names: list[str]) -> None:
        """Round-robin over the client's tables, one batch each: a refused batch stays the table's
        next one (re-sent unchanged on the next round) while the other tables go on."""
        headers = {"Authorization": f"Bearer {self.key}"}
        next_start = dict.fromkeys(names, 0)
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as http:
            while next_start:
                accepted = 0
                for name in list(next_start):
                    wire, start = self.tables[name], next_start[name]
                    body = {"expected_version": start, "events": wire[start : start + BATCH]}
                    with self.changed:
                        phase = self.phase
                    before = time.monotonic()
                    answer = http.post(f"/v1/tables/{name}/events", json=body)
                    with self.changed:
                        answered = self.phase
                    sent = Sent(name, start, phase, answered, answer.status_code,
                                answer.headers.get("retry-after"), time.monotonic(),
                                time.monotonic() - before)  # fmt: skip
                    problem = None
                    if answer.status_code == 201:
                        stored = answer.json()
                        want = (min(start + BATCH, len(wire)), start + 1)
                        if (stored["version"], stored["first_version"]) != want:
                            problem = f"{name}@{start}: {answer.text}"
                        accepted += 1
                        next_start[name] = start + BATCH
                        if next_start[name] >= len(wire):
                            del next_start[name]
                    elif answer.status_code != 503 or answer.json().get("error") != "unavailable":
                        problem = f"{name}@{start}: {answer.status_code} {answer.text}"
                    with self.changed:
                        self.sent.append(sent)
                        if problem:
                            self.problems.append(problem)
                        self.changed.notify_all()
                    if problem:
                        return
                if not accepted:  # every table refused: a pause before the next round (a backoff)
                    with self.changed:
                        self.changed.wait(0.05)


def _make_tables(database_url: str, run: str) -> tuple[dict[str, list[dict[str, Any]]], list[list[str]]]:
    """PER_WORKER tables on each worker for each client (names hashed to shards until it fits)."""
    ports = citus_cluster.worker_ports()
    on: dict[int, list[str]] = {p: [] for p in ports}
    with psycopg.connect(database_url) as conn:
        n = 0
        while min(len(v) for v in on.values()) < CLIENTS * PER_WORKER:
            name = f"f-{run}-{n}"
            n += 1
            there = on[citus_cluster.worker_of(conn, name)]
            if len(there) < CLIENTS * PER_WORKER:
                there.append(name)
    names = [t for p in ports for t in on[p]]
    tables = {name: relabel(legal_table(700 + i, hands=2), name) for i, name in enumerate(names)}
    groups = [names[c::CLIENTS] for c in range(CLIENTS)]  # each client has tables on both workers
    assert all({_worker_in(on, t) for t in g} == set(ports) for g in groups)
    return tables, groups


def _worker_in(on: dict[int, list[str]], table: str) -> int:
    return next(p for p, ts in on.items() if table in ts)


@dataclass
class Served:
    url: str
    base: str
    key: str
    out: Path
    proc: subprocess.Popen[bytes]


@pytest.fixture()
def served(pg_cluster: Any, tmp_path: Path) -> Iterator[Served]:
    """``kwx serve`` (2 workers, projector on) on a new Citus database, and a platform key."""
    from services import migrate
    from services.db import make_pool
    from services.store.keys import KeyStore

    url = pg_cluster.create_database("kwx_citus_faults")
    migrate.upgrade(url)
    pool = make_pool(url, size=1, role="kwx_app")
    try:
        key = KeyStore(pool).create("faults", "platform")
    finally:
        pool.close()
    out = tmp_path / "serve.out"
    with serving(
        url,
        out,
        workers=2,
        KWX_PROJECTOR="on",
        KWX_LOG_LEVEL="info",
        KWX_POOL_SIZE="2",
        KWX_PROJECTOR_NICE="0",
    ) as (proc, base, _port):
        yield Served(url, base, key, out, proc)


def _records(out: Path) -> list[dict[str, Any]]:
    """The JSON log lines of ``kwx serve``'s output."""
    records = []
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def _warnings(out: Path) -> Counter[str]:
    """The service's warnings and errors (the projector's), by event and the error's text with its
    numbers left out (what the run saw, printed for docs/SCALING.md)."""
    seen: Counter[str] = Counter()
    for r in _records(out):
        if r.get("level") in ("warning", "error"):
            text = str(r.get("detail") or r.get("error") or "")
            detail = re.sub(r"[0-9]+", "N", text.splitlines()[0] if text else "")
            seen[f"{r.get('event')}: {detail[:100]}"] += 1
    return seen


def _assert_end_state(served: Served, ingest: Ingest) -> dict[str, Any]:
    """The checks every fault test ends with; returns what the run saw, for the test to print."""
    from services.db import make_pool
    from services.engine_adapter import load_engine
    from services.store.events import EventStore

    statuses = Counter(s.status for s in ingest.sent)
    assert set(statuses) <= {201, 503}, statuses
    assert all(s.retry_after == "1" for s in ingest.sent if s.status == 503)
    # each table holds exactly what its client meant: versions 1..n, each event once, in order
    with psycopg.connect(served.url) as conn:
        for name, wire in ingest.tables.items():
            rows = conn.execute(
                "SELECT version, event_id FROM events WHERE table_id = %s ORDER BY version", (name,)
            ).fetchall()
            assert [(int(v), str(i)) for v, i in rows] == [(v, e["id"]) for v, e in enumerate(wire, 1)], name
    env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    verify = subprocess.run([sys.executable, "-m", "services.cli", "verify"],
                            env={**env, "DATABASE_URL": served.url}, capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr
    total = sum(map(len, ingest.tables.values()))
    assert json.loads(verify.stdout.strip().splitlines()[-1]) == {
        "ok": True, "tables": len(ingest.tables), "events": total, "broken_tables": 0,
    }  # fmt: skip
    # a batch stored although its answer was lost (the service's own retry, or a client's re-send
    # after a 503, finds every event stored) is answered as a replay: 201, nothing stored twice
    appends = [r for r in _records(served.out) if r.get("event") == "request" and r.get("method") == "POST"]
    replays = [r for r in appends if r.get("outcome") == "replayed"]
    assert all(r.get("status") == 201 for r in replays)
    firsts = {(s.table, s.start) for s in ingest.sent if s.status == 201}
    assert len(firsts) == sum(-(-len(w) // BATCH) for w in ingest.tables.values())
    # the global log: every event exactly once
    pool = make_pool(served.url, size=1, role="kwx_app")
    try:
        seen, _ = drain(EventStore(pool, load_engine()), (0, 0, 0))
    finally:
        pool.close()
    assert Counter((e.table_id, e.version) for e in seen) == Counter(
        (name, v) for name, wire in ingest.tables.items() for v in range(1, len(wire) + 1)
    )
    # the projector catches up by itself; each table's settlements are the domain's fold
    expected = {
        name: [msgspec.json.decode(msgspec.json.encode(s)) for s in
               domain_engine.fold([convert(e) for e in wire]).settlements]
        for name, wire in ingest.tables.items()
    }  # fmt: skip
    started = time.monotonic()

    def projected() -> dict[str, list[Any]] | None:
        with psycopg.connect(served.url) as conn:
            rows = conn.execute(
                "SELECT table_id, settlement FROM proj_hand_settlements ORDER BY table_id, ordinal"
            ).fetchall()
        found: dict[str, list[Any]] = {}
        for table, settlement in rows:
            found.setdefault(table, []).append(settlement)
        done = all(len(found.get(t, [])) >= len(s) for t, s in expected.items())
        return found if done else None

    found = wait_for(projected, BOUND, "the projector did not catch up after the fault")
    assert {t: found.get(t, []) for t in expected} == expected
    log = served.out.read_text()
    assert "unexpected_error" not in log and '"status": 500' not in log
    assert served.proc.poll() is None, "kwx serve exited"
    return {
        "warnings": _warnings(served.out),
        "answers": dict(statuses),
        "replays": len(replays),
        "projector caught up in s": round(time.monotonic() - started, 1),
    }


def _stopped_under_ingest(
    ingest: Ingest, tables: list[str], data: Path, mode: str, what: str, enough: Callable[[list[Sent]], bool]
) -> tuple[float, float]:
    """Start the clients; once every table has two batches stored, stop the node whose data folder
    is ``data`` (``pg_ctl -m mode``) and let ingest go on until ``enough`` holds of what was sent
    (``what`` names it if it never does); start the node again and let every client finish. The
    phases the requests are tagged with: ``down`` from the stop, ``starting`` during the start,
    ``back`` after. (When the node was stopped, when it was started.)"""
    ingest.start()
    try:
        # some of every client's batches stored before the fault
        ingest.wait("two batches of each table accepted before the stop", lambda sent: Counter(
            s.table for s in sent if s.status == 201) >= Counter(dict.fromkeys(tables, 2)))  # fmt: skip
        citus_cluster.pg_ctl(data, "-m", mode, "-w", "stop")
        stopped_at = time.monotonic()
        ingest.set_phase("down")
        ingest.wait(what, enough)
    finally:
        ingest.set_phase("starting")  # "down" ends before the start begins
        citus_cluster.pg_ctl(data, "-l", str(data / "server.log"), "-w", "start")
    back_at = time.monotonic()
    ingest.set_phase("back")
    ingest.join()
    return stopped_at, back_at


@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_a_worker_stopped_during_concurrent_ingest(served: Served, mode: str) -> None:
    """Worker 2 stopped while four clients append: its tables answer 503 (Retry-After) and are
    re-sent, the other worker's tables keep being accepted; worker 2 started again, every client
    finishes with no restart of the service; the end state is whole (``_assert_end_state``)."""
    run = uuid.uuid4().hex[:8]
    tables, groups = _make_tables(served.url, run)
    stopped = citus_cluster.worker_ports()[1]
    with psycopg.connect(served.url) as conn:
        down = {t for t in tables if citus_cluster.worker_of(conn, t) == stopped}
    up = set(tables) - down
    ingest = Ingest(served.base, served.key, tables, groups)
    data = citus_cluster.data_folder_of(stopped)

    # while it is down: its tables refused, the other worker's accepted (sent after the stop)
    def refused_and_accepted(sent: list[Sent]) -> bool:
        refused = any(s.phase == "down" and s.status == 503 and s.table in down for s in sent)
        return refused and sum(s.phase == "down" and s.status == 201 and s.table in up for s in sent) >= 8

    stopped_at, back_at = _stopped_under_ingest(
        ingest, tables, data, mode,
        "a stopped worker's table refused and the other worker's accepted, while down", refused_and_accepted,
    )  # fmt: skip
    sent = ingest.sent
    # none of its tables accepted while it was down: no request sent after the stop and answered
    # before the start was (one sent before may be answered after the stop, one sent while down
    # after the start)
    wrong = [s for s in sent if s.phase == s.answered == "down" and s.status == 201 and s.table in down]
    assert not wrong, (stopped_at, back_at, wrong)
    assert any(s.phase == "back" and s.status == 201 and s.table in down for s in sent)
    seen = _assert_end_state(served, ingest)
    first = min(s.at for s in sent if s.phase == "back" and s.status == 201 and s.table in down)
    refused = sum(1 for s in sent if s.phase == "back" and s.status == 503 and s.at < first)
    slowest = max(s.took for s in sent if s.phase == s.answered == "down" and s.status == 503)
    print(f"\nworker stopped ({mode}): down {back_at - stopped_at:.1f} s (a 503 took <= {slowest:.2f} s); "
          f"answers {seen['answers']}; "
          f"replays {seen['replays']}; its tables' first 201 {first - back_at:.2f} s after the start "
          f"({refused} 503s sent after it before that); projector caught up "
          f"{seen['projector caught up in s']} s after the last append; warnings:")  # fmt: skip
    for line, n in seen["warnings"].most_common():
        print(f"  {n:4d} {line}")


@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_a_coordinator_restarted_during_concurrent_ingest(served: Served, mode: str) -> None:
    """The coordinator stopped while four clients append: every request answers 503 (Retry-After)
    while it is down — the service itself stays up —, and once it is started again the service's
    pools (sync, the fast path's async pool, the projector's) reconnect by themselves and every
    client finishes; the end state is whole (``_assert_end_state``)."""
    run = uuid.uuid4().hex[:8]
    tables, groups = _make_tables(served.url, run)
    ingest = Ingest(served.base, served.key, tables, groups)
    data = citus_cluster.data_folder_of(citus_cluster.port_of(os.environ["TEST_DATABASE_URL"]))
    # ingest goes on against it: a few 503s sent and answered while it was down
    stopped_at, back_at = _stopped_under_ingest(
        ingest, tables, data, mode, "503s while the coordinator was down", lambda sent: sum(
            s.phase == s.answered == "down" and s.status == 503 for s in sent) >= 2 * CLIENTS,
    )  # fmt: skip
    sent = ingest.sent
    # nothing accepted while it was down (sent after the stop, answered before the start)
    assert not [s for s in sent if s.phase == s.answered == "down" and s.status == 201]
    seen = _assert_end_state(served, ingest)
    first = min(s.at for s in sent if s.phase == "back" and s.status == 201)
    refused = sum(1 for s in sent if s.phase == "back" and s.status == 503 and s.at < first)
    slowest = max(s.took for s in sent if s.phase == s.answered == "down" and s.status == 503)
    print(f"\ncoordinator stopped ({mode}): down {back_at - stopped_at:.1f} s "
          f"(a 503 took <= {slowest:.2f} s); "
          f"answers {seen['answers']}; "
          f"replays {seen['replays']}; the first 201 {first - back_at:.2f} s after the start "
          f"({refused} 503s before it); projector caught up {seen['projector caught up in s']} s after "
          f"the last append; warnings:")  # fmt: skip
    for line, n in seen["warnings"].most_common():
        print(f"  {n:4d} {line}")


def test_a_worker_connection_lost_at_commit_is_a_replay_not_a_500(pg_cluster: Any) -> None:
    """The coordinator's connection to a worker cut just after the worker answered ``COMMIT`` (a
    proxy in front of the worker, :class:`tests.service.test_faults_db.Proxy`): the batch is stored,
    and Citus reports "could not commit transaction for shard … on at least one active node"
    (XX000). kwx takes that as a lost connection: the one retry finds the batch stored and answers
    201 with the original answer. The first try's COMMIT dropped and the retry's answer lost: 503,
    and the client's re-send is recognised as a replay. Stored once every time, the chain whole.
    (Before: a 500.)"""
    from services import migrate
    from services.store.keys import KeyStore
    from tests.service.test_faults_db import Proxy, _client, _container

    url = pg_cluster.create_database("kwx_citus_cut")
    migrate.upgrade(url)
    worker = citus_cluster.worker_ports()[1]
    proxy = Proxy(("127.0.0.1", worker))
    with psycopg.connect(url, autocommit=True) as conn:  # this database reaches worker 2 through it
        conn.execute(
            "SELECT citus_update_node(nodeid, '127.0.0.1', %s) FROM pg_dist_node WHERE nodeport = %s",
            (proxy.port, worker),
        )
        names = [f"cut-{uuid.uuid4().hex[:8]}-{i}" for i in range(64)]
        table = next(t for t in names if citus_cluster.worker_of(conn, t) == proxy.port)
    container = _container(url)
    try:
        key = KeyStore(container.pool).create("cut", "platform")
        headers = {"Authorization": f"Bearer {key}"}
        wire = relabel(legal_table(47, hands=2), table)
        marker = table.encode()

        def post(start: int) -> Any:
            body = {"expected_version": start, "events": wire[start : start + 10]}
            return client.post(f"/v1/tables/{table}/events", json=body, headers=headers)

        def stored() -> list[tuple[int, str]]:
            with psycopg.connect(url) as conn:
                rows = conn.execute(
                    "SELECT version, event_id FROM events WHERE table_id = %s ORDER BY version", (table,)
                ).fetchall()
            return [(int(v), str(i)) for v, i in rows]

        with _client(container) as client:
            assert post(0).status_code == 201
            # the worker committed, the coordinator never heard: the service's retry finds it stored
            proxy.arm(b"COMMIT", "after", context=marker)
            answer = post(10)
            assert proxy.cuts == ["after"] and not proxy.armed()
            assert answer.status_code == 201, answer.text
            assert answer.json() == {"table_id": table, "version": 20, "first_version": 11, "count": 10,
                                     "rulings": []}  # fmt: skip
            assert stored() == [(v, e["id"]) for v, e in enumerate(wire[:20], 1)]
            # the first COMMIT never reaches the worker, the retry's commits and is not heard: 503
            # with Retry-After; the client's re-send is recognised as stored, the same 201
            proxy.arm(b"COMMIT", "before", context=marker, times=2, then="after")
            lost = post(20)
            assert proxy.cuts == ["after", "before", "after"] and not proxy.armed()
            assert lost.status_code == 503 and lost.headers["retry-after"] == "1", lost.text
            assert lost.json()["error"] == "unavailable" and "lost" in lost.json()["message"]
            assert stored() == [(v, e["id"]) for v, e in enumerate(wire[:30], 1)]  # stored all the same
            again = post(20)
            assert again.status_code == 201 and again.json()["first_version"] == 21, again.text
            for start in range(30, len(wire), 10):
                assert post(start).status_code == 201
        assert stored() == [(v, e["id"]) for v, e in enumerate(wire, 1)]
        assert container.store.verify(table) == (1, len(wire), [])
    finally:
        container.close()
        proxy.close()
