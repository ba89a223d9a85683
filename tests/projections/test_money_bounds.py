"""Money at the top of every range goes through settlement, ledger and statistics exactly (a real
PostgreSQL, appended through the API, the projector run as the other projection tests run it); and
the discrepancy feed shows every reported line, self-transfers included, one comparison per
``settlement_reported``."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import msgspec
import pytest

from domain import engine, money, rule_options
from domain.events import MAX_BASE, convert
from projections.projector import Projector
from tests.projections.helpers import append
from tests.service.test_input_semantics import largest_rules

pytestmark = pytest.mark.db

PLAYERS = ("mia", "noa", "oli", "pat")


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def q(container: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with container.pool.connection() as conn:
        return conn.execute(sql, params).fetchall()


def caught_up(container: Any, projector: Projector, table_ids: list[str]) -> None:
    """Run the projector until every read model's checkpoint is past every event of ``table_ids``
    (a catch-up can stop early while another transaction of the cluster holds the log back)."""
    from projections import registry
    from tests.service.serving import wait_for

    def done() -> bool:
        projector.catch_up()
        (behind, models), = q(
            container,
            "SELECT (SELECT count(*) FROM events e WHERE e.table_id = ANY(%s) AND EXISTS ("
            " SELECT 1 FROM projection_checkpoints c WHERE c.name = ANY(%s)"
            " AND (e.tx_id, e.position) > (c.tx_id::text::xid8, c.position))),"
            " (SELECT count(*) FROM projection_checkpoints WHERE name = ANY(%s))",
            table_ids, list(registry.NAMES), list(registry.NAMES),
        )  # fmt: skip
        return behind == 0 and models == len(registry.NAMES)

    wait_for(done, 120, "the read models did not reach the test's tables in 120 s", every=0.05)


def largest_table(seed: int, table_id: str) -> list[dict[str, Any]]:
    """A simulated table opened with every range at its largest: base 10^6, 漂 1000 for every seat,
    equal dice every hand (上楼 doubles the base on them)."""
    from domain.simulate import simulate_table

    rng = random.Random(seed)
    events = simulate_table(rng, 6, largest_rules(), table_id)
    events[0] = dict(events[0], base=MAX_BASE, players=rng.sample(PLAYERS, 3))
    for i, e in enumerate(events):
        if e["type"] == "hand_started":
            events[i] = dict(e, piao=[rule_options.MAX_PIAO] * 3, dice=[6, 6])
        if e["type"] == "settlement_reported":  # the report of the original stream no longer holds
            events[i] = dict(e, transfers=[{"from": 0, "to": 1, "amount": 1}])
    return events


def test_largest_ranges_through_every_read_model(
    client: Any, container: Any, platform: dict[str, str], tenant: str, projector: Projector
) -> None:
    tables = {}
    for seed in range(8):
        table_id = "big-" + uuid.uuid4().hex[:10]
        tables[table_id] = largest_table(700 + seed, table_id)
        append(client, platform, table_id, tables[table_id])
    caught_up(container, projector, list(tables))
    net: Counter[str] = Counter()
    house = 0
    largest = 0
    for table_id, events in tables.items():
        state = engine.fold([convert(e) for e in events])
        sql = "SELECT settlement FROM proj_hand_settlements WHERE table_id = %s ORDER BY ordinal"
        rows = q(container, sql, table_id)
        expected = [msgspec.json.decode(msgspec.json.encode(s)) for s in state.settlements]
        assert [r[0] for r in rows] == expected
        players = events[0]["players"]
        for s in state.settlements:
            house += s.house
            for seat in range(3):
                net[players[seat]] += s.net[seat]
            largest = max([largest, *(t.amount for t in s.transfers)])
    assert 2**32 < largest < money.MAX_HAND_COINS  # more than 32 bits hold, inside the bound
    accounts = dict(q(container, "SELECT account, balance FROM proj_ledger_accounts WHERE tenant = %s "
                                 "AND account_kind = 'player'", tenant))  # fmt: skip
    assert accounts == {p: n for p, n in net.items()}
    (house_balance,) = q(container, "SELECT coalesce(sum(balance), 0) FROM proj_ledger_accounts "
                                    "WHERE tenant = %s AND account_kind = 'house'", tenant)[0]  # fmt: skip
    assert int(house_balance) == house > 0  # the service fee of 1000 × base, every hand
    assert sum(accounts.values()) + house == 0
    # every entry's running balance is the sum of the entries before it
    for player in accounts:
        sql = ("SELECT amount, balance FROM proj_ledger_entries WHERE tenant = %s AND account = %s "
               "AND account_kind = 'player' ORDER BY seq")  # fmt: skip
        amounts = q(container, sql, tenant, player)
        running = 0
        for amount, balance in amounts:
            running += amount
            assert balance == running
        assert running == net[player]
    stats = dict(q(container, "SELECT player_id, sum(net_coins) FROM proj_player_stats WHERE tenant = %s "
                              "GROUP BY player_id", tenant))  # fmt: skip
    assert {p: int(v) for p, v in stats.items()} == dict(net)


def test_the_feed_shows_every_reported_line_and_each_report_on_its_own(
    client: Any, container: Any, make_key: Any, tenant: str, platform: dict[str, str], projector: Projector
) -> None:
    from tests.service.streams import legal_table

    events = legal_table(61, 2)
    i = next(i for i, e in enumerate(events) if e["type"] == "settlement_reported")
    table_id = "rep-" + uuid.uuid4().hex[:10]
    events = [dict(e, id=f"{table_id}-{n}") for n, e in enumerate(events)]
    state = engine.fold([convert(e) for e in events[: i + 1]])
    hand = events[i]["hand"]
    settled = next(s for s in reversed(state.settlements) if s.hand == hand)
    right = [{"from": t.from_, "to": t.to, "amount": t.amount} for t in settled.transfers]
    assert right, "the hand moved coins"
    reports = [
        right,  # correct: no row
        [*right, {"from": 1, "to": 1, "amount": 7}],  # correct plus a self-transfer
        [{"from": 2, "to": 2, "amount": 3}],  # a self-transfer only
        [dict(right[0], amount=right[0]["amount"] + 5), *right[1:]],  # five coins too many
        right,  # correct again: no row
    ]
    extra = [{"type": "settlement_reported", "id": f"{table_id}-r{n}", "hand": hand, "transfers": t}
             for n, t in enumerate(reports)]  # fmt: skip
    events = [*events[:i], *extra, *events[i + 1 :]]
    append(client, platform, table_id, events)
    caught_up(container, projector, [table_id])
    support = make_key(tenant, "support")
    feed = client.get("/v1/discrepancies", headers=support).json()["discrepancies"]
    rows = {d["reported_event"]: d for d in feed if d["table_id"] == table_id}
    first = i + 1  # the version of the first extra report
    assert sorted(rows) == [first + 1, first + 2, first + 3]
    with_self = rows[first + 1]
    assert with_self["lines"] == [{"from": 1, "to": 1, "computed": 0, "reported": 7, "difference": 7}]
    assert with_self["reported"] == reports[1]  # every line as reported, in order
    assert rows[first + 2]["lines"][-1] == {"from": 2, "to": 2, "computed": 0, "reported": 3, "difference": 3}
    assert rows[first + 2]["reported"] == reports[2]
    assert [abs(line["difference"]) for line in rows[first + 3]["lines"]] == [5]  # one pair, 5 coins
