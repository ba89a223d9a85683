"""Rules audit — 漏胡 (RULES.md §9) through whole streams, in all three modes.

RULES.md §9: "A player who could legally have won on a discard (or a robbed kong) and did not, may
not win on any discard or robbed kong until their own next draw … Self-draw is unaffected."
Seeds: 漏胡：如果一家点炮A没有胡牌，那么，A在没有抓牌的情况下，不管A胡几张牌，都不能胡另外玩家打出的牌
(001); 点炮没胡，不过圈即使满胡也不能胡牌 (000); 云梦: 除非胡第二家的比第一家的牌大 (002, 004).

Deal KA5 (dealer 0): seat 2 holds 46p 123456789s PP and waits on 5p only: 卡五星 ×2 (5p in 456p),
enough to win on a discard (min ×2). Seat 1 holds 888p for a 暗杠.
"""

from __future__ import annotations

from domain.state import LouHu
from tests.domain.audit_helpers import code, last, money, pats, play, table
from tests.domain.engine_dsl import discard, draw, hu, kong, liang, peng

KA5 = ("5p 11p 3p 79p 22s 5s 8s CC FF", "5p 888p 2p 33s 6s 9s C F 7p 9p", "46p 123456789s PP")


def _passed(mode: str):  # type: ignore[no-untyped-def]
    # v1 table_opened, v2 hand_started, v3 seat 0 discards 5p (seat 2 could win ×2), v4 seat 1
    # draws: the window closes and seat 2 is restricted.
    return play(table(*KA5, rules={"lou_hu": mode}), discard(0, "5p"), draw(1, "P"))


def test_passed_discard_restricts_until_own_draw_with_the_audit_facts() -> None:
    # Seat 2 could have won seat 0's 5p (v3) for ×2 and let it pass; seat 1's draw (v4) closed the
    # window. The audit must name the discard passed, the multiplier, and (later) the lifting draw.
    st = _passed("until_own_draw")
    assert st.hand is not None
    assert st.hand.lou_hu[2] == LouHu(hand=1, seat=2, event=3, tile=4, source=0, multiplier=2, since=4)
    # 在没有抓牌的情况下…都不能胡另外玩家打出的牌: seat 1's 5p (v5) may not be won.
    st = play(st, discard(1, "5p"))
    assert code(st, hu([2], "5p", 1)) == "lou_hu"
    # Seat 2's own draw (v6) lifts it; seat 0's next 5p (v9) is winnable again: ×2, seat 0 pays 2.
    st = play(st, draw(2, "9p"))
    assert st.hand is not None and st.hand.lou_hu[2] is None
    assert st.hand.lou_hu_log[-1].lifted_by == 6
    st = play(st, discard(2, "9p"), draw(0, "5p"), discard(0, "5p"), hu([2], "5p", 0))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2}
    assert money(s) == {(0, 2, 2, "hu"): 1}


def test_self_draw_is_unaffected_by_a_passed_discard() -> None:
    # "Self-draw is unaffected": seat 2 passed 5p, then self-draws the third 5p: 卡五星 ×2, 自摸两家出
    # → seats 0 and 1 pay 2 each.
    st = play(_passed("until_own_draw"), discard(1, "P"), draw(2, "5p"), hu([2], "5p"))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2}
    assert money(s) == {(0, 2, 2, "hu"): 1, (1, 2, 2, "hu"): 1}


def test_unless_bigger_equal_multiplier_stays_restricted() -> None:
    # 云梦: 除非胡第二家的比第一家的牌大. The passed 5p was ×2; seat 1's plain 5p is ×2 too: not
    # strictly bigger → lou_hu.
    st = play(_passed("unless_bigger"), discard(1, "5p"))
    assert code(st, hu([2], "5p", 1)) == "lou_hu"


def _after_kong_5p(mode: str):  # type: ignore[no-untyped-def]
    # seat 2 passes 5p (×2); seat 1 draws its fourth 8p, 暗杠 (v5), replacement P (v6), discards 5p
    # (v7): for seat 2 that is 卡五星 ×2 × 杠上炮 ×2 = ×4.
    return play(
        table(*KA5, rules={"lou_hu": mode}),
        discard(0, "5p"),
        draw(1, "8p"),
        kong(1, "8p", "concealed"),
        draw(1, "P"),
        discard(1, "5p"),
    )


def test_until_own_draw_blocks_even_a_bigger_win() -> None:
    # 不过圈即使满胡也不能胡牌: ×4 > ×2 but until_own_draw blocks any win on a discard.
    assert code(_after_kong_5p("until_own_draw"), hu([2], "5p", 1)) == "lou_hu"


def test_unless_bigger_allows_a_strictly_bigger_win_and_it_is_paid() -> None:
    # ×4 (卡五星 × 杠上炮) > ×2 passed → allowed. Money: 暗杠 8p 2 from each of seats 0 and 2
    # (暗杠：另2家各×2倍); 杠上炮 点炮者出一份: seat 1 pays 4. Net: 0: −2; 1: +4 −4 = 0; 2: −2 +4 = +2.
    st = play(_after_kong_5p("unless_bigger"), hu([2], "5p", 1))
    s = last(st)
    assert pats(s) == {"ka_wu_xing": 2, "gang_shang_pao": 2}
    assert money(s) == {(0, 1, 2, "kong"): 1, (2, 1, 2, "kong"): 1, (1, 2, 4, "hu"): 1}
    assert s.net == (-2, 0, 2)
    assert s.next_dealer == 2


