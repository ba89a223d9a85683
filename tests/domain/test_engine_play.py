"""The reducer through whole hands: given events → when → then state, facts and settlement."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import HandStarted, MaDrawn, decode
from domain.state import TableState
from domain.tiles import TILE_INDEX, TILE_NAMES, parse
from domain.walls import sha256_of
from tests.domain.engine_dsl import (
    aborted,
    burn,
    discard,
    draw,
    exhausted,
    full_wall,
    given,
    hu,
    kong,
    liang,
    opened,
    peng,
    reported,
    revealed,
    started,
    then_ok,
    when,
)
from tests.paths import GOLDEN, STREAMS


def stream(path: Path) -> list[engine.Event]:  # type: ignore[name-defined]
    return [decode(line) for line in path.read_text().splitlines() if line.strip()]


# --- conformance streams: the win patterns ------------------------------------------------------


@pytest.mark.parametrize("name", ["bao-hu-default", "double-win", "rob-kong"])
def test_conformance_streams_fold_to_the_expected_wins(name: str) -> None:
    st = engine.fold(stream(STREAMS / f"{name}.jsonl"))
    expect = json.loads((STREAMS / f"{name}.expect.json").read_text())
    assert len(st.settlements) == len(expect["hands"])
    for s, e in zip(st.settlements, expect["hands"], strict=True):
        assert s.end == e["end"] and s.next_dealer == e["next_dealer"]
        got = [(w.seat, {p.id: p.x for p in w.patterns}, w.multiplier, w.payable) for w in s.wins]
        assert got == [(w["seat"], w["patterns"], w["multiplier"], w["payable"]) for w in e["wins"]]
        assert list(s.net) == e["net"]


def test_rob_kong_facts() -> None:
    st = engine.fold(stream(STREAMS / "rob-kong.jsonl"))
    hs = st.hand
    assert hs is not None
    (k,) = hs.record.kongs
    assert (k.seat, k.kind, k.tile, k.robbed) == (1, "added", TILE_INDEX["7s"], True)
    (w,) = hs.record.wins
    assert w.robbed_kong and w.source == 1 and w.seat == 2
    assert hs.kong_money == (0, 0, 0)  # 抢的杠不算杠
    assert [m.kind for m in hs.melds[1]] == ["peng"]  # the robbed kong is a 碰 again


# --- kong chains (杠上杠) ---------------------------------------------------------------------------


def test_kong_chain_of_three_and_gang_shang_pao() -> None:
    st = engine.fold(stream(GOLDEN / "kong-chain.jsonl"))
    hs = st.hand
    assert hs is not None
    assert [(k.seat, k.kind, k.chain) for k in hs.record.kongs] == [
        (0, "concealed", 1),
        (0, "concealed", 2),
        (1, "exposed", 3),  # 直杠 of the discard seat 0 made after its replacement draw
    ]
    # 2 each ×1, 2 each ×2, then 2 × 4 from the discarder
    assert hs.kong_money == (4 + 8 - 8, -2 - 4 + 8, -2 - 4)
    (w,) = hs.record.wins
    assert w.after_kong_discard  # seat 1's discard right after its kong: 杠上炮
    assert "gang_shang_pao" in {p.id for p in w.score.patterns}


def test_chain_state_while_it_grows_and_reset_by_another_draw() -> None:
    events = stream(GOLDEN / "kong-chain.jsonl")
    st = engine.fold(events[:5])  # 暗杠 1p, replacement, 暗杠 2p
    assert st.hand is not None and st.hand.chain is not None
    assert (st.hand.chain.seat, st.hand.chain.length, st.hand.chain.factor) == (0, 2, 2)
    st = engine.fold(events[:7])  # …replacement 5s, discard 9s: a 直杠 of it would continue
    assert st.hand is not None and st.hand.chain is not None and st.hand.chain.stage == "discard"
    st = then_ok(st, draw(1, "3s"))  # nobody kongs the 9s: the chain is over
    assert st.hand is not None and st.hand.chain is None


def test_kong_after_other_play_starts_a_new_chain() -> None:
    st = engine.fold(stream(STREAMS / "rob-kong.jsonl")[:-1])
    assert st.hand is not None and st.hand.record.kongs[-1].chain == 1
    assert st.hand.phase == "rob"
    # nobody robs: the replacement draw closes the rob window, kong money stands (1 each)
    st = then_ok(st, draw(1, "9s"))
    assert st.hand is not None and st.hand.kong_money == (-1, 2, -1)


def test_kong_chain_cap() -> None:
    events = stream(GOLDEN / "kong-chain.jsonl")
    st = engine.fold(events[:8], rules_override={"kong_chain_cap": 2})
    assert st.hand is not None and st.hand.chain is not None
    assert (st.hand.chain.length, st.hand.chain.factor) == (3, 2)


# --- 亮倒 -----------------------------------------------------------------------------------------

LD = ("123456789p 2345s F", "12378p 456s CCC 99s", "44p 55p 11s 22s FFF PP")


def declared(hidden: str = "") -> TableState:
    return given(opened(), started(*LD), discard(0, "F"), draw(1, "P"), liang(1, "P", hidden))


def test_liang_dao_fixes_waits_and_is_recorded() -> None:
    st = declared()
    hs = st.hand
    assert hs is not None and hs.liang_dao[1] is not None
    assert hs.liang_dao[1].waits == (TILE_INDEX["6p"], TILE_INDEX["9p"])
    assert [(d.seat, d.event) for d in hs.record.declarations] == [(1, 5)]


def test_declarer_may_kong_an_independent_triplet_then_must_discard_the_replacement() -> None:
    st = then_ok(declared(), draw(2, "1s"), discard(2, "1s"), draw(0, "9s"), discard(0, "9s"), draw(1, "C"))
    assert when(st, kong(1, "C", "concealed")) is None
    st = then_ok(st, kong(1, "C", "concealed"), draw(1, "6s"))
    r = when(st, discard(1, "5s"))
    assert r is not None and r.code == "liang_dao_locked"
    st = then_ok(st, discard(1, "6s"))
    assert st.hand is not None and st.hand.liang_dao[1] is not None
    assert st.hand.waits[1] == st.hand.liang_dao[1].waits  # unchanged by the kong


def test_declarer_wins_on_a_discard_for_liang_dao_x2() -> None:
    st = then_ok(declared(), draw(2, "1s"), discard(2, "1s"), draw(0, "6p"), discard(0, "6p"))
    st = then_ok(st, hu([1], "6p", 0))
    (w,) = st.settlements[-1].wins
    assert {p.id for p in w.patterns} == {"liang_dao"} and w.multiplier == 2
    assert st.hand is not None and st.hand.record.wins[0].liang_dao


def test_hidden_triplets_are_hidden_from_the_others() -> None:
    st = declared(hidden="C")
    seat2 = engine.public_view(st, 2)["hand"]["seats"][1]
    assert seat2["concealed"] == "12378p 45699s"
    assert seat2["liang_dao"]["hidden"] == 1
    own = engine.public_view(st, 1)["hand"]["seats"][1]
    assert own["concealed"] == "12378p 45699s CCC" and own["liang_dao"]["hidden"] == ["C"]


def test_views_hide_other_concealed_tiles() -> None:
    st = given(opened(), started(*LD))
    spectator = engine.public_view(st, None)["hand"]["seats"]
    assert [s["concealed"] for s in spectator] == [None, None, None]
    assert [s["concealed_count"] for s in spectator] == [14, 13, 13]
    mine = engine.public_view(st, 0)["hand"]["seats"]
    assert mine[0]["concealed"] == "123456789p 2345s F" and mine[1]["concealed"] is None


def test_feeding_is_allowed_when_every_tile_held_would_feed() -> None:
    # the dealer declares the nine gates (waits 1p…9p); seat 1 holds only 筒 and draws another:
    # whatever it discards feeds, so it may discard (the 3D text ends the hand there; here the
    # declarer then wins on it with a hu)
    st = given(
        opened({"preset": "platform_3d"}),
        started("1112345678999p C", "2233445566778p", "11s 22s 33s 44s 55s FFF"),
        liang(0, "C"),
        draw(1, "8p"),
    )
    assert when(st, discard(1, "8p")) is None
    st = then_ok(st, discard(1, "8p"))
    assert when(st, hu([0], "8p", 1)) is None


# --- hands that end otherwise -----------------------------------------------------------------------


def test_exhausted_wall_then_hand_exhausted_and_the_dealer_stays() -> None:
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")
    st = given(opened(), started(*h, wall=full_wall(*h)), discard(0, "C"))
    st = burn(st, 44)
    assert st.hand is not None and st.hand.front == 44
    r = when(st, draw(0, "C"))
    assert r is not None and r.code == "sequence"
    st = then_ok(st, exhausted())
    s = st.settlements[-1]
    assert s.end == "exhausted" and s.next_dealer == 0 and st.next_dealer == 0


def test_last_discard_can_be_won_but_not_claimed() -> None:
    # seat 1 waits on 5p (卡五星 ×2); seat 2 draws the last tile, 5p, and discards it (RULES §3)
    h = ("123456789p 1234s C", "46p 234s 567s PPP 99s", "11p 22p 33p 888s FF C P")
    st = given(opened(), started(*h, wall=full_wall(*h, back="5p")), discard(0, "C"))
    st = then_ok(burn(st, 43), draw(2, "5p"), discard(2, "5p"))
    assert when(st, hu([1], "5p", 2)) is None
    st = then_ok(st, hu([1], "5p", 2))
    (w,) = st.settlements[-1].wins
    assert w.seat == 1 and {p.id for p in w.patterns} == {"ka_wu_xing"}


def test_aborted_hand_settles_nothing_and_the_dealer_deals_again() -> None:
    st = given(opened({"preset": "default", "service_fee": 1}), started(*LD), discard(0, "F"), aborted())
    s = st.settlements[-1]
    assert s.end == "aborted" and s.transfers == () and s.next_dealer == 0
    assert st.coins == (0, 0, 0)
    assert when(st, started(*LD, hand=2, dealer=0)) is None


def test_settlement_reported_is_stored_for_its_hand() -> None:
    st = engine.fold(stream(STREAMS / "double-win.jsonl"))
    st = then_ok(st, reported(1, [(0, 1, 2), (0, 2, 2)]))
    assert st.reported[-1].hand == 1 and st.reported[-1].transfers == ((0, 1, 2), (0, 2, 2))
    r = when(st, reported(2, []))
    assert r is not None and r.code == "sequence"


def test_coins_are_the_sum_of_settled_nets() -> None:
    st = engine.fold(stream(STREAMS / "double-win.jsonl"))
    assert st.coins == (-4, 2, 2) and st.next_dealer == 0  # 一炮双响: the discarder deals


# --- 上楼 (十堰) ----------------------------------------------------------------------------------


def test_shang_lou_doubles_after_exhausted_and_on_dice_doubles() -> None:
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")
    st = given(opened({"preset": "shiyan"}, base=5), started(*h, wall=full_wall(*h)), discard(0, "C"))
    st = then_ok(burn(st, 44), exhausted())
    assert st.shang_lou == 1
    st = then_ok(st, started(*h, hand=2, dice=[3, 3]))
    assert st.hand is not None and st.hand.base == 5 * 2 * 2 and st.hand.record.base == 20
    st = then_ok(st, aborted())
    st = then_ok(st, started(*h, hand=3, dice=[1, 2]))
    assert st.hand is not None and st.hand.base == 10  # an aborted hand leaves the level as it was


def test_shang_lou_off_keeps_the_base() -> None:
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")
    st = given(opened(base=5), started(*h, dice=[3, 3]))
    assert st.hand is not None and st.hand.base == 5


# --- violations: "record", and rules_override ------------------------------------------------------


def test_record_mode_stores_a_bad_hu_which_ends_the_hand_and_pays_nothing() -> None:
    st = given(opened(violations="record"), started(*LD), discard(0, "F"))
    st, ruling, ok = engine.step(st, hu([1], "F", 0))
    assert ok and ruling is not None and ruling.code == "not_a_winning_hand"
    assert st.rulings == (ruling,)
    s = st.settlements[-1]
    assert s.end == "hu" and s.net == (0, 0, 0) and s.next_dealer == 1
    assert st.hand is not None and st.hand.record.wins[0].violation == "not_a_winning_hand"


def test_record_mode_still_rejects_structure() -> None:
    st = given(opened(violations="record"), started(*LD))
    new, ruling, ok = engine.step(st, discard(1, "1p"))
    assert not ok and new is st and ruling is not None and ruling.kind == "structure"


def test_record_mode_pays_a_lou_hu_win_as_scored() -> None:
    lou = ("236p FFF PPP 45678s", "135p 1123s 799s CCC", "1112345678999p")
    st = given(opened(violations="record"), started(*lou), discard(0, "2p"), draw(1, "4s"), discard(1, "3p"))
    st, ruling, ok = engine.step(st, hu([2], "3p", 1))
    assert ok and ruling is not None and ruling.code == "lou_hu"
    assert st.settlements[-1].net == (0, -4, 4)


def test_rules_override_records_instead_of_rejecting() -> None:
    events = stream(STREAMS / "rob-kong.jsonl")
    st = engine.fold(events, rules_override={"preset": "yunmeng"})
    assert st.rules is not None and st.rules.preset == "yunmeng" and not st.rules.rob_kong
    assert [r.code for r in st.rulings] == ["rob_kong_disabled"]
    # option overrides are laid over the table's own rules
    st = engine.fold(stream(STREAMS / "double-win.jsonl"), rules_override={"multi_win": False})
    assert st.rules is not None and st.rules.preset == "default" and not st.rules.multi_win
    assert [r.code for r in st.rulings] == ["multi_win_disabled"]
    assert st.settlements[-1].net == (-4, 2, 2)  # recorded: paid as scored
    with pytest.raises(engine.IllegalEvent):
        engine.fold(stream(STREAMS / "double-win.jsonl"), rules_override={"cap": "high"})


def _simulated(seed: int, hands: int, preset: str) -> list[engine.Event]:  # type: ignore[name-defined]
    import random

    from domain.events import convert
    from domain.simulate import simulate_table

    return [convert(w) for w in simulate_table(random.Random(seed), hands, {"preset": preset}, f"t{seed}")]


def _dealt(events: list[Any]) -> dict[int, Any]:
    """Each hand_started of a stream by its version (1-based)."""
    return {i: ev for i, ev in enumerate(events, 1) if isinstance(ev, HandStarted)}


def test_a_what_if_folds_each_hand_as_it_was_dealt_where_the_other_rules_rotate_the_dealer_otherwise() -> (
    None
):
    # default and xiangyang pass the deal on differently: the first of these tables where they part
    found = None
    for seed in range(40):
        events = _simulated(seed, 6, "default")
        other = engine.fold(events, rules_override={"preset": "xiangyang"})  # raised before
        kept = [r for r in other.rulings if r.kind == "structure"]
        if kept:
            found = (events, engine.fold(events), other, kept)
            break
    assert found is not None, "no table of 40 where xiangyang would deal otherwise"
    events, real, other, kept = found
    starts = _dealt(events)
    for r in kept:  # each is a hand start whose recorded dealer these rules would not have named
        assert r.code == "sequence" and r.event in starts
        assert r.detail["dealer"] == starts[r.event].dealer != r.detail["expected"]
    assert other.version == real.version == len(events)
    assert [s.hand for s in other.settlements] == [s.hand for s in real.settlements]
    by_hand = {ev.hand: ev.dealer for ev in starts.values()}
    assert all(s.dealer == by_hand[s.hand] for s in other.settlements)  # each hand as it was dealt
    # every other break still stops the what-if: a hand number skipped is no rotation's doing
    v, start = max(starts.items())
    broken = [*events[: v - 1], msgspec.structs.replace(start, hand=start.hand + 1), *events[v:]]
    with pytest.raises(engine.IllegalEvent) as exc:
        engine.fold(broken, rules_override={"preset": "xiangyang"})
    assert exc.value.index == v - 1 and exc.value.ruling.code == "sequence"


def test_a_what_if_without_maima_lets_a_maima_draw_draw_nothing() -> None:
    events = _simulated(3, 8, "platform_3d")
    ma = [i for i, ev in enumerate(events, 1) if isinstance(ev, MaDrawn)]
    assert ma, "a 买码 table with no 买码 draw"
    other = engine.fold(events, rules_override={"preset": "default"})  # raised at the first before
    assert [r.event for r in other.rulings if r.code == "sequence" and r.event in ma] == ma
    assert all(r.message_zh == "本桌没有买码" for r in other.rulings if r.event in ma)
    assert other.version == len(events)  # the draw keeps its place: later versions are the same events
    # what the hands pay is what they pay with the 买码 draws left out of the stream altogether
    without = engine.fold(
        [ev for ev in events if not isinstance(ev, MaDrawn)], rules_override={"preset": "default"}
    )
    assert [s.net for s in other.settlements] == [s.net for s in without.settlements]
    assert len(other.settlements) == len(engine.fold(events).settlements)


def test_fold_raises_illegal_event_with_index() -> None:
    events = stream(GOLDEN / "lou-hu-rejected.jsonl")
    with pytest.raises(engine.IllegalEvent) as exc:
        engine.fold(events)
    assert exc.value.index == 5 and exc.value.ruling.code == "lou_hu"


# --- the wall ------------------------------------------------------------------------------------


def _committed() -> tuple[TableState, list[str]]:
    wall = full_wall(*LD, front="P 1s")
    digest = sha256_of([TILE_INDEX[x] for x in wall])
    st = given(opened(), started(*LD, wall_sha256=digest), discard(0, "F"), draw(1, "P"), discard(1, "P"))
    return st, wall


def test_committed_wall_revealed_after_the_hand_checks_hash_and_draws() -> None:
    st, wall = _committed()
    st = then_ok(st, draw(2, "1s"), discard(2, "1s"), aborted())
    st = then_ok(st, revealed(wall))
    assert st.wall_checks == ((1, st.version, "ok"),)


def test_revealed_wall_that_contradicts_a_draw_is_a_mismatch() -> None:
    st, wall = _committed()
    st = then_ok(st, draw(2, "2s"), discard(2, "2s"), aborted())
    r = when(st, revealed(wall))
    assert r is not None and r.code == "wall_mismatch" and "front draw #2" in r.message
    # the Chinese says the same mismatch in Chinese (tiles by their wire names, as every engine message)
    assert "从牌墙头摸的第2张是2s，牌墙上是1s" in r.message_zh
    assert not re.search(r"[A-Za-z]{2,}", r.message_zh), r.message_zh


def test_known_wall_replacement_draws_come_from_the_back() -> None:
    h = ("1111p 23456789p CF", "2345678p 3456s CC", "11s 22s 33s 999s FF PP")
    st = given(opened(), started(*h, wall=full_wall(*h, back="P 5s")), kong(0, "1p", "concealed"))
    assert when(st, draw(0, "P")) is None
    st = then_ok(st, draw(0, "P"))
    assert st.hand is not None and st.hand.back == 1 and st.hand.drawn_back == (TILE_INDEX["P"],)
    assert parse("P") == [20]


# --- 买码 -----------------------------------------------------------------------------------------


def test_maima_settles_at_the_hu_and_again_with_the_ma_tile() -> None:
    events = stream(GOLDEN / "self-draw-liang-dao-3d.jsonl")
    before = engine.fold(events[:-1])
    after = engine.fold(events)
    assert len(before.settlements) == len(after.settlements) == 1
    assert before.settlements[0].wins[0].ma == 0 and after.settlements[0].wins[0].ma == 3
    assert after.hand is not None and after.hand.record.ma_tile == TILE_INDEX["3p"]
    assert after.coins == after.settlements[0].net != before.coins
    r = when(after, events[-1])  # only once
    assert r is not None and r.code == "sequence"


def test_record_mode_kong_without_wall_skips_the_replacement_draw() -> None:
    # seat 2 draws the last tile, 9s, holding 999s, and konges anyway on a recording table
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")
    st = given(opened(violations="record"), started(*h, wall=full_wall(*h, back="9s")), discard(0, "C"))
    st = then_ok(burn(st, 43), draw(2, "9s"))
    st, ruling, ok = engine.step(st, kong(2, "9s", "concealed"))
    assert ok and ruling is not None and ruling.code == "kong_without_wall"
    r = when(st, draw(2, "1p"))
    assert r is not None and r.code == "sequence"
    st = then_ok(st, exhausted())
    assert st.settlements[-1].end == "exhausted"
    # kong money of a recorded kong stands like any other (荒庄不荒杠)
    assert st.settlements[-1].net == (-2, -2, 4)


# --- views ----------------------------------------------------------------------------------------


def test_views_are_json_and_show_the_turn_and_the_legal_next_actions() -> None:
    st = declared(hidden="C")
    st = then_ok(st, draw(2, "1s"))
    for seat in (None, 0, 1, 2):
        view = engine.public_view(st, seat)
        json.dumps(view)  # plain JSON values only
        assert view["hand"]["phase"] == "discard" and view["hand"]["turn"] == 2
        assert view["hand"]["wall_remaining"] == 44 - 2
        assert view["hand"]["seats"][1]["liang_dao"]["waits"] == ["6p", "9p"]
    own = engine.public_view(st, 2)
    other = engine.public_view(st, 0)
    assert own["hand"]["drawn"] == "1s" and other["hand"]["drawn"] is None
    assert {a["type"] for a in own["legal_actions"]} >= {"tile_discarded"}
    st = then_ok(st, discard(2, "1s"))
    draws = [a for a in engine.public_view(st, 1)["legal_actions"] if a["type"] == "tile_drawn"]
    assert draws == [{"type": "tile_drawn", "seat": 0, "tile": None}]  # the wall is unknown anyway


def test_view_coins_include_this_hands_kong_money() -> None:
    st = engine.fold(stream(GOLDEN / "kong-chain.jsonl")[:5])
    assert engine.public_view(st, None)["coins"] == [4 + 8, -2 - 4, -2 - 4]


# --- the end of the wall, and claim priority ---------------------------------------------------------

END = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C P")


def test_a_kong_with_one_tile_left_is_allowed_and_draws_the_last_tile() -> None:
    # 玩家开杠为最后一张牌，即使桌子上面还剩余一张牌，玩家都可以开杠: seat 1 draws the 43rd tile, P
    h = ("123456789p 1234s C", "2345678p 345s PPP", "11p 22p 33p 999s FF C 8s")
    st = given(opened(), started(*h, wall=full_wall(*h, back="6s P")), discard(0, "C"))
    st = burn(st, 42)
    st = then_ok(st, draw(1, "P"))  # 43rd draw: one tile left
    assert st.hand is not None and st.hand.wall is not None and 44 - st.hand.front - st.hand.back == 1
    assert when(st, kong(1, "P", "concealed")) is None
    st = then_ok(st, kong(1, "P", "concealed"), draw(1, "6s"))
    assert st.hand is not None and st.hand.front + st.hand.back == 44


def test_after_the_last_draw_the_player_must_still_discard() -> None:
    st = given(opened(), started(*END, wall=full_wall(*END)), discard(0, "C"))
    st = burn(st, 43)
    hs = st.hand
    assert hs is not None and hs.wall is not None
    st = then_ok(st, draw(2, TILE_NAMES[hs.wall[43]]))
    r = when(st, exhausted())
    assert r is not None and r.code == "sequence"


def test_a_discard_claimed_by_peng_can_no_longer_be_won() -> None:
    # double-win deal: seat 2 (5588p …) pengs the dealer's 5p; seat 1, which could have won it, no more
    st = given(opened(), started(*DOUBLE), discard(0, "5p"), peng(2, "5p"))
    r = when(st, hu([1], "5p", 0))
    assert r is not None and r.code == "sequence"
    assert st.hand is not None and st.hand.discards[0][-1].claimed


DOUBLE = ("1235789p 2345s CCF", "46p 23467899s PPP", "5588p 111666777s")


def test_a_hidden_triplet_konged_after_liang_dao_shows_as_its_meld() -> None:
    st = then_ok(
        declared(hidden="C"), draw(2, "1s"), discard(2, "1s"), draw(0, "9s"), discard(0, "9s"), draw(1, "C"),
        kong(1, "C", "concealed"), draw(1, "6s"), discard(1, "6s"),
    )  # fmt: skip
    seat1 = engine.public_view(st, 0)["hand"]["seats"][1]
    assert seat1["concealed"] == "12378p 45699s"
    assert [m["kind"] for m in seat1["melds"]] == ["kong_concealed"]


def test_pin_rules_expands_the_preset_into_every_option() -> None:
    ev = opened({"preset": "xiangyang", "cap": 16})
    pinned = engine.pin_rules(ev)
    assert pinned.rules["preset"] == "xiangyang" and pinned.rules["cap"] == 16
    assert pinned.rules["pin_dao"] == "full" and "lou_hu" in pinned.rules
    assert engine.fold([pinned]).rules == engine.fold([ev]).rules
