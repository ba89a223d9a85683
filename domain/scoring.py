"""The value types of scoring a win, shared by the fan scorer, the reducer and settlement.

``domain.fan.score(situation, rules)`` turns a :class:`WinSituation` into a :class:`Score`.
"""

from __future__ import annotations

import msgspec

from domain.tiles import Meld


class WinSituation(msgspec.Struct, frozen=True, kw_only=True):
    """Everything about one win that scoring needs.

    ``concealed`` is the count vector (21 ints) of the winner's concealed tiles *including* the
    winning tile; ``melds`` are the declared melds. The flags are the kinds of win of RULES.md §5.
    """

    concealed: tuple[int, ...]
    melds: tuple[Meld, ...] = ()
    win_tile: int
    self_draw: bool
    kong_draw: bool = False  # 杠上开花: self-draw on a kong replacement draw
    kong_chain: int = 0  # kongs in the chain that ended in this replacement draw (for `doubling`)
    last_tile: bool = False  # 海底捞: self-draw of the last wall tile
    after_kong_discard: bool = False  # 杠上炮
    robbed_kong: bool = False  # 抢杠胡
    liang_dao: bool = False  # the winner had declared 亮倒


class PatternHit(msgspec.Struct, frozen=True, kw_only=True):
    """One multiplier: the pattern id of RULES.md §5, its factor, and why (tiles, decomposition)."""

    id: str
    x: int
    detail: str = ""


class Score(msgspec.Struct, frozen=True, kw_only=True):
    """The scored win. ``multiplier`` is before the cap; ``capped`` after it; ``payable`` is
    ``capped`` plus 数坎 (``shu_kan``) where that option is on (买码 is added by settlement).
    ``allowed``: the multiplier meets the minimum for this kind of win (``min_required``)."""

    patterns: tuple[PatternHit, ...]
    multiplier: int
    capped: int
    shu_kan: int = 0
    payable: int
    allowed: bool
    min_required: int
    cap_note: str = ""  # e.g. "cap 8" or "exempt: shuang_long_qi_dui ×16"
    decomposition: str = ""  # the chosen decomposition in compact notation, e.g. "456p 123s 789s CCC 55p"
