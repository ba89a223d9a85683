"""`kwx serve --workers N`: N uvicorn processes, each with its own pool and its own per-table state
cache (services/api/served.py). Two event stores on one database — two workers — appending to the
same table stay correct: every batch stored once, versions contiguous, the hash chain intact, and a
store whose cached state is stale never stores a batch against it. And the real thing: `kwx serve
--workers 2` serves appends, and SIGTERM stops the parent and every worker."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.events import convert
from services.bootstrap import Container
from services.errors import IllegalEvent
from services.settings import Settings
from services.store.events import AppendResult, EventStore
from tests.service.serving import alive, descendants, serve_subprocess, wait_for
from tests.service.streams import legal_table, relabel

# --------------------------------------------------------------------------- settings, no database


def test_kwx_workers_is_read_from_the_environment_and_must_be_at_least_1() -> None:
    assert Settings.from_env({}).workers is None and Settings().workers is None  # unset: decided below
    assert Settings.from_env({"KWX_WORKERS": "3"}).workers == 3
    with pytest.raises(ValueError, match="KWX_WORKERS"):
        Settings.from_env({"KWX_WORKERS": "0"})
    with pytest.raises(ValueError, match="KWX_WORKERS"):
        Settings(workers=-1)


def test_unset_workers_means_one_per_core_but_one_with_a_projector_thread() -> None:
    from services.settings import available_cores

    cores = available_cores()
    assert cores == len(os.sched_getaffinity(0)) >= 1
    assert Settings.from_env({}).serving_workers() == cores
    assert Settings.from_env({"KWX_PROJECTOR": "off"}).serving_workers() == cores
    assert Settings.from_env({"KWX_PROJECTOR": "thread"}).serving_workers() == 1
    explicit = Settings.from_env({"KWX_WORKERS": "3", "KWX_PROJECTOR": "thread"})
    assert explicit.serving_workers() == 3  # kwx serve refuses this one (the test below)
    assert Settings.from_env({"KWX_WORKERS": "1"}).serving_workers() == 1


def test_serve_refuses_a_projector_thread_with_several_workers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.commands import serve

    monkeypatch.setenv("KWX_PROJECTOR", "thread")
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never reached
    assert serve.run(argparse.Namespace(host="127.0.0.1", port=0, workers=2)) == 2
    assert "KWX_PROJECTOR=thread" in capsys.readouterr().err


def test_serve_workers_option_overrides_the_setting() -> None:
    from services.cli import build_parser

    assert build_parser().parse_args(["serve"]).workers is None  # → KWX_WORKERS
    assert build_parser().parse_args(["serve", "--workers", "2"]).workers == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--workers", "0"])


# --------------------------------------------------------------------------- two stores, one table


@pytest.fixture()
def two_stores(database_url: str) -> Iterator[tuple[EventStore, EventStore]]:
    """Two containers on the session's database, as two workers build them (migrate=False)."""
    from services.bootstrap import bootstrap

    settings = Settings(database_url=database_url, pool_size=2, log_level="warning")
    built: list[Container] = [bootstrap(settings, url=database_url, migrate=False) for _ in range(2)]
    try:
        yield built[0].store, built[1].store
    finally:
        for c in built:
            c.close()


def _events(wire: list[dict[str, Any]]) -> list[Any]:
    return [convert(e) for e in wire]


def _check_table(store: EventStore, table: str, wire: list[dict[str, Any]], *others: EventStore) -> None:
    """Stored exactly ``wire``, versions 1..n, chain intact; no store caches a wrong tip."""
    stored = store.read_table("acme", table, 0, 10_000)
    assert [s.version for s in stored] == list(range(1, len(wire) + 1))
    assert [s.event_id for s in stored] == [e["id"] for e in wire]  # each event once, in order
    head = store.head("acme", table)
    assert head is not None and head.version == len(wire)
    tables, events, broken = store.verify(table)
    assert (tables, events, broken) == (1, len(wire), [])
    # the true state, folded from the stored events; a cached tip at the head must equal it
    engine = store.engine
    state = engine.initial()
    for e in _events(wire):
        state = engine.step(state, engine.pin(e)).state
    for s in (store, *others):
        tip = s.cache.peek(("acme", table))
        if tip is not None:
            assert tip.version <= head.version
            if tip.version == head.version:
                assert engine.encode_state(tip.state) == engine.encode_state(state)
                assert tip.last_hash == head.last_hash


