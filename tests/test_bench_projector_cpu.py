"""The projector bench's in-process line (``_models_only``): it runs every read model's rows and
writes over real simulated tables, without a database — so that its number measures them; its
follow lines' PostgreSQL part and its line of each model live alone, on a real PostgreSQL."""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from projections import registry
from tests.bench import bench_projector_cpu
from tests.bench.bench_projector_cpu import _backends_cpu, _each_model_live, _follow, _models_only, _tables


def test_kwx_bench_at_gives_every_simulated_event_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``KWX_BENCH_AT=1``: both benches' tables carry an ``at`` on every event (a settled hand then
    counts in a player's day row too); without it none does (the corpus issue 16 was measured on)."""
    import tests.bench
    from tests.bench import bench_ingest

    for at in (False, True):
        monkeypatch.setattr(tests.bench, "AT", at)
        events = [e for t in _tables(2, 2, "t") for e in t]
        wire = [e for t in bench_ingest._tables(2) for e in t]
        assert events and wire
        assert all((e.at is not None) is at for e in events)
        assert all(("at" in e) is at for e in wire)
        assert ("KWX_BENCH_AT=1" in tests.bench.said()) is at  # the benches' events lines say so
        if at:  # one day, as a platform's clock gives it: the table's times move forward
            times = [e.at for e in events[:40]]
            assert times == sorted(times) and times[0].startswith("2026-11-01T08:00")


def test_the_models_line_runs_every_models_rows_and_writes(capsys: pytest.CaptureFixture[str]) -> None:
    us = _models_only(_tables(3, 4, "t"), page=200)
    line = capsys.readouterr().out
    assert line.startswith("models in-process (")
    for name in registry.NAMES:
        assert f"{name} {us[name]:.2f}" in line
        assert us[name] > 0
    assert us["with_facts"] > 0  # 4 hands each: hand starts, settlements, reports
    # every model with rows wrote them: ledger (opening balances + entries), stats (+ patterns),
    # settlements, discovery (tables, players, hands), the feed (+ its NOTIFY), discrepancies
    assert us["statements"] >= 8 * 2  # at least 8 statements per page, over the first two pages


def _bench_database(pg_cluster: Any, name: str) -> tuple[str, str, int]:
    """A migrated database of its own: (its URL, its name, the server's postmaster pid)."""
    from services import migrate

    url = pg_cluster.create_database(name)
    migrate.upgrade(url)
    with psycopg.connect(url) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert backend is not None
        try:
            with open(f"/proc/{backend[0]}/stat") as f:
                postmaster = int(f.read().rsplit(")", 1)[1].split()[1])  # the backend's parent
        except FileNotFoundError:  # TEST_DATABASE_URL on another machine: no processes to read
            pytest.skip("the server's processes are not on this machine (/proc)")
    return url, urlsplit(url).path.lstrip("/"), postmaster


@pytest.mark.db
def test_the_gathered_follow_counts_its_backends_work_in_ns(pg_cluster: Any, container: Any) -> None:
    """The issue's line (one ``run_once`` per 36 appends) reads PostgreSQL's part from the database's
    client backends in ns: a projector's batch always shows there, however short. (The server's
    tree in 10 ms ticks read 0.0 µs/event for it on a fast machine, and the line claimed 11 %.)"""
    from functools import partial

    from domain import engine
    from projections.projector import Projector
    from services.db import make_pool
    from services.store.events import EventStore

    assert inspect.signature(_follow).parameters["cpu"].default is _backends_cpu  # what run() uses
    url, database, postmaster = _bench_database(pg_cluster, "kwx_bench_follow")
    pool = make_pool(url, size=2, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        projector = Projector(pool, store, engine)
        tables = _tables(3, 2, "t")
        cpu = partial(_backends_cpu, database=database)
        # (a run_once per 2 appends here: several short intervals, as the gathered follow's are)
        py, db, wakeups, applied = _follow(store, projector, tables, "g", 2, postmaster, None, cpu)
    finally:
        pool.close()
    assert wakeups >= 3
    assert applied == sum(len(t) for t in tables)  # every event projected, by the last catch-up
    assert py > 0 and db > 0  # the projector's own backends did the batch's statements
    assert bench_projector_cpu.INGEST[-1] > 0


@pytest.mark.db
def test_each_model_live_prices_every_model_with_its_own_backends(
    pg_cluster: Any, container: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bench's ``each model live alone`` line, on two small tables of a database of its own: a
    price for every read model and for all of them, whose PostgreSQL part is that database's client
    backends (another database's are not counted)."""
    from domain import engine
    from services.db import make_pool
    from services.store.events import EventStore

    url, database, postmaster = _bench_database(pg_cluster, "kwx_bench_each")
    pool = make_pool(url, size=2, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        before = _backends_cpu(postmaster, database)
        tables = _tables(2, 2, "t")
        best = _each_model_live(pool, store, engine, tables, postmaster, rounds=1, database=database)
        assert _backends_cpu(postmaster, database) > before  # its backends worked, and were counted
        assert _backends_cpu(postmaster, "kwx_no_such_database") == 0.0
    finally:
        pool.close()
    assert set(best) == {*registry.NAMES, "all"}
    assert all(us > 0 for us in best.values())
    line = capsys.readouterr().out
    assert line.startswith("each model live alone, ")
    for name in (*registry.NAMES, "all"):
        assert f"{name} {best[name]:.1f} = " in line
