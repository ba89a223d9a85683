"""The read endpoints over HTTP against a real PostgreSQL: state at any event (stepping equals
jumping, seat views, roles), settlements with derivations and other house rules, the audit of the
conformance and golden streams, statistics, ledgers, the leaderboard and the discrepancy feed."""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import convert
from projections import wording
from projections.projector import Projector
from projections.views import full_view, seat_view
from tests.projections.helpers import append, simulated
from tests.service.streams import CONFORMANCE, GOLDEN, expectation, load

pytestmark = pytest.mark.db

_VOLATILE = ("table_id", "at", "latest", "folded_from")


def _json(x: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(x))


@pytest.fixture()
def support(make_key: Any, tenant: str) -> dict[str, str]:
    return make_key(tenant, "support")  # type: ignore[no-any-return]


@pytest.fixture()
def dashboard(make_key: Any, tenant: str) -> dict[str, str]:
    return make_key(tenant, "dashboard")  # type: ignore[no-any-return]


@pytest.fixture()
def projector(container: Any) -> Projector:
    return Projector(container.pool, container.store, engine)


def _new_table(client: Any, platform: dict[str, str], events: list[dict[str, Any]]) -> str:
    table_id = "rd-" + uuid.uuid4().hex[:12]
    append(client, platform, table_id, events)
    return table_id


def test_stepping_through_a_table_equals_jumping_to_each_event(
    client: Any, platform: dict[str, str], support: dict[str, str], projector: Projector
) -> None:
    events = simulated(321, 3)
    table_id = _new_table(client, platform, events)
    projector.catch_up()  # per-hand snapshots exist: jumps start from them
    state = engine.initial()
    from_snapshot = 0
    for n, e in enumerate(events, start=1):
        state = engine.step(state, convert(e))[0]  # stepping 1, 2, … n
        full = client.get(f"/v1/tables/{table_id}/state", params={"at": n}, headers=support).json()
        from_snapshot += full["folded_from"] > 0
        assert {k: v for k, v in full.items() if k not in _VOLATILE} == _json(full_view(state))
        seat = n % 3
        seen = client.get(
            f"/v1/tables/{table_id}/state", params={"at": n, "seat": seat}, headers=platform
        ).json()
        assert {k: v for k, v in seen.items() if k not in _VOLATILE} == _json(seat_view(state, seat))
    assert from_snapshot > len(events) // 2
    latest = client.get(f"/v1/tables/{table_id}/state", headers=platform).json()
    assert latest["at"] == len(events) and latest["view"] == "public"


def test_read_roles_and_tenants(
    client: Any, platform: dict[str, str], support: dict[str, str], dashboard: dict[str, str], make_key: Any
) -> None:
    table_id = _new_table(client, platform, simulated(5, 1))
    stranger = make_key("other-" + uuid.uuid4().hex[:6], "support")
    assert client.get(f"/v1/tables/{table_id}/state", headers=dashboard).status_code == 403
    assert client.get(f"/v1/tables/{table_id}/audit", headers=platform).status_code == 403
    # another tenant's table is the same 404 as one that never existed (issue 11 §4)
    for route in ("state", "audit", "events", "hands/1/settlement"):
        theirs = client.get(f"/v1/tables/{table_id}/{route}", headers=stranger)
        missing = client.get(f"/v1/tables/nope-{table_id}/{route}", headers=stranger)
        assert theirs.status_code == missing.status_code == 404, route
        assert theirs.json() == {
            "error": "not_found",
            "message": f"no table {table_id!r}",
            "message_zh": f"没有这张牌桌：{table_id}",
        }, route
        assert missing.json() == {
            "error": "not_found",
            "message": f"no table 'nope-{table_id}'",
            "message_zh": f"没有这张牌桌：nope-{table_id}",
        }, route
    assert client.get("/v1/tables/nope-nope/state", headers=support).json()["error"] == "not_found"
    assert (
        client.get(f"/v1/tables/{table_id}/state", params={"at": 10**6}, headers=support).status_code == 422
    )
    assert client.get(f"/v1/tables/{table_id}/state").status_code == 401


def _settled_table(client: Any, platform: dict[str, str]) -> tuple[str, list[dict[str, Any]], Any]:
    for seed in range(40, 80):
        events = simulated(seed, 2, preset="default")
        state = engine.fold([convert(e) for e in events])
        won = [s for s in state.settlements if s.wins and s.wins[0].multiplier >= 4]
        if won:
            return _new_table(client, platform, events), events, won[0]
    raise AssertionError("no simulated hand worth ×4")


