"""Rules audit — 亮倒 (RULES.md §8), 包胡 (§7) and 荒庄 with declarers (§7, §2), through streams.

Seeds: 亮倒：听牌后，可以选择把手中的牌亮出来给所有人看着打 (all); 亮倒后不可以换手中的牌，只能自摸胡牌；
但是，可以在不影响听牌的情况下开杠 (001); 在亮倒的情况下，23334567 不可以杠3，因为杠3后就不再是听牌牌型了
(001); 三个的不亮 (000); 少于12张不能亮 (000, 3D 孝感); 不能打别人胡的牌 (000, 3D).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.domain.audit_helpers import code, last, money, pats, play, table
from tests.domain.engine_dsl import burn, discard, draw, exhausted, full_wall, hu, kong, liang

# Dealer 0 is not ready. Seat 1 holds 23334567p 12s CCC: ready on 3s only (234p 567p 33p + 123s +
# CCC), and 333p is NOT an independent set (the only reading uses 33p as the pair and a 3p in 234p).
H0 = "8p 11p 79p 22s 5s 8s FF PP 9s"
H1_LINKED = "23334567p 12s CCC"
H2 = "2468p 1s 456789s 99p"  # not ready
# Seat 1 alternative: 333p 567p 456s 789s C, ready on C, 333p independent in every reading.
H1_FREE = "333p 567p 456s 789s C"


def _declared(h1: str, rules: dict[str, Any] | None = None, hidden: str = ""):  # type: ignore[no-untyped-def]
    # v3 seat 0 discards 9s; v4 seat 1 draws F; v5 seat 1 declares 亮倒 discarding F (13 tiles left).
    return play(table(H0, h1, H2, rules=rules), discard(0, "9s"), draw(1, "F"), liang(1, "F", hidden))


def test_not_ready_may_not_declare() -> None:
    # "the 13 tiles left must be ready (听牌)": the dealer's 3p 11p 79p 22s 5s 8s FF PP (after 9s)
    # waits on nothing.
    st = table(H0, H1_LINKED, H2)
    assert code(st, liang(0, "9s")) == "liang_dao_not_ready"


def test_declared_waits_are_fixed() -> None:
    st = _declared(H1_LINKED)
    assert st.hand is not None
    info = st.hand.liang_dao[1]
    assert info is not None and info.waits == (11,)  # 3s


def test_locked_hand_discards_the_drawn_tile_and_may_not_peng() -> None:
    # 亮倒后不可以换手中的牌: after its draw seat 1 must discard that very tile; no 碰.
    st = play(_declared(H1_LINKED), draw(2, "8p"), discard(2, "8p"), draw(0, "5s"), discard(0, "5s"))
    st1 = play(st, draw(1, "6s"))
    assert code(st1, discard(1, "1s")) == "liang_dao_locked"
    assert code(st1, discard(1, "6s")) is None


def test_liang_dao_23334567_may_not_kong_3() -> None:
    # 在亮倒的情况下，23334567 不可以杠3: seat 1 draws the fourth 3p; a 暗杠 would leave 24567p 12s CCC,
    # no longer ready → liang_dao_kong_changes_waits.
    st = play(_declared(H1_LINKED), draw(2, "8p"), discard(2, "8p"), draw(0, "5s"), discard(0, "5s"))
    st = play(st, draw(1, "3p"))
    assert code(st, kong(1, "3p", "concealed")) == "liang_dao_kong_changes_waits"
    assert code(st, discard(1, "3p")) is None


def test_without_liang_dao_23334567_may_kong_3() -> None:
    # 在没有亮倒的情况下，玩家是23334567 的牌型…可以杠3，杠3后，不再是听牌牌型，是可以的.
    st = play(table(H0, H1_LINKED, H2), discard(0, "9s"), draw(1, "3p"))
    assert code(st, kong(1, "3p", "concealed")) is None


def test_liang_dao_23334567_may_not_zhi_gang_3() -> None:
    # The same for 直杠 of a discarded 3p (暗杠和直杠的3张牌是独立的一句牌): seat 0's 3p may not be konged.
    st = play(_declared(H1_LINKED), draw(2, "8p"), discard(2, "8p"), draw(0, "3p"), discard(0, "3p"))
    assert code(st, kong(1, "3p", "exposed")) == "liang_dao_kong_changes_waits"


def test_liang_dao_independent_triplet_may_kong_both_ways() -> None:
    # 333p 567p 456s 789s C: 333p is an independent set, the wait C is unchanged by a kong.
    st = play(_declared(H1_FREE), draw(2, "8p"), discard(2, "8p"), draw(0, "3p"), discard(0, "3p"))
    assert code(st, kong(1, "3p", "exposed")) is None
    st = play(_declared(H1_FREE), draw(2, "8p"), discard(2, "8p"), draw(0, "5s"), discard(0, "5s"))
    st = play(st, draw(1, "3p"))
    assert code(st, kong(1, "3p", "concealed")) is None


def test_hidden_triplets() -> None:
    # 三个的不亮 (liang_dao_hide_triplets, default true): 333p may stay face down (``hidden`` names
    # each triplet's tile once); 5p is not a triplet.
    st = _declared(H1_FREE, hidden="3p")
    assert st.hand is not None and st.hand.liang_dao[1] is not None
    assert st.hand.liang_dao[1].hidden == (2,)
    st = play(table(H0, H1_FREE, H2), discard(0, "9s"), draw(1, "F"))
    assert code(st, liang(1, "F", "5p")) == "liang_dao_hidden"
    st = play(
        table(H0, H1_FREE, H2, rules={"liang_dao_hide_triplets": False}), discard(0, "9s"), draw(1, "F")
    )
    assert code(st, liang(1, "F", "3p")) == "liang_dao_hidden"


# --- 包胡 --------------------------------------------------------------------------------------------
# Seat 1 declares (H1_FREE, waits C); seat 2 feeds C. The win: 333p 567p 456s 789s CC = 屁胡, ×2 for
# 亮倒 only — enough for a discard win ("The declarer's win is ×2 and may always be on a discard").


def _fed(rules: dict[str, Any]):  # type: ignore[no-untyped-def]
    return play(_declared(H1_FREE, rules), draw(2, "C"), discard(2, "C"), hu([1], "C", 2))


@pytest.mark.parametrize(
    ("feed", "expected"),
    [
        # 如点了亮倒的人和，那么就相当于亮倒的人自摸，但由点炮者一个人出 → 2 × base × 2 = 4 from seat 2
        ("discarder_pays_double", {(2, 1, 4, "hu"): 1}),
        # normal: 点炮则由点炮者出一份 → 2 from seat 2
        ("normal", {(2, 1, 2, "hu"): 1}),
        # both_pay (3D: 对亮倒的玩家放炮，则两家均扣分) → 2 from each of seats 0 and 2
        ("both_pay", {(0, 1, 2, "hu"): 1, (2, 1, 2, "hu"): 1}),
    ],
)
def test_bao_hu_modes(feed: str, expected: dict[tuple[Any, ...], int]) -> None:
    s = last(_fed({"liang_dao_feed": feed}))
    assert pats(s) == {"liang_dao": 2}
    assert s.wins[0].multiplier == 2
    assert money(s) == expected


def test_bao_hu_not_when_the_discarder_had_declared_too() -> None:
    # 点炮的人也亮倒了的话不用包和，相当于普通点炮: seat 2 (46p 123s 456s 789s 99p, waits 5p)
    # declares too, later draws C and must discard it: seat 1 wins ×2, seat 2 pays 2 only.
    h2 = "46p 123s 456s 789s 99p"
    st = play(
        table(H0, H1_FREE, h2),
        discard(0, "9s"),
        draw(1, "F"),
        liang(1, "F"),
        draw(2, "P"),
        liang(2, "P"),
        draw(0, "8p"),
        discard(0, "8p"),
        draw(1, "8s"),
        discard(1, "8s"),
        draw(2, "C"),
        discard(2, "C"),
        hu([1], "C", 2),
    )
    s = last(st)
    assert s.wins[0].bao_hu is None
    assert money(s) == {(2, 1, 2, "hu"): 1}


def test_forbid_feeding_platform_3d() -> None:
    # platform_3d: liang_dao_forbid_feeding — 不能打别人胡的牌 (此牌为胡口牌，禁止出牌): seat 2 may not
    # discard C while seat 1 waits on it; another tile is fine.
    st = play(_declared(H1_FREE, {"preset": "platform_3d"}), draw(2, "C"))
    assert code(st, discard(2, "C")) == "feeding_declared_wait"
    assert code(st, discard(2, "1s")) is None


# --- liang_dao_min_wall -------------------------------------------------------------------------------


def _ready_to_declare(rules: dict[str, Any], rounds: int):  # type: ignore[no-untyped-def]
    """Seat 0 discards 9s, then ``rounds`` of 摸打; returns the state and seat 1's next draw."""
    wall = full_wall(H0, H1_FREE, H2)
    st = play(table(H0, H1_FREE, H2, rules=rules, wall=wall), discard(0, "9s"))
    st = burn(st, rounds)
    assert st.hand is not None and st.hand.wall is not None
    tile = wall[st.hand.front]
    return play(st, draw(1, tile)), tile


