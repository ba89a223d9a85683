"""Parked events (issue 11 §1): given a poison event of tenant A for one read model — when the
projector runs — then every other event (tenant B's before and after it, A's other tables) reaches
every read model, the poison and its table's later events are parked for that model with the
error, status and health say so, only A sees them; after the fix, ``retry`` applies them and the
read models equal a rebuild from position 0. On a database of its own (the shared one's background
projector must never meet the poison), with a pool of one connection where it matters."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import psycopg
import pytest

from domain import engine
from domain.events import convert
from projections import ledger, player_stats, registry
from projections.model import HandSettled
from projections.projector import Projector
from tests.projections.helpers import dump_read_models as _dump
from tests.projections.helpers import simulated

pytestmark = pytest.mark.db

BIG = 10**30  # a money amount no bigint column holds: PostgreSQL refuses the ledger's rows


def _table(seed: int, hands: int, players: list[str] | None = None) -> list[Any]:
    events = simulated(seed, hands)
    if players is not None:
        events[0] = dict(events[0], players=players)
    return [convert(e) for e in events]


def _settles(events: list[Any]) -> int:
    return len([s for s in engine.fold(events).settlements if s.end != "aborted"])


def q(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture(autouse=True)
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """The projector's log lines, captured (a logger cached by an earlier test may print to a
    stream that test closed)."""
    import structlog
    from structlog.testing import capture_logs

    from projections import projector as projector_module

    with capture_logs() as captured:
        monkeypatch.setattr(projector_module, "log", structlog.get_logger("kwx.projector"))
        yield captured


@pytest.fixture()
def poison_ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The ledger's rows for the first settlement of the tables named in the set carry amounts
    no bigint holds (a model that cannot apply that one event); empty the set to fix it."""
    poisoned: set[str] = set()
    original = ledger.rows

    def rows(fact: Any) -> list[Any]:
        out = original(fact)
        if isinstance(fact, HandSettled) and fact.info.table_id in poisoned and fact.ordinal == 1:
            return [msgspec.structs.replace(e, amount=e.amount * BIG) for e in out]
        return out

    monkeypatch.setattr(ledger, "rows", rows)
    yield poisoned