def test_settlement_with_derivation_and_under_other_rules(client: Any, platform: dict[str, str]) -> None:
    table_id, events, settlement = _settled_table(client, platform)
    url = f"/v1/tables/{table_id}/hands/{settlement.hand}/settlement"
    body = client.get(url, headers=platform).json()
    got = body["settlement"]
    assert got["net"] == list(settlement.net)
    assert [(t["from"], t["to"], t["amount"], t["reason"]) for t in got["transfers"]] == [
        (t.from_, t.to, t.amount, t.reason) for t in settlement.transfers
    ]
    win = got["wins"][0]
    assert win["derivation"]["patterns"] and win["derivation"]["decomposition"]
    # the derivation in Chinese too: each pattern by its Chinese name, the cap in words
    zh = [f"{wording.PATTERNS[p['id']][0]} ×{p['x']}" for p in win["patterns"]]
    assert (
        win["derivation"]["patterns_zh"] == zh
        and win["derivation"]["multiplier_zh"] == win["derivation"]["multiplier"]
    )
    cap = settlement.wins[0]
    rules = engine.fold([convert(e) for e in events]).rules
    assert win["derivation"]["cap_zh"] == wording.cap(
        cap.multiplier,
        cap.capped,
        cap.shu_kan,
        [p.id for p in cap.patterns],
        rules.cap,
        rules.cap_exempt,
        "zh",
    )
    assert "番" in win["derivation"]["cap_zh"]
    assert all("event_type" in t and t["detail"] for t in got["transfers"])
    # each transfer's derivation in Chinese too, as the engine said it, tiles and seats in Chinese words
    assert [t["detail_zh"] for t in got["transfers"]] == [
        wording.zh_whole(t.detail_zh) for t in settlement.transfers
    ]
    for t in got["transfers"]:
        assert t["detail_zh"].endswith(f"= {t['amount']}") and "底分" in t["detail_zh"], t
    # under other house rules: a cap of 2 can only lower the hand payment
    other = client.get(url, params={"cap": 2}, headers=platform).json()["what_if"]
    assert other["rules"]["cap"] == 2 and other["settlement"]["wins"][0]["payable"] <= win["payable"]
    expected = engine.fold([convert(e) for e in events], rules_override={"cap": 2}).settlements
    assert other["settlement"]["net"] == list(next(s for s in expected if s.hand == settlement.hand).net)
    preset = client.get(url, params={"rules": "uncapped"}, headers=platform).json()["what_if"]
    assert preset["rules"]["cap"] is None and preset["rules"]["preset"] == "uncapped"
    bad = client.get(url, params={"rules": "nowhere"}, headers=platform)
    assert bad.status_code == 422
    assert (bad.json()["error"], bad.json()["field"]) == ("bad_rules", "query.rules")
    assert client.get(url, params={"colour": "red"}, headers=platform).status_code == 422
    assert client.get(f"/v1/tables/{table_id}/hands/99/settlement", headers=platform).status_code == 404


def test_a_what_if_answers_for_hands_after_the_other_rules_would_have_dealt_otherwise(
    client: Any, platform: dict[str, str]
) -> None:
    """Under xiangyang the deal passes on otherwise than under default: the what-if of a later hand
    folds each hand as it was dealt and says so in its rulings (it was a 422 for every hand of the
    table: the page then showed no settlement at all)."""
    for seed in range(400, 440):
        events = simulated(seed, 6, "default")
        other = engine.fold([convert(e) for e in events], rules_override={"preset": "xiangyang"})
        kept = [r for r in other.rulings if r.kind == "structure"]
        if kept:
            break
    else:
        pytest.fail("no table of 40 where xiangyang would deal otherwise")
    table_id = _new_table(client, platform, events)
    starts = {i: e for i, e in enumerate(events, 1) if e["type"] == "hand_started"}
    first = kept[0]
    later = starts[first.event]["hand"]
    for hand in sorted({e["hand"] for e in starts.values()}):
        answer = client.get(
            f"/v1/tables/{table_id}/hands/{hand}/settlement", params={"rules": "xiangyang"}, headers=platform
        )
        assert answer.status_code == 200, answer.text
        what_if = answer.json()["what_if"]
        said = [(r["event"], r["code"]) for r in what_if["rulings"] if r["kind"] == "structure"]
        # up to the hand's own end: a hand before the first deal these rules would not have made has none
        assert ((first.event, "sequence") in said) == (hand >= later), (hand, said)
        want = next(s for s in other.settlements if s.hand == hand)
        assert what_if["settlement"]["net"] == list(want.net)
        assert what_if["settlement"]["dealer"] == _dealer_of(starts, hand)
    ruling = next(r for r in what_if["rulings"] if r["event"] == first.event)
    # the engine's Chinese made whole, as the timeline says seats: 庄家应为2号位 → 庄家应为丙
    assert ruling["message_zh"] == wording.zh_whole(first.message_zh, other.players)
    assert f"庄家应为{first.detail['expected']}号位" in first.message_zh
    assert f"庄家应为{wording.SEAT_ZH[first.detail['expected']]}" in ruling["message_zh"]


