"""The pure halves of the read models: given a hand-built §2 settlement (and hand record) → when
projected → then the rows. No database."""

from __future__ import annotations

from domain.facts import (
    Declaration,
    HandRecord,
    KongRecord,
    PatternOut,
    Settlement,
    Transfer,
    WinOut,
    WinRecord,
)
from domain.scoring import PatternHit, Score
from domain.tiles import tile
from projections import discrepancies, feed, ledger, player_stats
from projections.model import (
    EventRef,
    HandSettled,
    LouHuIncurred,
    ReportedLine,
    SettlementCompared,
    TableInfo,
)

INFO = TableInfo(table_id="t1", tenant="acme", players=("alice", "bob", "carol"), preset="default", base=1)


def _score(mult: int, *patterns: tuple[str, int]) -> Score:
    return Score(
        patterns=tuple(PatternHit(id=p, x=x) for p, x in patterns),
        multiplier=mult, capped=min(mult, 8), payable=min(mult, 8), allowed=True, min_required=2,
    )  # fmt: skip


def _robbed_kong_hand() -> HandSettled:
    """Seat 1 makes an added kong of 7s at event 11 and seat 2 robs it (抢杠胡 ×2): bob pays 2;
    earlier seat 0 made a concealed kong of C at event 5 (each other pays 2)."""
    score = _score(2, ("qiang_gang_hu", 2))
    record = HandRecord(
        hand=1, dealer=0, base=1, start_event=2, end="hu", end_event=12,
        kongs=(
            KongRecord(seat=0, kind="concealed", tile=tile("C"), event=5),
            KongRecord(seat=1, kind="added", tile=tile("7s"), event=11, robbed=True),
        ),
        wins=(WinRecord(seat=2, source=1, tile=tile("7s"), event=12, score=score, robbed_kong=True),),
    )  # fmt: skip
    settlement = Settlement(
        hand=1, end="hu", dealer=0, next_dealer=2,
        wins=(WinOut(seat=2, from_=1, tile="7s", patterns=(PatternOut(id="qiang_gang_hu", x=2),),
                     multiplier=2, payable=2, capped=2, event=12),),
        transfers=(
            Transfer(from_=1, to=0, amount=2, reason="kong", event=5),
            Transfer(from_=2, to=0, amount=2, reason="kong", event=5),
            Transfer(from_=1, to=2, amount=2, reason="hu", event=12),
        ),
        net=(4, -4, 0),
    )  # fmt: skip
    return HandSettled(
        info=INFO, at=EventRef(version=12, position=99), ordinal=1, settlement=settlement, record=record
    )


def _double_win_bao_hu() -> HandSettled:
    """一炮双响 on alice's discard at event 40: bob (亮倒, 包胡 discarder_pays_double) ×4 → 8 coins,
    carol ×2 → 2 coins; plus a service fee of 1 each to the house at event 2."""
    bob = _score(4, ("liang_dao", 2), ("peng_peng_hu", 2))
    carol = _score(2, ("ka_wu_xing", 2))
    record = HandRecord(
        hand=2, dealer=0, base=1, start_event=2, end="hu", end_event=40,
        wins=(
            WinRecord(seat=1, source=0, tile=tile("5p"), event=40, score=bob, liang_dao=True),
            WinRecord(seat=2, source=0, tile=tile("5p"), event=40, score=carol),
        ),
        declarations=(Declaration(seat=1, event=30),),
    )  # fmt: skip
    settlement = Settlement(
        hand=2, end="hu", dealer=0, next_dealer=0,
        wins=(
            WinOut(seat=1, from_=0, tile="5p", multiplier=4, payable=4, capped=4, event=40,
                   patterns=(PatternOut(id="liang_dao", x=2), PatternOut(id="peng_peng_hu", x=2)),
                   bao_hu="discarder_pays_double"),
            WinOut(seat=2, from_=0, tile="5p", multiplier=2, payable=2, capped=2, event=40,
                   patterns=(PatternOut(id="ka_wu_xing", x=2),)),
        ),
        transfers=(
            Transfer(from_=0, to="house", amount=1, reason="fee", event=2),
            Transfer(from_=1, to="house", amount=1, reason="fee", event=2),
            Transfer(from_=2, to="house", amount=1, reason="fee", event=2),
            Transfer(from_=0, to=1, amount=8, reason="hu", event=40),
            Transfer(from_=0, to=2, amount=2, reason="hu", event=40),
        ),
        net=(-11, 7, 1), house=3,
    )  # fmt: skip
    return HandSettled(
        info=INFO, at=EventRef(version=41, position=150), ordinal=2, settlement=settlement, record=record
    )