def test_a_poison_event_is_parked_and_every_other_event_reaches_every_read_model(
    private_db: tuple[Any, str], poison_ledger: set[str], logs: list[dict[str, Any]]
) -> None:
    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    a, b = "ta-" + uuid.uuid4().hex[:6], "tb-" + uuid.uuid4().hex[:6]
    poison = "poison-" + uuid.uuid4().hex[:6]
    # the poisoned table's players are its own, so that its ledger accounts share no entries with
    # another table's (the retried entries then number exactly as a rebuild's)
    poison_events = _table(9001, 3, ["pz1", "pz2", "pz3"])
    assert _settles(poison_events) >= 2
    b1, a2, b2 = _table(9002, 2), _table(9003, 2), _table(9004, 2)
    ids = {label: f"{label}-{uuid.uuid4().hex[:6]}" for label in ("b1", "a2", "b2")}
    poison_ledger.add(poison)
    half = len(poison_events) // 2
    store.append(b, ids["b1"], 0, b1)  # B before the poison
    store.append(a, poison, 0, poison_events[:half])  # A's poison (the first hand's settlement)
    store.append(a, ids["a2"], 0, a2)
    projector.catch_up()
    # … the poisoned table goes on, another batch: its later settlements park behind the first
    store.append(a, poison, half, poison_events[half:])
    store.append(b, ids["b2"], 0, b2)  # B after the poison
    projector.catch_up()

    (in_log,) = q(url, "SELECT count(*) FROM events")[0]
    cps = projector.checkpoints()
    assert len(set(cps.values())) == 1, "every model's checkpoint moved to the end of the log"
    assert set(cps.values()) == {max(q(url, "SELECT epoch, tx_id::text::int8, position FROM events"))}
    assert q(url, "SELECT DISTINCT events FROM projection_checkpoints") == [(in_log,)]
    for label, events in (("b1", b1), ("a2", a2), ("b2", b2)):
        table = ids[label]
        n = _settles(events)
        assert q(url, "SELECT count(*) FROM proj_hand_settlements WHERE table_id = %s", table)[0][0] >= n
        entries = q(url, "SELECT count(DISTINCT ordinal) FROM proj_ledger_entries WHERE table_id = %s", table)
        assert entries[0][0] == n, f"{label}: every settled hand booked"
    # every other model applied the poisoned table whole; the ledger none of it
    settled = q(url, "SELECT count(*) FROM proj_hand_settlements WHERE table_id = %s", poison)[0][0]
    assert settled == len(engine.fold(poison_events).settlements)
    assert q(url, "SELECT count(*) FROM proj_ledger_entries WHERE table_id = %s", poison) == [(0,)]
    players = [p for (p,) in q(url, "SELECT player_id FROM proj_player_stats WHERE tenant = %s", a)]
    assert {"pz1", "pz2", "pz3"} <= set(players)
    # the poison is parked with its error, its table's later settlements behind it, in order
    parked_rows = q(
        url,
        "SELECT model, tenant, table_id, version, error_class, error, behind, tries FROM projection_parked "
        "ORDER BY version",
    )
    assert {r[0] for r in parked_rows} == {"ledger"} and {r[2] for r in parked_rows} == {poison}
    first, *rest = parked_rows
    assert first[4] == "NumericValueOutOfRange" and "out of range" in first[5] and first[6] is None
    # one per event whose settlement books money (an aborted or all-zero hand books nothing)
    booking = q(
        url,
        "SELECT DISTINCT settled_event FROM proj_hand_settlements WHERE table_id = %s AND EXISTS "
        "(SELECT 1 FROM json_array_elements(settlement -> 'transfers') t "
        "WHERE (t ->> 'amount')::numeric <> 0) "
        "ORDER BY 1",
        poison,
    )
    assert [r[3] for r in parked_rows] == [v for (v,) in booking] and len(booking) >= 2
    assert rest and all(r[4] == "parked_behind" and r[6] is not None for r in rest)
    assert all(r[1] == a for r in parked_rows) and all(r[7] == 1 for r in parked_rows)
    said = [e for e in logs if e["event"] == "projection_event_parked"]
    assert [(e["projection"], e["table_id"], e["version"]) for e in said] == [("ledger", poison, first[3])]
    (event_id,) = q(url, "SELECT event_id FROM projection_parked WHERE behind IS NULL")[0]
    assert event_id == q(url, "SELECT event_id FROM events WHERE table_id = %s AND version = %s",
                         poison, first[3])[0][0]  # fmt: skip

    # status and health say so
    status = {s["projection"]: s for s in projector.status()}
    assert status["ledger"]["parked"] == len(parked_rows) and status["ledger"]["oldest_parked"]
    assert all(s["parked"] == 0 for n, s in status.items() if n != "ledger")
    assert all(s["behind"] == 0 and not s["stale"] for s in status.values())
    from projections.queries.freshness import Freshness

    with psycopg.connect(url) as conn:
        fresh = Freshness()(conn)
    assert fresh["parked"] == len(parked_rows) and fresh["caught_up"] and fresh["stale"] == []

    # still broken: retry tries the first again (tries + 1), the rest stay behind it
    assert projector.retry("ledger") == {"ledger": {"applied": 0, "parked": len(parked_rows)}}
    assert q(url, "SELECT tries FROM projection_parked WHERE behind IS NULL") == [(2,)]
    # fixed: retry applies them in order and they leave the parked table
    poison_ledger.clear()
    assert projector.retry("ledger", poison) == {"ledger": {"applied": len(parked_rows), "parked": 0}}
    assert q(url, "SELECT count(*) FROM projection_parked") == [(0,)]
    assert q(url, "SELECT parked FROM projection_checkpoints WHERE name = 'ledger'") == [(0,)]
    booked = q(url, "SELECT count(DISTINCT ordinal) FROM proj_ledger_entries WHERE table_id = %s", poison)
    assert booked[0][0] == len(booking)
    after_retry = _dump(url)
    assert projector.rebuild() == in_log
    assert _dump(url) == after_retry
    total = q(url, "SELECT sum(amount) FROM proj_ledger_entries")[0][0]
    assert total == 0, "the ledger still sums to zero"
    assert projector.run_once() == 0