@pytest.mark.parametrize(
    ("rules", "rounds", "left", "expected"),
    [
        # xiaogan: 少于12张不能亮. 30 rounds + seat 1's draw = 31 draws: 13 left → allowed
        ({"preset": "xiaogan"}, 30, 13, None),
        # 33 rounds + the draw: 10 left, fewer than 12 → liang_dao_min_wall
        ({"preset": "xiaogan"}, 33, 10, "liang_dao_min_wall"),
        # exactly the minimum is not "fewer than": min 13 with 13 left → allowed
        ({"liang_dao_min_wall": 13}, 30, 13, None),
        ({"liang_dao_min_wall": 11}, 33, 10, "liang_dao_min_wall"),
        # default: no minimum
        ({}, 33, 10, None),
    ],
)
def test_liang_dao_min_wall(rules: dict[str, Any], rounds: int, left: int, expected: str | None) -> None:
    st, tile = _ready_to_declare(rules, rounds)
    assert st.hand is not None and 44 - st.hand.front - st.hand.back == left
    assert code(st, liang(1, tile)) == expected


# --- 荒庄 with declarers ------------------------------------------------------------------------------


def _exhausted(rules: dict[str, Any], *, two: bool):  # type: ignore[no-untyped-def]
    """Seat 1 declares at v5 (and seat 2 at v7 when ``two``), then the wall runs out: 荒庄."""
    h2 = "46p 123s 456s 789s 99p" if two else H2
    wall = full_wall(H0, H1_FREE, h2, front="FP")
    st = play(table(H0, H1_FREE, h2, rules=rules, wall=wall), discard(0, "9s"), draw(1, "F"), liang(1, "F"))
    st = play(st, draw(2, "P"), liang(2, "P") if two else discard(2, "P"))
    st = burn(st, 42)
    assert st.hand is not None and st.hand.front == 44
    return play(st, exhausted())


