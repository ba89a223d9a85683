"""kwx on a real Citus cluster, a coordinator and two workers (issue 14; ``make test-citus``).

Not collected by ``make test`` (the name does not start with ``test_``): ``make test-citus`` names
this file. Run on a plain PostgreSQL, every test here fails and says why — it never skips.

What is checked: the layout migrations 0013 and 0014 make (per-table tables distributed on ``table_id``,
co-located, over both workers; ``api_keys`` a reference table); that an append commits on its
table's one worker with a plain ``COMMIT`` — one-phase commit, which the log's fence relies on
(docs/SCALING.md) — while the single-node statement would go through ``PREPARE TRANSACTION``;
that the fence's xmin is the coordinator's; a tailing reader over tables on both workers seeing
every event once, in each table's order; and 0013 down and up on the cluster with rows in it.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from domain.events import convert
from services import migrate
from services.store import batch as batches
from services.store import fast, locked
from services.store.events import EventStore
from tests.citus_cluster import worker_of, worker_ports
from tests.service.streams import legal_table, relabel
from tests.service.test_global_read import drain, writers_and_a_tailing_reader

pytestmark = pytest.mark.db

DISTRIBUTED = {
    "table_heads",
    "events",
    "proj_table_snapshots",
    "proj_discovery_hands",  # (0013 distributed proj_hand_settlements too: a view of the feed since 0020)
    # 0014: numbered by the projector per tenant, and a player's tables beside them
    "proj_discrepancies",
    "proj_discovery_tables",
    "proj_discovery_players",
}


@pytest.fixture(scope="module", autouse=True)
def _on_the_cluster() -> None:
    if not os.environ.get("KWX_TEST_CITUS_WORKERS"):
        pytest.fail("tests/citus_test_cluster.py runs on the Citus cluster: `make test-citus`")


class Remote:
    """A pool whose connections log every command Citus sends to a node (``log_remote_commands``)."""

    def __init__(self, url: str) -> None:
        self.sent: list[str] = []

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute("SET ROLE kwx_app")
            conn.execute("SET citus.log_remote_commands = on")
            conn.execute("SET client_min_messages = log")
            conn.commit()
            conn.add_notice_handler(lambda d: self.sent.append(d.message_primary or ""))

        self.pool = ConnectionPool(url, min_size=1, max_size=1, configure=configure, open=True)

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


@pytest.fixture()
def remote(database_url: str) -> Iterator[Remote]:
    r = Remote(database_url)
    yield r
    r.pool.close()


def test_the_per_table_tables_are_distributed_by_table_id_co_located_over_both_workers(
    database_url: str,
) -> None:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT logicalrelid::text, partmethod, column_to_column_name(logicalrelid, partkey), "
            "colocationid FROM pg_dist_partition"
        ).fetchall()
        by_table = {r[0]: r for r in rows}
        assert set(by_table) == DISTRIBUTED | {"api_keys"}  # everything else stays on the coordinator
        assert {by_table[t][1] for t in DISTRIBUTED} == {"h"}
        assert {by_table[t][2] for t in DISTRIBUTED} == {"table_id"}
        assert len({by_table[t][3] for t in DISTRIBUTED}) == 1  # one co-location group
        assert by_table["api_keys"][1] == "n"  # a reference table
        ports = conn.execute(
            "SELECT DISTINCT p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid) "
            "WHERE s.logicalrelid = 'events'::regclass"
        ).fetchall()
        workers = set(worker_ports())
        assert {p[0] for p in ports} == workers


def _commits(sent: list[str]) -> tuple[int, int]:
    """(plain COMMITs, PREPARE TRANSACTIONs) among the commands Citus sent."""
    commits = sum(1 for m in sent if m.startswith("issuing COMMIT") and "PREPARED" not in m)
    prepares = sum(1 for m in sent if m.startswith("issuing PREPARE TRANSACTION"))
    return commits, prepares


def test_an_append_commits_on_one_worker_in_one_phase(remote: Remote, container: Any) -> None:
    store = EventStore(remote.pool, container.engine)
    table, wire = "one-phase-" + uuid.uuid4().hex[:8], legal_table(41)
    events = [convert(e) for e in relabel(wire, table)]
    remote.take()
    assert store.append("acme", table, 0, events[:10]).version == 10  # a new table: the fast path
    assert store.append("acme", table, 10, events[10:20]).version == 20  # cached tip: the fast path
    assert store.fast_appends == 2
    sent = remote.take()
    assert _commits(sent) == (2, 0), sent
    assert any("UPDATE public.table_heads_" in m for m in sent)  # routed to the shard
    # the locking path, on a store that knows nothing of the table
    fresh = EventStore(remote.pool, container.engine)
    prepared, canon = batches.prepare(container.engine, events[20:30])
    result, committed = locked.append(
        remote.pool, container.engine, fresh.cache, 50, "acme", table, 20, prepared, canon
    )
    assert committed and result.version == 30
    sent = remote.take()
    assert any("FOR UPDATE" in m for m in sent)
    assert _commits(sent) == (1, 0), sent
    assert [e.version for e in store.read_table("acme", table, 0, 100)] == list(range(1, 31))


def test_the_http_fast_path_on_its_async_pool_commits_in_one_phase_too(
    database_url: str, container: Any
) -> None:
    import asyncio

    from psycopg_pool import AsyncConnectionPool

    sent: list[str] = []

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("SET ROLE kwx_app")
        await conn.execute("SET citus.log_remote_commands = on")
        await conn.execute("SET client_min_messages = log")
        conn.add_notice_handler(lambda d: sent.append(d.message_primary or ""))

    table, wire = "async-" + uuid.uuid4().hex[:8], legal_table(48)
    events = [convert(e) for e in relabel(wire, table)]
    prepared, canon = batches.prepare(container.engine, events[:7])
    tip, create = fast.guess(container.engine, "acme", table, None, 0) or (None, False)
    assert tip is not None and create
    plan = fast.plan(container.engine, 50, "acme", table, tip, True, prepared, canon)
    assert plan is not None

    async def run() -> int:
        pool = AsyncConnectionPool(database_url, min_size=1, max_size=1, configure=configure, open=False,
                                   kwargs={"autocommit": True})  # fmt: skip
        await pool.open()
        try:
            return await fast.run_async(pool, plan)
        finally:
            await pool.close()

    assert asyncio.run(run()) == 7
    assert _commits(sent) == (1, 0), sent
    assert [e.version for e in container.store.read_table("acme", table, 0, 100)] == list(range(1, 8))


def test_the_single_node_statement_would_take_two_phase_commit(remote: Remote, container: Any) -> None:
    """The control: the fast path's one statement (``INSERT … SELECT`` from a modifying CTE) goes
    through PREPARE TRANSACTION on Citus — why the cluster stores by router statements."""
    table, wire = "two-phase-" + uuid.uuid4().hex[:8], legal_table(42)
    events = [convert(e) for e in relabel(wire, table)]
    prepared, canon = batches.prepare(container.engine, events[:5])
    tip, create = fast.guess(container.engine, "acme", table, None, 0) or (None, False)
    assert tip is not None and create
    plan = fast.plan(container.engine, 50, "acme", table, tip, True, prepared, canon)
    assert plan is not None
    remote.take()
    with remote.pool.connection() as conn:
        conn.autocommit = True
        assert conn.execute(plan.sql, plan.params).rowcount == 5
    assert _commits(remote.take())[1] == 1


def test_the_fence_is_the_coordinators_xmin(remote: Remote, container: Any, database_url: str) -> None:
    store = EventStore(remote.pool, container.engine)
    table, wire = "fence-" + uuid.uuid4().hex[:8], legal_table(43)
    with psycopg.connect(database_url, autocommit=True) as coordinator:
        before = int(coordinator.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
        store.append("acme", table, 0, [convert(e) for e in relabel(wire[:3], table)])
        after = int(coordinator.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
    stored = store.read_table("acme", table, 0, 10)
    assert {e.tx_id for e in stored} and all(
        before < e.tx_id < after for e in stored
    )  # the coordinator's xid
    remote.take()
    seen = store.read_all((0, 0, 0), 100_000)
    assert {(e.table_id, e.version) for e in seen} >= {(table, 1), (table, 2), (table, 3)}
    shard_reads = [m for m in remote.take() if "FROM public.events_" in m]
    assert shard_reads and not any("pg_current_snapshot" in m for m in shard_reads)
    assert all("read_intermediate_result" in m for m in shard_reads)  # the xmin computed beforehand


def test_writers_on_both_workers_and_a_tailing_reader_see_every_event_once_in_order(
    container: Any, database_url: str
) -> None:
    run = uuid.uuid4().hex[:8]
    writers, per_worker = 4, 6
    on: dict[int, list[str]] = {}
    with psycopg.connect(database_url) as conn:
        n = 0
        while len(on) < 2 or min(len(v) for v in on.values()) < per_worker:
            table = f"spread-{run}-{n}"
            n += 1
            tables_there = on.setdefault(worker_of(conn, table), [])
            if len(tables_there) < per_worker:
                tables_there.append(table)
    assert len(on) == 2
    tables = [t for ts in on.values() for t in ts]
    groups = [tables[w::writers] for w in range(writers)]  # each writer has tables on both workers
    writers_and_a_tailing_reader(container.store, legal_table(44), groups, f"spread-{run}-")


def test_0013_down_and_up_on_the_cluster_keeps_the_rows(pg_cluster: Any, container: Any) -> None:
    url = pg_cluster.create_database("kwx_citus_0013")
    migrate.upgrade(url)
    from services.db import make_pool

    pool = make_pool(url, size=1, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        table, wire = "down-up-" + uuid.uuid4().hex[:8], legal_table(45)
        store.append("acme", table, 0, [convert(e) for e in relabel(wire[:8], table)])
    finally:
        pool.close()

    def layout() -> tuple[set[str], set[str], set[str], int, bool]:
        with psycopg.connect(url) as conn:
            dist = {r[0] for r in conn.execute("SELECT logicalrelid::text FROM pg_dist_partition")}
            triggers = {
                r[0]
                for r in conn.execute(
                    "SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal"
                )
            }
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT conname FROM pg_constraint "
                    "WHERE conrelid = 'events'::regclass AND contype IN ('p', 'u')"
                )
            }
            count = conn.execute("SELECT count(*) FROM events WHERE table_id = %s", (table,)).fetchone()[0]  # type: ignore[index]
            identity = conn.execute(
                "SELECT attidentity = 'a' FROM pg_attribute "
                "WHERE attrelid = 'events'::regclass AND attname = 'position'"
            ).fetchone()[0]  # type: ignore[index]
        return dist, triggers, names, count, identity

    up = layout()
    assert up[0] == DISTRIBUTED | {"api_keys"} and "events_notify" not in up[1] and up[3] == 8
    migrate.downgrade(url, revision="0012")
    dist, triggers, names, count, identity = layout()
    assert dist == set()  # every table local on the coordinator again
    assert triggers == {"events_immutable", "events_no_truncate", "events_notify"}
    assert names == {"events_pkey", "events_table_event_id"} and count == 8 and identity
    with psycopg.connect(url) as conn:  # the identity goes on after the copied rows
        conn.execute("SET ROLE kwx_app")
        row = conn.execute(
            "INSERT INTO events (tenant, table_id, version, event_id, type, body, hash) "
            "VALUES ('acme', %s, 9, 'x9', 'table_closed', '{}', decode(repeat('00', 32), 'hex')) "
            "RETURNING position",
            (table,),
        ).fetchone()
        top = conn.execute("SELECT max(position) FROM events WHERE version < 9").fetchone()
        assert row is not None and top is not None and row[0] > top[0]
        conn.rollback()
    migrate.upgrade(url)  # distributes the 8 rows again
    assert layout() == up
    with psycopg.connect(url) as conn:  # and leaves no copy of them in the coordinator's own table
        assert conn.execute("SELECT pg_relation_size('events')").fetchone() == (0,)


def test_a_stopped_worker_is_503_for_its_tables_only_and_the_service_recovers_by_itself(
    client: Any, make_key: Any, database_url: str
) -> None:
    from tests import citus_cluster

    headers = make_key("acme", "platform")
    port = worker_ports()[1]
    run = uuid.uuid4().hex[:8]
    with psycopg.connect(database_url) as conn:
        names = [f"stop-{run}-{i}" for i in range(64)]
        down = next(t for t in names if worker_of(conn, t) == port)
        up = next(t for t in names if worker_of(conn, t) != port)
    wire = legal_table(46)

    def post(table: str, start: int) -> Any:
        body = {"expected_version": start, "events": relabel(wire[start : start + 5], table)}
        return client.post(f"/v1/tables/{table}/events", json=body, headers=headers)

    assert post(down, 0).status_code == 201 and post(up, 0).status_code == 201
    data = citus_cluster.data_folder_of(port)
    citus_cluster.pg_ctl(data, "-m", "fast", "-w", "stop")
    try:
        refused = post(down, 5)
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert refused.json()["error"] == "unavailable"
        read = client.get(f"/v1/tables/{down}/events?after=0&limit=100", headers=headers)
        assert read.status_code == 503 and read.headers["Retry-After"]
        # the other worker's tables keep being served, writes and reads
        assert post(up, 5).status_code == 201
        assert client.get(f"/v1/tables/{up}/events?after=0&limit=100", headers=headers).status_code == 200
    finally:
        citus_cluster.pg_ctl(data, "-l", str(data / "server.log"), "-w", "start")
    # back by itself: the same batch again is stored once (nothing of the refused one was)
    again = post(down, 5)
    assert again.status_code == 201 and again.json()["first_version"] == 6
    page = client.get(f"/v1/tables/{down}/events?after=0&limit=100", headers=headers).json()
    assert [e["version"] for e in page["events"]] == list(range(1, 11))


def test_shard_moves_and_a_rebalance_keep_the_log_and_every_chain(pg_cluster: Any, container: Any) -> None:
    """Shard groups moved to one worker, then ``citus_rebalance_start`` spreading them again (with
    ``block_writes``: the test cluster has no logical WAL), appends between the moves: every event
    is read once in log order, its ``(tx_id, position)`` unchanged, every chain verifies."""
    from services.db import make_pool

    url = pg_cluster.create_database("kwx_citus_moves")
    migrate.upgrade(url)
    pool = make_pool(url, size=2, role="kwx_app")
    try:
        store = EventStore(pool, container.engine)
        wire = legal_table(47)
        with psycopg.connect(url, autocommit=True) as conn:  # 4 tables on each worker, whatever ids hash to
            by_worker: dict[int, list[str]] = {}
            for i in range(400):
                table = f"move-{uuid.uuid4().hex[:6]}-{i}"
                by_worker.setdefault(worker_of(conn, table), []).append(table)
                if len(by_worker) == 2 and all(len(ts) >= 4 for ts in by_worker.values()):
                    break
        assert len(by_worker) == 2, by_worker  # (8 random ids once all hashed to one worker: 1 run in 128)
        tables = [t for ts in by_worker.values() for t in ts[:4]]

        def append_all(start: int) -> None:
            for table in tables:
                store.append(
                    "acme", table, start, [convert(e) for e in relabel(wire[start : start + 6], table)]
                )

        append_all(0)
        first, checkpoint = drain(store, (0, 0, 0))
        with psycopg.connect(url, autocommit=True) as conn:
            workers = sorted({worker_of(conn, t) for t in tables})
            assert len(workers) == 2
            target = workers[0]
            moved = 0
            for table in tables:
                source = worker_of(conn, table)
                if source != target:
                    conn.execute(
                        "SELECT citus_move_shard_placement(get_shard_id_for_distribution_column("
                        "'table_heads', %s::text), '127.0.0.1', %s, '127.0.0.1', %s, "
                        "shard_transfer_mode => 'block_writes')",
                        (table, source, target),
                    )
                    moved += 1
            assert moved and {worker_of(conn, t) for t in tables} == {target}
            append_all(6)
            conn.execute("SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')")
            conn.execute("SELECT citus_rebalance_wait()")
            placed = conn.execute(
                "SELECT count(DISTINCT p.nodeport) FROM pg_dist_shard s JOIN pg_dist_shard_placement p "
                "USING (shardid) WHERE s.logicalrelid = 'events'::regclass"
            ).fetchone()
            assert placed is not None and placed[0] == 2  # spread over both workers again
        append_all(12)
        rest, _ = drain(store, checkpoint)
        seen = first + rest
        keys = [(e.table_id, e.version) for e in seen if e.table_id in tables]
        assert sorted(keys) == sorted({(t, v) for t in tables for v in range(1, 19)})
        assert len(keys) == len(set(keys))
        order = [(e.epoch, e.tx_id, e.position) for e in seen]
        assert order == sorted(order)
        again = {(e.table_id, e.version): (e.tx_id, e.position) for e in store.read_all((0, 0, 0), 100_000)}
        assert all(again[(e.table_id, e.version)] == (e.tx_id, e.position) for e in seen)
        checked, events, broken = store.verify(None)
        assert (checked, events, broken) == (len(tables), len(tables) * 18, [])
    finally:
        pool.close()


SAME_TABLES = int(os.environ.get("KWX_CITUS_SAME_TABLES", "200"))


RECORDED_AT = re.compile(rb'"recorded_at":\s*"[^"]*"')


class _Reads:
    """GETs with one key, each answer's bytes kept by path."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client, self.headers = client, headers
        self.bodies: dict[str, bytes] = {}

    def read(self, path: str) -> Any:
        answer = self.client.get(path, headers=self.headers)
        assert answer.status_code in (200, 404), (path, answer.text)  # 404: e.g. no ledger yet
        # the one wall-clock value: when each database stored the event
        body = RECORDED_AT.sub(b'"recorded_at":"-"', answer.content)
        self.bodies[path] = b"%d %s" % (answer.status_code, body)
        return answer.json()


