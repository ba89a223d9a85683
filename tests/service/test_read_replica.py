"""A streaming read replica (``DATABASE_READ_URL``; docs/SCALING.md, "A streaming read replica"),
tested against a real one: a primary and its ``pg_basebackup -R`` replica of the embedded wheel's
PostgreSQL 18, made for this module whatever ``TEST_DATABASE_URL`` says (tests/replica_pair.py).

Two apps serve the same primary: ``replicated`` (DATABASE_READ_URL at the replica) and ``direct``
(no replica: every read on the primary, the reference bytes). What is asserted is where each answer
was read (``Kwx-Read-From``) and what it says — never how long anything took: a wait is always a
bounded poll for a state (the replica has replayed, the service has seen it come back)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.service.serving import wait_for
from tests.service.streams import legal_table

Headers = dict[str, str]


@dataclass
class Setup:
    pair: Any  # tests.replica_pair.Pair
    primary: Any  # the primary-only container (it loads the tables, runs the projector)
    replicated: Any  # TestClient of the app with DATABASE_READ_URL
    direct: Any  # TestClient of the app without it
    keys: dict[str, Headers]
    table_id: str
    player: str
    wire: list[dict[str, Any]]

    def project(self) -> None:
        """The projector on the primary until it has nothing left (the pair has no other database:
        nothing holds its fence back)."""
        from domain import engine
        from projections.projector import Projector

        Projector(self.primary.pool, self.primary.store, engine).catch_up()

    def get(self, client: Any, role: str, path: str, extra: Headers | None = None) -> Any:
        return client.get(path, headers={**self.keys[role], **(extra or {})})


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    from fastapi.testclient import TestClient

    from domain.events import convert
    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import ensure_database
    from services.settings import Settings
    from tests.replica_pair import Pair

    pair = Pair()
    containers: list[Any] = []
    try:
        pair.start()
        ensure_database(pair.primary.url(), "kwx")
        url, read_url = pair.primary.url("kwx"), pair.replica.url("kwx")
        primary = bootstrap(Settings(database_url=url, projector="off", snapshot_every=20), url=url)
        containers.append(primary)
        pair.wait_replayed()  # the database and its schema are on the replica
        replicated = bootstrap(
            Settings(database_url=url, database_read_url=read_url, projector="off", snapshot_every=20),
            url=url, migrate=False,
        )  # fmt: skip
        containers.append(replicated)
        wire = legal_table(31, 3)
        table_id = "rep-1"
        primary.store.append("acme", table_id, 0, [convert(e) for e in wire])
        keys = {role: {"Authorization": f"Bearer {primary.keys.create('acme', role)}"}
                for role in ("platform", "support", "dashboard")}  # fmt: skip
        replicated_app, direct_app = create_app(container=replicated), create_app(container=primary)
        with TestClient(replicated_app) as rc, TestClient(direct_app) as dc:
            found = Setup(pair, primary, rc, dc, keys, table_id, wire[0]["players"][0], wire)
            found.project()
            pair.wait_replayed()
            yield found
    finally:
        for container in reversed(containers):
            container.close()
        pair.close()


def _routes(table_id: str, player: str) -> list[tuple[str, str, Headers]]:
    """(role, path, extra headers): a table's reads at a version or its head, then the read models."""
    t = f"/v1/tables/{table_id}"
    return [
        ("platform", f"{t}/state", {}),
        ("platform", f"{t}/state?at=45", {}),
        ("platform", f"{t}/state?at=100&seat=1", {}),
        ("support", f"{t}/state", {}),
        ("platform", f"{t}/events?after=10&limit=20", {}),
        ("platform", f"{t}/events?limit=1000", {}),
        ("platform", f"{t}/events", {"Accept": "application/x-ndjson"}),
        ("platform", f"{t}/hands/1/settlement", {}),
        ("platform", f"{t}/hands/2/settlement?rules=xiangyang", {}),
        ("support", f"{t}/audit", {}),
        ("support", f"{t}/hands/2/audit", {}),
        ("support", f"{t}/hands/2/timeline", {}),
        ("platform", f"{t}/export", {}),
        ("support", f"{t}/hands/2/export", {}),
        ("support", f"{t}/hands/2/report", {}),
        ("dashboard", f"/v1/players/{player}/stats", {}),
        ("dashboard", f"/v1/players/{player}/ledger", {}),
        ("dashboard", "/v1/house/ledger", {}),
        ("dashboard", "/v1/leaderboard", {}),
        ("support", "/v1/discrepancies", {}),
        ("platform", "/v1/tables", {}),
        ("platform", f"/v1/players/{player}/tables", {}),
        ("platform", f"{t}/hands", {}),
    ]