@pytest.mark.parametrize(
    ("rules", "two", "expected", "dealer"),
    [
        # default declarers_pay_undeclared: 一个玩家亮倒，亮倒的那个玩家要赔两个没有亮倒的玩家每人1个
        ({}, False, {(1, 0, 1, "exhausted"): 1, (1, 2, 1, "exhausted"): 1}, 0),
        # 两个玩家亮倒，分别要赔没有亮倒的玩家1个
        ({}, True, {(1, 0, 1, "exhausted"): 1, (2, 0, 1, "exhausted"): 1}, 0),
        # xiangyang: 如果荒庄，那么第一个亮倒的要赔每家1个 — seat 1 (first) pays both, seat 2 nothing;
        # and 亮倒荒胡赔庄的为下局庄家 (the preset's exhausted_dealer since issue 15): seat 1 deals next
        ({"preset": "xiangyang"}, True, {(1, 0, 1, "exhausted"): 1, (1, 2, 1, "exhausted"): 1}, 1),
        ({"exhausted_liang_dao": "none"}, True, {}, 0),
        # exhausted_dealer first_declarer: 亮倒荒庄，先亮者坐庄 → seat 1 deals next; 荒庄不下庄 otherwise
        (
            {"exhausted_dealer": "first_declarer"},
            True,
            {(1, 0, 1, "exhausted"): 1, (2, 0, 1, "exhausted"): 1},
            1,
        ),
    ],
)
def test_exhausted_with_declarers(rules: dict[str, Any], two: bool, expected: Any, dealer: int) -> None:
    s = last(_exhausted(rules, two=two))
    assert s.end == "exhausted"
    assert money(s) == expected
    assert s.next_dealer == dealer


def test_liang_dao_may_not_kong_a_tile_it_waits_on() -> None:
    # Decision (docs/decisions.md "亮倒: no kong of a triplet whose fourth tile is a wait"):
    # 333p 45p 456s 789s CC waits on 3p, 6p and C. Konging the fourth 3p would kill the 3p wait
    # (可以在不影响听牌的情况下开杠 — this kong does affect it): refused; the declarer wins it instead.
    h1 = "333p 45p 456s 789s CC"
    st = play(table(H0, h1, H2), discard(0, "9s"), draw(1, "F"), liang(1, "F"))
    assert st.hand is not None and st.hand.liang_dao[1] is not None
    assert st.hand.liang_dao[1].waits == (2, 5, 18)
    st = play(st, draw(2, "8p"), discard(2, "8p"), draw(0, "5s"), discard(0, "5s"), draw(1, "3p"))
    assert code(st, kong(1, "3p", "concealed")) == "liang_dao_kong_changes_waits"
    # it wins instead: 333p 345p 456s 789s CC, the three 3p held + the fourth won
    # (要胡的牌自己手上已有三张，最后又赢到这张牌): 暗四归一 ×4 × 亮倒 ×2 = 8
    st = play(st, hu([1], "3p"))
    assert pats(last(st)) == {"an_si_gui_yi": 4, "liang_dao": 2}