def _dealer_of(starts: dict[int, dict[str, Any]], hand: int) -> int:
    return int(next(e["dealer"] for e in starts.values() if e["hand"] == hand))


def _streams() -> list[Path]:
    """The conformance and golden streams that are accepted whole (a stream that must be rejected
    has no audit: its rejection is tested in tests/test_conformance_streams.py)."""
    paths = sorted(CONFORMANCE.glob("*.jsonl")) + sorted(GOLDEN.glob("*.jsonl"))
    return [p for p in paths if "error" not in expectation(p)]


@pytest.mark.parametrize("path", _streams(), ids=lambda p: p.stem)
def test_audit_of_the_conformance_and_golden_streams(
    client: Any, platform: dict[str, str], support: dict[str, str], path: Path
) -> None:
    events = load(path)
    table_id = _new_table(client, platform, events)
    state = engine.fold([convert(e) for e in events])
    audit = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()
    assert audit["hash_chain"]["ok"] is True and audit["version"] == len(events)
    lou = {(x.hand, x.seat, x.event): x for x in state.lou_hu_log}
    if state.hand is not None:
        lou.update({(x.hand, x.seat, x.event): x for x in state.hand.lou_hu_log})
    assert len(audit["lou_hu"]) == len(lou)
    for item in audit["lou_hu"]:
        x = lou[(item["hand"], item["seat"], item["passed"]["event"])]
        assert item["passed"]["from"] == x.source and item["would_have_paid"]["multiplier"] == x.multiplier
        if x.lifted_by is not None:
            lifted = events[x.lifted_by - 1]
            assert lifted["type"] == "tile_drawn" and item["lifted_by"] == {
                "event": x.lifted_by,
                "tile": lifted["tile"],
            }
    audited = [k for chain in audit["kong_chains"] for k in chain["kongs"]]
    if state.hand is not None:
        last_hand = [
            (k["event"], k["k"])
            for c in audit["kong_chains"]
            if c["hand"] == state.hand.hand
            for k in c["kongs"]
        ]
        assert last_hand == [(k.event, k.chain) for k in state.hand.record.kongs]
    for k in audited:
        cap = audit["rules"]["kong_chain_cap"]
        assert k["factor"] == min(2 ** (k["k"] - 1), cap or 2**30) and (k["coins"] or k["robbed"])
    zh = client.get(f"/v1/tables/{table_id}/audit", headers={**support, "Accept-Language": "zh-CN,en;q=0.5"})
    assert zh.headers["content-language"] == "zh" and zh.json()["lang"] == "zh"
    for item in zh.json()["lou_hu"]:
        assert "漏胡" in item["message"]


