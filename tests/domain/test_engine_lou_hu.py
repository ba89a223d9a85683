"""漏胡 (RULES.md §9) in its three modes: given a passed win → when the next win → then the ruling.

Deal: seat 2 holds the nine gates 1112345678999p and waits on every 筒 (2p–8p ×4 清一色, 1p/9p ×16
with 暗四归一). The dealer discards 2p and nobody wins it: the window closes at seat 1's draw.
"""

from __future__ import annotations

import pytest

from domain.state import LouHu, TableState
from tests.domain.engine_dsl import discard, draw, given, hu, opened, started, then_ok, when
from tests.domain.engine_dsl import peng as peng_

LOU = ("236p FFF PPP 45678s", "135p 1123s 799s CCC", "1112345678999p")


def passed(mode: str) -> TableState:
    """Seat 2 passes the dealer's 2p (×4); seat 1 draws 4s (closing the window)."""
    return given(
        opened({"preset": "default", "lou_hu": mode}), started(*LOU), discard(0, "2p"), draw(1, "4s")
    )


def test_passing_a_win_restricts_the_seat_with_the_facts_an_audit_needs() -> None:
    st = passed("until_own_draw")
    hs = st.hand
    assert hs is not None
    assert hs.lou_hu[2] == LouHu(hand=1, seat=2, event=3, tile=1, source=0, multiplier=4, since=4)
    assert hs.lou_hu[0] is None and hs.lou_hu[1] is None
    assert hs.lou_hu_log == (hs.lou_hu[2],)


@pytest.mark.parametrize(
    ("mode", "tile", "code"),
    [
        ("until_own_draw", "3p", "lou_hu"),  # any win on a discard, however big
        ("until_own_draw", "1p", "lou_hu"),  # 不过圈即使满胡也不能胡牌
        ("unless_bigger", "3p", "lou_hu"),  # ×4 is not strictly bigger than the ×4 passed
        ("unless_bigger", "1p", None),  # ×16 > ×4: 除非胡第二家的比第一家的牌大
        ("off", "3p", None),
    ],
)
def test_modes(mode: str, tile: str, code: str | None) -> None:
    st = then_ok(passed(mode), discard(1, tile))
    r = when(st, hu([2], tile, 1))
    assert (r.code if r else None) == code


def test_self_draw_is_unaffected() -> None:
    st = then_ok(passed("until_own_draw"), discard(1, "7s"), draw(2, "5p"))
    # the draw itself lifts the restriction, and a self-draw was never restricted
    assert when(st, hu([2], "5p")) is None


def test_own_draw_lifts_the_restriction_and_records_the_draw() -> None:
    st = then_ok(passed("until_own_draw"), discard(1, "7s"), draw(2, "7s"), discard(2, "7s"))
    hs = st.hand
    assert hs is not None and hs.lou_hu[2] is None
    assert hs.lou_hu_log[0].lifted_by == 6  # version of seat 2's draw
    st = then_ok(st, draw(0, "F"), discard(0, "3p"))
    assert when(st, hu([2], "3p", 0)) is None


def test_a_seat_that_could_not_legally_win_is_not_restricted() -> None:
    # seat 1 (2245667s 111p 999p) passes the dealer's 8s: 屁胡 on a discard is below the minimum,
    # so passing it is no 漏胡.
    st = given(
        opened(), started("12345678p 2348s CC", "2245667s 111p 999p", "44p 11s 3s FFF PPP CC"),
        discard(0, "8s"), draw(1, "F"),
    )  # fmt: skip
    assert st.hand is not None and st.hand.lou_hu == (None, None, None)


def test_a_peng_by_another_seat_closes_the_window() -> None:
    # seat 2 could win the dealer's 5p (×4); seat 1 pengs it instead: hu has priority, so seat 2 passed
    st = given(opened(), started("256p FFF PPP 45678s", "1355p 11s 23s 799s CC", "1112345678999p"))
    st = then_ok(st, discard(0, "5p"), peng_(1, "5p"))
    hs = st.hand
    assert hs is not None and hs.lou_hu[2] is not None
    assert (hs.lou_hu[2].event, hs.lou_hu[2].since, hs.lou_hu[2].multiplier) == (3, 4, 4)
    # a restricted seat cannot pass again: seat 1's 3p (×4) is no new 漏胡, just blocked
    st = then_ok(st, discard(1, "3p"))
    assert when(st, hu([2], "3p", 1)) is not None
    st = then_ok(st, draw(2, "9s"), discard(2, "9s"))
    assert st.hand is not None and len(st.hand.lou_hu_log) == 1 and st.hand.lou_hu_log[0].lifted_by == 6


def test_hu_that_leaves_out_a_candidate_records_the_pass() -> None:
    # double-win deal with only seat 1 declaring hu: seat 2's ×2 on 5p is recorded as passed
    st = given(
        opened(), started("1235789p 2345s CCF", "46p 23467899s PPP", "5588p 111666777s"),
        discard(0, "5p"), hu([1], "5p", 0),
    )  # fmt: skip
    hs = st.hand
    assert hs is not None and [(r.seat, r.multiplier, r.since) for r in hs.lou_hu_log] == [(2, 2, 4)]


def test_off_restricts_nobody_and_records_nothing() -> None:
    hs = passed("off").hand
    assert hs is not None and hs.lou_hu == (None, None, None) and hs.lou_hu_log == ()


def test_the_table_keeps_every_finished_hands_lou_hu_records() -> None:
    st = then_ok(passed("until_own_draw"), discard(1, "7s"), draw(2, "7s"), discard(2, "7s"))
    assert st.lou_hu_log == ()  # the hand is still in play: its records are in st.hand
    st = then_ok(st, draw(0, "F"), discard(0, "3p"), hu([2], "3p", 0))
    assert [(r.hand, r.seat, r.event, r.lifted_by) for r in st.lou_hu_log] == [(1, 2, 3, 6)]


def test_with_multi_win_off_the_seat_that_lost_priority_has_not_passed() -> None:
    st = given(
        opened({"preset": "default", "multi_win": False}),
        started("1235789p 2345s CCF", "46p 23467899s PPP", "5588p 111666777s"),
        discard(0, "5p"), hu([1], "5p", 0),
    )  # fmt: skip
    assert st.hand is not None and st.hand.lou_hu_log == ()
