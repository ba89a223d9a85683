"""Scoring a possible win from the table state: the WinSituation flags derived from the hand
(RULES.md §5), then ``domain.fan.score``."""

from __future__ import annotations

from typing import Literal

from domain.fan import score
from domain.rules import Rules
from domain.scoring import Score, WinSituation
from domain.state import HandState
from domain.walls import remaining

WinKind = Literal["self_draw", "discard", "rob"]


def situation(hs: HandState, seat: int, tile: int, kind: WinKind) -> WinSituation:
    """The WinSituation of ``seat`` winning ``tile`` now. Self-draw: the tile is already in hand."""
    concealed = hs.concealed[seat]
    if kind != "self_draw":
        c = list(concealed)
        c[tile] += 1
        concealed = tuple(c)
    liang_dao = hs.liang_dao[seat] is not None
    if kind == "self_draw":
        drew = hs.drawn is not None
        kong_draw = drew and hs.from_back
        chain = hs.chain
        return WinSituation(
            concealed=concealed,
            melds=hs.melds[seat],
            win_tile=tile,
            self_draw=True,
            kong_draw=kong_draw,
            kong_chain=chain.length if kong_draw and chain is not None and chain.seat == seat else 0,
            last_tile=drew and remaining(hs) == 0,
            liang_dao=liang_dao,
        )
    return WinSituation(
        concealed=concealed,
        melds=hs.melds[seat],
        win_tile=tile,
        self_draw=False,
        after_kong_discard=kind == "discard" and hs.after_kong,
        robbed_kong=kind == "rob",
        liang_dao=liang_dao,
    )


# The last win scored, by identity of the (immutable) hand state and rules: a self-draw hu is
# scored by its legality check and again when applied, from the same state.
_last: tuple[HandState, Rules, int, int, str, Score | None] | None = None


def score_win(hs: HandState, rules: Rules, seat: int, tile: int, kind: WinKind) -> Score | None:
    """The Score of that win, or None when the tiles do not form a winning hand."""
    global _last
    last = _last
    if (
        last is not None
        and last[0] is hs
        and last[1] is rules
        and last[2] == seat
        and last[3] == tile
        and last[4] == kind
    ):
        return last[5]
    sc = score(situation(hs, seat, tile, kind), rules)
    _last = (hs, rules, seat, tile, kind, sc)
    return sc


def no_score(rules: Rules, self_draw: bool) -> Score:
    """The Score stored for a recorded hu that is not a winning hand: it pays nothing."""
    need = rules.min_multiplier_self_draw if self_draw else rules.min_multiplier_discard
    return Score(
        patterns=(),
        multiplier=0,
        capped=0,
        payable=0,
        allowed=False,
        min_required=need,
        cap_note="not a winning hand: recorded, pays nothing",
    )
