"""Process faults and misbehaving clients against `kwx serve` as a real subprocess, on a database of
its own (docs/faults.md, Process faults): a serving worker SIGKILLed or hung (SIGSTOP) mid-ingest, a
worker whose replacement cannot start, the projector child SIGKILLed mid-ingest (and its restart
back-off), clients that misbehave at the socket level (gone mid-body, gone before the answer, slow,
bodies over the limit), SIGTERM during ingest, `kwx serve` itself SIGKILLed. Memory under sustained
load is a benchmark, too slow for the suite: tests/bench/bench_soak.py.

What every scenario holds to: an accepted batch (201) is stored whole and once, a refused one not at
all; a client that retries a failed batch with the same events (idempotent by event id) ends with
every table holding exactly its events once, in order, hash chains intact (`kwx verify`); never a
500; the service keeps serving. No timing asserts: every wait polls with a generous deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.service.serving import (
    alive,
    allow_connections,
    descendants,
    projector_behind,
    serve_subprocess,
    wait_for,
)

pytestmark = [
    pytest.mark.db,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, PR_SET_PDEATHSIG"),
]

BATCH = 20  # events per append
MAX_BODY = 64 * 1024  # KWX_MAX_BODY_BYTES of the servers here: the 413 scenarios stay small


# --------------------------------------------------------------------------- a kwx serve subprocess


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


@dataclass
class Served:
    """A running ``kwx serve`` (its own database) and what the tests need of it."""

    proc: subprocess.Popen[bytes]
    url: str  # the database (owner credentials)
    base: str
    port: int
    out: Path
    headers: dict[str, str] = field(default_factory=dict)
    seen: set[int] = field(default_factory=set)  # every pid of its family ever seen

    def family(self) -> set[int]:
        found = descendants(self.proc.pid)
        self.seen |= found
        return found

    def workers(self) -> list[int]:
        return sorted(p for p in self.family() if b"spawn_main" in _cmdline(p))

    def projectors(self) -> list[int]:
        return sorted(p for p in self.family() if b"projections\0follow" in _cmdline(p))

    def log(self) -> str:
        return self.out.read_text(errors="replace")

    def log_events(self, name: str) -> list[dict[str, Any]]:
        found = []
        for line in self.log().splitlines():
            if line.startswith("{") and f'"{name}"' in line:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def stop(self, sig: int = signal.SIGTERM, seconds: float = 45) -> int | None:
        """Send ``sig``; the exit status, or None if it did not exit within ``seconds``."""
        if self.proc.poll() is None:
            self.family()
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            return None

    def kill_all(self) -> None:
        """Whatever is left of the family, SIGKILLed (a test's finalizer)."""
        self.family()
        for pid in [self.proc.pid, *sorted(self.seen)]:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


def start_serve(pg_cluster: Any, *, workers: int = 2, projector: str = "on", **extra: str) -> Served:
    url = pg_cluster.create_database("kwx_faultp")
    out = Path(tempfile.mkdtemp(prefix="kwx-faultp-")) / "serve.out"
    proc, base, port = serve_subprocess(
        url, out, workers=workers, KWX_PROJECTOR=projector, KWX_LOG_LEVEL="info", KWX_POOL_SIZE="3",
        KWX_MAX_BODY_BYTES=str(MAX_BODY), KWX_PROJECTOR_NICE="0", **extra,
    )  # fmt: skip
    served = Served(proc, url, base, port, out)
    try:
        if workers > 1:
            wait_for(lambda: len(served.workers()) == workers, 60, f"{workers} workers did not start")
        if projector == "on":
            wait_for(served.projectors, 30, "no projector child")
        from services.db import make_pool
        from services.store.keys import KeyStore

        pool = make_pool(url, size=1, role=None)
        try:
            key = KeyStore(pool).create("faults", "platform")
        finally:
            pool.close()
        served.headers = {"Authorization": f"Bearer {key}"}
    except BaseException:
        served.kill_all()
        raise
    return served


@pytest.fixture(scope="module")
def served(pg_cluster: Any) -> Iterator[Served]:
    """`kwx serve --workers 2`, the projector child on, shared by the scenarios that keep it up. The
    headers' deadline is long here: the slow clients below trickle their headers for as long as the
    others take (test_header_deadline.py tests the deadline)."""
    s = start_serve(pg_cluster, KWX_HEADER_TIMEOUT="600")
    try:
        yield s
    finally:
        code = s.stop()
        s.kill_all()
    assert code == 0, s.log()[-3000:]


# --------------------------------------------------------------------------- clients


def tables_for(prefix: str, count: int, hands: int = 1, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    from domain.simulate import simulate_table

    return {
        f"{prefix}-{i}": simulate_table(random.Random(seed + i), hands, {"preset": "default"}, f"{prefix}{i}")
        for i in range(count)
    }


@dataclass
class Tally:
    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    accepted: int = 0  # 201s
    versions: dict[str, int] = field(default_factory=dict)  # each table's version in its last 201
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def append_tables(base: str, headers: dict[str, str], tables: dict[str, list[dict[str, Any]]], tally: Tally,
                  stop: threading.Event | None = None, deadline: float = 120) -> None:  # fmt: skip
    """Append each table in ``BATCH``-event batches with ``expected_version``; a batch that fails
    (connection lost, 503) is sent again, the same events, until it is answered 201. With ``stop``:
    returns at the next batch once it is set (the SIGTERM scenario)."""
    import httpx

    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for table, wire in tables.items():
            for k in range(0, len(wire), BATCH):
                if stop is not None and stop.is_set():
                    return
                body = {"expected_version": k, "events": wire[k : k + BATCH]}
                give_up = time.monotonic() + deadline
                while True:
                    try:
                        answer = client.post(f"/v1/tables/{table}/events", json=body)
                    except httpx.TransportError:
                        with tally.lock:
                            tally.transport_errors += 1
                        if stop is not None and stop.is_set():
                            return
                        assert time.monotonic() < give_up, f"{table} v{k}: no answer in {deadline} s"
                        time.sleep(0.2)
                        continue
                    with tally.lock:
                        tally.statuses[answer.status_code] += 1
                    if answer.status_code == 201:
                        got = answer.json()
                        if got["version"] != min(k + BATCH, len(wire)) or got["first_version"] != k + 1:
                            tally.failures.append(f"{table} v{k}: {answer.text[:300]}")
                        with tally.lock:
                            tally.accepted += 1
                            tally.versions[table] = got["version"]
                        break
                    if answer.status_code == 503 and time.monotonic() < give_up:
                        time.sleep(0.2)
                        continue
                    tally.failures.append(f"{table} v{k}: {answer.status_code} {answer.text[:300]}")
                    return


def run_clients(served: Served, tables: dict[str, list[dict[str, Any]]], clients: int, tally: Tally,
                stop: threading.Event | None = None) -> list[threading.Thread]:  # fmt: skip
    names = sorted(tables)
    threads = []
    for c in range(clients):
        mine = {t: tables[t] for t in names[c::clients]}
        th = threading.Thread(target=append_tables, args=(served.base, served.headers, mine, tally, stop),
                              daemon=True)  # fmt: skip
        th.start()
        threads.append(th)
    return threads


def join_all(threads: list[threading.Thread], seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    for th in threads:
        th.join(max(0.1, deadline - time.monotonic()))
    assert not any(th.is_alive() for th in threads), "clients did not finish"


# --------------------------------------------------------------------------- checks on the database


def stored_ids(url: str, table: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT version, event_id FROM events WHERE table_id = %s ORDER BY version", (table,)
        )
        return [(int(v), str(i)) for v, i in rows]


def assert_stored_exactly(url: str, tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every table holds exactly its events, once each, in order, versions 1..n."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_id, array_agg(event_id ORDER BY version), array_agg(version ORDER BY version) "
            "FROM events WHERE table_id = ANY(%s) GROUP BY table_id",
            (list(tables),),
        ).fetchall()
    found = {t: (list(ids), list(versions)) for t, ids, versions in rows}
    for table, wire in tables.items():
        ids, versions = found.get(table, ([], []))
        assert ids == [e["id"] for e in wire], f"{table}: stored {len(ids)} of {len(wire)} events, or others"
        assert versions == list(range(1, len(wire) + 1)), table


def kwx(url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    env.update(DATABASE_URL=url, KWX_LOG_LEVEL="warning")
    return subprocess.run([sys.executable, "-m", "services.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def assert_whole_batches(url: str, tables: dict[str, list[dict[str, Any]]], tally: Tally) -> None:
    """No 500 and no failed client; every batch whole or absent: a table holds a prefix of its
    batches, at least every accepted one (a server stopped mid-ingest)."""
    assert not tally.failures and 500 not in tally.statuses, (tally.failures, tally.statuses)
    for table, wire in tables.items():
        ids = [i for _, i in stored_ids(url, table)]
        assert ids == [e["id"] for e in wire[: len(ids)]], table
        assert len(ids) % BATCH == 0 or len(ids) == len(wire), (table, len(ids))
        assert len(ids) >= tally.versions.get(table, 0), table


def assert_chains_verify(url: str) -> None:
    done = kwx(url, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["ok"] and summary["broken_tables"] == 0, summary


READ_MODELS = ("proj_hand_settlements", "proj_ledger_entries", "proj_ledger_accounts", "proj_player_stats",
               "proj_player_patterns", "proj_discrepancies", "proj_table_snapshots")  # fmt: skip


def read_models(url: str) -> dict[str, list[str]]:
    """Every read model's rows as sorted JSON (``proj_ledger_accounts``: the view of the entries)."""
    with psycopg.connect(url) as conn:
        return {
            name: sorted(r[0] for r in conn.execute(f"SELECT to_jsonb(t)::text FROM {name} t"))
            for name in READ_MODELS
        }


def wait_worker_replaced(served: Served, killed: int, workers: int = 2) -> list[int]:
    def replaced() -> list[int]:
        now = served.workers()
        return now if len(now) == workers and killed not in now else []

    return wait_for(replaced, 60, f"worker {killed} was not replaced: {served.log()[-2000:]}")


def tcp_states(port: int) -> Counter[str]:
    """Server-side TCP sockets on ``port`` by state (hex, /proc/net/tcp), the listener left out."""
    states: Counter[str] = Counter()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            parts = line.split()
            if int(parts[1].rsplit(":", 1)[1], 16) == port and parts[3] != "0A":
                states[parts[3]] += 1
    return states


def open_server_sockets(port: int) -> int:
    """Server-side sockets still open (anything but TIME_WAIT, which the kernel owns)."""
    return sum(n for state, n in tcp_states(port).items() if state != "06")


# --------------------------------------------------------------------------- 1. a worker SIGKILLed


def test_a_worker_killed_mid_ingest_is_replaced_and_nothing_is_lost_or_doubled(served: Served) -> None:
    tables = tables_for("wkill", 8, hands=2, seed=100)
    tally = Tally()
    threads = run_clients(served, tables, 4, tally)
    before = served.workers()
    assert len(before) == 2
    total_batches = sum(-(-len(w) // BATCH) for w in tables.values())
    wait_for(lambda: tally.accepted >= total_batches // 4, 300, "ingest did not start")
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    after = wait_worker_replaced(served, victim)
    join_all(threads)

    assert not tally.failures, tally.failures
    assert 500 not in tally.statuses, tally.statuses
    assert tally.accepted == total_batches
    assert_stored_exactly(served.url, tables)
    assert_chains_verify(served.url)
    # still serving: fresh connections (on either worker, the replacement among them) answer
    import httpx

    assert sorted(after) != sorted(before)
    for _ in range(6):
        assert httpx.get(f"{served.base}/v1/health", timeout=10).status_code == 200
    assert served.proc.poll() is None
    # the operator's log says so (uvicorn's supervisor, its info line let through by kwx serve)
    assert f"Child process [{victim}] died" in served.log(), served.log()[-3000:]


def test_a_hung_worker_is_killed_and_replaced_and_its_clients_retry(served: Served) -> None:
    """A worker that stops answering (SIGSTOP: the whole process frozen) fails uvicorn's health
    ping (5 s) and is killed and replaced; its clients' requests fail and their re-sends land."""
    tables = tables_for("hung", 6, hands=1, seed=700)
    tally = Tally()
    threads = run_clients(served, tables, 4, tally)
    total_batches = sum(-(-len(w) // BATCH) for w in tables.values())
    wait_for(lambda: tally.accepted >= total_batches // 4, 300, "ingest did not start")
    victim = served.workers()[0]
    os.kill(victim, signal.SIGSTOP)
    try:
        wait_worker_replaced(served, victim)
        wait_for(lambda: not alive(victim), 30, f"the hung worker {victim} is still there")
    finally:
        if alive(victim):
            os.kill(victim, signal.SIGCONT)
    join_all(threads)
    assert not tally.failures and 500 not in tally.statuses, (tally.failures, tally.statuses)
    assert tally.accepted == total_batches
    assert_stored_exactly(served.url, tables)


# --------------------------------------------------------------------------- 2. the projector SIGKILLed


def test_the_projector_killed_mid_ingest_restarts_and_the_read_models_end_exactly_once(
    served: Served,
) -> None:
    tables = tables_for("pkill", 8, hands=3, seed=200)
    tally = Tally()
    threads = run_clients(served, tables, 3, tally)
    total_batches = sum(-(-len(w) // BATCH) for w in tables.values())
    restarts_before = len(served.log_events("projector_process_exited"))
    for round_ in range(2):  # twice: the second restart waits longer (the back-off)
        wait_for(lambda r=round_: tally.accepted >= total_batches * (r + 1) // 3, 300, "ingest stalled")
        # one child running (a restart of an earlier test's or round's kill may still be pausing)
        wait_for(lambda: len(served.projectors()) == 1, 60,
                 f"no projector child running: {served.log()[-3000:]}")  # fmt: skip
        (child,) = served.projectors()
        os.kill(child, signal.SIGKILL)
        wait_for(lambda c=child: served.projectors() and served.projectors() != [c], 60,
                 f"projector {child} was not restarted: {served.log()[-2000:]}")  # fmt: skip
    join_all(threads)
    assert not tally.failures and 500 not in tally.statuses, (tally.failures, tally.statuses)
    assert_stored_exactly(served.url, tables)

    # The supervisor's lines reach the log file when its stdout is flushed, which may be after the
    # new child is already running: wait until both exits are written, not for a moment.
    def both_exits() -> list[dict[str, Any]] | None:
        found = served.log_events("projector_process_exited")[restarts_before:]
        return found if len(found) >= 2 else None

    exits = wait_for(both_exits, 60, f"two projector_process_exited lines: {served.log()[-2000:]}")
    assert [e["code"] for e in exits] == [-9, -9], exits
    pauses = [e["restart_in"] for e in exits]
    assert pauses[1] > pauses[0], pauses  # back-off

    wait_for(lambda: projector_behind(served.url) == 0, 600, "the projector did not catch up")
    with psycopg.connect(served.url) as conn:
        twice = conn.execute(
            "SELECT table_id, hand, count(*) FROM proj_hand_settlements "
            "GROUP BY table_id, hand HAVING count(*) > 1"
        ).fetchall()
        assert twice == []
        settled = conn.execute(
            "SELECT count(*) FROM proj_hand_settlements WHERE table_id = ANY(%s)", (list(tables),)
        ).fetchone()
        assert settled is not None and settled[0] >= len(tables) * 3  # every hand of every table
        unbalanced = conn.execute(
            "SELECT table_id, ordinal, sum(amount) FROM proj_ledger_entries GROUP BY table_id, ordinal "
            "HAVING sum(amount) <> 0"
        ).fetchall()
        assert unbalanced == []
        entries = conn.execute("SELECT count(*) FROM proj_ledger_entries WHERE table_id = ANY(%s)",
                               (list(tables),)).fetchone()  # fmt: skip
        assert entries is not None and entries[0] > 0
        drift = conn.execute(
            "SELECT a.account FROM proj_ledger_accounts a JOIN (SELECT tenant, account_kind, account, "
            "sum(amount) s, count(*) n FROM proj_ledger_entries GROUP BY 1, 2, 3) e "
            "USING (tenant, account_kind, account) WHERE a.balance <> e.s OR a.entries <> e.n"
        ).fetchall()
        assert drift == []
    live = read_models(served.url)
    rebuilt = kwx(served.url, "projections", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    wait_for(lambda: projector_behind(served.url) == 0, 600, "rebuild left events behind")
    scratch = read_models(served.url)
    for name in READ_MODELS:
        assert live[name] == scratch[name], f"{name}: the live projection differs from a rebuild"


# --------------------------------------------------------------------------- 3. misbehaving sockets


def _request(path: str, headers: dict[str, str], length: int | None, chunked: bool = False) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: kwx", "Content-Type: application/json",
             *[f"{k}: {v}" for k, v in headers.items()]]  # fmt: skip
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    elif length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _connect(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.port), timeout=30)


def _read_status(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    assert data.startswith(b"HTTP/1.1 "), data[:200]
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    length = (
        int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0]) if b"content-length:" in head else 0
    )
    while len(data.split(b"\r\n\r\n", 1)[1]) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]), data


def _batch(wire: list[dict[str, Any]], k: int = 0) -> bytes:
    return json.dumps({"expected_version": k, "events": wire[k : k + BATCH]}).encode()


def test_a_client_gone_mid_body_stores_nothing_and_one_gone_before_the_answer_is_replayed(
    served: Served,
) -> None:
    import httpx

    tables = tables_for("sock", 2, hands=1, seed=300)
    (half_t, half_w), (full_t, full_w) = tables.items()
    path = "/v1/tables/{}/events"

    body = _batch(half_w)  # headers and half the body, then gone
    with _connect(served) as s:
        s.sendall(_request(path.format(half_t), served.headers, len(body)) + body[: len(body) // 2])
        time.sleep(0.3)
    body = _batch(full_w)  # the whole batch, then gone before reading the answer
    with _connect(served) as s:
        s.sendall(_request(path.format(full_t), served.headers, len(body)) + body)
    with httpx.Client(base_url=served.base, headers=served.headers, timeout=30) as client:
        # the half batch was never accepted: the table does not exist, nothing of it stored
        wait_for(lambda: client.get("/v1/health").status_code == 200, 30, "the service stopped answering")
        assert stored_ids(served.url, half_t) == []
        # the full one is stored whole or not at all (the worker may have seen the close first); the
        # retry with the same events is answered 201 either way, and the table holds them once
        count = len(stored_ids(served.url, full_t))
        assert count in (0, min(BATCH, len(full_w)))
        again = client.post(path.format(full_t), content=body, headers={"Content-Type": "application/json"})
        assert again.status_code == 201, again.text
        assert again.json()["version"] == min(BATCH, len(full_w))
        assert [i for _, i in stored_ids(served.url, full_t)] == [e["id"] for e in full_w[:BATCH]]
        rest = client.post(
            path.format(half_t), content=_batch(half_w), headers={"Content-Type": "application/json"}
        )
        assert rest.status_code == 201, rest.text
    wait_for(lambda: open_server_sockets(served.port) == 0, 30,
             f"server sockets left open: {tcp_states(served.port)}")  # fmt: skip


def test_slow_clients_do_not_block_others_and_their_connections_return(served: Served) -> None:
    tables = tables_for("slow", 4, hands=1, seed=400)
    slow_t, slow_w = next(iter(tables.items()))
    others = {t: w for t, w in tables.items() if t != slow_t}
    body = _batch(slow_w)
    stop = threading.Event()
    slow_sockets: list[socket.socket] = []
    for _ in range(2):  # two on each worker, likely: one trickling its headers, one its body
        head = _request(f"/v1/tables/{slow_t}/events", served.headers, len(body))
        s1, s2 = _connect(served), _connect(served)
        s1.sendall(head[:10])
        s2.sendall(head)
        slow_sockets += [s1, s2]

    def trickle() -> None:
        i = 0
        while not stop.is_set() and i < len(body):
            try:
                for s in slow_sockets[0::2]:
                    s.sendall(b"X")  # header bytes that never end the line
                for s in slow_sockets[1::2]:
                    s.sendall(body[i : i + 1])
            except OSError:
                return
            i += 1
            stop.wait(0.25)

    th = threading.Thread(target=trickle, daemon=True)
    th.start()
    try:
        tally = Tally()
        join_all(run_clients(served, others, 3, tally))
        assert not tally.failures and tally.statuses.keys() == {201}, (tally.failures, tally.statuses)
        assert_stored_exactly(served.url, others)
        assert th.is_alive()  # the slow ones were still at it while the others completed
    finally:
        stop.set()
        th.join(10)
        for s in slow_sockets:
            s.close()
    assert stored_ids(served.url, slow_t) == []
    wait_for(lambda: open_server_sockets(served.port) == 0, 30,
             f"server sockets left open: {tcp_states(served.port)}")  # fmt: skip


def test_bodies_over_the_limit_are_refused_without_being_read(served: Served) -> None:
    # appends read to their end keep their connection (keep-alive: two answers on one socket)
    ((keep_t, keep_w),) = tables_for("keep", 1, hands=1, seed=800).items()
    with _connect(served) as s:
        for k in (0, BATCH):
            body = _batch(keep_w, k)
            s.sendall(_request(f"/v1/tables/{keep_t}/events", served.headers, len(body)) + body)
            status, data = _read_status(s)
            assert status == 201 and b"connection: close" not in data.lower(), data
    path = "/v1/tables/big-1/events"
    # declared larger than the limit: 413 at once, before a byte of the body is sent
    with _connect(served) as s:
        s.sendall(_request(path, served.headers, MAX_BODY * 100))
        status, data = _read_status(s)
        assert status == 413 and b"payload_too_large" in data, data

    # chunked, without end: 413 once past the limit; the server must then stop reading — close the
    # connection — rather than swallow the stream for as long as the client sends it
    chunk = b"[" * 8192
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    with _connect(served) as s:
        s.sendall(_request(path, served.headers, None, chunked=True))
        s.settimeout(30)  # a send that blocks this long: the server neither reads nor closes
        answer = b""
        sent = 0
        closed = False
        while sent < MAX_BODY * 64:  # the server may read a little past the limit, not 64 × it
            try:
                if select.select([s], [], [], 0)[0]:  # an answer, or the end: read it first
                    got = s.recv(65536)
                    if not got:
                        closed = True
                        break
                    answer += got
                    continue
                s.sendall(frame)
                sent += len(chunk)
            except TimeoutError:
                break
            except OSError:  # EPIPE / ECONNRESET: the server closed it
                closed = True
                break
        s.settimeout(2)
        while closed and not answer.endswith(b"}"):  # the answer can still be queued behind a reset
            try:
                got = s.recv(65536)
            except OSError:
                break
            if not got:
                break
            answer += got
        assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
        assert closed, f"the server kept reading a refused body: {sent} bytes sent, connection still open"
    with psycopg.connect(served.url) as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE table_id = 'big-1'").fetchone() == (0,)
    wait_for(lambda: open_server_sockets(served.port) == 0, 30,
             f"server sockets left open: {tcp_states(served.port)}")  # fmt: skip


# --------------------------------------------------------------------------- 5. SIGTERM during ingest


def test_sigterm_during_ingest_stops_cleanly_with_no_half_batch_and_no_orphan(pg_cluster: Any) -> None:
    s = start_serve(pg_cluster, KWX_SHUTDOWN_GRACE="3")  # the slow client below is cut off after 3 s
    try:
        tables = tables_for("term", 6, hands=3, seed=500)
        tally = Tally()
        stop = threading.Event()
        threads = run_clients(s, tables, 4, tally, stop)
        # a slow client in the middle of its body when the signal comes
        wire = next(iter(tables.values()))
        body = _batch(wire)
        slow = _connect(s)
        slow.sendall(_request("/v1/tables/term-slow/events", s.headers, len(body)) + body[:100])
        total_batches = sum(-(-len(w) // BATCH) for w in tables.values())
        wait_for(lambda: tally.accepted >= total_batches // 3, 300, "ingest did not start")
        family = s.family()
        assert len(family) >= 3  # two workers and the projector
        code = s.stop(signal.SIGTERM, 45)
        stop.set()
        join_all(threads, 60)
        slow.settimeout(5)
        try:  # what the slow client was told when its time was up: "retry" (503), never a 500
            told = slow.recv(65536)
        except OSError:  # reset: the answer was lost with the connection
            told = b""
        slow.close()
        assert code == 0, f"kwx serve: exit {code} after SIGTERM\n{s.log()[-3000:]}"
        assert told == b"" or (told.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in told.lower()), told
        assert "Exception in ASGI application" not in s.log(), s.log()[-3000:]
        wait_for(lambda: not any(alive(p) for p in family), 60,
                 f"processes outlived kwx serve: {[p for p in family if alive(p)]}")  # fmt: skip
    finally:
        s.kill_all()
    assert_whole_batches(s.url, tables, tally)
    assert stored_ids(s.url, "term-slow") == []
    assert_chains_verify(s.url)


# --------------------------------------------------------------------------- 1b. a worker cannot restart


def test_a_worker_that_cannot_start_again_stops_the_server_with_status_1(pg_cluster: Any) -> None:
    """A dead worker's replacement whose start-up fails (here: the database refuses new connections
    for longer than the pool waits, 15 s) stops the whole server — exit status 1, a line saying so —
    for a service manager to restart it, instead of exiting 0 as after a SIGTERM."""
    s = start_serve(pg_cluster, projector="off")
    name = urlsplit(s.url).path.lstrip("/")

    def allow(yes: bool) -> None:
        allow_connections(pg_cluster.admin_url, name, yes)

    try:
        family = s.family()
        allow(False)
        os.kill(s.workers()[0], signal.SIGKILL)
        try:
            code = s.proc.wait(120)
        except subprocess.TimeoutExpired:
            code = None
        assert code == 1, f"kwx serve: exit {code}\n{s.log()[-3000:]}"
        assert "could not start" in s.log() and "exit status 1" in s.log(), s.log()[-3000:]
        wait_for(lambda: not any(alive(p) for p in family | s.seen), 60, "processes outlived kwx serve")
    finally:
        s.kill_all()
        allow(True)


# --------------------------------------------------------------------------- 2b. the projector's back-off


def test_the_projector_supervisor_backs_off_and_starts_over_after_a_good_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Children that exit at once are restarted after 1, 2, 4 … (here 0.05, 0.1, 0.15 capped) seconds;
    after a child that had run well (``healthy_after``), the pause starts over."""
    from services import projector_process

    lives = ["0", "0", "0", "0", "2", "0", "0"]  # seconds each child runs (`sleep`)

    class Fake(projector_process.ProjectorProcess):
        first_pause, longest_pause, healthy_after = 0.05, 0.15, 1.0

        @property
        def command(self) -> list[str]:
            return ["sleep", lives[min(self.starts, len(lives) - 1)]]

    exits: list[dict[str, Any]] = []

    class Log:
        def warning(self, event: str, **fields: Any) -> None:
            exits.append(fields)

        def info(self, event: str, **fields: Any) -> None:
            pass

    monkeypatch.setattr(projector_process, "log", Log())
    child = Fake("postgresql://unused", nice=0)
    child.start()
    try:
        wait_for(lambda: len(exits) >= 6, 60, f"the supervisor did not restart the child: {exits}")
    finally:
        child.stop()
    assert [e["code"] for e in exits[:6]] == [0] * 6
    assert [e["restart_in"] for e in exits[:6]] == [0.05, 0.1, 0.15, 0.15, 0.05, 0.1], exits
    assert child.proc is not None and child.proc.poll() is not None  # stopped


def test_the_projector_watchdog_restarts_a_child_whose_heartbeat_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child alive but hung (its loop stopped: a stuck statement, SIGSTOP) is killed and restarted
    once it has not beaten for ``watchdog`` seconds; a child that keeps beating, or has not beaten
    yet (still starting), is left alone."""
    from services import projector_process

    beat = "import os, sys, time; fd = int(os.environ['KWX_PROJECTOR_HEARTBEAT_FD']); "
    scripts = [
        beat + "[(os.write(fd, b'.'), time.sleep(0.1)) for _ in range(3)]; time.sleep(60)",  # hangs
        beat + "[(os.write(fd, b'.'), time.sleep(0.1)) for _ in range(40)]",  # 4 s of beats, exits 0
        "import time; time.sleep(3)",  # never beats (a slow start): exits 0 by itself
        "import time; time.sleep(60)",
    ]

    class Fake(projector_process.ProjectorProcess):
        first_pause, longest_pause, beat_check = 0.05, 0.05, 0.1

        @property
        def command(self) -> list[str]:
            return [sys.executable, "-c", scripts[min(self.starts, len(scripts) - 1)]]

    events: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def error(self, event: str, **fields: Any) -> None:
            events.append((event, fields))

        def warning(self, event: str, **fields: Any) -> None:
            events.append((event, fields))

        def info(self, event: str, **fields: Any) -> None:
            pass

    monkeypatch.setattr(projector_process, "log", Log())
    child = Fake("postgresql://unused", nice=0, watchdog=1.0)
    child.start()
    try:
        wait_for(lambda: sum(e == "projector_process_exited" for e, _ in events) >= 3, 60, str(events))
    finally:
        child.stop()
    names = [e for e, _ in events]
    assert names[:4] == ["projector_process_hung", "projector_process_exited",
                         "projector_process_exited", "projector_process_exited"], events  # fmt: skip
    hung = events[0][1]
    assert hung["watchdog"] == 1.0 and hung["silent_seconds"] >= 1.0
    assert [f["code"] for e, f in events[1:4]] == [-signal.SIGKILL, 0, 0], events
    assert child.proc is not None and child.proc.poll() is not None  # stopped
    assert child._beats is None  # the pipe is closed with it


def test_kwx_serve_restarts_a_hung_projector_child(pg_cluster: Any) -> None:
    """The real child beats (``kwx projections follow``'s loop, through the pipe ``kwx serve`` passed):
    stopped with SIGSTOP it goes silent, and after ``KWX_PROJECTOR_WATCHDOG`` seconds the server
    kills it and starts another, which catches the read models up."""
    s = start_serve(pg_cluster, workers=1, KWX_PROJECTOR_WATCHDOG="2")
    try:
        (child,) = s.projectors()
        time.sleep(3)  # beating: not taken for hung while idle
        assert s.projectors() == [child] and not s.log_events("projector_process_hung")
        os.kill(child, signal.SIGSTOP)
        wait_for(lambda: s.projectors() and s.projectors() != [child], 60,
                 f"the hung projector {child} was not replaced: {s.log()[-2000:]}")  # fmt: skip
        (hung,) = s.log_events("projector_process_hung")
        assert hung["pid"] == child and hung["watchdog"] == 2.0
        tables = tables_for("hung", 2, hands=1, seed=300)
        tally = Tally()
        join_all(run_clients(s, tables, 2, tally))
        assert not tally.failures, tally.failures
        wait_for(lambda: projector_behind(s.url) == 0, 600, "the new projector did not catch up")
    finally:
        code = s.stop()
        s.kill_all()
    assert code == 0, s.log()[-3000:]


# --------------------------------------------------------------------------- 5b. kwx serve SIGKILLed


def test_kwx_serve_killed_outright_mid_ingest_leaves_no_process_and_no_half_batch(pg_cluster: Any) -> None:
    """SIGKILL of ``kwx serve`` itself: nobody can stop the workers and the projector, they notice
    (PR_SET_PDEATHSIG) and exit; the port is free again; what was stored is whole batches."""
    s = start_serve(pg_cluster)
    tables = tables_for("pkil", 6, hands=2, seed=600)
    tally = Tally()
    stop = threading.Event()
    try:
        threads = run_clients(s, tables, 4, tally, stop)
        total_batches = sum(-(-len(w) // BATCH) for w in tables.values())
        wait_for(lambda: tally.accepted >= total_batches // 3, 300, "ingest did not start")
        family = s.family()
        assert len(s.workers()) == 2 and len(s.projectors()) == 1
        s.proc.kill()
        s.proc.wait(10)
        stop.set()
        wait_for(lambda: not any(alive(p) for p in family), 30,
                 f"processes outlived a killed kwx serve: {[p for p in family if alive(p)]}")  # fmt: skip
        join_all(threads, 60)
        with socket.socket() as sock:  # nobody holds the port any more
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", s.port))
            sock.listen()
    finally:
        stop.set()
        s.kill_all()
    assert_whole_batches(s.url, tables, tally)
    assert_chains_verify(s.url)


def test_serve_refuses_a_shutdown_grace_that_is_not_whole_seconds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.cli import main
    from services.settings import Settings

    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never reached
    for bad in ("0", "-3", "1.5", "soon"):
        monkeypatch.setenv("KWX_SHUTDOWN_GRACE", bad)
        assert main(["serve", "--port", "0", "--workers", "2"]) == 2
        assert "KWX_SHUTDOWN_GRACE" in capsys.readouterr().err
    monkeypatch.setenv("KWX_SHUTDOWN_GRACE", "7")
    assert Settings.from_env().shutdown_grace == 7
    monkeypatch.delenv("KWX_SHUTDOWN_GRACE")
    assert Settings.from_env().shutdown_grace == 10
