"""The projector against a real PostgreSQL: simulated tables appended through the API → when the
projector catches up → then the read models equal what the domain computes directly; the ledger
sums to zero; a rebuild equals the incremental build; a failed batch leaves nothing behind."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import convert
from projections import registry, snapshots
from projections.log import fence
from projections.projector import Projector
from tests.projections.helpers import append, reader_snapshots, simulated

pytestmark = pytest.mark.db


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def _read_snapshots(container: Any, table_ids: list[str]) -> list[tuple[Any, ...]]:
    with container.pool.connection() as conn:
        return reader_snapshots(conn, table_ids)


def q(container: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with container.pool.connection() as conn:
        return conn.execute(sql, params).fetchall()


def fold(events: list[dict[str, Any]]) -> Any:
    return engine.fold([convert(e) for e in events])


def _tables(
    client: Any, platform: dict[str, str], n: int, seed0: int, hands: int = 2
) -> dict[str, list[Any]]:
    out = {}
    for i in range(n):
        table_id = "pj-" + uuid.uuid4().hex[:12]
        events = simulated(seed0 + i, hands)
        append(client, platform, table_id, events)
        out[table_id] = events
    return out


def test_projections_equal_what_the_domain_computes(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector
) -> None:
    tables = _tables(client, platform, 24, seed0=100)
    projector.catch_up()
    expected_stats: Counter[tuple[str, str]] = Counter()
    for table_id, events in tables.items():
        state = fold(events)
        rows = q(
            container,
            "SELECT settlement FROM proj_hand_settlements WHERE table_id = %s ORDER BY ordinal",
            table_id,
        )
        assert [r[0] for r in rows] == [
            msgspec.json.decode(msgspec.json.encode(s)) for s in state.settlements
        ]
        players = events[0]["players"]
        for s in state.settlements:
            for seat in range(3):
                expected_stats[(players[seat], "net_coins")] += s.net[seat] if s.end != "aborted" else 0
            for w in s.wins:
                expected_stats[(players[w.seat], "wins")] += 1
        log = {(x.hand, x.seat, x.event): x for x in state.lou_hu_log}
        if state.hand is not None:
            log.update({(x.hand, x.seat, x.event): x for x in state.hand.lou_hu_log})
        for x in log.values():
            expected_stats[(players[x.seat], "lou_hu_incurred")] += 1
    got = q(
        container,
        "SELECT player_id, sum(net_coins), sum(wins), sum(lou_hu_incurred) FROM proj_player_stats "
        "WHERE tenant = %s GROUP BY player_id",
        tenant,
    )
    assert got, "no statistics projected"
    for player, net, wins, lou in got:
        assert (net, wins, lou) == (
            expected_stats[(player, "net_coins")],
            expected_stats[(player, "wins")],
            expected_stats[(player, "lou_hu_incurred")],
        )
    # the ledger: every account's balance is the sum of its entries, and everything sums to zero
    (total,) = q(
        container, "SELECT coalesce(sum(amount), 0) FROM proj_ledger_entries WHERE tenant = %s", tenant
    )[0]
    assert total == 0
    balances = q(
        container,
        "SELECT a.account, a.balance, (SELECT sum(amount) FROM proj_ledger_entries e "
        "WHERE e.tenant = a.tenant AND e.account_kind = a.account_kind AND e.account = a.account) "
        "FROM proj_ledger_accounts a WHERE a.tenant = %s",
        tenant,
    )
    assert balances and all(b == s for _, b, s in balances)
    assert sum(b for _, b, _ in balances) == 0
    for player, net, _, _ in got:
        assert dict((a, b) for a, b, _ in balances).get(player, 0) == net
    # the last entry's running balance is the account balance
    last = q(
        container,
        "SELECT DISTINCT ON (account) account, balance FROM proj_ledger_entries WHERE tenant = %s "
        "ORDER BY account, seq DESC",
        tenant,
    )
    assert dict(last) == {a: b for a, b, _ in balances}


def _dump(container: Any, tenant: str, table_ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "settlements": q(
            container,
            "SELECT table_id, ordinal, hand, settlement, net, settled_event FROM "
            "proj_hand_settlements WHERE tenant = %s ORDER BY 1, 2",
            tenant,
        ),
        "ledger": q(
            container,
            "SELECT account_kind, account, seq, amount, balance, counterparty, table_id, hand, "
            "event, reason, line FROM proj_ledger_entries WHERE tenant = %s ORDER BY 1, 2, 3",
            tenant,
        ),
        "accounts": q(
            container, "SELECT * FROM proj_ledger_accounts WHERE tenant = %s ORDER BY 1, 2, 3", tenant
        ),
        "stats": q(
            container, "SELECT * FROM proj_player_stats WHERE tenant = %s ORDER BY 1, 2, 3, 4", tenant
        ),
        "patterns": q(
            container, "SELECT * FROM proj_player_patterns WHERE tenant = %s ORDER BY 1, 2, 3, 4", tenant
        ),
        "discrepancies": q(
            container,
            "SELECT table_id, reported_event, hand, lines FROM proj_discrepancies "
            "WHERE tenant = %s ORDER BY 1, 2",
            tenant,
        ),
        "snapshots": _read_snapshots(container, table_ids),
    }


def test_rebuild_equals_incremental_on_hundreds_of_tables(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector
) -> None:
    table_ids: list[str] = []
    for round_ in range(4):  # incremental: catch up after every 60 tables
        tables = _tables(client, platform, 60, seed0=1000 + 60 * round_, hands=1)
        table_ids += list(tables)
        projector.catch_up()
    before = _dump(container, tenant, table_ids)
    assert len(before["settlements"]) >= 240 and before["ledger"] and before["stats"]
    assert before["discrepancies"], "the simulator reports some wrong settlements"
    fresh = Projector(container.pool, container.store, engine)  # a restarted process: empty caches
    fresh.rebuild()
    after = _dump(container, tenant, table_ids)
    assert after == before
    # rebuilding one read model alone gives the same rows too
    fresh.rebuild(["ledger"])
    assert _dump(container, tenant, table_ids)["ledger"] == before["ledger"]


def test_models_at_different_checkpoints_each_apply_only_their_own_events(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector
) -> None:
    runner = container.projector_runner
    if runner is not None:
        runner.stop()  # this test plays the only projector
    tables = _tables(client, platform, 8, seed0=5200)
    projector.catch_up()
    before = _dump(container, tenant, list(tables))
    assert before["stats"] and before["ledger"]
    staggered = Projector(container.pool, container.store, engine, batch_size=200)
    staggered.reset(["player_stats", "ledger"])
    staggered.run_once(["player_stats"])  # player_stats 200 events ahead of the ledger
    cps = staggered.checkpoints()
    assert (0, 0, 0) == cps["ledger"] < cps["player_stats"]
    staggered.batch_size = 300  # the next page starts at the ledger's checkpoint and straddles
    staggered.catch_up()
    assert _dump(container, tenant, list(tables)) == before  # nothing applied twice, nothing skipped
    counted = dict(q(container, "SELECT name, events FROM projection_checkpoints"))
    in_log = q(container, "SELECT count(*) FROM events")[0][0]
    assert counted["player_stats"] == counted["ledger"] == in_log
    assert len(set(staggered.checkpoints().values())) == 1


class Boom(RuntimeError):
    pass


def test_a_failed_batch_applies_nothing_and_a_retry_counts_once(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector, monkeypatch: Any
) -> None:
    runner = container.projector_runner
    if runner is not None:
        runner.stop()  # this test plays the only projector
    projector.catch_up()
    tables = _tables(client, platform, 3, seed0=7000)
    before = projector.checkpoints()
    stats_module = registry.BY_NAME["player_stats"]
    original = stats_module.write

    def crash(conn: Any, batch: list[Any]) -> None:
        original(conn, batch)  # the rows are written … and then the process "crashes"
        raise Boom("crash after writing")

    monkeypatch.setattr(stats_module, "write", crash)
    with pytest.raises(Boom):
        projector.run_once()
    assert projector.checkpoints() == before
    assert q(container, "SELECT count(*) FROM proj_player_stats WHERE tenant = %s", tenant)[0][0] == 0
    assert q(container, "SELECT count(*) FROM proj_hand_settlements WHERE tenant = %s", tenant)[0][0] == 0
    monkeypatch.setattr(stats_module, "write", original)
    projector.catch_up()
    hands = sum(len([s for s in fold(ev).settlements if s.end != "aborted"]) for ev in tables.values())
    played = q(container, "SELECT sum(hands_played) FROM proj_player_stats WHERE tenant = %s", tenant)[0][0]
    assert played == 3 * hands


def test_new_events_reach_the_projections_in_the_background(
    client: Any, container: Any, platform: dict[str, str], tenant: str
) -> None:
    runner = container.projector_runner
    assert runner is not None, "the app's lifespan starts the projector"
    table_id = "bg-" + uuid.uuid4().hex[:12]
    events = simulated(4242, 1)
    append(client, platform, table_id, events)
    deadline = time.monotonic() + 60  # a bound, not an expectation: a busy machine may take a while
    rows: list[Any] = []
    while time.monotonic() < deadline and not rows:
        rows = q(container, "SELECT ordinal FROM proj_hand_settlements WHERE table_id = %s", table_id)
        time.sleep(0.02)
    assert rows == [(1,)]


def test_two_projectors_racing_apply_every_event_once(
    client: Any, container: Any, platform: dict[str, str], tenant: str
) -> None:
    import threading

    tables = _tables(client, platform, 12, seed0=8000)
    racers = [Projector(container.pool, container.store, engine, batch_size=50) for _ in range(2)]
    errors: list[BaseException] = []

    def race(p: Projector) -> None:
        try:
            p.catch_up()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(p,)) for p in racers]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    hands = sum(len([s for s in fold(ev).settlements if s.end != "aborted"]) for ev in tables.values())
    played = q(container, "SELECT sum(hands_played) FROM proj_player_stats WHERE tenant = %s", tenant)[0][0]
    assert played == 3 * hands
    settled = q(container, "SELECT count(*) FROM proj_hand_settlements WHERE tenant = %s", tenant)[0][0]
    assert settled == sum(len(fold(ev).settlements) for ev in tables.values())


def test_kwx_projections_rebuild_and_status(
    client: Any,
    container: Any,
    platform: dict[str, str],
    tenant: str,
    database_url: str,
    monkeypatch: Any,
    capsys: Any,
) -> None:
    import json

    from services.cli import main

    _tables(client, platform, 2, seed0=9100)
    Projector(container.pool, container.store, engine).catch_up()
    before = _dump(container, tenant, [])["ledger"]
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("KWX_LOG_LEVEL", "warning")
    assert main(["projections", "rebuild", "ledger", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["rebuilt"] == ["ledger"] and out["events"] > 0
    assert _dump(container, tenant, [])["ledger"] == before
    # what it did, truthfully (issue 16): this run's events and a running service's add up to what
    # the model's checkpoint counts; the log holds what it says; facts came from the store
    (stored,) = q(container, f"SELECT count(*) FROM events e WHERE {fence('e')}")[0]
    assert out["stored"] == stored and out["models"]["ledger"]["behind"] == 0
    assert out["models"]["ledger"]["applied"] == out["events"] + out["by_running_service"] == stored
    assert out["from_stored_facts"] > 0 and out["folded"] == 0
    assert main(["projections", "rebuild", "--refold", "ledger", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["from_stored_facts"] == 0 and out["folded"] == out["events"] > 0
    assert _dump(container, tenant, [])["ledger"] == before
    # for a person: the same numbers, said (the summary's first lines, then a row per model)
    assert main(["projections", "rebuild", "ledger"]) == 0
    said = capsys.readouterr().out.strip().splitlines()
    summary = r"rebuilt ledger from position 0: ([\d,]+) events in [\d.]+ s, [\d,]+ events/s"
    head = re.fullmatch(summary, said[0])
    assert head is not None, said
    by_others = r"  a running service's projector applied ([\d,]+) more meanwhile"
    meanwhile = [m for m in (re.fullmatch(by_others, line) for line in said) if m]
    taken = sum(int(m[1].replace(",", "")) for m in meanwhile)  # (the fixtures' projector, if it ran)
    assert int(head[1].replace(",", "")) + taken == stored
    assert "folded here: 0 (0 tables refolded)" in said[1]
    assert said[-3].split() == ["model", "applied", "behind"]
    assert said[-2].split() == ["ledger", f"{stored:,}", "0"]
    assert said[-1] == f"the log holds {stored:,} events"
    assert main(["projections", "status", "--json"]) == 0
    status = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert {s["projection"] for s in status} == set(registry.NAMES)
    assert all(s["behind"] >= 0 for s in status)
    assert main(["projections", "rebuild", "nonsense"]) == 2
    refused = capsys.readouterr()
    assert refused.out == "" and "unknown projection(s): nonsense (the read models: ledger," in refused.err
    assert main(["projections", "rebuild", "nonsense", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "unknown projection(s): nonsense"


def test_record_tables_project_what_the_checked_fold_and_kwx_settle_compute(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector
) -> None:
    """The projector applies each stored event with its stored ruling (no second legality check):
    on tables that record violations its read models and its per-table state equal a fold with
    every check, and the settlements equal ``kwx settle``'s."""
    import json

    from domain.events import decode as decode_event
    from services.commands.settle import settle_lines
    from tests.projections.helpers import violating
    from tests.projections.test_derive import _golden_lou_hu

    tables: dict[str, list[dict[str, Any]]] = {}
    for seed in range(1, 7):
        wire, codes = violating(seed, 3)
        assert codes
        tables["rec-" + uuid.uuid4().hex[:12]] = wire
    tables["rec-lou-" + uuid.uuid4().hex[:8]] = _golden_lou_hu()
    for table_id, wire in tables.items():
        append(client, platform, table_id, wire, size=50)
    projector.catch_up()
    recorded = 0
    for table_id, wire in tables.items():
        state = fold(wire)
        stored = q(
            container, "SELECT count(*) FROM events WHERE table_id = %s AND ruling IS NOT NULL", table_id
        )
        assert stored[0][0] == len(state.rulings) > 0
        recorded += len(state.rulings)
        rows = q(
            container,
            "SELECT settlement FROM proj_hand_settlements WHERE table_id = %s ORDER BY ordinal",
            table_id,
        )
        expected = [msgspec.json.decode(msgspec.json.encode(s)) for s in state.settlements]
        assert [r[0] for r in rows] == expected
        code, doc = settle_lines([json.dumps(e).encode() for e in wire])
        assert code == 0 and [r[0] for r in rows] == json.loads(json.dumps(doc["hands"]))
        # the per-hand snapshots are the checked fold's states after each hand_started (of the
        # events as stored: table_opened with its rules pinned)
        events = [decode_event(e.body) for e in container.store.read_table(tenant, table_id, 0, 10_000)]
        assert len(events) == len(wire)
        state = engine.fold(events)
        starts = [v for v, e in enumerate(events, 1) if type(e).__name__ == "HandStarted"]
        assert len(starts) == state.hand_no
        with container.pool.connection() as conn:
            for version in starts:  # what a reader finds at each hand start: that hand's state
                found = snapshots.latest(conn, tenant, table_id, version)
                assert found is not None and found[0] == version
                assert found[1] == engine.encode_state(engine.fold(events[:version]))
        # a restarted projector refolds the table from the store (read_table, stored rulings)
        ctx = Projector(container.pool, container.store, engine)._ctx(tenant, table_id, len(wire) + 1)
        assert ctx.state == state and ctx.failures == 0
    assert recorded >= 10