def test_hidden_triplet_still_counts_for_an_si_gui_yi_on_a_discard() -> None:
    # RULES.md §8: a concealed triplet stays concealed for 暗四归一 whether shown or kept face down;
    # 暗四归一 逮炮也算. Seat 1 keeps 333p face down, seat 0 discards the fourth 3p: 亮倒 ×2 ×
    # 暗四归一 ×4 = 8; 包胡 (discarder_pays_double): seat 0 pays 2 × 8 = 16.
    h1 = "333p 45p 456s 789s CC"
    st = play(table(H0, h1, H2), discard(0, "9s"), draw(1, "F"), liang(1, "F", "3p"))
    st = play(st, draw(2, "8p"), discard(2, "8p"), draw(0, "3p"), discard(0, "3p"), hu([1], "3p", 0))
    s = last(st)
    assert pats(s) == {"an_si_gui_yi": 4, "liang_dao": 2}
    assert money(s) == {(0, 1, 16, "hu"): 1}


def test_forced_feeding_when_every_tile_is_a_declared_wait() -> None:
    # Decision (docs/decisions.md R8). 3D: 如果玩家手中全都是亮倒者要胡的牌，
    # 则游戏直接结束，玩家需赔付给亮倒者最大可能番数.
    # There is no event for "the game ends directly": the engine lets the forced discard through
    # and the declarer wins it. Seat 1 declares the nine gates 1112345678999p (waits 1p–9p);
    # seat 2 holds only 筒 and must discard one: 9p is allowed. Seat 1 wins on the reading
    # 123p 456p 789p 11p 999p: 清一色 ×4 × 暗四归一 ×4 × 亮倒 ×2 = 32, cap 8;
    # platform_3d both_pay: seats 0 and 2 pay 8 each.
    h0, h1, h2 = "CFP 123456789s CC", "1112345678999p", "2233445566778p"
    st = play(
        table(h0, h1, h2, rules={"preset": "platform_3d"}), discard(0, "C"), draw(1, "F"), liang(1, "F")
    )
    st = play(st, draw(2, "9p"))
    assert code(st, discard(2, "9p")) is None
    st = play(st, discard(2, "9p"), hu([1], "9p", 2))
    s = last(st)
    assert pats(s) == {"qing_yi_se": 4, "an_si_gui_yi": 4, "liang_dao": 2}
    assert (s.wins[0].multiplier, s.wins[0].payable) == (32, 8)
    assert money(s) == {(0, 1, 8, "hu"): 1, (2, 1, 8, "hu"): 1}


def test_liang_dao_x2_lets_a_pi_hu_win_on_a_discard() -> None:
    # 屁胡只能自摸 / ×2及以上可以胡别人打出的牌: undeclared, 333p 567p 456s 789s + C is ×1 and may not be
    # won on seat 2's C (below_min_multiplier); declared, it is ×2 (亮倒后则是在胡牌的基础上进行×2).
    st = play(table(H0, H1_FREE, H2), discard(0, "9s"), draw(1, "F"), discard(1, "F"), draw(2, "C"))
    st = play(st, discard(2, "C"))
    assert code(st, hu([1], "C", 2)) == "below_min_multiplier"
    st = play(_declared(H1_FREE), draw(2, "C"), discard(2, "C"))
    assert code(st, hu([1], "C", 2)) is None


def test_both_pay_declared_discarder_pays_the_whole_bao_hu() -> None:
    # Decision R9 (docs/decisions.md). 3D (the source of both_pay): 对亮炮胡包赔（当两家亮倒时，系统自动
    # 打出摸进的牌，如果导致另一名亮倒的玩家胡牌，则放炮者需包赔，另一家无需赔付）. Under both_pay a feed by a
    # player who had not declared costs both others M each (两家均扣分); a feed by a declarer is
    # paid by that declarer alone (包赔) — the whole 2 × M — and the third player pays nothing.
    # Seat 1 (333p 567p 456s 789s C, waits C) and seat 2 (46p 123s 456s 789s 99p) declare; seat 2
    # draws C and must discard it; seat 1 wins ×2 (亮倒): seat 2 pays 2 × 2 = 4, seat 0 nothing.
    st = play(
        table(H0, H1_FREE, "46p 123s 456s 789s 99p", rules={"liang_dao_feed": "both_pay"}),
        discard(0, "9s"),
        draw(1, "F"),
        liang(1, "F"),
        draw(2, "P"),
        liang(2, "P"),
        draw(0, "8p"),
        discard(0, "8p"),
        draw(1, "8s"),
        discard(1, "8s"),
        draw(2, "C"),
        discard(2, "C"),
        hu([1], "C", 2),
    )
    s = last(st)
    assert money(s) == {(2, 1, 4, "hu"): 1}
    assert s.wins[0].bao_hu == "both_pay"
