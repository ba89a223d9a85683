"""Rules audit — 杠 (RULES.md §3, §5, §7): immediacy, 碰 with a concealed triplet, the end of the
wall, replacement from the back, 杠上杠 money with kong_chain_cap, 杠上开花 flat / doubling,
杠上炮 only ×2, robbed kongs.

Seeds: 明杠必须当时就杠，否则就不能再杠；手上有暗刻时，必须直接杠或者选择不杠，不能碰后再杠 (000, 002);
玩家开杠为最后一张牌，即使桌子上面还剩余一张牌，玩家都可以开杠 (000); 摸到最后一张牌，有杠不能杠，打出去的牌
其他人也不能杠 (000, 002); 杠上杠…第二杠要翻倍…每杠的钱都要算 (000, 002); 杠上杠后放的杠上炮，不管有几个
杠上杠，放的杠上炮都只×2 (002); 扛上开花×2倍，扛上杠开花×4倍以此内推 (000); 抢的杠不算杠 (000).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.domain.audit_helpers import code, last, money, pats, play, table
from tests.domain.engine_dsl import burn, discard, draw, exhausted, full_wall, hu, kong, peng

# --- 补杠 must be immediate; 碰 with a concealed triplet ---------------------------------------------
P0 = "7s 11p 3p 79p 22s 5s 8s CC FF"
P1 = "77s 2p 4p 6p 8p 1s 3s 5s 9s C F P"
P2 = "999p 1p 33s 44s 66s PP 5p"


def _peng_then_skip(rules: dict[str, Any]):  # type: ignore[no-untyped-def]
    # seat 1 pengs seat 0's 7s; later draws the fourth 7s (v10) and discards P instead of konging;
    # at its next draw (v16) it tries to 补杠 with the 7s it kept.
    return play(
        table(P0, P1, P2, rules=rules),
        discard(0, "7s"),
        peng(1, "7s"),
        discard(1, "C"),
        draw(2, "2s"),
        discard(2, "2s"),
        draw(0, "3s"),
        discard(0, "3s"),
        draw(1, "7s"),
        discard(1, "P"),
        draw(2, "8s"),
        discard(2, "8s"),
        draw(0, "8s"),
        discard(0, "8s"),
        draw(1, "9s"),
    )


def test_added_kong_with_the_tile_just_drawn_is_allowed() -> None:
    st = play(
        table(P0, P1, P2),
        discard(0, "7s"),
        peng(1, "7s"),
        discard(1, "C"),
        draw(2, "2s"),
        discard(2, "2s"),
        draw(0, "3s"),
        discard(0, "3s"),
        draw(1, "7s"),
    )
    assert code(st, kong(1, "7s", "added")) is None


def test_added_kong_later_is_refused_when_immediate() -> None:
    # 明杠必须当时就杠，否则就不能再杠 (added_kong_immediate, default true).
    assert code(_peng_then_skip({}), kong(1, "7s", "added")) == "added_kong_not_immediate"


def test_added_kong_later_is_allowed_when_not_immediate() -> None:
    assert code(_peng_then_skip({"added_kong_immediate": False}), kong(1, "7s", "added")) is None


def test_no_peng_with_a_concealed_triplet() -> None:
    # 手上有暗刻时，必须直接杠或者选择不杠，不能碰后再杠: seat 2 holds 999p; seat 0 discards 9p.
    st = play(table(P0, P1, P2), discard(0, "9p"))
    assert code(st, peng(2, "9p")) == "peng_with_concealed_triplet"
    assert code(st, kong(2, "9p", "exposed")) is None
    st = play(table(P0, P1, P2, rules={"no_peng_with_concealed_triplet": False}), discard(0, "9p"))
    assert code(st, peng(2, "9p")) is None


# --- the end of the wall ------------------------------------------------------------------------------
E0 = "11p 23p 78p 22s 5s 8s FF PP"
E1 = "CCC 2p 4p 6p 8p 1s 3s 5s 7s 9s F"
E2 = "999p 1p 33s 44s 66s 5p 6p P"


def _to_last_draw(back: str, rounds: int, rules: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    wall = full_wall(E0, E1, E2, back=back)
    st = play(table(E0, E1, E2, rules=rules, wall=wall), discard(0, "5s"))
    return burn(st, rounds), wall


def test_kong_with_one_tile_left_is_allowed_and_draws_the_last_tile() -> None:
    # 玩家开杠为最后一张牌，即使桌子上面还剩余一张牌，玩家都可以开杠: after 42 rounds seat 1 draws the 43rd
    # tile, the fourth C (wall[42]); one tile is left: the 暗杠 is allowed, its replacement is the
    # last tile (wall[43] = 9s). Having drawn the last tile seat 1 may not kong again, and its
    # discard is the last one: nobody may claim it, only win on it; then 荒庄.
    st, _ = _to_last_draw("9s C", 42)
    st = play(st, draw(1, "C"))
    assert st.hand is not None and 44 - st.hand.front - st.hand.back == 1
    st = play(st, kong(1, "C", "concealed"), draw(1, "9s"))
    assert st.hand is not None and 44 - st.hand.front - st.hand.back == 0
    st = play(st, discard(1, "9s"))
    st = play(st, exhausted())
    s = last(st)
    # 荒庄不荒杠: the 暗杠 stands, 2 from each other seat
    assert money(s) == {(0, 1, 2, "kong"): 1, (2, 1, 2, "kong"): 1}


def test_replacement_draw_comes_from_the_back() -> None:
    # 杠 draws the last tile of the wall: seat 1 draws C first (front), 暗杠s; the replacement must be
    # the last wall tile (back = 9s), not the next front tile.
    wall = full_wall(E0, E1, E2, front="C", back="9s")
    st = play(table(E0, E1, E2, wall=wall), discard(0, "5s"), draw(1, "C"), kong(1, "C", "concealed"))
    if wall[1] != "9s":
        assert code(st, draw(1, wall[1])) == "wall_mismatch"
    assert code(st, draw(1, "9s")) is None


def test_no_kong_by_the_player_who_drew_the_last_tile() -> None:
    # 摸到最后一张牌，有杠不能杠: 43 rounds, then seat 2 draws the 44th and last tile, its fourth 9p.
    st, _ = _to_last_draw("9p", 43)
    st = play(st, draw(2, "9p"))
    assert code(st, kong(2, "9p", "concealed")) == "kong_without_wall"


def test_last_discard_may_not_be_claimed() -> None:
    # 最后打出去的一张牌，其他人可以胡这张牌，但是，不可以吃碰杠: seat 2 draws the last tile C and
    # discards it; seat 1 (CCC) may neither 碰 nor 直杠 it.
    st, _ = _to_last_draw("C", 43)
    st = play(st, draw(2, "C"), discard(2, "C"))
    assert code(st, peng(1, "C")) == "claim_on_last_discard"
    assert code(st, kong(1, "C", "exposed")) == "kong_without_wall"
    assert code(st, exhausted()) is None


# --- 杠上杠 ------------------------------------------------------------------------------------------
# tests/golden/kong-chain: seat 0 暗杠 1p (v3), draws 2p, 暗杠 2p (v5), draws 5s, discards 9s; seat 1
# 直杠 9s (v8), draws 1s, discards C; seat 2 wins C: 杠上炮.
C0 = "1111p 222p 345s 9s 8p 3p F"
C1 = "999s C 11s 44s 77p 5p 6p P"
C2 = "345678p 234s 678s C"


def _chain(rules: dict[str, Any]):  # type: ignore[no-untyped-def]
    return play(
        table(C0, C1, C2, rules=rules),
        kong(0, "1p", "concealed"),
        draw(0, "2p"),
        kong(0, "2p", "concealed"),
        draw(0, "5s"),
        discard(0, "9s"),
        kong(1, "9s", "exposed"),
        draw(1, "1s"),
        discard(1, "C"),
        hu([2], "C", 1),
    )


@pytest.mark.parametrize(
    ("cap", "third", "net"),
    [
        # 卡五星杠不封顶: factors 1, 2, 4 → 暗杠 2, 暗杠 4 (each), 直杠 2 × 4 = 8 from seat 0
        (None, 8, (4, 0, -4)),
        # kong_chain_cap 2 (杠上明杠每家×2、杠上暗杠每家×4封顶): factors 1, 2, 2 → 直杠 2 × 2 = 4.
        # net 0: +2+2+4+4−4 = 8; 1: −2−4+4−2 = −4; 2: −2−4+2 = −4
        (2, 4, (8, -4, -4)),
    ],
)
def test_kong_chain_across_players_and_its_cap(cap: int | None, third: int, net: tuple[int, ...]) -> None:
    s = last(_chain({"kong_chain_cap": cap}))
    assert money(s) == {
        (1, 0, 2, "kong"): 1,
        (2, 0, 2, "kong"): 1,
        (1, 0, 4, "kong"): 1,
        (2, 0, 4, "kong"): 1,
        (0, 1, third, "kong"): 1,
        (1, 2, 2, "hu"): 1,
    }
    # 杠上杠后放的杠上炮，不管有几个杠上杠，放的杠上炮都只×2
    assert pats(s) == {"gang_shang_pao": 2}
    assert s.net == net


def test_a_chain_is_broken_by_a_draw_from_the_front() -> None:
    # Seat 0 暗杠 1p, draws its replacement, discards; nobody claims; seat 1 draws from the front and
    # 暗杠s: that kong starts a new chain (2 each, not 4): "with nothing in between but its
    # replacement draw".
    h0, h1 = "1111p 222p 345s 8s 8p 3p F", "9999s C 11s 44s 77p 5p 6p"
    st = play(
        table(h0, h1, C2),
        kong(0, "1p", "concealed"),
        draw(0, "5s"),
        discard(0, "5s"),
        draw(1, "P"),
        kong(1, "9s", "concealed"),
        draw(1, "P"),
        discard(1, "P"),
        draw(2, "C"),
        hu([2], "C"),
    )
    assert st.hand is not None
    assert [(k.seat, k.chain) for k in st.hand.record.kongs] == [(0, 1), (1, 1)]
    s = last(st)
    assert money(s)[(0, 1, 2, "kong")] == 1 and money(s)[(2, 1, 2, "kong")] == 1


# --- 杠上开花 flat / doubling ------------------------------------------------------------------------
# Dealer 1111p 2222p 345s 678s: 暗杠 1p, replacement C, 暗杠 2p (2nd of the chain), replacement C:
# 345s 678s CC [1111p] [2222p] wins by self-draw on a kong draw — 杠上开花, nothing else.
K0 = "1111p 2222p 345s 678s"
K1 = "3p 5p 7p 9p 2s 4s 6s 8s F F P P 1s"
K2 = "3p 5p 7p 9p 2s 4s 6s 8s F F P P 1s"


def _kai_hua(rules: dict[str, Any]):  # type: ignore[no-untyped-def]
    return play(
        table(K0, K1, K2, rules=rules),
        kong(0, "1p", "concealed"),
        draw(0, "C"),
        kong(0, "2p", "concealed"),
        draw(0, "C"),
        hu([0], "C"),
    )


@pytest.mark.parametrize(
    ("mode", "x"),
    [
        ("flat", 2),  # 杠上开花 ×2 however many kongs came before (default)
        ("doubling", 4),  # 扛上开花×2倍，扛上杠开花×4倍以此内推: a chain of 2 → ×4
    ],
)
def test_gang_shang_kai_hua(mode: str, x: int) -> None:
    s = last(_kai_hua({"kong_chain_kai_hua": mode}))
    assert pats(s) == {"gang_shang_kai_hua": x}
    # 暗杠 1p: 2 each; 暗杠 2p, 2nd of the chain: 4 each; 自摸两家出: x each
    assert money(s) == {
        (1, 0, 2, "kong"): 1,
        (2, 0, 2, "kong"): 1,
        (1, 0, 4, "kong"): 1,
        (2, 0, 4, "kong"): 1,
        (1, 0, x, "hu"): 1,
        (2, 0, x, "hu"): 1,
    }
    assert s.next_dealer == 0


# --- a robbed kong -----------------------------------------------------------------------------------
R0 = "7s 2p 3p 5p 6p 8p 1s 9s 2s 4s PP C F"
R1 = "77s 9999p 2345s 1p FF"
R2 = "68s 123p 456p 11s CCC"


def test_robbed_kong_in_a_chain_pays_nothing_and_the_konger_pays_the_robber() -> None:
    # Seat 1 pengs 7s, later 暗杠s 9p (1st of a chain: 2 from each other seat, 暗杠：另2家各×2倍),
    # its replacement draw is the fourth 7s and it 补杠s it (2nd of the chain). Seat 2 (68s …)
    # robs it: 抢杠胡 ×2 (胡别人自抓开明杠的牌 X2); 抢的杠不算杠 — the robbed 补杠 pays nothing;
    # 点炮则由点炮者出一份 (包括抢杠胡): seat 1 pays 2. The first kong stands.
    # net 0: −2; 1: +4 −2 = +2; 2: −2 +2 = 0; the robber deals next.
    st = play(
        table(R0, R1, R2),
        discard(0, "7s"),  # seat 2 waits 7s but ×1 on a discard is no legal win
        peng(1, "7s"),
        discard(1, "1p"),
        draw(2, "3s"),
        discard(2, "3s"),
        draw(0, "5s"),
        discard(0, "5s"),
        draw(1, "2p"),
        kong(1, "9p", "concealed"),
        draw(1, "7s"),
        kong(1, "7s", "added"),
        hu([2], "7s", 1),
    )
    assert st.hand is not None
    assert [(k.kind, k.chain, k.robbed) for k in st.hand.record.kongs] == [
        ("concealed", 1, False),
        ("added", 2, True),
    ]
    s = last(st)
    assert pats(s) == {"qiang_gang_hu": 2}
    assert money(s) == {(0, 1, 2, "kong"): 1, (2, 1, 2, "kong"): 1, (1, 2, 2, "hu"): 1}
    assert s.net == (-2, 2, 0) and s.next_dealer == 2


# --- a chain over all three seats ---------------------------------------------------------------------
T0 = "1111p 9s 23s 567s PP FF"
T1 = "999s 8s 23567p 44s C P"
T2 = "888s 234p 567p 789p C"


@pytest.mark.parametrize(("mode", "x"), [("flat", 2), ("doubling", 8)])
def test_kong_chain_over_three_seats_ends_in_kai_hua(mode: str, x: int) -> None:
    # 杠上杠：如果A杠后打出的牌被别人杠…第二杠要翻倍，如果杠完之后又被人杠…就再翻一倍: seat 0 暗杠 1p (k=1: 2
    # from each), discards 9s after its replacement; seat 1 直杠s it (k=2: 2 × 2 = 4 from seat 0),
    # discards 8s after its replacement; seat 2 直杠s that (k=3: 2 × 4 = 8 from seat 1) and wins on
    # its replacement C: 234p 567p 789p CC [8888s], 杠上开花 — ×2 flat, ×2^3 = 8 doubling
    # (扛上杠开花×4倍以此内推); 自摸两家出.
    st = play(
        table(T0, T1, T2, rules={"kong_chain_kai_hua": mode}),
        kong(0, "1p", "concealed"),
        draw(0, "P"),
        discard(0, "9s"),
        kong(1, "9s", "exposed"),
        draw(1, "4p"),
        discard(1, "8s"),
        kong(2, "8s", "exposed"),
        draw(2, "C"),
        hu([2], "C"),
    )
    assert st.hand is not None
    assert [(k.seat, k.chain) for k in st.hand.record.kongs] == [(0, 1), (1, 2), (2, 3)]
    s = last(st)
    assert pats(s) == {"gang_shang_kai_hua": x}
    assert money(s) == {
        (1, 0, 2, "kong"): 1,
        (2, 0, 2, "kong"): 1,
        (0, 1, 4, "kong"): 1,
        (1, 2, 8, "kong"): 1,
        (0, 2, x, "hu"): 1,
        (1, 2, x, "hu"): 1,
    }