def test_the_same_answers_on_one_node_and_on_the_cluster(
    container: Any, app: Any, database_url: str, pg_cluster: Any
) -> None:
    """Every conformance and golden stream and ``SAME_TABLES`` (200) simulated tables, appended to the
    Citus database and to a plain one (a database without the extension on the coordinator's server:
    PostgreSQL 18 alone, migrated the same way): byte-identical states, audits, hands, settlements,
    player statistics and ledgers, the house ledger, leaderboard, discrepancies and table lists —
    the bytes of every answer, but for the ledger's ``recorded_at`` (the time each database stored
    the event: wall clock)."""
    from fastapi.testclient import TestClient

    from domain import engine
    from projections.projector import Projector
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.conftest import with_database
    from tests.service.streams import legal_streams

    name = f"kwx_single_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    ensure_database(pg_cluster.admin_url, name)  # no citus extension: one node's behaviour
    pg_cluster.created.append(name)
    plain_url = with_database(pg_cluster.admin_url, name)
    migrate.upgrade(plain_url)
    with psycopg.connect(plain_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'").fetchone() == (0,)
    settings = Settings(database_url=plain_url, max_batch=500, max_body_bytes=256 * 1024, pool_size=4)
    plain = bootstrap(settings, url=plain_url, migrate=False)
    tenant = "same-" + uuid.uuid4().hex[:8]
    tables: list[tuple[str, list[dict[str, Any]]]] = [
        (f"conf-{i}", relabel(stream, f"conf-{i}")) for i, stream in enumerate(legal_streams())
    ]
    tables += [(f"sim-{seed}", legal_table(1000 + seed)) for seed in range(SAME_TABLES)]
    players = sorted({p for _, wire in tables for p in wire[0]["players"]})
    answers: list[dict[str, bytes]] = []
    try:
        for built, served in ((container, app), (plain, create_app(container=plain))):
            key = {"Authorization": "Bearer " + built.keys.create(tenant, "support")}
            writer = {"Authorization": "Bearer " + built.keys.create(tenant, "platform")}
            with TestClient(served) as client:
                for table, wire in tables:
                    for start in range(0, len(wire), 50):
                        body = {"expected_version": start, "events": wire[start : start + 50]}
                        stored = client.post(f"/v1/tables/{table}/events", json=body, headers=writer)
                        assert stored.status_code == 201, stored.text
                Projector(built.pool, built.store, engine).catch_up()
                got = _Reads(client, key)
                for table, _ in tables:
                    got.read(f"/v1/tables/{table}/state")
                    got.read(f"/v1/tables/{table}/audit")
                    for hand in got.read(f"/v1/tables/{table}/hands")["hands"]:
                        got.read(f"/v1/tables/{table}/hands/{hand['hand']}/settlement")
                for player in players:
                    got.read(f"/v1/players/{player}/stats")
                    got.read(f"/v1/players/{player}/ledger")
                    got.read(f"/v1/players/{player}/tables")
                for path in ("/v1/house/ledger", "/v1/leaderboard", "/v1/discrepancies", "/v1/tables"):
                    got.read(path)
                answers.append(got.bodies)
    finally:
        plain.close()
    on_cluster, on_one_node = answers
    assert len(on_cluster) > 3 * len(tables) and on_cluster.keys() == on_one_node.keys()
    assert sum(body.startswith(b"200 ") for body in on_cluster.values()) > 0.9 * len(on_cluster)
    differ = [path for path in on_cluster if on_cluster[path] != on_one_node[path]]
    if differ and os.environ.get("KWX_CITUS_SAME_DUMP"):
        Path(os.environ["KWX_CITUS_SAME_DUMP"]).write_bytes(
            on_cluster[differ[0]] + b"\n" + on_one_node[differ[0]]
        )
    assert differ == [], differ[:10]


def test_a_new_log_epoch_moves_the_distributed_events_default(pg_cluster: Any, container: Any) -> None:
    """``kwx_log_epoch()`` (0007) opens an epoch with ``ALTER TABLE events ALTER COLUMN epoch SET
    DEFAULT n``: on the cluster that DDL goes to every shard, and the next appends carry the new
    epoch, after every event of the old one in the log."""
    from services.db import make_pool

    url = pg_cluster.create_database("kwx_citus_epoch")
    migrate.upgrade(url)
    wire = legal_table(49)
    table = "epoch-" + uuid.uuid4().hex[:8]
    pool = make_pool(url, size=1, role="kwx_app")
    try:
        EventStore(pool, container.engine).append(
            "acme", table, 0, [convert(e) for e in relabel(wire[:4], table)]
        )
    finally:
        pool.close()
    with psycopg.connect(url, autocommit=True) as owner:  # as if restored from another cluster
        owner.execute("UPDATE log_epochs SET system_identifier = system_identifier + 1")
    pool = make_pool(url, size=1, role="kwx_app")  # its connection opens epoch 2
    try:
        store = EventStore(pool, container.engine)
        store.append("acme", table, 4, [convert(e) for e in relabel(wire[4:8], table)])
        seen = [e for e in store.read_all((0, 0, 0), 1000) if e.table_id == table]
    finally:
        pool.close()
    assert [(e.epoch, e.version) for e in seen] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 5),
        (2, 6),
        (2, 7),
        (2, 8),
    ]