@pytest.mark.db
def test_two_workers_appending_alternately_stay_correct(two_stores: tuple[EventStore, EventStore]) -> None:
    a, b = two_stores
    table = "wk-" + uuid.uuid4().hex[:12]
    wire = legal_table(71, hands=8)
    assert len(wire) > 300

    first = a.append("acme", table, 0, _events(wire[:100]))  # A: v1-100 (its cache: v100)
    assert (first.first_version, first.version, first.replayed) == (1, 100, False)
    second = b.append("acme", table, 100, _events(wire[100:200]))  # B: v101-200 (A's cache is stale)
    assert (second.first_version, second.version) == (101, 200)

    # Legal against A's stale state (v100: the same events B just stored, under other ids) but
    # illegal against the true state (v200): A's fast path steps it from the stale state, its
    # conditional head move finds the head elsewhere, the retry from the stored head (v200) finds it
    # illegal, and the locking path refuses it.
    stale_legal = relabel(wire[100:110], "again")
    fast, locked = a.fast_appends, a.locked_appends
    with pytest.raises(IllegalEvent):
        a.append("acme", table, None, _events(stale_legal))
    assert a.fast_appends == fast
    assert a.head("acme", table).version == 200  # type: ignore[union-attr]
    tip = a.cache.peek(("acme", table))
    assert tip is None or tip.version != 100

    # A appends v201-300: the retry above left A's cache at the stored head (v200), so the fast path
    third = a.append("acme", table, None, _events(wire[200:300]))
    assert (third.first_version, third.version, third.replayed) == (201, 300, False)
    assert a.fast_appends == fast + 1 and a.locked_appends == locked

    # B (cache at v200) continues; and the batch each stored, re-sent to the other, is a replay
    rest = b.append("acme", table, 300, _events(wire[300:]))
    assert (rest.first_version, rest.version) == (301, len(wire))
    again = b.append("acme", table, 200, _events(wire[200:300]))
    assert again.replayed and again.body() == third.body()
    assert a.append("acme", table, 0, _events(wire[:100])).replayed

    # A stale store with an explicit, stale expected version gets a conflict, not a store
    from services.errors import VersionConflict

    with pytest.raises(VersionConflict) as info:
        a.append("acme", table, 300, _events(relabel(wire[300:], "late")))
    assert info.value.extra["current_version"] == len(wire)
    _check_table(a, table, wire, b)


@pytest.mark.db
def test_two_workers_racing_with_the_same_batches_store_each_batch_once(
    two_stores: tuple[EventStore, EventStore],
) -> None:
    a, b = two_stores
    tables = {"wr-" + uuid.uuid4().hex[:12]: legal_table(80 + i, hands=3) for i in range(3)}
    batches = {t: [w[i : i + 25] for i in range(0, len(w), 25)] for t, w in tables.items()}
    outcomes: dict[tuple[str, int], list[AppendResult]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(2)

    def send(store: EventStore, order: list[str]) -> None:
        try:
            start.wait(10)
            for k in range(max(len(v) for v in batches.values())):
                for t in order:
                    if k < len(batches[t]):
                        result = store.append("acme", t, None, _events(batches[t][k]))
                        with lock:
                            outcomes.setdefault((t, k), []).append(result)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    names = sorted(tables)
    threads = [threading.Thread(target=send, args=(a, names)),
               threading.Thread(target=send, args=(b, names[::-1]))]  # fmt: skip
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)  # a bound for a busy machine, not an expectation
    assert not any(th.is_alive() for th in threads), "the clients did not finish in 600 s"
    assert not errors, errors
    for (t, k), results in outcomes.items():
        assert len(results) == 2
        assert sorted(r.replayed for r in results) == [False, True], (t, k)  # stored once, once replayed
        assert results[0].body() == results[1].body()
    for t, wire in tables.items():
        _check_table(a, t, wire, b)


# --------------------------------------------------------------------------- kwx serve --workers 2


def _is_worker(pid: int) -> bool:
    try:
        return b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False


@pytest.mark.db
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kwx_serve_with_two_workers_serves_appends_and_stops_on_sigterm(pg_cluster: Any) -> None:
    import httpx

    url = pg_cluster.create_database("kwx_workers")  # fresh: the parent migrates it, once
    out = Path(tempfile.mkdtemp(prefix="kwx-workers-")) / "serve.out"
    serve, base, _port = serve_subprocess(url, out, workers=2, seconds=60, KWX_PROJECTOR="off",
                                          KWX_LOG_LEVEL="info", KWX_POOL_SIZE="2")  # fmt: skip
    family: set[int] = set()
    try:
        wait_for(lambda: len([p for p in descendants(serve.pid) if _is_worker(p)]) >= 2, 30,
                 "two workers did not start")  # fmt: skip
        family = descendants(serve.pid)
        banner = out.read_text()
        assert "migrated" in banner and "workers: 2 processes" in banner, banner

        from services.bootstrap import bootstrap

        keys = bootstrap(Settings(database_url=url, pool_size=1, log_level="warning"), migrate=False)
        try:
            key = keys.keys.create("multi", "platform")
        finally:
            keys.close()
        headers = {"Authorization": f"Bearer {key}"}
        tables = {f"multi-{i}": legal_table(90 + i, hands=1) for i in range(4)}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            for k in range(0, max(len(w) for w in tables.values()), 30):  # batches, tables interleaved
                for t, wire in tables.items():
                    if k < len(wire):
                        body = {"expected_version": k, "events": wire[k : k + 30]}
                        answer = client.post(f"/v1/tables/{t}/events", json=body)
                        assert answer.status_code == 201, answer.text
                        assert answer.json()["version"] == min(k + 30, len(wire))
            health = client.get("/v1/health")
            assert health.status_code == 200, health.text
        for p in family:
            assert alive(p)
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            code = serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
            raise
        deadline = time.monotonic() + 60  # a bound for a busy machine, not an expectation
        while any(alive(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p for p in family if alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
    assert code == 0, out.read_text()
    assert not left, f"processes outlived kwx serve: {left}"
    log = out.read_text()
    assert key not in log
    appends = [line for line in log.splitlines() if '"method":"POST"' in line.replace(" ", "")]
    assert len(appends) == sum(-(-len(w) // 30) for w in tables.values())