def test_off_restricts_nobody() -> None:
    # lou_hu: off — "off restricts nobody": the same pass leaves no restriction and the next 5p is won.
    st = play(_passed("off"), discard(1, "5p"))
    assert code(st, hu([2], "5p", 1)) is None


# --- a robbed kong passed ------------------------------------------------------------------------
# Seat 2 (45p 123s 456s 789s CC, waits 3p/6p, 屁胡) declares 亮倒 so every win is ×2 and may be on a
# discard. Seat 1 pengs 3p, later draws the fourth 3p and 补杠s it (v11): seat 2 could rob it for
# 亮倒 ×2 × 抢杠胡 ×2 = ×4 and lets it pass; seat 1's replacement draw (v12) closes the window.
ROB = ("3p 1199p 19s 258s CFFP", "33p 78p 22s 77s 8s 9s PP C", "45p 123s 456s 789s CC")


def _rob_passed(rules: dict[str, object]):  # type: ignore[no-untyped-def]
    return play(
        table(*ROB, rules=rules),
        discard(0, "3p"),  # v3: seat 2 waits 3p but ×1 on a discard is not a legal win: no 漏胡
        peng(1, "3p"),
        discard(1, "C"),
        draw(2, "9p"),
        liang(2, "9p"),  # v7: 45p 123s 456s 789s CC, waits 3p 6p
        draw(0, "1p"),
        discard(0, "1p"),
        draw(1, "3p"),
        kong(1, "3p", "added"),  # v11
        draw(1, "6p"),  # v12: replacement draw, closes the rob window
        discard(1, "6p"),  # v13
    )


def test_passing_a_robbable_kong_is_lou_hu() -> None:
    # RULES.md §9 "(or a robbed kong)": the pass of the rob at v11 restricts seat 2; seat 1's 6p
    # (v13) may not be won.
    st = _rob_passed({})
    assert st.hand is not None
    r = st.hand.lou_hu[2]
    assert r is not None and (r.event, r.tile, r.multiplier, r.since) == (11, 2, 4, 12)
    assert code(st, hu([2], "6p", 1)) == "lou_hu"


def test_unless_bigger_robbed_kong_pass_versus_gang_shang_pao() -> None:
    # The 6p after seat 1's kong is 杠上炮 ×2 × 亮倒 ×2 = ×4: equal to the ×4 passed → still lou_hu.
    assert code(_rob_passed({"lou_hu": "unless_bigger"}), hu([2], "6p", 1)) == "lou_hu"


def test_rob_kong_off_passing_the_kong_is_not_a_missed_win() -> None:
    # rob_kong false: the kong could not legally be robbed, so letting it pass misses no win
    # ("could legally have won") and the 6p is won: 杠上炮 ×2 × 亮倒 ×2 = 4. 包胡 (default
    # discarder_pays_double: 相当于亮倒的人自摸，但由点炮者一个人出): seat 1 pays 2 × 4 = 8. The 补杠
    # stands: 1 from each of seats 0 and 2. Net: 0: −1; 1: +2 −8 = −6; 2: −1 +8 = +7.
    st = _rob_passed({"rob_kong": False})
    assert st.hand is not None and st.hand.lou_hu[2] is None
    st = play(st, hu([2], "6p", 1))
    s = last(st)
    assert pats(s) == {"gang_shang_pao": 2, "liang_dao": 2}
    assert money(s) == {(0, 1, 1, "kong"): 1, (2, 1, 1, "kong"): 1, (1, 2, 8, "hu"): 1}
    assert s.net == (-1, -6, 7)


def test_yunmeng_preset_has_no_rob_and_compares_multipliers() -> None:
    # yunmeng = lou_hu unless_bigger, pin_dao full, rob_kong false (RULES.md §10): robbing is a
    # rob_kong_disabled ruling, and the pass is not 漏胡.
    st = play(
        table(*ROB, rules={"preset": "yunmeng"}),
        discard(0, "3p"),
        peng(1, "3p"),
        discard(1, "C"),
        draw(2, "9p"),
        liang(2, "9p"),
        draw(0, "1p"),
        discard(0, "1p"),
        draw(1, "3p"),
        kong(1, "3p", "added"),
    )
    assert code(st, hu([2], "3p", 1)) == "rob_kong_disabled"
    st = play(st, draw(1, "6p"), discard(1, "6p"))
    assert code(st, hu([2], "6p", 1)) is None


def test_off_leaves_no_restriction_in_the_state() -> None:
    # "off restricts nobody" (RULES.md §9): the state (CONTRACT §3 "漏胡 restrictions") and the audit
    # must not show seat 2 as restricted after a pass on an lou_hu: off table.
    st = _passed("off")
    assert st.hand is not None
    assert st.hand.lou_hu == (None, None, None)
    assert st.hand.lou_hu_log == ()
