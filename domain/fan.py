"""Fan (番) scoring of a win: ``score(situation, rules) -> Score | None`` (RULES.md §5–§6).

1. Readings: every standard decomposition of the concealed part (domain.shape), and seven pairs
   when the hand has no declared meld. Each reading gets its patterns (domain.patterns); they
   multiply (相乘), none at all is 屁胡 ×1.
2. The reading with the highest multiplier *before the cap* is scored. Ties are broken, in order,
   by: more 数坎 (only when ``shu_kan`` is on, so the payable amount is the larger), then fewer
   patterns (the simpler derivation), then the smaller decomposition string (compact notation,
   plain string order). So 1122334455566p + 5p scores 龙七对 × 清一色 (2 patterns) rather than
   清一色 × 卡五星 × 暗四归一 (3 patterns, also ×32).
3. Cap (封顶): ``cap`` null → none. Otherwise ``min(multiplier, cap)``, except that when the reading
   has a pattern listed in ``cap_exempt`` that pattern's value replaces the cap for this hand (the
   larger of the two, so an exemption never lowers a hand): 双龙七对 × 清一色 = 64 pays 16.
4. 数坎 (``shu_kan``) adds after the cap: ``payable = capped + shu_kan``.
5. Minimum: a discard or robbed-kong win needs ``min_multiplier_discard``, a self-draw
   ``min_multiplier_self_draw``, compared with the multiplier before the cap (亮倒, 杠上炮 and
   抢杠胡 count toward it). ``allowed`` says whether it is met; ``score`` still scores the hand.
"""

from __future__ import annotations

from domain.patterns import (
    meld_notation,
    seven_pairs_hits,
    seven_pairs_notation,
    shu_kan_count,
    sort_hits,
    standard_hits,
)
from domain.rules import Rules
from domain.scoring import PatternHit, Score, WinSituation
from domain.shape import Decomposition, decompositions, format_decomposition, is_seven_pairs
from domain.tiles import N_KINDS

__all__ = ["score"]


class _Reading:
    __slots__ = ("decomposition", "hits", "multiplier", "shu_kan", "shu_kan_detail")

    def __init__(self, hits: list[PatternHit], decomposition: str, shu_kan: int, shu_kan_detail: str):
        self.hits = hits
        self.decomposition = decomposition
        self.shu_kan = shu_kan
        self.shu_kan_detail = shu_kan_detail
        m = 1
        for h in hits:
            m *= h.x
        self.multiplier = m

    def key(self) -> tuple[int, int, int, str]:
        return (-self.multiplier, -self.shu_kan, len(self.hits), self.decomposition)


def _valid(sit: WinSituation) -> bool:
    c = sit.concealed
    if len(c) != N_KINDS or len(sit.melds) > 4 or not 0 <= sit.win_tile < N_KINDS:
        return False
    if sum(c) != 14 - 3 * len(sit.melds) or c[sit.win_tile] < 1:
        return False
    if not sit.melds:
        return min(c) >= 0 and max(c) <= 4
    totals = list(c)
    for m in sit.melds:
        totals[m.tile] += m.size
    return min(totals) >= 0 and max(totals) <= 4


def score(sit: WinSituation, rules: Rules) -> Score | None:
    """Score a win; ``None`` when the tiles do not form a winning hand.

    ``sit.concealed`` includes the winning tile and must have ``14 − 3 × len(melds)`` tiles, with
    no kind held more than four times melds included (otherwise: ``None``).
    """
    if not _valid(sit):
        return None
    readings: list[_Reading] = []
    melds = meld_notation(sit)
    for d in decompositions(sit.concealed):
        readings.append(_standard_reading(sit, rules, d, melds))
    if not sit.melds and is_seven_pairs(sit.concealed):
        readings.append(_Reading(seven_pairs_hits(sit, rules), seven_pairs_notation(sit.concealed), 0, ""))
    if not readings:
        return None
    best = readings[0] if len(readings) == 1 else min(readings, key=_Reading.key)
    return _settle(sit, rules, best)


def _standard_reading(sit: WinSituation, rules: Rules, d: Decomposition, melds: list[str]) -> _Reading:
    hits = standard_hits(sit, rules, d)
    shu_kan, shu_kan_detail = shu_kan_count(sit, d) if rules.shu_kan else (0, "")
    text = " ".join([format_decomposition(d), *melds])
    return _Reading(hits, text, shu_kan, shu_kan_detail)


def _settle(sit: WinSituation, rules: Rules, r: _Reading) -> Score:
    multiplier = r.multiplier
    cap_exempt = rules.cap_exempt
    exempt = [(cap_exempt[h.id], h.id) for h in r.hits if h.id in cap_exempt] if cap_exempt else []
    if rules.cap is None:
        capped, note = multiplier, "no cap"
    elif exempt:
        value, pid = max(exempt)
        limit = max(rules.cap, value)
        capped = min(multiplier, limit)
        note = f"cap {rules.cap} replaced by {limit} for {pid} (cap_exempt)"
        if capped < multiplier:
            note += f": {multiplier} → {capped}"
    else:
        capped = min(multiplier, rules.cap)
        note = (
            f"cap {rules.cap}: {multiplier} → {capped}" if capped < multiplier else f"under cap {rules.cap}"
        )
    if r.shu_kan:
        note += f"; 数坎 +{r.shu_kan} after the cap: {r.shu_kan_detail}"
    min_required = rules.min_multiplier_self_draw if sit.self_draw else rules.min_multiplier_discard
    return Score(
        patterns=sort_hits(r.hits),
        multiplier=multiplier,
        capped=capped,
        shu_kan=r.shu_kan,
        payable=capped + r.shu_kan,
        allowed=multiplier >= min_required,
        min_required=min_required,
        cap_note=note,
        decomposition=r.decomposition,
    )