def test_the_golden_kong_chain_and_lou_hu_are_explained(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    table_id = _new_table(client, platform, load(GOLDEN / "kong-chain.jsonl"))
    chains = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()["kong_chains"]
    (chain,) = [c for c in chains if c["length"] > 1]
    assert [(k["kind"], k["k"], k["factor"]) for k in chain["kongs"]] == [
        ("concealed", 1, 1), ("concealed", 2, 2), ("exposed", 3, 4)
    ]  # fmt: skip
    assert chain["total_coins"] == 2 + 2 + 4 + 4 + 8
    table_id = _new_table(client, platform, load(GOLDEN / "lou-hu-then-self-draw.jsonl"))
    (lou,) = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()["lou_hu"]
    assert lou["passed"]["tile"] == "5p" and lou["would_have_paid"]["multiplier"] >= 2


def test_stats_ledger_leaderboard_and_discrepancies(
    client: Any,
    platform: dict[str, str],
    dashboard: dict[str, str],
    support: dict[str, str],
    projector: Projector,
) -> None:
    tables = {_new_table(client, platform, ev): ev for ev in (simulated(900 + i, 2) for i in range(30))}
    projector.catch_up()
    states = {t: engine.fold([convert(e) for e in ev]) for t, ev in tables.items()}
    player = tables[next(iter(tables))][0]["players"][0]
    stats = client.get(f"/v1/players/{player}/stats", headers=dashboard).json()
    hands = wins = net = 0
    for t, ev in tables.items():
        seats = [i for i, p in enumerate(ev[0]["players"]) if p == player]
        for s in states[t].settlements:
            if s.end == "aborted":
                continue
            for seat in seats:
                hands += 1
                net += s.net[seat]
                wins += sum(1 for w in s.wins if w.seat == seat)
    overall = stats["overall"]
    assert (overall["hands_played"], overall["wins"], overall["net_coins"]) == (hands, wins, net)
    assert overall["ratios"]["win_rate"] == round(wins / hands, 4)
    assert sum(p["hands_played"] for p in stats["presets"].values()) == hands
    # every pattern won, by name in both languages: the names the settlements and timelines use
    won = {p.id for s in states.values() for x in s.settlements for w in x.wins for p in w.patterns
           if w.seat in [i for i, q in enumerate(s.players) if q == player]}  # fmt: skip
    assert set(overall["patterns"]) == won and won
    assert stats["pattern_names"] == {
        k: {"zh": wording.PATTERNS[k][0], "en": wording.PATTERNS[k][1]} for k in overall["patterns"]
    }
    # the ledger, page by page, with its running balance
    entries: list[dict[str, Any]] = []
    after = 0
    while True:
        page = client.get(
            f"/v1/players/{player}/ledger", params={"after": after, "limit": 7}, headers=dashboard
        )
        body = page.json()
        entries += body["entries"]
        if body["next_after"] is None:
            break
        after = body["next_after"]
    running = 0
    for entry in entries:
        running += entry["amount"]
        assert entry["balance"] == running
    assert running == body["balance"] == net
    board = client.get("/v1/leaderboard", headers=dashboard).json()["players"]
    assert [p["net_coins"] for p in board] == sorted((p["net_coins"] for p in board), reverse=True)
    assert any(p["player_id"] == player and p["net_coins"] == net for p in board)
    house = client.get("/v1/house/ledger", headers=dashboard)  # empty unless some preset charged a fee
    assert house.status_code == 200
    total = sum(p["net_coins"] for p in board) + house.json()["balance"]
    assert total == 0  # the whole ledger of the tenant sums to zero
    feed = client.get("/v1/discrepancies", headers=support).json()["discrepancies"]
    reported_wrong = set()
    for t, state in states.items():
        for rep in state.reported:
            computed = next(s for s in reversed(state.settlements) if s.hand == rep.hand)
            from projections.discrepancies import compare

            if compare([(x.from_, x.to, x.amount) for x in computed.transfers], list(rep.transfers)):
                reported_wrong.add((t, rep.hand))
    assert {(d["table_id"], d["hand"]) for d in feed} == reported_wrong
    assert client.get("/v1/discrepancies", headers=dashboard).status_code == 403


def _pages(client: Any, url: str, headers: dict[str, str], limit: int) -> tuple[list[dict[str, Any]], Any]:
    """Every entry of a ledger, ``limit`` at a time, and the last page's body."""
    entries: list[dict[str, Any]] = []
    after = 0
    while True:
        body = client.get(url, params={"after": after, "limit": limit}, headers=headers).json()
        entries += body["entries"]
        if body["next_after"] is None:
            return entries, body
        after = body["next_after"]


def test_a_ledger_entry_says_its_transfer_in_both_languages_as_the_settlement_does(
    client: Any, platform: dict[str, str], dashboard: dict[str, str], projector: Projector
) -> None:
    """Every entry of every account (players and the house) says its transfer's derivation as the
    settlement route says that transfer — ``detail`` the engine's English, ``detail_zh`` its
    Chinese made whole (tiles ``5筒``, seats 甲乙丙, no wire name left) — and every transfer is
    booked twice. 漂 (platform_3d), a fee, kong money and the plain presets among them."""
    from domain.simulate import simulate_table

    streams = [
        simulated(seed, 3, preset=p) for seed in range(3) for p in ("platform_3d", "xiaogan", "default")
    ]
    fee = simulate_table(random.Random(7), 3, {"preset": "default", "service_fee": 2}, "fee")
    streams.append([dict(fee[0], players=["ann", "bo", "cy"]), *fee[1:]])
    tables = {_new_table(client, platform, ev): ev for ev in streams}
    projector.catch_up()
    said: dict[tuple[str, int, int], tuple[str, str]] = {}
    for table_id in tables:
        hands = client.get(f"/v1/tables/{table_id}/hands", headers=platform).json()["hands"]
        for h in hands:
            if h.get("end") in (None, "aborted"):
                continue
            got = client.get(f"/v1/tables/{table_id}/hands/{h['hand']}/settlement", headers=platform).json()
            for line, t in enumerate(got["settlement"]["transfers"]):
                said[(table_id, h["hand"], line)] = (t["detail"], t["detail_zh"])
    wire = re.compile(r"(?<![A-Za-z0-9_])([1-9]+[ps]|[CFP])(?![A-Za-z0-9_])")
    booked: dict[tuple[str, int, int], int] = {}
    reasons: set[str] = set()
    accounts = [f"/v1/players/{p}/ledger" for p in sorted({p for ev in streams for p in ev[0]["players"]})]
    for url in [*accounts, "/v1/house/ledger"]:
        entries, _ = _pages(client, url, dashboard, limit=50)
        for e in entries:
            key = (e["table_id"], e["hand"], e["line"])
            assert (e["detail"], e["detail_zh"]) == said[key], (url, e)
            assert not wire.search(e["detail_zh"]) and "号位" not in e["detail_zh"], e["detail_zh"]
            assert e["detail_zh"].endswith(f"= {abs(e['amount'])}"), e["detail_zh"]
            booked[key] = booked.get(key, 0) + 1
            reasons.add(e["reason"])
    assert booked == dict.fromkeys(said, 2)  # each transfer: the payer's entry and the payee's
    assert reasons >= {"hu", "kong", "piao", "fee"}, reasons


def test_a_player_named_house_has_their_own_ledger_apart_from_the_house(
    client: Any, platform: dict[str, str], dashboard: dict[str, str], make_key: Any, projector: Projector
) -> None:
    from domain.simulate import simulate_table

    # no preset charges a service fee: table_opened asks for one (the golden 3D hand: fee 1 from
    # each seat, paid to the house) — and seat 0 is a player whose id is "house"
    golden = load(GOLDEN / "audit-3d-fee-piao-ma.jsonl")
    golden[0] = dict(golden[0], players=["house", "bob", "carol"])
    simulated_fee = simulate_table(random.Random(5), 4, {"preset": "default", "service_fee": 2}, "fee")
    simulated_fee[0] = dict(simulated_fee[0], players=["bob", "house", "carol"])
    streams = [golden, simulated_fee]
    for events in streams:
        _new_table(client, platform, events)
    projector.catch_up()
    player = house = 0  # what the settlements pay the player "house", and the house account
    fees = 0
    for events in streams:
        seat = events[0]["players"].index("house")
        for s in engine.fold([convert(e) for e in events]).settlements:
            player += s.net[seat]
            house += sum(t.amount for t in s.transfers if t.to == "house")
            fees += sum(1 for t in s.transfers if t.to == "house" and t.from_ == seat)
    assert house > 0 and fees >= 2  # the player "house" paid the house at least once per table

    mine, body = _pages(client, "/v1/players/house/ledger", dashboard, limit=3)
    assert (body["account"], body["kind"], body["balance"]) == ("house", "player", player)
    assert body["entries_total"] == len(mine) and {e["seat"] for e in mine} <= {0, 1}
    assert sum(e["amount"] for e in mine) == player == mine[-1]["balance"]
    paid = [e for e in mine if e["counterparty_kind"] == "house"]
    assert len(paid) == fees and all(e["amount"] < 0 and e["reason"] == "fee" for e in paid)

    theirs, body = _pages(client, "/v1/house/ledger", dashboard, limit=2)
    assert (body["account"], body["kind"], body["balance"]) == ("house", "house", house)
    assert body["entries_total"] == len(theirs) and all(e["seat"] is None for e in theirs)
    assert all(e["amount"] > 0 and e["reason"] == "fee" for e in theirs)
    assert {e["counterparty_kind"] for e in theirs} == {"player"}
    assert sum(e["amount"] for e in theirs) == house == theirs[-1]["balance"]
    from_the_player = [e for e in theirs if e["counterparty"] == "house"]
    assert sorted(e["amount"] for e in from_the_player) == sorted(-e["amount"] for e in paid)
    # the whole tenant still sums to zero: players (the one named "house" among them) and the house
    board = client.get("/v1/leaderboard", headers=dashboard).json()["players"]
    assert sum(p["net_coins"] for p in board) + house == 0
    assert next(p for p in board if p["player_id"] == "house")["net_coins"] == player
    # tenant-scoped like every other read
    stranger = make_key("other-" + uuid.uuid4().hex[:6], "dashboard")
    theirs_too = client.get("/v1/house/ledger", headers=stranger).json()  # its house received nothing
    assert (theirs_too["balance"], theirs_too["entries_total"], theirs_too["entries"]) == (0, 0, [])
    assert client.get("/v1/players/house/ledger", headers=stranger).json()["error"] == "not_found"


def test_events_stream_as_ndjson_for_bulk_export(client: Any, platform: dict[str, str]) -> None:
    events = simulated(12, 18)
    table_id = _new_table(client, platform, events)
    assert len(events) > 1000  # more than one page of the store
    r = client.get(
        f"/v1/tables/{table_id}/events",
        headers={**platform, "Accept": "application/x-ndjson"},
        params={"after": 3},
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [msgspec.json.decode(line) for line in r.content.splitlines()]
    assert [x["version"] for x in lines] == list(range(4, len(events) + 1))
    assert [x["id"] for x in lines] == [e["id"] for e in events[3:]]
    assert client.get(f"/v1/tables/{table_id}/events", headers=platform).json()["events"][0]["version"] == 1


def test_a_recorded_violation_is_in_the_audit_and_only_in_its_seats_view(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    events = load(GOLDEN / "lou-hu-rejected.jsonl")  # refused on a "reject" table …
    events[0] = dict(events[0], violations="record")  # … stored with its ruling on a "record" one
    table_id = _new_table(client, platform, events)
    audit = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()
    (ruling,) = audit["rulings"]
    assert (ruling["rule"], ruling["event"], ruling["type"], ruling["detail"]["seat"]) == (
        "lou_hu",
        6,
        "hu",
        2,
    )
    # in whole English (wording.en_whole): the engine's "漏胡 — … 5p" as "missed win — … 5 dots"
    said = ruling["message"]
    assert "missed win" in said and "passed" in said and "5 dots" in said
    assert not re.search(r"[\u4e00-\u9fff]", said), said
    zh = client.get(f"/v1/tables/{table_id}/audit", headers={**support, "Accept-Language": "zh"}).json()
    assert zh["rulings"][0]["message"].startswith("丙（")  # seat words 甲乙丙 (projections/wording.py)
    (lou,) = audit["lou_hu"]
    assert (lou["seat"], lou["passed"]["event"], lou["passed"]["tile"]) == (2, 3, "5p")
    url = f"/v1/tables/{table_id}/state"
    assert (
        client.get(url, params={"seat": 2}, headers=platform).json()["recorded_rulings"][0]["code"]
        == "lou_hu"
    )
    assert client.get(url, params={"seat": 0}, headers=platform).json()["recorded_rulings"] == []
    assert client.get(url, headers=platform).json()["recorded_rulings"] == []
    assert client.get(url, headers=support).json()["recorded_rulings"][0]["code"] == "lou_hu"


def test_audit_wall_checks_and_reported_settlements(
    client: Any, platform: dict[str, str], support: dict[str, str]
) -> None:
    for seed in range(300, 400):
        events = simulated(seed, 3)
        committed = [e["hand"] for e in events if e["type"] == "hand_started" and e.get("wall_sha256")]
        known = [e["hand"] for e in events if e["type"] == "hand_started" and e.get("wall")]
        if committed and known and any(e["type"] == "settlement_reported" for e in events):
            break
    table_id = _new_table(client, platform, events)
    audit = client.get(f"/v1/tables/{table_id}/audit", headers=support).json()
    walls = {w["hand"]: w for w in audit["walls"]}
    revealed = {e["hand"] for e in events if e["type"] == "hand_started"} & set(committed)
    for hand in revealed:
        w = walls[hand]
        assert w["mode"] == "committed" and w["result"] in ("ok", "not_revealed")
        if w["result"] == "ok":
            assert events[w["revealed_event"] - 1]["type"] == "wall_revealed"
    for hand in known:
        assert walls[hand]["mode"] == "known" and walls[hand]["result"] == "ok"
    state = engine.fold([convert(e) for e in events])
    assert [(s["hand"], s["reported_event"]) for s in audit["settlements"]] == [
        (r.hand, r.event) for r in state.reported
    ]
    assert all(s["status"] in ("match", "differs") for s in audit["settlements"])
