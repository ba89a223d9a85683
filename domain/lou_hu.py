"""漏胡 (missed win, RULES.md §9).

When a discard (or an added kong's tile) appears, the seats whose cached waits hold it are scored
once: the :class:`~domain.state.Candidate` list. When the window closes — the next event is a draw,
a 碰 or 杠, a hu that does not include them, or 荒庄 — every candidate that could legally have won
is restricted until their own next draw (``until_own_draw``), or may only win a strictly bigger
multiplier (``unless_bigger``); ``off`` restricts nobody.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from domain.rules import Rules
from domain.scoring import Score
from domain.state import Candidate, HandState, LouHu
from domain.winning import WinKind, score_win


def blocking(hs: HandState, rules: Rules, seat: int, score: Score | None) -> LouHu | None:
    """The restriction that forbids ``seat`` this win on a discard / robbed kong, if any."""
    if rules.lou_hu == "off":
        return None
    r = hs.lou_hu[seat]
    if r is None:
        return None
    if rules.lou_hu == "unless_bigger" and score is not None and score.multiplier > r.multiplier:
        return None
    return r


def candidates(hs: HandState, rules: Rules, tile: int, source: int, kind: WinKind) -> tuple[Candidate, ...]:
    """Seats other than ``source`` whose waits hold ``tile``, each scored once."""
    out: list[Candidate] = []
    for seat in (0, 1, 2):
        if seat == source or tile not in hs.waits[seat]:
            continue
        sc = score_win(hs, rules, seat, tile, kind)
        legal = (
            sc is not None
            and sc.allowed
            and (kind != "rob" or rules.rob_kong)
            and blocking(hs, rules, seat, sc) is None
        )
        out.append(Candidate(seat=seat, score=sc, legal=legal))
    return tuple(out)


def close_window(
    hs: HandState, rules: Rules, closing_event: int, winners: Iterable[int] = ()
) -> HandState | None:
    """The hand after the claim / rob window closed at ``closing_event``: every candidate that
    could legally have won and is not among ``winners`` becomes restricted (``lou_hu: off``:
    nobody). None: nothing changes."""
    if not hs.candidates:
        return None
    if rules.lou_hu == "off":
        return msgspec.structs.replace(hs, candidates=())
    won = set(winners)
    lou = list(hs.lou_hu)
    log = hs.lou_hu_log
    for c in hs.candidates:
        if not c.legal or c.seat in won or c.score is None:
            continue
        r = LouHu(
            hand=hs.hand,
            seat=c.seat,
            event=hs.last_event,
            tile=hs.last_tile if hs.last_tile is not None else -1,
            source=hs.turn,
            multiplier=c.score.multiplier,
            since=closing_event,
        )
        lou[c.seat] = r
        log = (*log, r)
    return _replace_lou(hs, tuple(lou), log)


def lift(hs: HandState, seat: int, draw_event: int) -> HandState | None:
    """``seat`` drew: its restriction ends (lifted_by = that draw). None: nothing to lift."""
    r = hs.lou_hu[seat]
    if r is None:
        return None
    lou = list(hs.lou_hu)
    lou[seat] = None
    log = tuple(
        _lifted(x, draw_event) if x.seat == seat and x.lifted_by is None else x for x in hs.lou_hu_log
    )
    return _replace_lou(hs, tuple(lou), log)


def _lifted(r: LouHu, event: int) -> LouHu:
    return LouHu(
        hand=r.hand,
        seat=r.seat,
        event=r.event,
        tile=r.tile,
        source=r.source,
        multiplier=r.multiplier,
        since=r.since,
        lifted_by=event,
    )


def _replace_lou(hs: HandState, lou: tuple[LouHu | None, ...], log: tuple[LouHu, ...]) -> HandState:
    return msgspec.structs.replace(hs, lou_hu=lou, lou_hu_log=log, candidates=())
