"""Fan (番) scoring, RULES.md §5–§6: every pattern, combination rule and scoring option.

Each case reads given (concealed tiles *without* the winning tile, melds, rules) → when (the win)
→ then (patterns, multiplier, payable, allowed), with the derivation by hand in its comment.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.fan import score
from domain.rules import resolve
from domain.scoring import Score, WinSituation
from domain.shape import is_win
from domain.tiles import N_KINDS, Meld, parse_counts, tile

R = resolve


def sit(
    concealed: str,
    win: str,
    *,
    self_draw: bool,
    melds: tuple[tuple[str, str], ...] = (),
    **flags: Any,
) -> WinSituation:
    counts = parse_counts(concealed)
    counts[tile(win)] += 1
    return WinSituation(
        concealed=tuple(counts),
        melds=tuple(Meld(kind=kind, tile=tile(t)) for kind, t in melds),  # type: ignore[arg-type]
        win_tile=tile(win),
        self_draw=self_draw,
        **flags,
    )


def pats(s: Score) -> list[tuple[str, int]]:
    return sorted((p.id, p.x) for p in s.patterns)


def scored(situation: WinSituation, rules: dict[str, Any] | None = None) -> Score:
    s = score(situation, resolve(rules or {"preset": "default"}))
    assert s is not None
    return s


# (name, situation, rules, patterns, multiplier, payable, allowed)
CASES: list[tuple[str, WinSituation, dict[str, Any], dict[str, int], int, int, bool]] = [
    # 屁胡: 123p 456p 234s 789s 99s, no pattern: ×1. Self-draw needs 1 → allowed.
    ("pi_hu_self_draw", sit("123p 456p 789s 23s 99s", "4s", self_draw=True), {}, {}, 1, 1, True),
    # ... on a discard it needs min_multiplier_discard 2: ×1 is not allowed (屁胡只能自摸).
    ("pi_hu_discard", sit("123p 456p 789s 23s 99s", "4s", self_draw=False), {}, {}, 1, 1, False),
    # 碰碰胡 concealed: 111p 999p 555s 777s CC, all triplets → ×2; on a discard 2 ≥ 2 → allowed.
    (
        "peng_peng_hu",
        sit("111p 999p 555s CC 77s", "7s", self_draw=False),
        {},
        {"peng_peng_hu": 2},
        2,
        2,
        True,
    ),
    # 碰碰胡 with melds: peng 3s, kong 7p + 999s 555p + CC eyes → triplets only → ×2.
    (
        "peng_peng_hu_melds",
        sit("999s CC 55p", "5p", self_draw=True, melds=(("peng", "3s"), ("kong_exposed", "7p"))),
        {},
        {"peng_peng_hu": 2},
        2,
        2,
        True,
    ),
    # Seven pairs is never 碰碰胡 (decision D2): 11p 99p 22s 77s CC FF 33s → 七对 ×4 only.
    ("qi_dui_not_pph", sit("11p 99p 22s 77s CC FF 3s", "3s", self_draw=True), {}, {"qi_dui": 4}, 4, 4, True),
    # 明四归一: peng 7p; 123s 456s 55p + 68p waits 7p (kanchan); winning 7p is the fourth 7p → ×2.
    (
        "ming_si_gui_yi",
        sit("123s 456s 68p 55p", "7p", self_draw=False, melds=(("peng", "7p"),)),
        {},
        {"ming_si_gui_yi": 2},
        2,
        2,
        True,
    ),
    # 明四归一 on a self-draw: peng 3s, 45s waits 3s/6s; winning 3s (345s) is the fourth 3s → ×2.
    (
        "ming_si_gui_yi_self_draw",
        sit("123p 789s 45s 99s", "3s", self_draw=True, melds=(("peng", "3s"),)),
        {},
        {"ming_si_gui_yi": 2},
        2,
        2,
        True,
    ),
    # 暗四归一 self-drawn: 333p held, winning 3p into 345p → ×4.
    (
        "an_si_gui_yi_self_draw",
        sit("333p 45p 678s 123s 22s", "3p", self_draw=True),
        {},
        {"an_si_gui_yi": 4},
        4,
        4,
        True,
    ),
    # Not the winning tile: 333p held, win 6p (456p) → 屁胡 on a discard: ×1, not allowed (half).
    (
        "an_si_gui_yi_only_the_winning_tile",
        sit("333p 45p 678s 123s 22s", "6p", self_draw=False),
        {},
        {},
        1,
        1,
        False,
    ),
    # 龙七对: 1111p 33p 55s 77s 99s CC (C won) → one four → ×8.
    (
        "long_qi_dui",
        sit("1111p 33p 55s 77s 99s C", "C", self_draw=False),
        {},
        {"long_qi_dui": 8},
        8,
        8,
        True,
    ),
    # 龙七对 with a four of dragons: CCCC FF PP 11p 22p 33p → ×8 (no 清一色: dragons).
    (
        "long_qi_dui_dragons",
        sit("CCCC FF P 11p 22p 33p", "P", self_draw=True),
        {},
        {"long_qi_dui": 8},
        8,
        8,
        True,
    ),
    # 龙七对 by winning the fourth 1p (三张 + 胡第四张): still 龙七对 ×8, never 暗四归一.
    (
        "long_qi_dui_win_fourth_pin_dao_full",
        sit("111p 33p 55s 77s 99s CC", "1p", self_draw=True),
        {"preset": "xiangyang"},
        {"long_qi_dui": 8},
        8,
        8,
        True,
    ),
    # 三龙七对: 1111p 5555s 7777s CC → three fours ×32; default cap_exempt 16 → pays 16.
    (
        "san_long_qi_dui",
        sit("1111p 5555s 7777s C", "C", self_draw=True),
        {},
        {"san_long_qi_dui": 32},
        32,
        16,
        True,
    ),
    # ... uncapped: pays 32.
    (
        "san_long_qi_dui_uncapped",
        sit("1111p 5555s 7777s C", "C", self_draw=True),
        {"preset": "uncapped"},
        {"san_long_qi_dui": 32},
        32,
        32,
        True,
    ),
    # ... 十堰 (cap 8, no exemption): pays 8.
    (
        "san_long_qi_dui_shiyan",
        sit("1111p 5555s 7777s C", "C", self_draw=True),
        {"preset": "shiyan"},
        {"san_long_qi_dui": 32},
        32,
        8,
        True,
    ),
    # 大三元 with melds: peng C, peng F, PPP 123p + 44p → ×8, no 小三元, not 碰碰胡 (123p).
    (
        "da_san_yuan",
        sit("PPP 123p 4p", "4p", self_draw=False, melds=(("peng", "C"), ("peng", "F"))),
        {},
        {"da_san_yuan": 8},
        8,
        8,
        True,
    ),
    # 小三元 with a kong: kong C, peng F, PP eyes, 234p 678s → ×4.
    (
        "xiao_san_yuan_kong",
        sit("PP 234p 67s", "8s", self_draw=True, melds=(("kong_exposed", "C"), ("peng", "F"))),
        {},
        {"xiao_san_yuan": 4},
        4,
        4,
        True,
    ),
    # 清一色 with melds: peng 9s + 123s 456s 678s 11s → all 条 ×4 (6s: no 四归, no 卡五星).
    (
        "qing_yi_se_melds",
        sit("123s 456s 78s 11s", "6s", self_draw=False, melds=(("peng", "9s"),)),
        {},
        {"qing_yi_se": 4},
        4,
        4,
        True,
    ),
    # A dragon meld breaks 清一色: peng C + 123p 456p 789p 11p → 屁胡 self-drawn.
    (
        "qing_yi_se_broken_by_dragon_meld",
        sit("123p 456p 78p 11p", "9p", self_draw=True, melds=(("peng", "C"),)),
        {},
        {},
        1,
        1,
        True,
    ),
    # 手抓一 with a concealed kong among the four melds (decision D1): 4 × 碰碰胡 2 = 8.
    (
        "shou_zhua_yi_concealed_kong",
        sit(
            "2s",
            "2s",
            self_draw=True,
            melds=(("kong_concealed", "1p"), ("peng", "9s"), ("peng", "4p"), ("peng", "7s")),
        ),
        {},
        {"shou_zhua_yi": 4, "peng_peng_hu": 2},
        8,
        8,
        True,
    ),
    # shou_zhua_yi_fan 2 (one 襄樊 text: 手抓一×2): 2 × 碰碰胡 2 = 4.
    (
        "shou_zhua_yi_fan_2",
        sit(
            "2s",
            "2s",
            self_draw=False,
            melds=(("peng", "1p"), ("peng", "9s"), ("peng", "4p"), ("peng", "7s")),
        ),
        {"shou_zhua_yi_fan": 2},
        {"shou_zhua_yi": 2, "peng_peng_hu": 2},
        4,
        4,
        True,
    ),
    # 卡五星 kanchan: 46p + 5p = 456p → ×2 on a discard, allowed.
    (
        "ka_wu_xing_46",
        sit("46p 123s 789s 11s PPP", "5p", self_draw=False),
        {},
        {"ka_wu_xing": 2},
        2,
        2,
        True,
    ),
    # 5p as the high end of 345p is not 卡五星: 34p + 5p → 屁胡.
    ("not_ka_wu_xing_345", sit("34p 678p 123s 456s 99s", "5p", self_draw=True), {}, {}, 1, 1, True),
    # 5s only as the pair (单钓5s) is not 卡五星.
    ("not_ka_wu_xing_pair", sit("123p 456p 789p 123s 5s", "5s", self_draw=True), {}, {}, 1, 1, True),
    # 杠上开花 flat: chain of 2 kongs still ×2.
    (
        "gang_shang_kai_hua_flat_chain",
        sit(
            "123p 23s 99s",
            "1s",
            self_draw=True,
            melds=(("kong_concealed", "7s"), ("kong_exposed", "9p")),
            kong_draw=True,
            kong_chain=2,
        ),
        {},
        {"gang_shang_kai_hua": 2},
        2,
        2,
        True,
    ),
    # 杠上开花 doubling (扛上杠开花×4 以此内推): chain of 2 → ×4.
    (
        "gang_shang_kai_hua_doubling_2",
        sit(
            "123p 23s 99s",
            "1s",
            self_draw=True,
            melds=(("kong_concealed", "7s"), ("kong_exposed", "9p")),
            kong_draw=True,
            kong_chain=2,
        ),
        {"kong_chain_kai_hua": "doubling"},
        {"gang_shang_kai_hua": 4},
        4,
        4,
        True,
    ),
    # doubling with a single kong: ×2.
    (
        "gang_shang_kai_hua_doubling_1",
        sit("123p 456p 23s 99s", "1s", self_draw=True, melds=(("kong_concealed", "7s"),), kong_draw=True),
        {"kong_chain_kai_hua": "doubling"},
        {"gang_shang_kai_hua": 2},
        2,
        2,
        True,
    ),
    # 杠上炮 × 卡五星: 2 × 2 = 4.
    (
        "gang_shang_pao_ka_wu_xing",
        sit("46p 123s 789s 11s PPP", "5p", self_draw=False, after_kong_discard=True),
        {},
        {"gang_shang_pao": 2, "ka_wu_xing": 2},
        4,
        4,
        True,
    ),
    # 抢杠胡 on a 屁胡 hand: ×2 counts toward the discard minimum → allowed.
    (
        "qiang_gang_hu",
        sit("123p 456p 789s 23s 99s", "4s", self_draw=False, robbed_kong=True),
        {},
        {"qiang_gang_hu": 2},
        2,
        2,
        True,
    ),
    # ... with min_multiplier_discard 4 the robbed-kong win uses the discard minimum: 2 < 4.
    (
        "qiang_gang_hu_min_4",
        sit("123p 456p 789s 23s 99s", "4s", self_draw=False, robbed_kong=True),
        {"min_multiplier_discard": 4},
        {"qiang_gang_hu": 2},
        2,
        2,
        False,
    ),
    # 海底捞 self-draw of the last tile, 屁胡 hand → ×2.
    (
        "hai_di_lao",
        sit("123p 456p 789s 23s 99s", "1s", self_draw=True, last_tile=True),
        {},
        {"hai_di_lao": 2},
        2,
        2,
        True,
    ),
    # 亮倒 self-draw 屁胡 → ×2.
    (
        "liang_dao_self_draw",
        sit("123p 456p 789s 23s 99s", "1s", self_draw=True, liang_dao=True),
        {},
        {"liang_dao": 2},
        2,
        2,
        True,
    ),
    # platform_3d: 2番起胡 also for self-draw: 屁胡 self-draw not allowed ...
    (
        "platform_3d_pi_hu",
        sit("123p 456p 789s 23s 99s", "1s", self_draw=True),
        {"preset": "platform_3d"},
        {},
        1,
        1,
        False,
    ),
    # ... but 亮倒 ×2 is.
    (
        "platform_3d_liang_dao",
        sit("123p 456p 789s 23s 99s", "1s", self_draw=True, liang_dao=True),
        {"preset": "platform_3d"},
        {"liang_dao": 2},
        2,
        2,
        True,
    ),
    # Seed: 亮牌后杠上花的卡五星 = 2 × 2 × 2 = 8.
    (
        "seed_liang_dao_gang_kai_ka5",
        sit(
            "46p 123s 789s 11s",
            "5p",
            self_draw=True,
            melds=(("kong_exposed", "P"),),
            kong_draw=True,
            liang_dao=True,
        ),
        {},
        {"liang_dao": 2, "gang_shang_kai_hua": 2, "ka_wu_xing": 2},
        8,
        8,
        True,
    ),
    # Seed: 清一色加七对 4×4 = 16 (1122334456677 + 5p beats 清一色×卡五星 = 8); cap 8.
    (
        "seed_qi_dui_qing_yi_se",
        sit("1122334456677p", "5p", self_draw=True),
        {},
        {"qi_dui": 4, "qing_yi_se": 4},
        16,
        8,
        True,
    ),
    # Same with cap 16 → pays 16.
    (
        "cap_16",
        sit("1122334456677p", "5p", self_draw=True),
        {"cap": 16},
        {"qi_dui": 4, "qing_yi_se": 4},
        16,
        16,
        True,
    ),
    # Seed: 大三元+碰碰胡+手抓一 = 8×2×4 = 64; cap_exempt {da_san_yuan: 64} → pays 64.
    (
        "cap_exempt_custom",
        sit("9p", "9p", self_draw=False, melds=(("peng", "C"), ("peng", "F"), ("peng", "P"), ("peng", "5s"))),
        {"cap_exempt": {"da_san_yuan": 64}},
        {"da_san_yuan": 8, "peng_peng_hu": 2, "shou_zhua_yi": 4},
        64,
        64,
        True,
    ),
    # An exemption never lowers a hand (decision D5): cap 32, 双龙七对×清一色 = 64, exempt 16 → 32.
    (
        "cap_exempt_never_lowers",
        sit("1111p 5555p 7799p 3p", "3p", self_draw=True),
        {"cap": 32},
        {"shuang_long_qi_dui": 16, "qing_yi_se": 4},
        64,
        32,
        True,
    ),
    # pin_dao full, 大胡: 111p 123p 456p 999p 77p, all 筒 (×4 without 四归) and four 1p held
    # concealed → 暗四归一 ×4 too: 16, pays 8.
    (
        "pin_dao_full_big_hand",
        sit("1111p 23p 456p 999p 7p", "7p", self_draw=True),
        {"pin_dao": "full"},
        {"qing_yi_se": 4, "an_si_gui_yi": 4},
        16,
        8,
        True,
    ),
    # ... pin_dao half: the four 1p are not the winning tile → 清一色 ×4 only.
    (
        "pin_dao_half_big_hand",
        sit("1111p 23p 456p 999p 7p", "7p", self_draw=True),
        {},
        {"qing_yi_se": 4},
        4,
        4,
        True,
    ),
    # pin_dao full, 屁胡 (屁胡要是胡的那张才算): four 1p held, win 7s → nothing extra.
    (
        "pin_dao_full_small_hand",
        sit("1111p 23p 456s 789s 7s", "7s", self_draw=True),
        {"pin_dao": "full"},
        {},
        1,
        1,
        True,
    ),
    # pin_dao full 明四归一: peng 5p, 5p in 345p held, all 筒 (×4) → 明四归一 ×2: 8.
    (
        "pin_dao_full_ming",
        sit("123p 345p 789p 9p", "9p", self_draw=False, melds=(("peng", "5p"),)),
        {"preset": "xiangyang"},
        {"qing_yi_se": 4, "ming_si_gui_yi": 2},
        8,
        8,
        True,
    ),
    # 数坎 (孝感): 碰碰胡 ×2, concealed triplets 111p 999p 555s and the self-drawn 777s → +4 = 6.
    (
        "shu_kan_self_draw",
        sit("111p 999p 555s CC 77s", "7s", self_draw=True),
        {"preset": "xiaogan"},
        {"peng_peng_hu": 2},
        2,
        6,
        True,
    ),
    # 数坎 on a discard: 777s completed by the discard is not concealed (decision D3) → +3 = 5.
    (
        "shu_kan_discard",
        sit("111p 999p 555s CC 77s", "7s", self_draw=False),
        {"preset": "xiaogan"},
        {"peng_peng_hu": 2},
        2,
        5,
        True,
    ),
    # 数坎 counts kongs (any kind), never 碰: 999s + kong 7p + kong C = 3; peng 3s not → 2 + 3.
    (
        "shu_kan_kongs_not_peng",
        sit(
            "999s 1p",
            "1p",
            self_draw=True,
            melds=(("peng", "3s"), ("kong_exposed", "7p"), ("kong_concealed", "C")),
        ),
        {"preset": "xiaogan"},
        {"peng_peng_hu": 2},
        2,
        5,
        True,
    ),
    # 数坎 after the cap: 111p 222p 999p 777p 55p 碰碰胡×清一色 = 8, capped 8, + 4 triplets = 12.
    (
        "shu_kan_after_cap",
        sit("111p 222p 999p 55p 77p", "7p", self_draw=True),
        {"preset": "xiaogan"},
        {"peng_peng_hu": 2, "qing_yi_se": 4},
        8,
        12,
        True,
    ),
]


@pytest.mark.parametrize(
    ("situation", "rules", "patterns", "multiplier", "payable", "allowed"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_case(
    situation: WinSituation,
    rules: dict[str, Any],
    patterns: dict[str, int],
    multiplier: int,
    payable: int,
    allowed: bool,
) -> None:
    s = scored(situation, rules)
    assert pats(s) == sorted(patterns.items())
    assert (s.multiplier, s.payable, s.allowed) == (multiplier, payable, allowed)
    assert all(p.detail for p in s.patterns)
    assert s.decomposition


# -- the seed examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("suit", ["p", "s"])
@pytest.mark.parametrize(
    ("shape", "filler", "patterns"),
    [
        # 例如4556、4688、2245667、2245556胡5 ×2 — each seed shape + 5 reads with 4-5-6:
        ("4556", "123{o} 789{o} CCC", {"ka_wu_xing": 2}),  # 456 + 55
        ("4688", "123{o} 789{o} PPP", {"ka_wu_xing": 2}),  # 456 + 88
        ("2245667", "111{o} 999{o}", {"ka_wu_xing": 2}),  # 22 + 456 + 567
        ("2245556", "123{o} 789{o}", {"ka_wu_xing": 2, "an_si_gui_yi": 4}),  # 22 + 456 + 555, four 5s
    ],
)
def test_seed_ka_wu_xing_shapes(shape: str, filler: str, patterns: dict[str, int], suit: str) -> None:
    other = "s" if suit == "p" else "p"
    s = scored(sit(f"{shape}{suit} {filler.format(o=other)}", f"5{suit}", self_draw=False))
    assert pats(s) == sorted(patterns.items())
    assert s.allowed


def test_seed_da_san_yuan_peng_peng_shou_zhua_yi_is_64() -> None:
    # 碰了的四对牌中有中发白3副刻子，最后手中只剩一张牌且胡牌: 大三元+碰碰胡+手抓一 = 8×2×4 = 64.
    s = scored(
        sit("9p", "9p", self_draw=True, melds=(("peng", "C"), ("peng", "F"), ("peng", "P"), ("peng", "5s"))),
        {"preset": "uncapped"},
    )
    assert (s.multiplier, s.payable) == (64, 64)


def test_seed_qi_dui_and_qing_yi_se_multiply_to_16() -> None:
    # 清一色加七对就是：4×4=16番: 11p 22p 33p 55p 77p 88p 99p, seven pairs all 筒.
    s = scored(sit("11335577p 2288p 9p", "9p", self_draw=True), {"preset": "uncapped"})
    assert pats(s) == [("qi_dui", 4), ("qing_yi_se", 4)]
    assert s.multiplier == 16


# -- details, decomposition, notes ---------------------------------------------------------------


def test_details_name_the_tiles() -> None:
    s = scored(sit("2245556s 123p 789p", "5s", self_draw=True))
    details = {p.id: p.detail for p in s.patterns}
    assert details == {
        "ka_wu_xing": "5s in 4-5-6s",
        "an_si_gui_yi": "four 5s: three concealed + winning tile",
    }
    assert s.decomposition == "123p 789p 456s 555s 22s"


def test_decomposition_shows_melds() -> None:
    s = scored(sit("PP 234p 67s", "8s", self_draw=True, melds=(("kong_exposed", "C"), ("peng", "F"))))
    assert s.decomposition == "234p 678s PP [CCCC] [FFF]"


def test_cap_notes() -> None:
    assert scored(sit("1111p 5555p 7799p 3p", "3p", self_draw=True)).cap_note == (
        "cap 8 replaced by 16 for shuang_long_qi_dui (cap_exempt): 64 → 16"
    )
    assert scored(sit("1122334456677p", "5p", self_draw=True)).cap_note == "cap 8: 16 → 8"
    assert scored(sit("46p 123s 789s 11s PPP", "5p", self_draw=False)).cap_note == "under cap 8"
    uncapped = scored(sit("1122334456677p", "5p", self_draw=True), {"preset": "uncapped"})
    assert uncapped.cap_note == "no cap"
    kan = scored(sit("111p 999p 555s CC 77s", "7s", self_draw=False), {"preset": "xiaogan"})
    assert kan.shu_kan == 3
    assert "数坎 +3" in kan.cap_note and "111p" in kan.cap_note


# -- choosing between readings -------------------------------------------------------------------


def test_seed_tie_longqidui_is_chosen_by_fewer_patterns() -> None:
    # 1122334455566p + 5p: 龙七对×清一色 = 32 and 清一色×卡五星×暗四归一 = 32 tie; the reading
    # with fewer patterns (2 < 3) is scored (decision D4).
    s = scored(sit("1122334455566p", "5p", self_draw=True))
    assert pats(s) == [("long_qi_dui", 8), ("qing_yi_se", 4)]
    assert s.decomposition == "11p 22p 33p 44p 55p 55p 66p"


def test_tie_without_patterns_prefers_the_smaller_decomposition_string() -> None:
    # 111p 222p 333p 456s 99s can also be 123p 123p 123p: both ×1, no pattern; "111p…" < "123p…".
    s = scored(sit("111222333p 456s 9s", "9s", self_draw=True))
    assert s.decomposition == "111p 222p 333p 456s 99s"


def test_tie_prefers_more_shu_kan_when_on() -> None:
    # With 数坎 the triplet reading pays 1 + 3, the sequence reading 1 + 0.
    s = scored(sit("111222333p 456s 9s", "9s", self_draw=True), {"preset": "xiaogan"})
    assert (s.multiplier, s.shu_kan, s.payable) == (1, 3, 4)


def test_highest_multiplier_reading_is_scored() -> None:
    # 111222333p 999s 77s reads as four triplets (碰碰胡 ×2) or 123p×3 + 999s (×1): ×2 is scored.
    s = scored(sit("111222333p 77s 99s", "9s", self_draw=False))
    assert pats(s) == [("peng_peng_hu", 2)]
    assert s.decomposition == "111p 222p 333p 999s 77s"


# -- not a winning hand ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("situation"),
    [
        sit("123p 456p 789s 23s 99s", "7s", self_draw=True),  # not a shape
        sit("123p 456p 789s 23s", "4s", self_draw=True),  # too few tiles
        sit("11111p 234s 567s 99s", "9s", self_draw=True),  # five 1p
        sit("CFP 123p 456p 789p 1s", "1s", self_draw=True),  # dragons are no sequence
        sit("11p 22p 33p 44p 5p", "5p", self_draw=True, melds=(("peng", "C"),)),  # 七对 needs 14 concealed
    ],
)
def test_not_a_win_is_none(situation: WinSituation) -> None:
    assert score(situation, resolve({})) is None


def test_winning_tile_must_be_in_the_hand() -> None:
    # the concealed counts are a win, but the claimed winning tile C is not among them
    s = sit("123p 456p 789s 23s 99s", "4s", self_draw=True)
    bad = WinSituation(concealed=s.concealed, win_tile=tile("C"), self_draw=True)
    assert score(bad, resolve({})) is None


# -- properties -----------------------------------------------------------------------------------


@st.composite
def winning_situations(draw: st.DrawFn) -> tuple[WinSituation, dict[str, Any]]:
    counts = [0] * N_KINDS
    melds: list[Meld] = []
    n_melds = draw(st.integers(0, 4))
    for _ in range(n_melds):
        k = draw(st.integers(0, N_KINDS - 1))
        kind = draw(st.sampled_from(["peng", "kong_concealed", "kong_added", "kong_exposed"]))
        melds.append(Meld(kind=kind, tile=k))
    for _ in range(4 - n_melds):
        if draw(st.booleans()):
            start = draw(st.sampled_from([s * 9 + i for s in (0, 1) for i in range(7)]))
            for k in (start, start + 1, start + 2):
                counts[k] += 1
        else:
            counts[draw(st.integers(0, N_KINDS - 1))] += 3
    counts[draw(st.integers(0, N_KINDS - 1))] += 2
    win = draw(st.sampled_from([k for k in range(N_KINDS) if counts[k]]))
    self_draw = draw(st.booleans())
    rules = {
        "preset": draw(
            st.sampled_from(["default", "xiangyang", "shiyan", "xiaogan", "uncapped", "platform_3d"])
        ),
        "kong_chain_kai_hua": draw(st.sampled_from(["flat", "doubling"])),
    }
    s = WinSituation(
        concealed=tuple(counts),
        melds=tuple(melds),
        win_tile=win,
        self_draw=self_draw,
        kong_draw=self_draw and draw(st.booleans()),
        kong_chain=draw(st.integers(0, 3)),
        last_tile=draw(st.booleans()),
        after_kong_discard=not self_draw and draw(st.booleans()),
        liang_dao=draw(st.booleans()),
    )
    return s, rules


@settings(max_examples=300, deadline=None)
@given(winning_situations())
def test_scoring_is_deterministic_and_consistent(case: tuple[WinSituation, dict[str, Any]]) -> None:
    situation, spec = case
    rules = resolve(spec)
    first = score(situation, rules)
    totals = list(situation.concealed)
    for m in situation.melds:
        totals[m.tile] += m.size
    if max(totals) > 4:
        assert first is None
        return
    assert first is not None  # built as sets + pair: always a win
    assert score(situation, rules) == first
    # melds in another order: the same ruling
    reordered = WinSituation(**{**_fields(situation), "melds": tuple(reversed(situation.melds))})
    again = score(reordered, rules)
    assert again is not None
    assert (pats(again), again.multiplier, again.payable) == (pats(first), first.multiplier, first.payable)
    product = 1
    for p in first.patterns:
        product *= p.x
    assert first.multiplier == product
    assert first.capped <= first.multiplier
    if rules.cap is None:
        assert first.capped == first.multiplier
    assert first.payable == first.capped + first.shu_kan
    need = rules.min_multiplier_self_draw if situation.self_draw else rules.min_multiplier_discard
    assert first.allowed == (first.multiplier >= need)


def _fields(s: WinSituation) -> dict[str, Any]:
    return {f: getattr(s, f) for f in s.__struct_fields__}


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 4).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.integers(0, 83), min_size=14 - 3 * n, max_size=14 - 3 * n, unique=True),
        )
    )
)
def test_score_is_none_exactly_when_the_shape_is_not_a_win(case: tuple[int, list[int]]) -> None:
    # given n melds of tiles the hand does not hold, and 14 − 3n concealed tiles, one of them the win
    n, tiles = case
    counts = [0] * N_KINDS
    for t in tiles:
        counts[t // 4] += 1
    free = [k for k in range(N_KINDS) if counts[k] == 0]
    melds = tuple(Meld(kind="peng", tile=k) for k in free[:n])
    s = WinSituation(concealed=tuple(counts), melds=melds, win_tile=tiles[0] // 4, self_draw=True)
    assert (score(s, resolve({})) is None) == (not is_win(counts))
