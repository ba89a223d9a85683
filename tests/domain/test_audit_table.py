"""Rules audit — whole-table rules through streams: 一炮双响 / multi_win, 海底捞 and the last discard,
dealer rotation (RULES.md §2), 上楼, 数坎, 漂 / 买码 / service fee, the cap and its exemptions,
pin_dao full, and the presets of §10 resolving exactly as the table.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from domain.rules import PRESETS, Rules, resolve, to_dict
from tests.domain.audit_helpers import code, last, money, pats, play, table
from tests.domain.engine_dsl import (
    aborted,
    burn,
    discard,
    draw,
    exhausted,
    full_wall,
    hu,
    kong,
    ma,
    started,
)

# --- 一炮双响 -------------------------------------------------------------------------------------------
# conformance double-win: seat 0 discards 5p; seat 1 (46p …) 卡五星 ×2 and seat 2 (55p 111s 777s 666s
# 88p) 碰碰胡 ×2 both win.
D0 = "5p 123p 789p 2345s CC F"
D1 = "46p 234s 6789s 9s PPP"
D2 = "55p 111s 777s 666s 88p"


def test_double_win_each_paid_and_the_discarder_deals_next() -> None:
    # 一炮双响时，胡牌2家胡牌类型不同，胡牌分值不同; 一炮双响的时候，放炮玩家为下局庄家.
    st = play(table(D0, D1, D2), discard(0, "5p"), hu([1, 2], "5p", 0))
    s = last(st)
    assert (pats(s, 0), pats(s, 1)) == ({"ka_wu_xing": 2}, {"peng_peng_hu": 2})
    assert money(s) == {(0, 1, 2, "hu"): 1, (0, 2, 2, "hu"): 1}
    assert s.next_dealer == 0
    # the next hand must be dealt by seat 0
    assert code(st, started(D1, D0, D2, dealer=1, hand=2)) == "sequence"


def test_multi_win_off() -> None:
    st = play(table(D0, D1, D2, rules={"multi_win": False}), discard(0, "5p"))
    assert code(st, hu([1, 2], "5p", 0)) == "multi_win_disabled"
    assert code(st, hu([1], "5p", 0)) is None


# --- 海底捞 and the last discard ---------------------------------------------------------------------
# Seat 2 waits on 5p with 46p 123456789s PP (卡五星 ×2). The wall is known; its very last tile is 5p.
H0 = "11p 23p 78p 22s 5s 8s FF C 9p"
H1 = "CCC 2p 4p 6p 8p 1s 3s 5s 7s 9s F"
H2 = "46p 123456789s PP"


def test_hai_di_lao_self_draw_of_the_last_tile() -> None:
    # 海底捞：抓棹面上最后一张牌的人正好能胡牌 ×2: 43 rounds after the dealer's discard, seat 2 draws
    # the 44th and last tile, 5p: 卡五星 ×2 × 海底捞 ×2 = 4, 自摸两家出: 4 from each.
    wall = full_wall(H0, H1, H2, back="5p")
    st = play(table(H0, H1, H2, wall=wall), discard(0, "5s"))
    st = burn(st, 43)
    st = play(st, draw(2, "5p"), hu([2], "5p"))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2, "hai_di_lao": 2}
    assert money(s) == {(0, 2, 4, "hu"): 1, (1, 2, 4, "hu"): 1}


def test_last_discard_can_be_won_without_hai_di_lao() -> None:
    # 最后打出去的一张牌，其他人可以胡这张牌; 有人胡牌不另番 (000): seat 0 (46p 123456789s PP after
    # discarding C) wins seat 2's last discard 5p: 卡五星 ×2 only; seat 2 pays 2.
    h0, h2 = "46p 123456789s PP C", "11p 23p 78p 22s 5s 8s FF 9p"
    wall = full_wall(h0, H1, h2, back="5p")
    st = play(table(h0, H1, h2, wall=wall), discard(0, "C"))
    st = burn(st, 43)
    st = play(st, draw(2, "5p"), discard(2, "5p"), hu([0], "5p", 2))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2}
    assert money(s) == {(2, 0, 2, "hu"): 1}


def test_hai_di_lao_on_a_kong_replacement_of_the_last_tile() -> None:
    # Decision (docs/decisions.md "海底捞 on the last tile drawn as a kong replacement"): a kong with
    # one tile left draws the last tile (玩家开杠为最后一张牌); if it wins, both 杠上开花 (杠来自己要胡的牌)
    # and 海底捞 (抓…最后一张牌的人正好能胡牌) hold: ×2 × ×2.
    # Seat 1 holds CCC 46p 123s 456s 99s; after 42 rounds it draws the fourth C (one tile left),
    # 暗杠s it and draws the last tile 5p: 456p 123s 456s 99s [CCCC], 卡五星 × 杠上开花 × 海底捞 = 8.
    h1 = "CCC 46p 123s 456s 99s"
    h0 = "11p 23p 78p 22s 5s 8s FF P 9p"
    h2 = "2p 3p 6p 8p 1s 3s 5s 7s 9s F P 9p 1p"
    wall = full_wall(h0, h1, h2, back="5p C")
    st = play(table(h0, h1, h2, wall=wall), discard(0, "9p"))
    st = burn(st, 42)
    st = play(st, draw(1, "C"), kong(1, "C", "concealed"), draw(1, "5p"), hu([1], "5p"))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2, "gang_shang_kai_hua": 2, "hai_di_lao": 2}


# --- dealer rotation (RULES.md §2) ------------------------------------------------------------------


def test_winner_deals_next_and_exhausted_dealer_stays_and_aborted_replays() -> None:
    # 以后每局庄家为上一局第一个胡牌的玩家: seat 1 wins hand 1 → hand 2 is dealt by seat 1.
    st = play(table(D0, D1, D2), discard(0, "5p"), hu([1], "5p", 0))
    assert last(st).next_dealer == 1
    assert code(st, started(D0, D1, D2, dealer=0, hand=2)) == "sequence"
    # hand 2 (dealer 1) is aborted: the same dealer deals hand 3.
    st = play(st, started(D1, D0, D2, dealer=1, hand=2), aborted())
    assert last(st).next_dealer == 1 and last(st).transfers == ()
    assert code(st, started(D1, D0, D2, dealer=1, hand=3)) is None


def test_exhausted_dealer_stays() -> None:
    # 荒庄不下庄: nobody declared, hand 1 dealt by seat 0 is exhausted → seat 0 deals again.
    wall = full_wall(H0, H1, H2)
    st = play(table(H0, H1, H2, wall=wall), discard(0, "5s"))
    st = burn(st, 44)
    st = play(st, exhausted())
    s = last(st)
    assert s.end == "exhausted" and s.next_dealer == 0 and s.transfers == ()


# --- 上楼 (十堰) ----------------------------------------------------------------------------------------


def _exhaust(st: Any, h: tuple[str, str, str], hand: int, dealer: int, dice: list[int] | None = None) -> Any:
    wall = full_wall(*h)
    st = play(st, started(*h, dealer=dealer, hand=hand, wall=wall, dice=dice))
    st = play(st, discard(dealer, "5s"))
    return play(burn(st, 44), exhausted())


def test_shang_lou_after_exhausted_and_on_equal_dice() -> None:
    # shiyan: 当出现一炮双响，或荒庄时，下局结算的底分x2；
    # 若两粒骰子的点数相同，则本局结算的底分x2，两者可叠加.
    # Hand 1 is aborted (no 上楼: nothing of it counts), hand 2 (base 1) is exhausted → hand 3 is
    # 上楼 (×2) and has equal dice (×2): base 4.
    st = table(D0, D1, D2, rules={"preset": "shiyan"})
    st = play(st, aborted())
    assert st.hand is not None and st.hand.base == 1
    st = _exhaust(st, (H0, H1, H2), hand=2, dealer=0)
    st = play(st, started(D0, D1, D2, dealer=0, hand=3, dice=[3, 3]))
    assert st.hand is not None and st.hand.base == 4
    # hand 3: seat 1 wins 卡五星 ×2 on seat 0's 5p → 2 × base 4 = 8
    st = play(st, discard(0, "5p"), hu([1], "5p", 0))
    assert money(last(st)) == {(0, 1, 8, "hu"): 1}
    # after a plain win the next hand is back to base 1
    st = play(st, started(D1, D0, D2, dealer=1, hand=4))
    assert st.hand is not None and st.hand.base == 1


def test_shang_lou_after_double_win() -> None:
    st = play(table(D0, D1, D2, rules={"preset": "shiyan"}), discard(0, "5p"), hu([1, 2], "5p", 0))
    st = play(st, started(D0, D1, D2, dealer=0, hand=2))
    assert st.hand is not None and st.hand.base == 2


def test_dice_double_without_shang_lou_option_does_nothing() -> None:
    st = table(D0, D1, D2, dice=[4, 4])
    assert st.hand is not None and st.hand.base == 1


# --- 数坎 (孝感) -----------------------------------------------------------------------------------------
# Dealer 1111p 222p 345s 678s C: 暗杠 1p, replacement C, wins 222p 345s 678s CC [1111p] by self-draw:
# 杠上开花 ×2; 数坎: 胡牌玩家有杠或刻（不算碰），则每有一个加1番 → 222p and the 1p kong: +2 → payable 4.
S0 = "1111p 222p 345s 678s C"
S1 = "3p 5p 7p 9p 2s 4s 6s 8s F F P P 1s"
S2 = "3p 5p 7p 9p 2s 4s 6s 8s F F P P 1s"


def test_shu_kan_xiaogan() -> None:
    st = play(
        table(S0, S1, S2, rules={"preset": "xiaogan"}),
        kong(0, "1p", "concealed"),
        draw(0, "C"),
        hu([0], "C"),
    )
    s = last(st)
    w = s.wins[0]
    assert (w.multiplier, w.shu_kan, w.payable) == (2, 2, 4)
    assert money(s) == {(1, 0, 2, "kong"): 1, (2, 0, 2, "kong"): 1, (1, 0, 4, "hu"): 1, (2, 0, 4, "hu"): 1}


# --- platform_3d: 2番起胡, 漂, 买码, service fee ------------------------------------------------------


def test_platform_3d_self_draw_minimum() -> None:
    # 2番起胡: a 屁胡 self-draw (×1) is below min_multiplier_self_draw 2. The dealer holds a
    # complete 屁胡 at the deal (123p 456p 789p 234s 55s) and declares it.
    st = table("123p 456p 789p 234s 55s", S1, S2, rules={"preset": "platform_3d"})
    assert code(st, hu([0], "5s")) == "below_min_multiplier"


def test_platform_3d_piao_maima_fee() -> None:
    # piao [1, 2, 0]; service fee 1 (each seat pays 1 × base to the house at the start).
    # The 数坎 hand without 数坎: 杠上开花 ×2 (meets 2番起胡); 买码 turns 7s after the self-draw: +7
    # after the cap → 9. 漂: seat 1 pays (2 + 1) = 3, seat 2 pays (0 + 1) = 1.
    st = table(S0, S1, S2, rules={"preset": "platform_3d", "service_fee": 1}, piao=[1, 2, 0])
    st = play(st, kong(0, "1p", "concealed"), draw(0, "C"), hu([0], "C"), ma("7s"))
    s = last(st)
    assert s.wins[0].payable == 9 and s.wins[0].ma == 7
    assert money(s) == {
        (0, "house", 1, "fee"): 1,
        (1, "house", 1, "fee"): 1,
        (2, "house", 1, "fee"): 1,
        (1, 0, 2, "kong"): 1,
        (2, 0, 2, "kong"): 1,
        (1, 0, 9, "hu"): 1,
        (2, 0, 9, "hu"): 1,
        (1, 0, 3, "piao"): 1,
        (2, 0, 1, "piao"): 1,
    }
    assert s.house == 3 and sum(s.net) + s.house == 0


def test_maima_dragon_adds_ten() -> None:
    st = table(S0, S1, S2, rules={"preset": "platform_3d"})
    st = play(st, kong(0, "1p", "concealed"), draw(0, "C"), hu([0], "C"), ma("C"))
    assert last(st).wins[0].payable == 12  # 2 + 10 (中发白加10分)


# --- cap and exemptions, through a dealer's 天胡 of seven pairs -------------------------------------
SP = "1111p 2222p 33p 44p 55p"  # 双龙七对 ×16 × 清一色 ×4 = 64


@pytest.mark.parametrize(
    ("rules", "payable"),
    [
        ({}, 16),  # 特殊仅双龙七对计算X16倍底金，其余均以X8封顶
        ({"preset": "shiyan"}, 8),  # 十堰地区X8倍底金即满和，不再累计
        ({"preset": "uncapped"}, 64),
    ],
)
def test_cap_and_exemption(rules: dict[str, Any], payable: int) -> None:
    st = play(table(SP, S1, S2, rules=rules), hu([0], "5p"))
    s = last(st)
    assert pats(s) == {"shuang_long_qi_dui": 16, "qing_yi_se": 4}
    assert (s.wins[0].multiplier, s.wins[0].payable) == (64, payable)
    assert money(s) == {(1, 0, payable, "hu"): 1, (2, 0, payable, "hu"): 1}


def test_cap_never_limits_kong_money() -> None:
    # 封顶番数只计牌型番，不计杠分: shiyan cap 8; a chain's third kong pays 2 × 4 = 8 regardless.
    from tests.domain.test_audit_kong import _chain

    s = last(_chain({"preset": "shiyan"}))
    assert money(s)[(0, 1, 8, "kong")] == 1


T1 = T2 = "3s 5s 7s 8s 2s 4s 6s 9s F F P P 1s"

# --- pin_dao full ------------------------------------------------------------------------------------
# Dealer's 天胡 1111p 23p 456p 789p 99p on 9p: 111p 123p 456p 789p 99p, 清一色 ×4. The four 1p are
# held, not declared as a kong.


@pytest.mark.parametrize(
    ("rules", "expected", "payable"),
    [
        # half: 四归一 only for the winning tile (9p: two held) → 清一色 ×4
        ({}, {"qing_yi_se": 4}, 4),
        # full (襄阳): 大胡（清一色）的话，手上的四归也算 → 暗四归一 ×4 for the four 1p → 16, cap 8
        ({"preset": "xiangyang"}, {"qing_yi_se": 4, "an_si_gui_yi": 4}, 8),
    ],
)
def test_pin_dao(rules: dict[str, Any], expected: dict[str, int], payable: int) -> None:
    st = play(table("1111p 23p 456p 789p 99p", T1, T2, rules=rules), hu([0], "9p"))
    s = last(st)
    assert pats(s) == expected and s.wins[0].payable == payable


def test_pin_dao_full_small_hand_counts_no_hidden_four() -> None:
    # 屁胡要是胡的那张才算: 1111p 23p 456s 678s 99s is 屁胡; the held four 1p does not count.
    st = play(table("1111p 23p 456s 678s 99s", T1, T2, rules={"pin_dao": "full"}), hu([0], "9s"))
    assert pats(last(st)) == {}


# --- presets (RULES.md §10) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "diff"),
    [
        ("default", {}),
        (
            "xiangyang",
            {
                "exhausted_liang_dao": "first_declarer_pays_each",
                "exhausted_dealer": "first_declarer",
                "pin_dao": "full",
            },
        ),
        ("shiyan", {"cap": 8, "cap_exempt": {}, "shang_lou": True}),
        ("xiaogan", {"shu_kan": True, "liang_dao_min_wall": 12}),
        ("yunmeng", {"lou_hu": "unless_bigger", "pin_dao": "full", "rob_kong": False}),
        ("uncapped", {"cap": None}),
        (
            "platform_3d",
            {
                "min_multiplier_self_draw": 2,
                "liang_dao_feed": "both_pay",
                "liang_dao_forbid_feeding": True,
                "piao": True,
                "maima": True,
            },
        ),
    ],
)
def test_preset_resolves_exactly_as_the_table(preset: str, diff: dict[str, Any]) -> None:
    base = to_dict(Rules())
    got = to_dict(resolve({"preset": preset}))
    changed = {k: v for k, v in got.items() if k != "preset" and base[k] != v}
    # shiyan's cap 8 equals the default cap: only the values that differ from the defaults show
    expected = {k: v for k, v in diff.items() if base[k] != v}
    assert changed == expected
    assert set(PRESETS) == {"default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"}


def test_defaults_are_the_rules_md_defaults() -> None:
    r = Rules()
    assert (r.exhausted_dealer, r.added_kong_immediate, r.no_peng_with_concealed_triplet) == (
        "stay",
        True,
        True,
    )
    assert (r.rob_kong, r.multi_win, r.pin_dao, r.kong_chain_kai_hua, r.shou_zhua_yi_fan) == (
        True,
        True,
        "half",
        "flat",
        4,
    )
    assert (r.min_multiplier_discard, r.min_multiplier_self_draw, r.cap) == (2, 1, 8)
    assert r.cap_exempt == {"shuang_long_qi_dui": 16, "san_long_qi_dui": 16}
    assert (r.liang_dao_feed, r.kong_chain_cap, r.exhausted_liang_dao) == (
        "discarder_pays_double",
        None,
        "declarers_pay_undeclared",
    )
    assert (r.kong_points.concealed, r.kong_points.added, r.kong_points.exposed) == (2, 1, 2)
    assert (r.piao, r.maima, r.shu_kan, r.shang_lou, r.service_fee) == (False, False, False, False, 0)
    assert (r.liang_dao_hide_triplets, r.liang_dao_min_wall, r.liang_dao_forbid_feeding, r.lou_hu) == (
        True,
        None,
        False,
        "until_own_draw",
    )


def test_table_pins_the_resolved_rules() -> None:
    st = table(D0, D1, D2, rules={"preset": "xiangyang", "cap": 16})
    assert st.rules == resolve({"preset": "xiangyang", "cap": 16})
    assert st.rules is not None and st.rules.pin_dao == "full" and st.rules.cap == 16


def test_shang_lou_does_not_accumulate_over_consecutive_exhausted_hands() -> None:
    # Decision (docs/decisions.md "上楼 does not accumulate"): 下局结算的底分x2 — the next hand's base is
    # the table's base ×2, whether or not the hand before was itself 上楼. Two 荒庄 in a row → base 2.
    st = table(D0, D1, D2, rules={"preset": "shiyan"})
    st = play(st, aborted())
    st = _exhaust(st, (H0, H1, H2), hand=2, dealer=0)
    st = _exhaust(st, (H0, H1, H2), hand=3, dealer=0)
    assert st.hand is not None and st.hand.base == 2
    st = play(st, started(D0, D1, D2, dealer=0, hand=4))
    assert st.hand is not None and st.hand.base == 2


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_pinned_rules_round_trip(preset: str) -> None:
    # "A table pins the fully resolved options when it is opened, so a replay years later gives
    # exactly the same ruling even if a preset's defaults change": the resolved dict resolves to
    # the same options, whatever the preset says later.
    r = resolve({"preset": preset, "kong_chain_cap": 4})
    assert resolve(to_dict(r)) == r
    pinned = {k: v for k, v in to_dict(r).items() if k != "preset"}
    assert resolve({"preset": "default", **pinned}) == msgspec.structs.replace(r, preset="default")


def test_tian_hu_is_scored_with_the_tile_the_dealer_names() -> None:
    # Decision R10 (docs/decisions.md): a dealer's win before the first discard (天胡) has no drawn
    # tile; RULES.md is silent, the `hu` names the winning tile and the patterns that depend on it
    # (卡五星, 暗四归一) follow the name. 1111p 23p 456p 789p 99p: naming 9p gives 清一色 ×4; naming
    # 1p gives 清一色 ×4 × 暗四归一 ×4 = 16 (要胡的牌自己手上已有三张，最后又赢到这张牌), cap 8.
    hand = "1111p 23p 456p 789p 99p"
    s9 = last(play(table(hand, T1, T2), hu([0], "9p")))
    s1 = last(play(table(hand, T1, T2), hu([0], "1p")))
    assert (pats(s9), s9.wins[0].payable) == ({"qing_yi_se": 4}, 4)
    assert (pats(s1), s1.wins[0].payable) == ({"qing_yi_se": 4, "an_si_gui_yi": 4}, 8)
