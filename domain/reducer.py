"""``evolve(state, event, ruling)``: apply an accepted event (RULES.md §2–§9).

Pure and O(1)-ish per event: a hand's tiles are count vectors in tuples, only the seat that moved
is rebuilt, waits are recomputed only for the seat whose concealed tiles changed, and a discard is
scored only against the seats whose waits hold it. When a hand ends the :class:`HandRecord` is
settled by ``domain.settle.settle_hand`` and the Settlement stored.

An event stored with a rule ruling (``violations: "record"``) is applied like a legal one; the
exceptions are documented in docs/rulings.md (a hu that is not a winning hand pays nothing; a
kong with an empty wall skips its replacement draw).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from domain.events import (
    Event,
    HandAborted,
    HandExhausted,
    HandStarted,
    Hu,
    Kong,
    LiangDao,
    MaDrawn,
    Peng,
    SettlementReported,
    TableClosed,
    TableOpened,
    TileDiscarded,
    TileDrawn,
    WallRevealed,
)
from domain.facts import Declaration, KongRecord, WinRecord
from domain.lou_hu import candidates, close_window, lift
from domain.ready import waits
from domain.state import (
    Discard,
    HandState,
    KongChain,
    LiangDaoInfo,
    Ruling,
    TableState,
)
from domain.table_events import (
    add1,
    apply_closed,
    apply_ma,
    apply_opened,
    apply_reported,
    apply_started,
    apply_wall_revealed,
    chain_factor,
    end_hand,
    hand_of,
    rules_of,
    set3,
)
from domain.tiles import TILE_INDEX, Meld
from domain.walls import WALL_SIZE, remaining
from domain.winning import no_score, score_win

_replace = msgspec.structs.replace


def evolve(state: TableState, ev: Event, ruling: Ruling | None = None) -> TableState:
    """The state after ``ev`` (accepted: legal, or stored with its rule ``ruling``)."""
    v = state.version + 1
    if ruling is None:
        fast = _FAST.get(type(ev))
        if fast is not None:  # draws and discards: the version set in the same copy of the state
            return _replace(state, hand=fast(state, ev, v), version=v)
    new = _APPLY[type(ev)](state, ev, v, ruling)  # at version v already (one copy of the state)
    if ruling is not None:
        return _replace(new, rulings=(*state.rulings, ruling))
    return new


def claim_last(hs: HandState) -> tuple[tuple[Discard, ...], ...]:
    """The last discard (of hs.turn) is claimed by 碰 / 直杠."""
    ds = hs.discards[hs.turn]
    last = ds[-1]
    return set3(hs.discards, hs.turn, (*ds[:-1], Discard(tile=last.tile, event=last.event, claimed=True)))


# --- hand events --------------------------------------------------------------------------------


def _drawn(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    return _replace(state, hand=drawn_hand(state, ev, v), version=v)


def drawn_hand(state: TableState, ev: TileDrawn, v: int) -> HandState:
    hs = state.hand
    assert hs is not None
    return draw(state, hs, ev.seat, TILE_INDEX[ev.tile], v)


def draw(state: TableState, hs: HandState, seat: int, k: int, v: int) -> HandState:
    """The hand ``hs`` after ``seat`` drew ``k`` (accepted, no ruling) as the event of version ``v``."""
    if hs.candidates:
        hs = close_window(hs, rules_of(state), v) or hs
    if hs.lou_hu[seat] is not None:
        hs = lift(hs, seat, v) or hs
    back = hs.phase in ("replacement", "rob")
    chain = hs.chain
    # add1 / set3 written out: this runs for every draw
    c = list(hs.seen)
    c[k] += 1
    seen = tuple(c)
    conc = hs.concealed
    c = list(conc[seat])
    c[k] += 1
    row = tuple(c)
    if seat == 0:
        concealed = (row, conc[1], conc[2])
    elif seat == 1:
        concealed = (conc[0], row, conc[2])
    else:
        concealed = (conc[0], conc[1], row)
    if not back and chain is None and not hs.from_back and not hs.after_kong and not hs.candidates:
        # the usual draw: only the fields that change (each keyword of a replace costs)
        return _replace(
            hs,
            front=hs.front + 1,
            drawn_front=hs.drawn_front + (k,),  # noqa: RUF005 - one tuple built, not a list first
            seen=seen,
            concealed=concealed,
            phase="discard",
            turn=seat,
            fresh=True,
            drawn=k,
            drawn_event=v,
            last_tile=None,
        )
    if back:
        if chain is not None:
            chain = _replace(chain, stage="draw")
        front, nback = hs.front, hs.back + 1
        drawn_front, drawn_back = hs.drawn_front, (*hs.drawn_back, k)
    else:
        chain = None
        front, nback = hs.front + 1, hs.back
        drawn_front, drawn_back = (*hs.drawn_front, k), hs.drawn_back
    return _replace(
        hs,
        front=front,
        back=nback,
        drawn_front=drawn_front,
        drawn_back=drawn_back,
        seen=seen,
        concealed=concealed,
        phase="discard",
        turn=seat,
        fresh=True,
        drawn=k,
        drawn_event=v,
        from_back=back,
        last_tile=None,
        candidates=(),
        after_kong=False,
        chain=chain,
    )


def discard(state: TableState, hs: HandState, seat: int, k: int, v: int) -> HandState:
    """The hand ``hs`` after ``seat`` discarded ``k`` (accepted; also the discard of a 亮倒) as the
    event of version ``v``."""
    conc, dis = hs.concealed, hs.discards
    cl = list(conc[seat])
    cl[k] -= 1
    c = tuple(cl)
    d = dis[seat] + (Discard(tile=k, event=v),)
    # set3 written out for the seat's concealed tiles and discards: this runs for every discard
    if seat == 0:
        concealed, discards = (c, conc[1], conc[2]), (d, dis[1], dis[2])
    elif seat == 1:
        concealed, discards = (conc[0], c, conc[2]), (dis[0], d, dis[2])
    else:
        concealed, discards = (conc[0], conc[1], c), (dis[0], dis[1], d)
    fresh, from_back = hs.fresh, hs.from_back
    # the tile just drawn from the front goes out again: the hand is the one of this seat's last
    # discard (or the deal), whose waits are cached (after a peng / kong there is no such draw:
    # drawn is None, or the draw came from the back)
    tsumogiri = k == hs.drawn and fresh and not from_back
    ws = hs.waits if tsumogiri else set3(hs.waits, seat, waits(c))
    chain = hs.chain
    if chain is None and not from_back and not hs.after_kong and hs.turn == seat:
        # the usual discard (not after a kong's replacement draw): only the fields that change
        # (each keyword of a replace costs)
        hs = _replace(
            hs,
            concealed=concealed,
            discards=discards,
            phase="claim",
            fresh=False,
            drawn=None,
            last_tile=k,
            last_event=v,
            waits=ws,
        )
    else:
        after_kong = fresh and from_back and hs.drawn is not None
        if chain is not None:
            chain = _replace(chain, stage="discard") if chain.stage == "draw" and chain.seat == seat else None
        hs = _replace(
            hs,
            concealed=concealed,
            discards=discards,
            phase="claim",
            turn=seat,
            fresh=False,
            drawn=None,
            last_tile=k,
            last_event=v,
            after_kong=after_kong,
            chain=chain,
            waits=ws,
        )
    w0, w1, w2 = ws
    if k not in w0 and k not in w1 and k not in w2:
        return hs  # nobody waits on it: no candidate
    cands = candidates(hs, rules_of(state), k, seat, "discard")
    return _replace(hs, candidates=cands) if cands else hs  # in the discard phase there are none


def _discarded(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    return _replace(state, hand=discarded_hand(state, ev, v), version=v)


def discarded_hand(state: TableState, ev: TileDiscarded, v: int) -> HandState:
    hs = state.hand
    assert hs is not None
    return discard(state, hs, ev.seat, TILE_INDEX[ev.tile], v)


def _liang_dao(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, LiangDao)
    hs = hand_of(state)
    seat, k = ev.seat, TILE_INDEX[ev.discard]
    # declared before the discard so that scoring the discard sees the flag only for this seat
    hs = discard(state, hs, seat, k, v)
    info = LiangDaoInfo(
        event=v, discard=k, waits=hs.waits[seat], hidden=tuple(sorted(TILE_INDEX[x] for x in ev.hidden))
    )
    rec = _replace(hs.record, declarations=(*hs.record.declarations, Declaration(seat=seat, event=v)))
    return _replace(state, hand=_replace(hs, liang_dao=set3(hs.liang_dao, seat, info), record=rec), version=v)


def _peng(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, Peng)
    hs = hand_of(state)
    seat, k = ev.seat, TILE_INDEX[ev.tile]
    hs = close_window(hs, rules_of(state), v) or hs
    meld = Meld(kind="peng", tile=k, source=hs.turn, event=v)
    hs = _replace(
        hs,
        discards=claim_last(hs),
        concealed=set3(hs.concealed, seat, add1(hs.concealed[seat], k, -2)),
        melds=set3(hs.melds, seat, (*hs.melds[seat], meld)),
        waits=set3(hs.waits, seat, ()),
        phase="discard",
        turn=seat,
        fresh=False,
        drawn=None,
        from_back=False,
        last_tile=None,
        after_kong=False,
        chain=None,
        candidates=(),
    )
    return _replace(state, hand=hs, version=v)


def _kong(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, Kong)
    rules = rules_of(state)
    hs = hand_of(state)
    seat, k, kind = ev.seat, TILE_INDEX[ev.tile], ev.kind
    chain = hs.chain
    source: int | None = None
    if kind == "exposed":
        source = hs.turn
        extend = chain is not None and chain.stage == "discard" and chain.seat == source
        hs = close_window(hs, rules_of(state), v) or hs
        meld = Meld(kind="kong_exposed", tile=k, source=source, event=v)
        melds = (*hs.melds[seat], meld)
        hs = _replace(
            hs,
            discards=claim_last(hs),
            concealed=set3(hs.concealed, seat, add1(hs.concealed[seat], k, -3)),
        )
    else:
        extend = chain is not None and chain.stage == "draw" and chain.seat == seat and hs.fresh
        if kind == "concealed":
            melds = (*hs.melds[seat], Meld(kind="kong_concealed", tile=k, event=v))
            hs = _replace(hs, concealed=set3(hs.concealed, seat, add1(hs.concealed[seat], k, -4)))
        else:
            melds = tuple(
                Meld(kind="kong_added", tile=k, source=m.source, event=v)
                if m.kind == "peng" and m.tile == k
                else m
                for m in hs.melds[seat]
            )
            hs = _replace(hs, concealed=set3(hs.concealed, seat, add1(hs.concealed[seat], k, -1)))
    length = chain.length + 1 if extend and chain is not None else 1
    factor = chain_factor(length, rules.kong_chain_cap)
    units = getattr(rules.kong_points, kind) * factor * hs.base
    money = list(hs.kong_money)
    payers = (source,) if source is not None else tuple(s for s in (0, 1, 2) if s != seat)
    for p in payers:
        money[p] -= units
        money[seat] += units
    rec = _replace(
        hs.record,
        kongs=(
            *hs.record.kongs,
            KongRecord(seat=seat, kind=kind, tile=k, event=v, chain=length, source=source),
        ),
    )
    hs = _replace(
        hs,
        melds=set3(hs.melds, seat, melds),
        waits=set3(hs.waits, seat, ()),
        phase="rob" if kind == "added" else "replacement",
        turn=seat,
        fresh=False,
        drawn=None,
        from_back=False,
        last_tile=k if kind == "added" else None,
        last_event=v if kind == "added" else hs.last_event,
        after_kong=False,
        chain=KongChain(seat=seat, length=length, factor=factor, stage="kong"),
        kong_money=(money[0], money[1], money[2]),
        record=rec,
        candidates=(),
    )
    if kind == "added":
        hs = _replace(hs, candidates=candidates(hs, rules, k, seat, "rob"))
    return _replace(state, hand=hs, version=v)


def _hu(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, Hu)
    rules = rules_of(state)
    hs = hand_of(state)
    k = TILE_INDEX[ev.tile]
    source = ev.from_
    kind = "self_draw" if source is None else ("rob" if hs.phase == "rob" else "discard")
    wins: list[WinRecord] = []
    bad_seat = ruling.detail.get("seat") if ruling is not None else None
    for seat in ev.winners:
        sc = None
        if kind != "self_draw":
            sc = next((c.score for c in hs.candidates if c.seat == seat), None)
        if sc is None:
            sc = score_win(hs, rules, seat, k, kind)  # type: ignore[arg-type]
        violation = None
        if ruling is not None and (bad_seat is None or bad_seat == seat):
            violation = ruling.code
        wins.append(
            WinRecord(
                seat=seat,
                source=source,
                tile=k,
                event=v,
                score=sc if sc is not None else no_score(rules, kind == "self_draw"),
                liang_dao=hs.liang_dao[seat] is not None,
                source_liang_dao=source is not None and hs.liang_dao[source] is not None,
                robbed_kong=kind == "rob",
                kong_draw=kind == "self_draw" and hs.drawn is not None and hs.from_back,
                after_kong_discard=kind == "discard" and hs.after_kong,
                violation=violation,
            )
        )
    # with multi_win off only one seat may win a discard: the others lost priority, not passed
    hs = close_window(hs, rules, v, ev.winners if rules.multi_win else (0, 1, 2)) or hs
    rec = hs.record
    if kind == "rob":
        last = rec.kongs[-1]
        rec = _replace(rec, kongs=(*rec.kongs[:-1], _replace(last, robbed=True)))
        units = rules.kong_points.added * chain_factor(last.chain, rules.kong_chain_cap) * hs.base
        money = [m + (units if s != last.seat else -2 * units) for s, m in enumerate(hs.kong_money)]
        melds = tuple(
            Meld(kind="peng", tile=m.tile, source=m.source, event=m.event)
            if m.kind == "kong_added" and m.tile == k
            else m
            for m in hs.melds[last.seat]
        )
        hs = _replace(hs, kong_money=(money[0], money[1], money[2]), melds=set3(hs.melds, last.seat, melds))
    rec = _replace(rec, wins=tuple(wins), end="hu", end_event=v)
    return end_hand(state, _replace(hs, record=rec), v)


def _exhausted(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    hs = hand_of(state)
    hs = close_window(hs, rules_of(state), v) or hs
    return end_hand(state, _replace(hs, record=_replace(hs.record, end="exhausted", end_event=v)), v)


def _aborted(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, HandAborted)
    hs = hand_of(state)
    return end_hand(state, _replace(hs, record=_replace(hs.record, end="aborted", end_event=v)), v)


_FAST: dict[type, Callable[[TableState, Any, int], HandState]] = {
    TileDrawn: drawn_hand,
    TileDiscarded: discarded_hand,
}
# (state, event, v, ruling) -> the table after the event, its version set to v
_Apply = Callable[[TableState, Any, int, "Ruling | None"], TableState]
_APPLY: dict[type, _Apply] = {
    TableOpened: apply_opened,
    HandStarted: apply_started,
    TileDrawn: _drawn,
    TileDiscarded: _discarded,
    LiangDao: _liang_dao,
    Peng: _peng,
    Kong: _kong,
    Hu: _hu,
    HandExhausted: _exhausted,
    HandAborted: _aborted,
    MaDrawn: apply_ma,
    WallRevealed: apply_wall_revealed,
    SettlementReported: apply_reported,
    TableClosed: apply_closed,
}

__all__ = ["WALL_SIZE", "discard", "draw", "evolve", "remaining"]