def test_the_feeds_settlement_entry_carries_the_contract_object() -> None:
    """The one stored copy of a settled hand (``proj_hand_settlements`` is a view of these entries):
    the hand's fields in the view's column order, then the §2 object."""
    fact = _robbed_kong_hand()
    (row,) = feed.rows(fact)
    assert (row["kind"], row["table_id"], row["version"]) == ("settlement", "t1", fact.at.version)
    body = row["body"]
    assert list(body) == ["ordinal", "hand", "preset", "end_kind", "dealer", "next_dealer", "players", "net",
                          "house", "settlement"]  # fmt: skip
    assert body["ordinal"] == 1 and body["hand"] == 1
    assert body["settlement"]["wins"][0]["from"] == 1
    assert body["settlement"]["transfers"][2] == {
        "from": 1, "to": 2, "amount": 2, "reason": "hu", "event": 12, "detail": "", "detail_zh": ""
    }  # fmt: skip
    assert body["net"] == [4, -4, 0] and body["end_kind"] == "hu"


def test_ledger_books_every_transfer_twice_and_sums_to_zero() -> None:
    entries = ledger.entries(_double_win_bao_hu())
    assert len(entries) == 10
    assert sum(e.amount for e in entries) == 0
    house = [e for e in entries if e.account_kind == "house"]
    assert [e.amount for e in house] == [1, 1, 1]
    assert {e.counterparty for e in house} == {"alice", "bob", "carol"}


def test_ledger_running_balance_continues_from_opening_balances() -> None:
    batch = ledger.entries(_robbed_kong_hand()) + ledger.entries(_double_win_bao_hu())
    opening = {("acme", "player", "alice"): (100, 7)}
    rows, closing = ledger.with_balances(batch, opening)
    alice = [r for r in rows if r["account"] == "alice"]
    assert [r["amount"] for r in alice] == [2, 2, -1, -8, -2]
    assert [r["balance"] for r in alice] == [102, 104, 103, 95, 93]
    assert [r["seq"] for r in alice] == [8, 9, 10, 11, 12]
    assert closing[("acme", "player", "alice")] == (93, 12)
    assert closing[("acme", "house", "house")] == (3, 3)
    # the balances of all accounts after the batch still sum to the opening sum
    assert sum(b for b, _ in closing.values()) == 100


def test_player_stats_of_a_robbed_kong() -> None:
    merged = player_stats.merge(player_stats.rows(_robbed_kong_hand()))
    alice, bob, carol = (merged[("acme", p, "default", None)] for p in ("alice", "bob", "carol"))
    assert carol.counters["wins"] == 1 and carol.counters["wins_robbed_kong"] == 1
    assert "wins_discard" not in carol.counters and "deal_ins" not in bob.counters
    assert bob.counters["robbed_kongs"] == 1 and "kongs_added" not in bob.counters
    assert alice.counters["kongs_concealed"] == 1 and alice.counters["hands_dealt"] == 1
    assert carol.patterns == {"qiang_gang_hu": 1}
    assert [d.counters["hands_played"] for d in (alice, bob, carol)] == [1, 1, 1]
    assert (alice.counters["net_coins"], bob.counters["net_coins"]) == (4, -4)
    assert carol.max_multiplier == 2


def test_player_stats_of_a_double_win_with_bao_hu() -> None:
    merged = player_stats.merge(player_stats.rows(_double_win_bao_hu()))
    alice, bob, carol = (merged[("acme", p, "default", None)] for p in ("alice", "bob", "carol"))
    assert alice.counters["deal_ins"] == 1 and alice.counters["deal_ins_double"] == 1
    assert alice.counters["bao_hu_paid"] == 1 and alice.counters["bao_hu_coins"] == 8
    assert bob.counters["wins_double"] == 1 and carol.counters["wins_double"] == 1
    assert bob.counters["liang_dao_declared"] == 1 and bob.counters["liang_dao_won"] == 1
    assert "liang_dao_won" not in carol.counters
    assert bob.counters["sum_multiplier"] == 4 and bob.patterns == {"liang_dao": 1, "peng_peng_hu": 1}
    assert alice.counters["coins_lost"] == 11 and alice.counters["net_coins"] == -11


def test_stats_merge_sums_counters_and_keeps_the_max() -> None:
    deltas = player_stats.rows(_robbed_kong_hand()) + player_stats.rows(_double_win_bao_hu())
    deltas += player_stats.rows(LouHuIncurred(info=INFO, at=EventRef(version=9, position=9), seat=2, hand=1))
    carol = player_stats.merge(deltas)[("acme", "carol", "default", None)]
    assert carol.counters["wins"] == 2 and carol.counters["hands_played"] == 2
    assert carol.counters["lou_hu_incurred"] == 1
    assert carol.patterns == {"qiang_gang_hu": 1, "ka_wu_xing": 1}