@pytest.mark.db
def test_reads_from_the_replica_are_the_primarys_bytes(setup: Setup) -> None:
    """Every table read and read-model read of the replicated app comes from the replica, and is
    byte for byte what the primary-only app answers (the replica has replayed everything). The
    routes are every operation whose answer openapi.json documents with ``Kwx-Read-From``."""
    from services.api.read_schemas import READ_FROM_OPERATIONS

    routes = _routes(setup.table_id, setup.player)
    documented = {
        (path, method) for path, operations in setup.replicated.app.openapi()["paths"].items()
        for method, op in operations.items() if op["operationId"].startswith(READ_FROM_OPERATIONS)
    }  # fmt: skip
    templates = {_template(path) for _, path, _ in routes}
    assert {path for path, _ in documented} <= templates, sorted({p for p, _ in documented} - templates)
    for role, path, extra in routes:
        ours = setup.get(setup.replicated, role, path, extra)
        theirs = setup.get(setup.direct, role, path, extra)
        assert ours.status_code == theirs.status_code == 200, (path, ours.status_code, ours.text[:300])
        assert ours.headers["kwx-read-from"] == "replica", path
        assert theirs.headers["kwx-read-from"] == "primary", path
        assert ours.content == theirs.content, path
    state = setup.get(setup.replicated, "platform", f"/v1/tables/{setup.table_id}/state").json()
    assert state["folded_from"] > 0  # the replica's snapshot was read (the projector's, replicated)


def _template(path: str) -> str:
    """``/v1/tables/rep-1/hands/2/audit?x`` → ``/v1/tables/{table_id}/hands/{hand}/audit``."""
    parts = path.split("?")[0].split("/")
    names = {"tables": "{table_id}", "players": "{player_id}", "hands": "{hand}"}
    named = [names[parts[i - 1]] if i > 2 and parts[i - 1] in names else p for i, p in enumerate(parts)]
    return "/".join(named)


@pytest.mark.db
def test_the_replica_pool_never_writes(setup: Setup) -> None:
    """The replica's sessions are read-only as kwx_app even if the server would take a write."""
    import psycopg

    replica = setup.replicated.app.state.container.replica
    with replica.pool.connection() as conn:
        assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
        assert conn.execute("SELECT current_user").fetchone() == ("kwx_app",)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO api_keys DEFAULT VALUES")


@pytest.mark.db
def test_a_statement_the_replica_refuses_is_answered_by_the_primary(setup: Setup) -> None:
    """An error of the statement on the replica (here a real one: it divides by zero there) is
    answered on the primary and leaves the replica up (only a fault of the connection marks it
    down)."""
    from services.replica import PRIMARY, READ_FROM, REPLICA

    container = setup.replicated.app.state.container

    def read(src: Any) -> int:
        with src.pool.connection() as conn:
            row = conn.execute("SELECT 1 / 0" if src.name == REPLICA else "SELECT 1").fetchone()
            return int(row[0])

    said: list[str] = []
    token = READ_FROM.set(said)
    try:
        assert container.model_read((), read) == 1
    finally:
        READ_FROM.reset(token)
    assert said == [PRIMARY]
    assert container.replica.up
    assert 'kwx_replica_fallbacks_total{reason="error"}' in setup.replicated.get("/metrics").text


