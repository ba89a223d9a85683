"""The fan (番) patterns of RULES.md §5, each a small function of one reading of the hand.

A *reading* is either one standard decomposition of the concealed part (plus the declared melds)
or the seven-pairs reading. :func:`standard_hits` and :func:`seven_pairs_hits` return the
patterns of one reading with a ``detail`` in English naming the tiles that gave it; the choice
between readings, the cap and the minimum live in :mod:`domain.fan`.

Decisions where the rules or the seeds leave room are in docs/scoring.md, each with its test.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from domain.rules import Rules
from domain.scoring import PatternHit, WinSituation
from domain.shape import Decomposition, Group
from domain.tiles import C, F, P, format_counts, name

# The table order of RULES.md §5: output lists patterns in this order.
PATTERN_ORDER: tuple[str, ...] = (
    "peng_peng_hu",
    "ming_si_gui_yi",
    "an_si_gui_yi",
    "qi_dui",
    "long_qi_dui",
    "shuang_long_qi_dui",
    "san_long_qi_dui",
    "da_san_yuan",
    "xiao_san_yuan",
    "qing_yi_se",
    "shou_zhua_yi",
    "ka_wu_xing",
    "gang_shang_kai_hua",
    "gang_shang_pao",
    "qiang_gang_hu",
    "hai_di_lao",
    "liang_dao",
)
PATTERN_RANK: dict[str, int] = {pid: i for i, pid in enumerate(PATTERN_ORDER)}

_SEVEN_PAIRS_IDS = ("qi_dui", "long_qi_dui", "shuang_long_qi_dui", "san_long_qi_dui")
_SEVEN_PAIRS_X = (4, 8, 16, 32)
_SUIT_NAMES = ("筒 (p)", "条 (s)")
FIVE_P, FIVE_S = 4, 13
_KA_WU = {FIVE_P: Group("seq", FIVE_P - 1), FIVE_S: Group("seq", FIVE_S - 1)}  # 4-5-6 around the 5


def _format_tiles(k: int, n: int) -> str:
    counts = [0] * 21
    counts[k] = n
    return format_counts(counts)


# n copies of kind k in compact notation, written once (display work on the scoring path)
_TILES: dict[tuple[int, int], str] = {(k, n): _format_tiles(k, n) for k in range(21) for n in range(1, 5)}


def _tiles(k: int, n: int) -> str:
    """``_tiles(4, 3) == "555p"``, ``_tiles(18, 2) == "CC"``."""
    return _TILES.get((k, n)) or _format_tiles(k, n)


def meld_notation(sit: WinSituation) -> list[str]:
    """The declared melds in compact notation, bracketed: ``["[555s]", "[PPPP]"]``."""
    return [f"[{_tiles(m.tile, m.size)}]" for m in sit.melds]


# -- patterns that do not depend on the reading ---------------------------------------------------


def qing_yi_se(sit: WinSituation) -> PatternHit | None:
    """清一色: every tile, melds included, of one suit, no dragons."""
    c = sit.concealed
    if any(c[18:21]) or any(m.tile >= 18 for m in sit.melds):
        return None
    has_p = any(c[0:9]) or any(m.tile < 9 for m in sit.melds)
    has_s = any(c[9:18]) or any(9 <= m.tile < 18 for m in sit.melds)
    if has_p == has_s:
        return None
    s = 0 if has_p else 1
    where = "melds included" if sit.melds else "all concealed"
    return PatternHit(id="qing_yi_se", x=4, detail=f"every tile is {_SUIT_NAMES[s]}, {where}")


def situation_hits(sit: WinSituation, rules: Rules) -> list[PatternHit]:
    """The kind-of-win patterns: 杠上开花, 杠上炮, 抢杠胡, 海底捞, 亮倒.

    A flag that contradicts the kind of win is ignored: 杠上开花 and 海底捞 need a self-draw,
    杠上炮 and 抢杠胡 a win on another player's tile (the CLI rejects such input outright).
    """
    hits: list[PatternHit] = []
    if sit.kong_draw and sit.self_draw:
        chain = max(1, sit.kong_chain)
        if rules.kong_chain_kai_hua == "doubling" and chain > 1:
            hits.append(
                PatternHit(
                    id="gang_shang_kai_hua",
                    x=2**chain,
                    detail=f"self-draw on the replacement draw after a chain of {chain} kongs "
                    f"(kong_chain_kai_hua doubling: ×2 per kong)",
                )
            )
        else:
            hits.append(
                PatternHit(id="gang_shang_kai_hua", x=2, detail="self-draw on a kong replacement draw")
            )
    if sit.after_kong_discard and not sit.self_draw:
        hits.append(
            PatternHit(
                id="gang_shang_pao",
                x=2,
                detail="won the discard its player made right after their kong and replacement draw",
            )
        )
    if sit.robbed_kong and not sit.self_draw:
        hits.append(
            PatternHit(id="qiang_gang_hu", x=2, detail=f"robbed the added kong of {name(sit.win_tile)}")
        )
    if sit.last_tile and sit.self_draw:
        hits.append(PatternHit(id="hai_di_lao", x=2, detail="self-draw of the last tile of the wall"))
    if sit.liang_dao:
        hits.append(PatternHit(id="liang_dao", x=2, detail="the winner had declared 亮倒"))
    return hits


def si_gui_yi_hits(sit: WinSituation, rules: Rules, others_worth: int) -> list[PatternHit]:
    """明四归一 / 暗四归一 (standard readings only; seven pairs never adds them).

    The winning tile X always counts: three X concealed + winning X → 暗四归一 ×4 (on a discard
    too); an exposed 碰 of X → 明四归一 ×2. With ``pin_dao: full`` and the hand worth ×4 or more
    without any 四归 (``others_worth``), every other four-of-a-kind held but not declared as a kong
    counts too.
    """
    win = sit.win_tile
    c = sit.concealed
    pengs = {m.tile for m in sit.melds if m.kind == "peng"}
    hits: list[PatternHit] = []
    if c[win] == 4:
        hits.append(
            PatternHit(
                id="an_si_gui_yi",
                x=4,
                detail=f"four {name(win)}: three concealed + winning tile",
            )
        )
    elif win in pengs:
        hits.append(
            PatternHit(
                id="ming_si_gui_yi",
                x=2,
                detail=f"winning {name(win)} is the fourth to the exposed peng {_tiles(win, 3)}",
            )
        )
    if rules.pin_dao == "full" and others_worth >= 4:
        for k in range(21):
            if k == win:
                continue
            if c[k] == 4:
                hits.append(
                    PatternHit(
                        id="an_si_gui_yi",
                        x=4,
                        detail=f"four {name(k)} held concealed, not declared as a kong "
                        f"(pin_dao full, hand ×{others_worth} without 四归)",
                    )
                )
            elif k in pengs and c[k] == 1:
                hits.append(
                    PatternHit(
                        id="ming_si_gui_yi",
                        x=2,
                        detail=f"fourth {name(k)} held in hand next to the exposed peng {_tiles(k, 3)} "
                        f"(pin_dao full, hand ×{others_worth} without 四归)",
                    )
                )
    return hits


# -- one standard reading ------------------------------------------------------------------------


def standard_hits(sit: WinSituation, rules: Rules, d: Decomposition) -> list[PatternHit]:
    """Every pattern of one standard reading, 四归 included, in no particular order."""
    hits: list[PatternHit] = []
    melds = sit.melds
    win = sit.win_tile
    concealed_triplets = [g.tile for g in d.sets if g.kind == "tri"]
    triplets = concealed_triplets + [m.tile for m in melds] if melds else concealed_triplets

    if len(concealed_triplets) == len(d.sets):  # every concealed set a triplet
        sets = [g.notation() for g in d.sets] + [_tiles(m.tile, m.size) for m in melds]
        hits.append(
            PatternHit(
                id="peng_peng_hu",
                x=2,
                detail=f"every set a triplet or kong: {' '.join(sets)}; pair {_tiles(d.pair, 2)}",
            )
        )

    dragon_sets = sorted({t for t in triplets if t >= C})  # C, F, P: the kinds from 18 on
    if len(dragon_sets) == 3:
        hits.append(PatternHit(id="da_san_yuan", x=8, detail="triplets or kongs of C, F and P"))
    elif len(dragon_sets) == 2 and d.pair in (C, F, P):
        hits.append(
            PatternHit(
                id="xiao_san_yuan",
                x=4,
                detail=f"triplets or kongs of {' and '.join(name(t) for t in dragon_sets)}, "
                f"pair {_tiles(d.pair, 2)} as eyes",
            )
        )

    qys = qing_yi_se(sit)
    if qys is not None:
        hits.append(qys)

    if len(melds) == 4:
        hits.append(
            PatternHit(
                id="shou_zhua_yi",
                x=rules.shou_zhua_yi_fan,
                detail=f"four declared melds {' '.join(meld_notation(sit))}; "
                f"waited with the single {name(win)}",
            )
        )

    if win in (FIVE_P, FIVE_S) and _KA_WU[win] in d.sets:
        five = name(win)
        hits.append(PatternHit(id="ka_wu_xing", x=2, detail=f"{five} in 4-5-6{five[1]}"))

    hits.extend(situation_hits(sit, rules))
    others = _product(hits)
    hits.extend(si_gui_yi_hits(sit, rules, others))
    return hits


def seven_pairs_hits(sit: WinSituation, rules: Rules) -> list[PatternHit]:
    """七对 and its dragon-less 龙 family (RULES.md §5): never 四归, never sequence patterns."""
    c = sit.concealed
    fours = [k for k in range(21) if c[k] == 4]
    pid = _SEVEN_PAIRS_IDS[len(fours)]
    pairs = seven_pairs_notation(c)
    if fours:
        detail = f"seven pairs {pairs}, four {' and four '.join(name(k) for k in fours)} as two pairs each"
    else:
        detail = f"seven pairs {pairs}"
    hits = [PatternHit(id=pid, x=_SEVEN_PAIRS_X[len(fours)], detail=detail)]
    qys = qing_yi_se(sit)
    if qys is not None:
        hits.append(qys)
    hits.extend(situation_hits(sit, rules))
    return hits


def seven_pairs_notation(c: Sequence[int]) -> str:
    """``"11p 11p 99p 22s 77s CC FF"``: a four is written as two pairs."""
    return _seven_pairs_notation(c if type(c) is tuple else tuple(c))


@lru_cache(maxsize=4096)
def _seven_pairs_notation(c: tuple[int, ...]) -> str:
    return " ".join(_tiles(k, 2) for k in range(21) for _ in range(c[k] // 2))


def shu_kan_count(sit: WinSituation, d: Decomposition | None) -> tuple[int, str]:
    """数坎: concealed triplets of the reading plus every kong of the winner; 碰 never counts.

    On a win on another player's tile (discard, robbed kong), a triplet of the winning tile that
    needs the winning tile (two held + the won one) came from another player, like a 碰, and is
    not counted; with three held the triplet was concealed before the win and counts.
    """
    kongs = [m.tile for m in sit.melds if m.kind != "peng"]
    tris: list[int] = []
    if d is not None:
        for g in d.sets:
            if g.kind != "tri":
                continue
            if g.tile == sit.win_tile and not sit.self_draw and sit.concealed[g.tile] == 3:
                continue
            tris.append(g.tile)
    parts = [f"concealed triplet {_tiles(t, 3)}" for t in tris] + [f"kong {_tiles(t, 4)}" for t in kongs]
    return len(parts), ", ".join(parts)


def _product(hits: Sequence[PatternHit]) -> int:
    out = 1
    for h in hits:
        out *= h.x
    return out


def sort_hits(hits: Sequence[PatternHit]) -> tuple[PatternHit, ...]:
    if len(hits) < 2:
        return tuple(hits)
    return tuple(sorted(hits, key=lambda h: (PATTERN_RANK[h.id], h.detail)))