def test_aborted_hand_counts_only_as_aborted() -> None:
    s = Settlement(hand=3, end="aborted", dealer=1, next_dealer=1, wins=(), transfers=(), net=(0, 0, 0))
    fact = HandSettled(info=INFO, at=EventRef(version=5, position=5), ordinal=3, settlement=s)
    deltas = player_stats.rows(fact)
    assert all(d.counters == {"hands_aborted": 1} for d in deltas) and len(deltas) == 3
    assert ledger.entries(fact) == []


def test_discrepancy_lines_compare_net_flows_per_pair() -> None:
    computed = _double_win_bao_hu().settlement
    reported = (
        ReportedLine(from_=0, to=1, amount=4),  # the platform paid 包胡 as a normal discard
        ReportedLine(from_=0, to=2, amount=2),
        ReportedLine(from_=0, to="house", amount=1),
        ReportedLine(from_=1, to="house", amount=1),
        ReportedLine(from_=2, to="house", amount=1),
    )
    fact = SettlementCompared(
        info=INFO, at=EventRef(version=43, position=160), hand=2, reported_event=43, reported=reported,
        computed=computed,
    )  # fmt: skip
    (row,) = discrepancies.rows(fact)
    assert row["lines"] == [{"from": 0, "to": 1, "computed": 8, "reported": 4, "difference": -4}]
    assert row["net_computed"]["0"] == -11 and row["net_reported"]["0"] == -7


def test_matching_report_gives_no_discrepancy() -> None:
    computed = _robbed_kong_hand().settlement
    # reported as one net line per pair: 1→0 2, 2→0 2, 1→2 2
    reported = tuple(ReportedLine(from_=t.from_, to=t.to, amount=t.amount) for t in computed.transfers)
    fact = SettlementCompared(
        info=INFO, at=EventRef(version=13, position=100), hand=1, reported_event=13, reported=reported,
        computed=computed,
    )  # fmt: skip
    assert discrepancies.rows(fact) == []
    # the same money reported with the pair reversed and netted still matches
    assert discrepancies.compare([(0, 1, 5), (1, 0, 2)], [(0, 1, 3)]) == []


def test_the_day_of_a_hand_is_the_utc_date_of_its_at() -> None:
    import datetime

    from projections.player_stats import day_of

    assert day_of(None) is None
    assert day_of("2026-11-30T23:30:00-02:00") == datetime.date(2026, 12, 1)
    assert day_of("2026-12-01t00:30:00+08:00") == datetime.date(2026, 11, 30)
    assert day_of("2026-12-31 23:59:60Z") == datetime.date(2026, 12, 31)  # a leap second
    assert day_of("9999-12-31T23:00:00-05:00") == datetime.date(9999, 12, 31)  # UTC would be year 10000
    assert day_of("0001-01-03T00:30:00+01:00") == datetime.date(1, 1, 2)  # UTC: 0001-01-02 23:30
    assert day_of("0001-01-02T00:30:00+01:00") is None  # UTC: 0001-01-01, the totals rows' day
    assert day_of("0001-01-01T12:00:00Z") is None  # the totals rows' day is no hand's day
    assert day_of("0000-06-01T00:00:00Z") is None  # a time the admission lets through: no day, no crash


def test_discovery_numbers_new_tables_per_tenant_and_keeps_known_ones() -> None:
    from projections import discovery

    def table(tenant: str, table_id: str, players: list[str]) -> dict[str, object]:
        return {"tenant": tenant, "table_id": table_id, "players": players}

    tables = [
        table("acme", "t-9", ["a", "b", "c"]),  # known: keeps its seq, no player rows again
        table("acme", "t-10", ["a", "b", "a"]),  # one player in two seats: one row
        table("beta", "t-1", ["x", "y", "z"]),  # another tenant: its own numbers
        table("acme", "t-11", ["c", "d", "e"]),
    ]
    players = discovery.number(tables, ({("acme", "t-9"): 4}, {"acme": 7, "beta": 0}))
    assert [(t["tenant"], t["table_id"], t["seq"]) for t in tables] == [
        ("acme", "t-9", 4), ("acme", "t-10", 8), ("beta", "t-1", 1), ("acme", "t-11", 9)
    ]  # fmt: skip
    assert [(p["tenant"], p["player_id"], p["seq"], p["table_id"]) for p in players] == [
        ("acme", "a", 8, "t-10"), ("acme", "b", 8, "t-10"),
        ("beta", "x", 1, "t-1"), ("beta", "y", 1, "t-1"), ("beta", "z", 1, "t-1"),
        ("acme", "c", 9, "t-11"), ("acme", "d", 9, "t-11"), ("acme", "e", 9, "t-11"),
    ]  # fmt: skip
