"""Settlement (RULES.md §7, §2 next dealer): given a finished HandRecord → when settled → then the
transfers, net and next dealer. Every amount is derived by hand in the comment of its case.

Records are built directly (no reducer). Events: 1 table_opened, 2 hand_started, then whatever the
case says. Transfers are written ``(from, to, amount, reason, event)``; they must come out in
exactly this order (by event, then fee → kong → hu → piao → exhausted, then as generated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import prod
from typing import Any

import pytest

from domain.facts import Declaration, HandRecord, KongRecord, Settlement, WinRecord
from domain.rules import resolve
from domain.scoring import PatternHit, Score
from domain.settle import SettlementError, chain_factor, ma_value, settle_hand
from domain.tiles import tile


def score(patterns: str = "", cap: int | None = 8, shu_kan: int = 0) -> Score:
    """``score("qing_yi_se:4 liang_dao:2")`` → a Score with those multipliers (×1 屁胡 when empty)."""
    hits = tuple(
        PatternHit(id=p.split(":")[0], x=int(p.split(":")[1]), detail=f"test {p}") for p in patterns.split()
    )
    mult = prod(h.x for h in hits) if hits else 1
    capped = mult if cap is None else min(mult, cap)
    return Score(
        patterns=hits,
        multiplier=mult,
        capped=capped,
        shu_kan=shu_kan,
        payable=capped + shu_kan,
        allowed=True,
        min_required=1,
    )


def win(seat: int, source: int | None, t: str, patterns: str = "", event: int = 20, **kw: Any) -> WinRecord:
    cap = kw.pop("cap", 8)
    shu_kan = kw.pop("shu_kan", 0)
    return WinRecord(
        seat=seat, source=source, tile=tile(t), event=event, score=score(patterns, cap, shu_kan), **kw
    )


def kong(
    seat: int, kind: str, t: str, event: int, chain: int = 1, source: int | None = None, **kw: Any
) -> KongRecord:
    return KongRecord(seat=seat, kind=kind, tile=tile(t), event=event, chain=chain, source=source, **kw)


def decl(*pairs: tuple[int, int]) -> tuple[Declaration, ...]:
    return tuple(Declaration(seat=s, event=e) for s, e in pairs)


def record(end: str = "hu", dealer: int = 0, base: int = 1, **kw: Any) -> HandRecord:
    return HandRecord(
        hand=1, dealer=dealer, base=base, start_event=2, end=end, end_event=kw.pop("end_event", 20), **kw
    )


@dataclass
class Case:
    id: str
    record: HandRecord
    transfers: list[tuple[Any, Any, int, str, int]]
    net: tuple[int, int, int]
    next_dealer: int
    rules: dict[str, Any] = field(default_factory=dict)
    house: int = 0


CASES = [
    # --- hand payment -------------------------------------------------------------------------
    Case(
        # 自摸: seat 1 wins 清一色 ×4 on its own draw, base 2: seats 0 and 2 each pay 2 × 4 = 8.
        "self_draw",
        record(base=2, wins=(win(1, None, "5p", "qing_yi_se:4"),)),
        [(0, 1, 8, "hu", 20), (2, 1, 8, "hu", 20)],
        (-8, 16, -8),
        1,
    ),
    Case(
        # 点炮: seat 2 wins ×2 (卡五星) on seat 1's discard: seat 1 alone pays 1 × 2 = 2.
        "discard",
        record(wins=(win(2, 1, "5s", "ka_wu_xing:2"),)),
        [(1, 2, 2, "hu", 20)],
        (0, -2, 2),
        2,
    ),
    Case(
        # 杠上炮: seat 2 暗杠 at 10 (each other pays 2), then its discard is won by seat 0 with
        # 杠上炮 ×2 × 碰碰胡 ×2 = 4: seat 2 pays 4; the kong money stands (杠钱照算).
        # net: 0: −2 + 4 = 2; 1: −2; 2: +4 − 4 = 0.
        "gang_shang_pao",
        record(
            kongs=(kong(2, "concealed", "9s", 10),),
            wins=(win(0, 2, "3p", "gang_shang_pao:2 peng_peng_hu:2", after_kong_discard=True),),
        ),
        [(0, 2, 2, "kong", 10), (1, 2, 2, "kong", 10), (2, 0, 4, "hu", 20)],
        (2, -2, 0),
        0,
    ),
    Case(
        # 抢杠胡: seat 1's 补杠 of 7s at 11 is robbed by seat 2 (抢杠胡 ×2): the kong pays nothing
        # (抢的杠不算杠), the konger pays 2.
        "robbed_kong",
        record(
            kongs=(kong(1, "added", "7s", 11, robbed=True),),
            wins=(win(2, 1, "7s", "qiang_gang_hu:2", event=12, robbed_kong=True),),
        ),
        [(1, 2, 2, "hu", 12)],
        (0, -2, 2),
        2,
    ),
    # --- 包胡 -----------------------------------------------------------------------------------
    Case(
        # 包胡, default discarder_pays_double: seat 1 declared 亮倒 at 5, seat 2 had not and feeds
        # the winning 8s; 亮倒 ×2 → M = 2; seat 2 pays 2 × 1 × 2 = 4, seat 0 nothing.
        "bao_hu_double",
        record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
        [(2, 1, 4, "hu", 20)],
        (0, 4, -4),
        1,
    ),
    Case(
        # 包胡, normal: same hand, the discarder pays 1 × 2 = 2.
        "bao_hu_normal",
        record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
        [(2, 1, 2, "hu", 20)],
        (0, 2, -2),
        1,
        rules={"liang_dao_feed": "normal"},
    ),
    Case(
        # 包胡, both_pay (3D platform): like a self-draw, seats 0 and 2 each pay 1 × 2 = 2
        # (lines in seat order: 0 then 2).
        "bao_hu_both_pay",
        record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
        [(0, 1, 2, "hu", 20), (2, 1, 2, "hu", 20)],
        (-2, 4, -2),
        1,
        rules={"liang_dao_feed": "both_pay"},
    ),
    Case(
        # The discarder had declared 亮倒 too (seat 2 at 7): no 包胡, a normal payment of 1 × 2.
        "bao_hu_discarder_declared",
        record(
            declarations=decl((1, 5), (2, 7)),
            wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True, source_liang_dao=True),),
        ),
        [(2, 1, 2, "hu", 20)],
        (0, 2, -2),
        1,
    ),
    Case(
        # The discarder's 亮倒 is taken from the declarations even when the flag is not set.
        "bao_hu_discarder_declared_from_declarations",
        record(declarations=decl((1, 5), (2, 7)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
        [(2, 1, 2, "hu", 20)],
        (0, 2, -2),
        1,
    ),
    Case(
        # 包胡 applies to a robbed kong (decision, docs/settlement.md): seat 0 declared at 5, seat 1's
        # 补杠 of 7s (at 11) is robbed; 抢杠胡 ×2 × 亮倒 ×2 = 4; the konger pays 2 × 1 × 4 = 8.
        "bao_hu_robbed_kong",
        record(
            declarations=decl((0, 5)),
            kongs=(kong(1, "added", "7s", 11, robbed=True),),
            wins=(
                win(0, 1, "7s", "qiang_gang_hu:2 liang_dao:2", event=12, liang_dao=True, robbed_kong=True),
            ),
        ),
        [(1, 0, 8, "hu", 12)],
        (8, -8, 0),
        0,
    ),
    Case(
        # 包胡 with the cap: 清一色 ×4 × 亮倒 ×2 = 8 (cap 8 → 8): discarder pays 2 × 8 = 16.
        "bao_hu_capped",
        record(
            declarations=decl((1, 5)), wins=(win(1, 0, "2s", "qing_yi_se:4 liang_dao:2", liang_dao=True),)
        ),
        [(0, 1, 16, "hu", 20)],
        (-16, 16, 0),
        1,
    ),
    Case(
        # 亮倒 declarer self-draws: an ordinary self-draw, 亮倒 ×2 × 卡五星 ×2 = 4: each pays 4.
        "liang_dao_self_draw",
        record(
            declarations=decl((2, 5)), wins=(win(2, None, "5p", "ka_wu_xing:2 liang_dao:2", liang_dao=True),)
        ),
        [(0, 2, 4, "hu", 20), (1, 2, 4, "hu", 20)],
        (-4, -4, 8),
        2,
    ),
    # --- 一炮双响 ----------------------------------------------------------------------------------
    Case(
        # Seat 0 discards 5p, seats 1 (卡五星 ×2) and 2 (碰碰胡 ×2) both win: 0 pays each 2;
        # the discarder deals next.
        "double_win",
        record(wins=(win(1, 0, "5p", "ka_wu_xing:2"), win(2, 0, "5p", "peng_peng_hu:2"))),
        [(0, 1, 2, "hu", 20), (0, 2, 2, "hu", 20)],
        (-4, 2, 2),
        0,
    ),
    Case(
        # 一炮双响 where seat 1 had declared (包胡 ×2 for that win only): 亮倒 ×2 × 碰碰胡 ×2 = 4 →
        # 0 pays 2 × 4 = 8 to seat 1; seat 2 (屁胡 ×1… here 七对 ×4) gets 4. Next dealer 0.
        "double_win_one_bao_hu",
        record(
            dealer=1,
            declarations=decl((1, 5)),
            wins=(win(1, 0, "C", "peng_peng_hu:2 liang_dao:2", liang_dao=True), win(2, 0, "C", "qi_dui:4")),
        ),
        [(0, 1, 8, "hu", 20), (0, 2, 4, "hu", 20)],
        (-12, 8, 4),
        0,
    ),
    # --- kong money --------------------------------------------------------------------------
    Case(
        # 杠上杠 chain, ending in 荒庄 with no declarations:
        #   10: seat 0 暗杠 (k=1): 2 × 2^0 = 2 from each of 1, 2;
        #   12: seat 0 补杠 on the replacement draw (k=2): 1 × 2^1 = 2 from each of 1, 2;
        #   15: seat 1 直杠 of seat 0's discard after that draw (k=3): 2 × 2^2 = 8 from seat 0.
        # net: 0: +4 +4 −8 = 0; 1: −2 −2 +8 = 4; 2: −4.
        "kong_chain",
        record(
            end="exhausted",
            kongs=(
                kong(0, "concealed", "1p", 10),
                kong(0, "added", "2p", 12, chain=2),
                kong(1, "exposed", "5s", 15, chain=3, source=0),
            ),
        ),
        [
            (1, 0, 2, "kong", 10),
            (2, 0, 2, "kong", 10),
            (1, 0, 2, "kong", 12),
            (2, 0, 2, "kong", 12),
            (0, 1, 8, "kong", 15),
        ],
        (0, 4, -4),
        0,
    ),
    Case(
        # The same chain with kong_chain_cap 2: the 3rd kong's factor is min(4, 2) = 2 → 2 × 2 = 4.
        # net: 0: +8 −4 = 4; 1: −4 +4 = 0; 2: −4.
        "kong_chain_capped",
        record(
            end="exhausted",
            kongs=(
                kong(0, "concealed", "1p", 10),
                kong(0, "added", "2p", 12, chain=2),
                kong(1, "exposed", "5s", 15, chain=3, source=0),
            ),
        ),
        [
            (1, 0, 2, "kong", 10),
            (2, 0, 2, "kong", 10),
            (1, 0, 2, "kong", 12),
            (2, 0, 2, "kong", 12),
            (0, 1, 4, "kong", 15),
        ],
        (4, 0, -4),
        0,
        rules={"kong_chain_cap": 2},
    ),
    Case(
        # kong_points {concealed 3, added 1, exposed 1}, base 2: 暗杠 → 3 × 2 = 6 from each other;
        # 直杠 (seat 2 on seat 1's discard) → 1 × 2 = 2 from seat 1 only.
        "kong_points_custom",
        record(
            end="exhausted",
            base=2,
            kongs=(kong(0, "concealed", "C", 9), kong(2, "exposed", "9p", 14, source=1)),
        ),
        [(1, 0, 6, "kong", 9), (2, 0, 6, "kong", 9), (1, 2, 2, "kong", 14)],
        (12, -8, -4),
        0,
        rules={"kong_points": {"concealed": 3, "added": 1, "exposed": 1}},
    ),
    Case(
        # Kong money is never capped and never ×亮倒: seat 0 (declared at 6) 暗杠 at 8 (2 each),
        # then self-draws a ×16 hand capped at 8: each pays 8. net: 0: 4 + 16 = 20.
        "kong_not_capped_nor_liang_dao",
        record(
            declarations=decl((0, 6)),
            kongs=(kong(0, "concealed", "6s", 8),),
            wins=(
                win(
                    0,
                    None,
                    "3s",
                    "qing_yi_se:4 liang_dao:2 gang_shang_kai_hua:2",
                    liang_dao=True,
                    kong_draw=True,
                ),
            ),
        ),
        [(1, 0, 2, "kong", 8), (2, 0, 2, "kong", 8), (1, 0, 8, "hu", 20), (2, 0, 8, "hu", 20)],
        (20, -10, -10),
        0,
    ),
    Case(
        # A kong chain of 5 (uncapped, 卡五星杠不封顶): the 5th 暗杠 pays 2 × 2^4 = 32 from each other.
        "kong_chain_long",
        record(end="exhausted", kongs=(kong(1, "concealed", "4s", 30, chain=5),)),
        [(0, 1, 32, "kong", 30), (2, 1, 32, "kong", 30)],
        (-32, 64, -32),
        0,
    ),
    # --- 荒庄 ----------------------------------------------------------------------------------
    Case(
        # declarers_pay_undeclared (default), one declarer (seat 1): pays seats 0 and 2 one each.
        # A 暗杠 by seat 2 at 9 stands (荒庄不荒杠): 0 → 2 and 1 → 2 two each.
        # net: 0: −2 +1 = −1; 1: −2 −2 = −4; 2: +4 +1 = 5.
        "exhausted_one_declarer",
        record(
            end="exhausted", end_event=50, declarations=decl((1, 12)), kongs=(kong(2, "concealed", "P", 9),)
        ),
        [(0, 2, 2, "kong", 9), (1, 2, 2, "kong", 9), (1, 0, 1, "exhausted", 50), (1, 2, 1, "exhausted", 50)],
        (-1, -4, 5),
        0,
    ),
    Case(
        # Two declarers (2 then 0) each pay the non-declarer (1) one: net (−1, 2, −1).
        "exhausted_two_declarers",
        record(end="exhausted", end_event=50, dealer=2, declarations=decl((2, 12), (0, 14))),
        [(0, 1, 1, "exhausted", 50), (2, 1, 1, "exhausted", 50)],
        (-1, 2, -1),
        2,
    ),
    Case(
        # All three declared: nobody pays (三家都亮倒都不赔).
        "exhausted_three_declarers",
        record(end="exhausted", end_event=50, declarations=decl((2, 12), (0, 14), (1, 16))),
        [],
        (0, 0, 0),
        0,
    ),
    Case(
        # first_declarer_pays_each (襄阳): seat 2 declared first (12), seat 0 later: seat 2 pays each
        # other one. exhausted_dealer first_declarer → seat 2 deals next.
        "exhausted_first_declarer_pays_each",
        record(end="exhausted", end_event=50, declarations=decl((2, 12), (0, 14))),
        [(2, 0, 1, "exhausted", 50), (2, 1, 1, "exhausted", 50)],
        (1, 1, -2),
        2,
        rules={"exhausted_liang_dao": "first_declarer_pays_each", "exhausted_dealer": "first_declarer"},
    ),
    Case(
        # The declarations may come in any order in the record: the first is the earliest event.
        "exhausted_first_declarer_by_event",
        record(end="exhausted", end_event=50, declarations=decl((0, 14), (2, 12))),
        [(2, 0, 1, "exhausted", 50), (2, 1, 1, "exhausted", 50)],
        (1, 1, -2),
        2,
        rules={"preset": "xiangyang", "exhausted_dealer": "first_declarer"},
    ),
    Case(
        # exhausted_dealer first_declarer with nobody declared: the dealer (1) stays.
        "exhausted_first_declarer_nobody",
        record(end="exhausted", end_event=50, dealer=1),
        [],
        (0, 0, 0),
        1,
        rules={"exhausted_dealer": "first_declarer"},
    ),
    Case(
        # exhausted_liang_dao none: a declarer pays nothing; the dealer (0) stays (荒庄不下庄).
        "exhausted_none",
        record(end="exhausted", end_event=50, declarations=decl((1, 12))),
        [],
        (0, 0, 0),
        0,
        rules={"exhausted_liang_dao": "none"},
    ),
    # --- aborted -------------------------------------------------------------------------------
    Case(
        # hand_aborted: nothing is settled — not the kong, not the fee; the dealer deals again.
        "aborted",
        record(end="aborted", dealer=1, piao=(1, 1, 1), kongs=(kong(0, "concealed", "1p", 10),)),
        [],
        (0, 0, 0),
        1,
        rules={"service_fee": 1, "piao": True},
    ),
    # --- extras ---------------------------------------------------------------------------------
    Case(
        # 漂 piao (1, 2, 0), self-draw ×2 by seat 1: hu 2 from each; piao lines 0 → 1 (1 + 2) = 3,
        # 2 → 1 (0 + 2) = 2. net: 0: −5; 1: +9; 2: −4.
        "piao_self_draw",
        record(piao=(1, 2, 0), wins=(win(1, None, "5p", "ka_wu_xing:2"),)),
        [(0, 1, 2, "hu", 20), (2, 1, 2, "hu", 20), (0, 1, 3, "piao", 20), (2, 1, 2, "piao", 20)],
        (-5, 9, -4),
        1,
        rules={"piao": True},
    ),
    Case(
        # 漂 on 包胡 discarder_pays_double is one line (one payer): piao (0, 3, 1), seat 1 wins ×2
        # (亮倒) from seat 2 → hu 4; piao 2 → 1 (1 + 3) = 4, base 2 → everything ×2.
        "piao_bao_hu",
        record(
            base=2,
            piao=(0, 3, 1),
            declarations=decl((1, 5)),
            wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),),
        ),
        [(2, 1, 8, "hu", 20), (2, 1, 8, "piao", 20)],
        (0, 16, -16),
        1,
        rules={"piao": True},
    ),
    Case(
        # 漂 with both_pay: two hand lines → two piao lines: 0 → 1 (2 + 1) = 3, 2 → 1 (0 + 1) = 1.
        "piao_both_pay",
        record(
            piao=(2, 1, 0), declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)
        ),
        # net: 0: −2 −3 = −5; 1: 2 + 2 + 3 + 1 = 8; 2: −2 −1 = −3.
        [(0, 1, 2, "hu", 20), (2, 1, 2, "hu", 20), (0, 1, 3, "piao", 20), (2, 1, 1, "piao", 20)],
        (-5, 8, -3),
        1,
        rules={"preset": "platform_3d"},
    ),
    Case(
        # 漂 is on no 荒庄 line, and piao is ignored when the option is off.
        "piao_off",
        record(piao=(3, 3, 3), wins=(win(1, 0, "5p", "ka_wu_xing:2"),)),
        [(0, 1, 2, "hu", 20)],
        (-2, 2, 0),
        1,
    ),
    Case(
        # 买码: self-draw ×2, ma tile 7s → +7 after the cap → 9 from each.
        "maima_number",
        record(ma_tile=tile("7s"), ma_event=21, wins=(win(0, None, "5p", "ka_wu_xing:2"),)),
        [(1, 0, 9, "hu", 20), (2, 0, 9, "hu", 20)],
        (18, -9, -9),
        0,
        rules={"maima": True},
    ),
    Case(
        # 买码 after the cap: ×16 capped to 8, ma 中 (dragon) +10 → 18 from each.
        "maima_dragon_after_cap",
        record(ma_tile=tile("C"), ma_event=21, wins=(win(2, None, "9p", "qing_yi_se:4 qi_dui:4"),)),
        [(0, 2, 18, "hu", 20), (1, 2, 18, "hu", 20)],
        (-18, -18, 36),
        2,
        rules={"maima": True},
    ),
    Case(
        # 买码 only after a self-draw: a discard win (no ma tile) pays its plain multiplier.
        "maima_discard_win",
        record(wins=(win(2, 0, "9p", "peng_peng_hu:2"),)),
        [(0, 2, 2, "hu", 20)],
        (-2, 0, 2),
        2,
        rules={"maima": True},
    ),
    Case(
        # 买码 off: a ma tile in the record is ignored.
        "maima_off",
        record(ma_tile=tile("9s"), wins=(win(0, None, "5p", "ka_wu_xing:2"),)),
        [(1, 0, 2, "hu", 20), (2, 0, 2, "hu", 20)],
        (4, -2, -2),
        0,
    ),
    Case(
        # 数坎 is already in Score.payable: ×16 capped 8 + 2 坎 = 10, discarder pays 10.
        "shu_kan",
        record(wins=(win(1, 2, "1s", "qing_yi_se:4 peng_peng_hu:2 ming_si_gui_yi:2", shu_kan=2),)),
        [(2, 1, 10, "hu", 20)],
        (0, 10, -10),
        1,
        rules={"preset": "xiaogan"},
    ),
    Case(
        # Service fee 1 (× base 5) from every seat to the house at hand_started (event 2), then a
        # discard win ×2: 0 → 1 ten. net: 0: −5 −10 = −15; 1: −5 +10 = 5; 2: −5; house +15.
        "service_fee",
        record(base=5, wins=(win(1, 0, "5p", "ka_wu_xing:2"),)),
        [
            (0, "house", 5, "fee", 2),
            (1, "house", 5, "fee", 2),
            (2, "house", 5, "fee", 2),
            (0, 1, 10, "hu", 20),
        ],
        (-15, 5, -5),
        1,
        rules={"service_fee": 1},
        house=15,
    ),
    Case(
        # 上楼: the record's base is already doubled (2): self-draw ×4 → 8 from each.
        "shang_lou_base",
        record(base=2, wins=(win(0, None, "C", "peng_peng_hu:2 ming_si_gui_yi:2"),)),
        [(1, 0, 8, "hu", 20), (2, 0, 8, "hu", 20)],
        (16, -8, -8),
        0,
        rules={"preset": "shiyan"},
    ),
    Case(
        # Ordering across events: fee (2) < kong (9) < kong (14) < hu (20), whatever the record order.
        "ordering",
        record(
            kongs=(kong(2, "exposed", "9p", 14, source=1), kong(0, "concealed", "C", 9)),
            wins=(win(0, 1, "3p", "peng_peng_hu:2"),),
        ),
        [
            (0, "house", 1, "fee", 2),
            (1, "house", 1, "fee", 2),
            (2, "house", 1, "fee", 2),
            (1, 0, 2, "kong", 9),
            (2, 0, 2, "kong", 9),
            (1, 2, 2, "kong", 14),
            (1, 0, 2, "hu", 20),
        ],
        # net: 0: −1 +2 +2 +2 = 5; 1: −1 −2 −2 −2 = −7; 2: −1 −2 +2 = −1; house +3.
        (5, -7, -1),
        0,
        rules={"service_fee": 1},
        house=3,
    ),
]


def _rows(s: Settlement) -> list[tuple[Any, Any, int, str, int]]:
    return [(t.from_, t.to, t.amount, t.reason, t.event) for t in s.transfers]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_settlement_table(case: Case) -> None:
    # given the record → when settled → then exactly these transfers, in this order
    s = settle_hand(case.record, resolve(case.rules))
    assert _rows(s) == case.transfers
    assert s.net == case.net
    assert s.house == case.house
    assert s.next_dealer == case.next_dealer
    assert sum(s.net) + s.house == 0
    assert all(t.detail for t in s.transfers)
    assert all(t.amount > 0 for t in s.transfers)


def test_wins_keep_every_pattern_with_detail() -> None:
    s = settle_hand(
        record(
            ma_tile=tile("4p"), wins=(win(0, None, "3s", "qing_yi_se:4 liang_dao:2 gang_shang_kai_hua:2"),)
        ),
        resolve({"maima": True}),
    )
    (w,) = s.wins
    assert [(p.id, p.x) for p in w.patterns] == [
        ("qing_yi_se", 4),
        ("liang_dao", 2),
        ("gang_shang_kai_hua", 2),
    ]
    assert all(p.detail for p in w.patterns)
    assert (w.multiplier, w.capped, w.ma, w.payable) == (16, 8, 4, 12)
    assert w.from_ is None and w.tile == "3s"


def test_bao_hu_is_marked_on_the_win_and_in_the_detail() -> None:
    rec = record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),))
    s = settle_hand(rec, resolve({}))
    assert s.wins[0].bao_hu == "discarder_pays_double"
    assert "包胡: discarder_pays_double" in s.transfers[0].detail
    assert settle_hand(rec, resolve({"liang_dao_feed": "normal"})).wins[0].bao_hu is None


def test_kong_chain_detail_names_the_factor() -> None:
    rec = record(end="exhausted", kongs=(kong(1, "exposed", "5s", 15, chain=2, source=0),))
    (t,) = settle_hand(rec, resolve({})).transfers
    assert t.detail == "直杠 5s, the discarder pays; 2nd kong of a 杠上杠 chain: 2 × 2^1 = 4 × base 1 = 4"
    assert t.amount == 4


def test_violation_is_named_in_the_detail() -> None:
    rec = record(wins=(win(1, 0, "5p", "", violation="below_min_multiplier"),))
    (t,) = settle_hand(rec, resolve({})).transfers
    assert "below_min_multiplier" in t.detail and t.amount == 1


OPTION_ID = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b|\bnormal\b")  # rule options and their values
WIRE_TILE = re.compile(r"\b[1-9][ps]\b|\b[CFP]\b")


def _said_records() -> list[tuple[HandRecord, dict[str, Any]]]:
    both_declared = record(
        declarations=decl((1, 5), (2, 7)),
        wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True, source_liang_dao=True),),
    )
    return [
        *((c.record, c.rules) for c in CASES),
        (record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)), {}),
        (
            record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
            {"liang_dao_feed": "both_pay"},
        ),
        (
            record(declarations=decl((1, 5)), wins=(win(1, 2, "8s", "liang_dao:2", liang_dao=True),)),
            {"liang_dao_feed": "normal"},
        ),
        (both_declared, {"liang_dao_feed": "both_pay"}),
        (both_declared, {}),
        (
            record(end="exhausted", kongs=(kong(1, "exposed", "5s", 15, chain=4, source=0),)),
            {"kong_chain_cap": 2},
        ),
        (record(wins=(win(1, 0, "5p", "", violation="below_min_multiplier"),)), {}),
        (record(ma_tile=tile("4p"), wins=(win(0, None, "3s", "qing_yi_se:4 liang_dao:2"),)), {"maima": True}),
    ]


def test_every_transfer_says_its_derivation_in_chinese_with_the_same_numbers() -> None:
    """``detail_zh`` is ``detail`` said in Chinese: the same numbers in the same order (tiles,
    the chain, caps, 漂, 买码, units, base, amount), ending in ``× 底分 B = amount``, and no
    English word left but the rule options' own ids (``discarder_pays_double`` …) and wire tile
    names — over every settlement table case and each 包胡 / chain-cap / violation / 买码 branch."""
    seen: set[str] = set()
    for rec, rules in _said_records():
        for t in settle_hand(rec, resolve(rules)).transfers:
            assert t.detail_zh, t
            assert re.findall(r"\d+", t.detail_zh) == re.findall(r"\d+", t.detail), (t.detail, t.detail_zh)
            tail = f"× 底分 {rec.base} = {t.amount}"
            assert t.detail_zh.endswith(tail) or "违规记录在案" in t.detail_zh, t.detail_zh
            rest = WIRE_TILE.sub("", OPTION_ID.sub("", t.detail_zh))
            assert not re.search(r"[A-Za-z]", rest), t.detail_zh
            seen |= {
                w
                for w in ("包胡", "杠上杠", "封顶", "漂", "荒庄", "买码", "服务费", "违规", "自摸")
                if w in t.detail_zh
            }
    assert seen == {"包胡", "杠上杠", "封顶", "漂", "荒庄", "买码", "服务费", "违规", "自摸"}, seen


def test_unfinished_or_inconsistent_records_are_refused() -> None:
    with pytest.raises(SettlementError):
        settle_hand(HandRecord(hand=1, dealer=0, base=1, start_event=2), resolve({}))
    with pytest.raises(SettlementError):
        settle_hand(record(end="exhausted", kongs=(kong(1, "exposed", "5s", 15),)), resolve({}))
    with pytest.raises(SettlementError):
        settle_hand(record(end="hu"), resolve({}))


@pytest.mark.parametrize(
    ("chain", "cap", "factor"), [(1, None, 1), (2, None, 2), (4, None, 8), (4, 2, 2), (1, 2, 1)]
)
def test_chain_factor(chain: int, cap: int | None, factor: int) -> None:
    assert chain_factor(chain, cap) == factor


@pytest.mark.parametrize(("t", "x"), [("1p", 1), ("9s", 9), ("5p", 5), ("C", 10), ("F", 10), ("P", 10)])
def test_ma_value(t: str, x: int) -> None:
    assert ma_value(tile(t)) == x
