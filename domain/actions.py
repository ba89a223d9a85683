"""``legal_actions(state)``: the legal next events, as small :class:`Action` values.

Complete for the play of a hand (draws, discards, 亮倒, 碰, 杠, 胡, 荒庄) and the table around it
(table_opened, hand_started, ma_drawn). Every listed action passes ``check`` (a test proves it):
candidates are generated from the tiles and then filtered through ``check``. Not listed, because
only the platform decides them: hand_aborted, wall_revealed, settlement_reported, table_closed.
A draw's tile is given when the wall is known, else None (any unseen tile).
"""

from __future__ import annotations

import msgspec

from domain.events import (
    Event,
    HandExhausted,
    Hu,
    Kong,
    LiangDao,
    MaDrawn,
    Peng,
    TileDiscarded,
    TileDrawn,
)
from domain.legality import check
from domain.ready import waits
from domain.shape import is_win
from domain.state import HandState, TableState
from domain.tiles import TILE_NAMES
from domain.walls import expected_back, expected_front, remaining


class Action(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    type: str
    seat: int | None = None
    tile: int | None = None
    kind: str | None = None  # kong kind: concealed / added / exposed
    winners: tuple[int, ...] = ()
    from_: int | None = msgspec.field(default=None, name="from")
    hidden: tuple[int, ...] = ()


def to_event(a: Action, id: str) -> Event:
    """The event of an action (``hand_started`` and a draw from an unknown wall need more)."""
    tile = TILE_NAMES[a.tile] if a.tile is not None else None
    if a.type == "tile_drawn":
        assert a.seat is not None and tile is not None
        return TileDrawn(id=id, seat=a.seat, tile=tile)  # type: ignore[arg-type]
    if a.type == "tile_discarded":
        assert a.seat is not None and tile is not None
        return TileDiscarded(id=id, seat=a.seat, tile=tile)  # type: ignore[arg-type]
    if a.type == "liang_dao":
        assert a.seat is not None and tile is not None
        return LiangDao(id=id, seat=a.seat, discard=tile, hidden=[TILE_NAMES[k] for k in a.hidden])  # type: ignore[arg-type, misc]
    if a.type == "peng":
        assert a.seat is not None and tile is not None
        return Peng(id=id, seat=a.seat, tile=tile)  # type: ignore[arg-type]
    if a.type == "kong":
        assert a.seat is not None and tile is not None
        return Kong(id=id, seat=a.seat, tile=tile, kind=a.kind)  # type: ignore[arg-type]
    if a.type == "hu":
        assert tile is not None
        return Hu(id=id, winners=list(a.winners), tile=tile, from_=a.from_)  # type: ignore[arg-type]
    if a.type == "hand_exhausted":
        return HandExhausted(id=id)
    if a.type == "ma_drawn":
        assert tile is not None
        return MaDrawn(id=id, tile=tile)  # type: ignore[arg-type]
    raise ValueError(f"action {a.type} needs more than the action to become an event")


def legal_actions(state: TableState) -> list[Action]:
    if state.closed:
        return []
    if not state.opened:
        return [Action(type="table_opened")]
    hs = state.hand
    if hs is None or hs.phase == "over":
        return _between_hands(state, hs)
    out = _candidates(state, hs)
    return [a for a in out if _passes(state, a)]


def _passes(state: TableState, a: Action) -> bool:
    if a.tile is None and a.type == "tile_drawn":
        return True
    return check(state, to_event(a, "x")) is None


def _between_hands(state: TableState, hs: HandState | None) -> list[Action]:
    out = [Action(type="hand_started", seat=state.next_dealer)]
    rules = state.rules
    if (
        hs is not None
        and rules is not None
        and rules.maima
        and hs.record.end == "hu"
        and hs.record.wins
        and hs.record.wins[0].source is None
        and hs.record.ma_tile is None
        and remaining(hs) > 0
    ):
        out.append(Action(type="ma_drawn", tile=expected_back(hs)))
    return out


def _candidates(state: TableState, hs: HandState) -> list[Action]:
    rules = state.rules
    assert rules is not None
    out: list[Action] = []
    if hs.phase == "discard":
        s = hs.turn
        c = list(hs.concealed[s])
        if hs.fresh and is_win(c):
            tiles = [hs.drawn] if hs.drawn is not None else [k for k in range(21) if c[k]]
            out += [Action(type="hu", winners=(s,), tile=k) for k in tiles]
        if hs.fresh:
            out += [Action(type="kong", seat=s, tile=k, kind="concealed") for k in range(21) if c[k] == 4]
            out += [
                Action(type="kong", seat=s, tile=m.tile, kind="added")
                for m in hs.melds[s]
                if m.kind == "peng" and c[m.tile]
            ]
        declared = hs.liang_dao[s] is not None
        for k in range(21):
            if not c[k]:
                continue
            out.append(Action(type="tile_discarded", seat=s, tile=k))
            if not declared:
                c[k] -= 1
                if waits(c):
                    out.append(Action(type="liang_dao", seat=s, tile=k))
                    trip = tuple(j for j in range(21) if c[j] >= 3)
                    if trip and rules.liang_dao_hide_triplets:
                        out.append(Action(type="liang_dao", seat=s, tile=k, hidden=trip))
                c[k] += 1
        return out
    if hs.phase in ("claim", "rob"):
        last = hs.last_tile
        assert last is not None
        k = last
        legal = [cd.seat for cd in hs.candidates if cd.legal]
        out += [Action(type="hu", winners=(w,), tile=k, from_=hs.turn) for w in legal]
        if len(legal) == 2 and rules.multi_win:
            out.append(Action(type="hu", winners=(legal[0], legal[1]), tile=k, from_=hs.turn))
        if hs.phase == "claim":
            for s in (0, 1, 2):
                if s == hs.turn:
                    continue
                n = hs.concealed[s][k]
                if n >= 2:
                    out.append(Action(type="peng", seat=s, tile=k))
                if n >= 3:
                    out.append(Action(type="kong", seat=s, tile=k, kind="exposed"))
            if remaining(hs) > 0:
                out.append(Action(type="tile_drawn", seat=(hs.turn + 1) % 3, tile=expected_front(hs)))
            else:
                out.append(Action(type="hand_exhausted"))
            return out
    # replacement / rob: the konger's draw from the back
    if remaining(hs) > 0:
        out.append(Action(type="tile_drawn", seat=hs.turn, tile=expected_back(hs)))
    else:
        out.append(Action(type="hand_exhausted"))
    return out