def test_a_model_whose_rows_raise_parks_the_event_and_retry_keeps_what_still_fails(
    private_db: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pure ``rows`` raising (no database error, no fallback batch): parked for that model,
    tries counted; a retry of another table or model touches nothing."""
    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE projection_parked")
        conn.execute("UPDATE projection_checkpoints SET parked = 0")
    tenant, bad = "tr-" + uuid.uuid4().hex[:6], "raise-" + uuid.uuid4().hex[:6]
    good = "fine-" + uuid.uuid4().hex[:6]
    original = player_stats.rows

    def rows(fact: Any) -> list[Any]:
        if fact.info.table_id == bad and isinstance(fact, HandSettled):
            raise ZeroDivisionError("a bug in a model\x00")  # (a NUL no text column holds)
        return original(fact)

    monkeypatch.setattr(player_stats, "rows", rows)
    store.append(tenant, bad, 0, _table(9101, 2))
    store.append(tenant, good, 0, _table(9102, 2))
    projector.catch_up()
    parked_rows = q(url, "SELECT model, table_id, error_class, error FROM projection_parked ORDER BY version")
    assert parked_rows and {(m, t) for m, t, _, _ in parked_rows} == {("player_stats", bad)}
    assert parked_rows[0][2:] == ("ZeroDivisionError", "a bug in a model\\0")
    hands = q(url, "SELECT sum(hands_played) FROM proj_player_stats WHERE tenant = %s", tenant)[0][0]
    assert hands == 3 * _settles(_table(9102, 2)), "the other table of the tenant is counted"
    assert projector.retry("ledger") == {} and projector.retry(table_id=good) == {}
    still = projector.retry("player_stats")
    assert still == {"player_stats": {"applied": 0, "parked": len(parked_rows)}}
    assert q(url, "SELECT tries FROM projection_parked WHERE behind IS NULL") == [(2,)]
    monkeypatch.setattr(player_stats, "rows", original)
    assert projector.retry() == {"player_stats": {"applied": len(parked_rows), "parked": 0}}
    hands = q(url, "SELECT sum(hands_played) FROM proj_player_stats WHERE tenant = %s", tenant)[0][0]
    assert hands == 3 * (_settles(_table(9101, 2)) + _settles(_table(9102, 2)))


def test_a_database_fault_is_not_poison_the_batch_fails_and_nothing_is_parked(
    private_db: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    before = projector.checkpoints()
    store.append("tf-" + uuid.uuid4().hex[:6], "fault-" + uuid.uuid4().hex[:6], 0, _table(9201, 1))
    module = registry.BY_NAME["feed"]
    original = module.write

    def lost(conn: Any, batch: list[Any]) -> None:
        raise psycopg.OperationalError("the connection went away")

    monkeypatch.setattr(module, "write", lost)
    parked_before = q(url, "SELECT count(*) FROM projection_parked")
    with pytest.raises(psycopg.OperationalError):
        projector.run_once()
    assert projector.checkpoints() == before
    assert q(url, "SELECT count(*) FROM projection_parked") == parked_before
    monkeypatch.setattr(module, "write", original)
    assert projector.catch_up() > 0


def test_the_projector_works_with_a_pool_of_one_connection(private_db: tuple[Any, str]) -> None:
    """No code path of the projector holds one pooled connection while waiting for another: the
    refold of a table it has no context for reads on the batch's connection (issue 11 §3)."""
    from services.db import make_pool
    from services.store.events import EventStore

    shared, url = private_db
    pool = make_pool(url, size=1, role="kwx_app")
    try:
        store = EventStore(pool, shared.engine)
        pool.timeout = 5.0  # a second checkout would wait this long, then fail the batch
        table = "one-" + uuid.uuid4().hex[:6]
        events = _table(9301, 2)
        tenant = "t1-" + uuid.uuid4().hex[:6]
        store.append(tenant, table, 0, events[:40])
        Projector(pool, store, engine).catch_up()
        # no cached context, and stored facts not taken (judge=None): the next event needs a refold
        fresh = Projector(pool, store, engine, judge=None)
        store.append(tenant, table, 40, events[40:])
        assert fresh.catch_up() == len(events) - 40
        assert fresh.refolds >= 1
        rows = q(url, "SELECT count(*) FROM proj_hand_settlements WHERE table_id = %s", table)[0][0]
        assert rows == len(engine.fold(events).settlements)
        assert [s["behind"] for s in fresh.status()] == [0] * len(registry.NAMES)
        assert fresh.retry() == {}
    finally:
        pool.close()


def test_kwx_projections_status_and_retry_print_parked_events(
    private_db: tuple[Any, str], poison_ledger: set[str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from services.cli import main

    store, url = private_db
    Projector(store.pool, store, engine).catch_up()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE projection_parked")
        conn.execute("UPDATE projection_checkpoints SET parked = 0")
    table = "cli-" + uuid.uuid4().hex[:6]
    poison_ledger.add(table)
    store.append("tc-" + uuid.uuid4().hex[:6], table, 0, _table(9401, 2, ["cz1", "cz2", "cz3"]))
    Projector(store.pool, store, engine).catch_up()
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("KWX_LOG_LEVEL", "warning")
    capsys.readouterr()
    assert main(["projections", "status", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    status = {s["projection"]: s for s in lines}  # the answer alone: the log's lines go to stderr
    assert status["ledger"]["parked"] >= 1 and status["feed"]["parked"] == 0
    assert all(s["stale"] is False and s["behind"] == 0 for s in status.values())
    # still broken: said for a person, nothing applied, every one still parked, and where to look
    assert main(["projections", "retry", "--table", table]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].split() == ["model", "applied", "still", "parked"]
    assert said[1].split() == ["ledger", "0", str(status["ledger"]["parked"])] and len(said) == 3
    assert said[2].startswith("still parked: each waits with its error and tries")
    poison_ledger.clear()
    assert main(["projections", "retry", "--model", "ledger", "--table", table, "--json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert out == [{"projection": "ledger", "applied": status["ledger"]["parked"], "parked": 0}]
    assert main(["projections", "retry", "--model", "ledger", "--table", table]) == 0
    assert capsys.readouterr().out == f"no parked events matched (model ledger, table {table})\n"
    assert main(["projections", "retry", "--model", "nonsense"]) == 2


def test_a_tenant_sees_its_own_parked_events_and_no_other_tenants(
    private_db: tuple[Any, str], poison_ledger: set[str]
) -> None:
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.settings import Settings

    _, url = private_db
    container = bootstrap(Settings(database_url=url, projector="off", pool_size=2), url=url, migrate=False)
    try:
        a, b = "ra-" + uuid.uuid4().hex[:6], "rb-" + uuid.uuid4().hex[:6]
        table = "route-" + uuid.uuid4().hex[:6]
        poison_ledger.add(table)
        container.store.append(a, table, 0, _table(9501, 2, ["rz1", "rz2", "rz3"]))
        container.store.append(b, "route-b-" + uuid.uuid4().hex[:6], 0, _table(9502, 2))
        Projector(container.pool, container.store, engine).catch_up()
        mine = q(url, "SELECT count(*) FROM projection_parked WHERE tenant = %s", a)[0][0]
        assert mine >= 1
        with TestClient(create_app(container=container)) as client:
            got = client.get("/v1/projections/parked")
            assert got.status_code == 401
            seen_a = client.get("/v1/projections/parked", headers=_key(container, a, "support"))
            assert seen_a.status_code == 200, seen_a.text
            items = seen_a.json()["parked"]
            assert len(items) == mine and {i["table_id"] for i in items} == {table}
            assert items[0]["model"] == "ledger" and items[0]["error_class"] == "NumericValueOutOfRange"
            assert items[0]["waits_for"] is None and all(
                i["waits_for"] == items[0]["version"] for i in items[1:]
            )
            assert "position" not in items[0] and "tenant" not in items[0]
            seen_b = client.get("/v1/projections/parked", headers=_key(container, b, "support"))
            assert seen_b.status_code == 200 and seen_b.json() == {"parked": []}
            dash = client.get("/v1/projections/parked", headers=_key(container, a, "dashboard"))
            assert dash.status_code == 403 and dash.json()["error"] == "forbidden"
            health = client.get("/v1/health").json()
            assert health["projections"]["parked"] >= mine and table not in json.dumps(health)
            assert a not in json.dumps(health)
        poison_ledger.clear()
        Projector(container.pool, container.store, engine).retry(table_id=table)
    finally:
        container.close()


def _key(container: Any, tenant: str, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {container.keys.create(tenant, role)}"}