def test_0014_down_and_up_on_the_cluster_keeps_the_numbered_rows(pg_cluster: Any) -> None:
    url = pg_cluster.create_database("kwx_citus_0014")
    migrate.upgrade(url)
    numbered = ("proj_discrepancies", "proj_discovery_tables", "proj_discovery_players")
    with psycopg.connect(url) as conn:
        for n in range(1, 7):
            conn.execute(
                "INSERT INTO proj_discovery_tables (tenant, table_id, seq, players, preset, hands, flags) "
                "VALUES ('acme', %s, %s, '[\"p1\", \"p2\", \"p3\"]', 'xiaogan', 1, 0)",
                (f"t-{n}", n),
            )
            conn.execute(
                "INSERT INTO proj_discovery_players (tenant, player_id, seq, table_id) "
                "VALUES ('acme', 'p1', %s, %s)",
                (n, f"t-{n}"),
            )
            conn.execute(
                "INSERT INTO proj_discrepancies (tenant, table_id, reported_event, hand, position, lines, "
                "net_computed, net_reported, reported, feed_seq) "
                "VALUES ('acme', %s, 9, 1, %s, '[]', '[]', '[]', '[]', %s)",
                (f"t-{n}", n, n),
            )

    def layout() -> tuple[set[str], bool, list[str], list[Any]]:
        with psycopg.connect(url) as conn:
            dist = {r[0] for r in conn.execute("SELECT logicalrelid::text FROM pg_dist_partition")}
            unique = conn.execute(
                "SELECT indisunique FROM pg_index WHERE indexrelid = 'proj_discovery_tables_seq'::regclass"
            ).fetchone()[0]  # type: ignore[index]
            key = [
                r[0]
                for r in conn.execute(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                    "AND a.attnum = ANY(i.indkey) "
                    "WHERE i.indexrelid = 'proj_discovery_players_pkey'::regclass "
                    "ORDER BY array_position(i.indkey::int2[], a.attnum)"
                )
            ]
            rows = [conn.execute(f"SELECT * FROM {t} ORDER BY tenant, table_id").fetchall() for t in numbered]
        return dist & set(numbered), bool(unique), key, rows

    up = layout()
    assert up[0] == set(numbered) and not up[1] and up[2] == ["tenant", "player_id", "seq", "table_id"]
    assert [len(r) for r in up[3]] == [6, 6, 6]
    migrate.downgrade(url, revision="0013")
    dist, unique, key, rows = layout()
    assert dist == set() and unique and key == ["tenant", "player_id", "seq"]  # as 0013 left them
    assert rows == up[3]
    migrate.upgrade(url)
    assert layout() == up
    with psycopg.connect(url) as conn:  # no copy left in the coordinator's own tables
        for t in numbered:
            assert conn.execute(f"SELECT pg_relation_size('{t}')").fetchone() == (0,)