@pytest.mark.db
def test_own_write_is_read_back_while_replay_is_paused(setup: Setup) -> None:
    """Replay paused on the replica: a new table's append, then its state at the new version and at
    its latest, come from the primary (after the bounded wait) and say the new version — never the
    old state. A stats read keeps coming from the replica, visibly stale (the primary's stats have
    moved on, the replica's have not). Resumed: the replica catches up and answers again."""
    from domain.events import convert

    pair, client = setup.pair, setup.replicated
    wire = legal_table(77, 3)
    table_id, player = "rep-paused", wire[0]["players"][0]
    split = [i for i, e in enumerate(wire) if e["type"] == "hand_started"][2]  # hands 1 and 2 first
    setup.primary.store.append("acme", table_id, 0, [convert(e) for e in wire[:split]])
    setup.project()
    pair.wait_replayed()
    stats_path, state_path = f"/v1/players/{player}/stats", f"/v1/tables/{table_id}/state"
    before = setup.get(client, "dashboard", stats_path)
    assert before.headers["kwx-read-from"] == "replica"
    pair.on_replica("SELECT pg_wal_replay_pause()")
    try:
        wait_for(lambda: setup.get(client, "platform", "/v1/health").json()["replica"]["replay_paused"],
                 30, "the replica did not say its replay is paused")  # fmt: skip
        answer = client.post(f"/v1/tables/{table_id}/events", headers=setup.keys["platform"],
                             json={"events": wire[split:], "expected_version": split})  # fmt: skip
        assert answer.status_code == 201, answer.text
        version = answer.json()["version"]
        assert version == len(wire)
        for path in (f"{state_path}?at={version}", state_path):
            ours = setup.get(client, "platform", path)
            assert ours.status_code == 200, ours.text
            assert ours.headers["kwx-read-from"] == "primary", path
            assert ours.json()["at"] == ours.json()["latest"] == version
            assert ours.content == setup.get(setup.direct, "platform", path).content
        missing = setup.get(client, "platform", "/v1/tables/rep-never/state")  # the head says so
        assert missing.status_code == 404 and missing.headers["kwx-read-from"] == "primary"
        # a version the replica holds still comes from it
        older = setup.get(client, "platform", f"{state_path}?at={split}")
        assert older.headers["kwx-read-from"] == "replica" and older.json()["at"] == split
        setup.project()
        fresh = setup.get(setup.direct, "dashboard", stats_path)
        assert fresh.content != before.content  # hand 3 is in the primary's stats …
        stale = setup.get(client, "dashboard", stats_path)
        assert stale.headers["kwx-read-from"] == "replica"
        assert stale.content == before.content  # … and not yet in the replica's
        health = setup.get(client, "platform", "/v1/health").json()["replica"]
        assert health["status"] == "ok" and health["in_recovery"] is True
        assert health["lag_bytes"] > 0 and health["lag_seconds"] >= 0
        metrics = client.get("/metrics").text
        assert 'kwx_replica_fallbacks_total{reason="behind"}' in metrics
    finally:
        pair.on_replica("SELECT pg_wal_replay_resume()")
    pair.wait_replayed()
    caught_up = setup.get(client, "dashboard", stats_path)
    assert caught_up.headers["kwx-read-from"] == "replica" and caught_up.content == fresh.content
    latest = setup.get(client, "platform", state_path)
    assert latest.headers["kwx-read-from"] == "replica"
    assert latest.content == setup.get(setup.direct, "platform", state_path).content