def test_an_unreadable_event_is_logged_and_skipped(private_db: tuple[Any, str], monkeypatch: Any) -> None:
    """A stored row the engine cannot apply (changed behind the service's back) must not stop the
    read models: the projector logs it and moves on, in its batches and in a refold."""
    import psycopg
    import structlog
    from structlog.testing import capture_logs

    from projections import projector as projector_module

    store, url = private_db
    projector = Projector(store.pool, store, engine)
    projector.catch_up()
    good = {f"ok-{uuid.uuid4().hex[:8]}": simulated(6100 + i, 1) for i in range(2)}
    broken = "bad-" + uuid.uuid4().hex[:8]
    first, second = list(good.items())
    store.append("acme", first[0], 0, [convert(e) for e in first[1]])
    store.append("acme", broken, 0, [convert(e) for e in simulated(6200, 1)])
    n = len(simulated(6200, 1))
    with psycopg.connect(url, autocommit=True) as conn:
        for version, body, ruling in (
            (n + 1, '{"type": "tile_discarded", "id": "x1", "seat": 0, "tile": "ZZ"}', None),
            (n + 2, '{"type": "table_closed", "id": "x2"}', '{"rule": 5}'),
        ):
            conn.execute(
                "INSERT INTO events (tenant, table_id, version, event_id, type, body, ruling, hash) "
                "VALUES ('acme', %s, %s, %s, 'x', %s, %s, decode(repeat('00', 32), 'hex'))",
                (broken, version, f"x{version}", body, ruling),
            )
    store.append("acme", second[0], 0, [convert(e) for e in second[1]])
    with capture_logs() as captured:
        monkeypatch.setattr(projector_module, "log", structlog.get_logger("kwx.projector"))
        projector.catch_up()
        unreadable = [e for e in captured if e["event"] == "projector_event_unreadable"]
        assert [(e["table_id"], e["version"]) for e in unreadable] == [(broken, n + 1), (broken, n + 2)]
        with psycopg.connect(url) as conn:
            settled = dict(
                conn.execute("SELECT table_id, count(*) FROM proj_hand_settlements GROUP BY 1").fetchall()
            )
            (in_log,) = conn.execute("SELECT count(*) FROM events").fetchone()  # type: ignore[misc]
        assert settled == {first[0]: 1, broken: 1, second[0]: 1}
        assert set(projector.checkpoints().values()) == {max(projector.checkpoints().values())}
        with psycopg.connect(url) as conn:
            counted = conn.execute("SELECT DISTINCT events FROM projection_checkpoints").fetchall()
        assert counted == [(in_log,)]
        # a refold (a restarted projector) skips them too, and says so again
        ctx = Projector(store.pool, store, engine)._ctx("acme", broken, n + 3)
        assert (ctx.version, ctx.failures, ctx.state.version) == (n + 2, 2, n)
        assert len([e for e in captured if e["event"] == "projector_event_unreadable"]) == 4