@pytest.mark.db
def test_a_replica_far_behind_is_waited_for_once(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """After one read's wait for the replica ran out, the reads of the next ``impatient_for``
    seconds look once and go to the primary without waiting; then they wait again. The clock is
    the test's (its sleep moves it on), so the count of the replica's version checks is exact."""
    from services import replica as module

    class Clock:
        now = 1000.0

        def monotonic(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.now += seconds

    clock = Clock()
    monkeypatch.setattr(module, "time", clock)
    replica = setup.replicated.app.state.container.replica
    monkeypatch.setattr(replica, "_impatient_until", 0.0)
    monkeypatch.setattr(replica, "wait", 0.5)
    checks: list[int] = []
    real = replica.version_of

    def counted(tenant: str, table_id: str) -> int:
        checks.append(1)
        return int(real(tenant, table_id))

    monkeypatch.setattr(replica, "version_of", counted)
    held = real("acme", setup.table_id)

    def looks(version: int) -> tuple[bool, int]:
        checks.clear()
        return replica.holds("acme", setup.table_id, version), len(checks)

    assert looks(held + 1) == (False, 15)  # never there: 2, 4, 8, 16, 32 ms, then 50 ms up to 0.5 s
    assert looks(held + 1) == (False, 1)  # within impatient_for: one look, no wait
    assert looks(held) == (True, 1)  # what it holds is still read there
    clock.now += replica.impatient_for
    assert looks(held + 1) == (False, 15)  # patient again


@pytest.mark.db
def test_replica_stopped_reads_use_the_primary_until_it_is_back(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replica stopped: every read still answers 200, from the primary (not 503); health says
    the replica is down (and is itself 200). Started again: the service reads from it again. The
    outage is logged once, and its end once, however many reads it served meanwhile."""
    pair, client = setup.pair, setup.replicated
    t = f"/v1/tables/{setup.table_id}"
    # a read model's read first: it finds the replica gone in the read itself (a table's read would
    # in its version check), and is answered again on the primary
    paths = [("dashboard", f"/v1/players/{setup.player}/stats"), ("platform", f"{t}/state"),
             ("platform", f"{t}/state?at=45"), ("platform", f"{t}/export")]  # fmt: skip
    pair.stop_replica()
    try:
        for role, path in paths:
            for _ in range(2):  # the first read finds it down, the second does not try it
                answer = setup.get(client, role, path)
                assert answer.status_code == 200, (path, answer.text[:300])
                assert answer.headers["kwx-read-from"] == "primary", path
                assert answer.content == setup.get(setup.direct, role, path).content, path
        health = setup.get(client, "platform", "/v1/health")
        assert health.status_code == 200 and health.json()["database"] == "ok"
        assert health.json()["replica"]["status"] == "down"
        metrics = client.get("/metrics").text
        assert "kwx_replica_up 0.0" in metrics
        assert 'kwx_replica_fallbacks_total{reason="down"}' in metrics
    finally:
        pair.start_replica()
    pair.wait_streaming()

    def back() -> bool:
        answer = setup.get(client, "dashboard", f"/v1/players/{setup.player}/stats")
        assert answer.status_code == 200
        return bool(answer.headers["kwx-read-from"] == "replica")

    wait_for(back, 60, "the service did not go back to the replica")
    pair.wait_replayed()
    for role, path in paths:
        answer = setup.get(client, role, path)
        assert answer.headers["kwx-read-from"] == "replica", path
        assert answer.content == setup.get(setup.direct, role, path).content, path
    health = setup.get(client, "platform", "/v1/health").json()["replica"]
    assert health["status"] == "ok" and health["replay_paused"] is False
    assert "kwx_replica_up 1.0" in client.get("/metrics").text
    logged = [line for line in capsys.readouterr().out.splitlines() if '"event":"replica ' in line]
    assert [line.split('"event":"')[1].split(":")[0] for line in logged] == ["replica down", "replica back"]


@pytest.mark.db
def test_kwx_serve_with_two_workers_reads_from_the_replica(setup: Setup, tmp_path: Any) -> None:
    """``kwx serve --workers 2`` with DATABASE_READ_URL: it says so at startup, and its workers
    (each with its own replica pool) answer from the replica, byte for byte the primary's."""
    import httpx

    from tests.service.serving import serving

    out = tmp_path / "serve.out"
    with serving(
        setup.pair.primary.url("kwx"),
        out,
        workers=2,
        KWX_PROJECTOR="off",
        DATABASE_READ_URL=setup.pair.replica.url("kwx"),
        KWX_LOG_LEVEL="warning",
    ) as (_, base, _):
        path = f"/v1/tables/{setup.table_id}/state?at=45"
        for _ in range(4):  # (either worker may answer)
            answer = httpx.get(base + path, headers=setup.keys["platform"], timeout=30)
            assert answer.status_code == 200, answer.text
            assert answer.headers["kwx-read-from"] == "replica"
            assert answer.content == setup.get(setup.direct, "platform", path).content
        assert httpx.get(base + "/v1/health", timeout=30).json()["replica"]["status"] == "ok"
    assert "kwx: read replica postgresql://postgres@127.0.0.1:" in out.read_text()


@pytest.mark.db
def test_without_a_replica_every_read_says_primary(client: Any, platform: Headers, table_id: str) -> None:
    """DATABASE_READ_URL unset (the session's app): reads answer from the primary, health has no
    replica section."""
    wire = legal_table(5)
    answer = client.post(f"/v1/tables/{table_id}/events", json={"events": wire}, headers=platform)
    assert answer.status_code == 201, answer.text
    state = client.get(f"/v1/tables/{table_id}/state", headers=platform)
    assert state.status_code == 200 and state.headers["kwx-read-from"] == "primary"
    assert "replica" not in client.get("/v1/health").json()


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DATABASE_READ_URL": "mysql://u@h/db"}, "DATABASE_READ_URL"),
        ({"DATABASE_READ_URL": "replica.example:5432"}, "DATABASE_READ_URL"),
        ({"DATABASE_READ_URL": "postgresql://u:secret@h:99999/db"}, "DATABASE_READ_URL"),
        ({"DATABASE_READ_URL": "postgresql://u:secret@h:port/db"}, "DATABASE_READ_URL"),
        ({"DATABASE_READ_URL": "postgresql://u:secret@h/db?bogus=1"}, "DATABASE_READ_URL"),
        ({"DATABASE_READ_URL": "postgresql://u:secret@[::1/db"}, "DATABASE_READ_URL"),
        ({"KWX_READ_REPLICA_WAIT": "soon"}, "KWX_READ_REPLICA_WAIT"),
        ({"KWX_READ_REPLICA_WAIT": "-1"}, "KWX_READ_REPLICA_WAIT"),
    ],
)
def test_a_bad_read_setting_is_a_settings_error(env: dict[str, str], named: str) -> None:
    """A mistyped DATABASE_READ_URL stops the service at startup, naming the variable (and never
    repeating the URL, which may carry a password)."""
    from services.settings import Settings, SettingsError

    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(named), str(raised.value)
    assert "secret" not in str(raised.value)


def test_a_good_read_url_is_taken() -> None:
    from services.settings import Settings

    settings = Settings.from_env({"DATABASE_READ_URL": "postgresql://kwx@replica:5433/kwx",
                                  "KWX_READ_REPLICA_WAIT": "0.25"})  # fmt: skip
    assert settings.database_read_url == "postgresql://kwx@replica:5433/kwx"
    assert settings.read_replica_wait == 0.25
    assert Settings.from_env({}).database_read_url is None
