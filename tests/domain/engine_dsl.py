"""A small given → when → then language for engine tests, with compact tile notation.

st = given(opened(), started("123456789p 1234s C", "…", "…"), discard(0, "C"))
r = when(st, hu([1], "8s", frm=0))          # the ruling of the next event (None = legal)
st = then_ok(st, draw(1, "7s"))              # apply, asserting it is accepted
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from domain import engine
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
    ReportedTransfer,
    SettlementReported,
    TableClosed,
    TableOpened,
    TileDiscarded,
    TileDrawn,
    WallRevealed,
)
from domain.state import Ruling, TableState
from domain.tiles import TILE_NAMES, parse

_ids = itertools.count(1)


def _id() -> str:
    return f"e{next(_ids)}"


def names(text: str) -> list[Any]:
    return [TILE_NAMES[k] for k in parse(text)]


def opened(rules: dict[str, Any] | None = None, *, base: int = 1, violations: str = "reject") -> TableOpened:
    return TableOpened(
        id=_id(),
        players=["alice", "bob", "carol"],
        rules=rules if rules is not None else {"preset": "default"},
        base=base,
        violations=violations,  # type: ignore[arg-type]
    )


def started(
    h0: str,
    h1: str,
    h2: str,
    *,
    dealer: int = 0,
    hand: int = 1,
    wall: str | list[Any] | None = None,
    wall_sha256: str | None = None,
    dice: list[int] | None = None,
    piao: list[int] | None = None,
) -> HandStarted:
    w = names(wall) if isinstance(wall, str) else wall
    return HandStarted(
        id=_id(),
        hand=hand,
        dealer=dealer,
        hands=[names(h0), names(h1), names(h2)],
        wall=w,
        wall_sha256=wall_sha256,
        dice=dice,
        piao=piao,
    )


def draw(seat: int, tile: str) -> TileDrawn:
    return TileDrawn(id=_id(), seat=seat, tile=tile)  # type: ignore[arg-type]


def discard(seat: int, tile: str) -> TileDiscarded:
    return TileDiscarded(id=_id(), seat=seat, tile=tile)  # type: ignore[arg-type]


def peng(seat: int, tile: str) -> Peng:
    return Peng(id=_id(), seat=seat, tile=tile)  # type: ignore[arg-type]


def kong(seat: int, tile: str, kind: str) -> Kong:
    return Kong(id=_id(), seat=seat, tile=tile, kind=kind)  # type: ignore[arg-type]


def liang(seat: int, tile: str, hidden: str = "") -> LiangDao:
    return LiangDao(id=_id(), seat=seat, discard=tile, hidden=names(hidden))  # type: ignore[arg-type]


def hu(winners: list[int], tile: str, frm: int | None = None) -> Hu:
    return Hu(id=_id(), winners=winners, tile=tile, from_=frm)  # type: ignore[arg-type]


def exhausted() -> HandExhausted:
    return HandExhausted(id=_id())


def aborted(reason: str = "platform crash") -> HandAborted:
    return HandAborted(id=_id(), reason=reason)


def ma(tile: str) -> MaDrawn:
    return MaDrawn(id=_id(), tile=tile)  # type: ignore[arg-type]


def revealed(wall: list[Any]) -> WallRevealed:
    return WallRevealed(id=_id(), wall=wall)


def reported(hand: int, transfers: list[tuple[int, int, int]]) -> SettlementReported:
    return SettlementReported(
        id=_id(),
        hand=hand,
        transfers=[ReportedTransfer(from_=a, to=b, amount=n) for a, b, n in transfers],
    )


def closed() -> TableClosed:
    return TableClosed(id=_id())


def given(*events: Event) -> TableState:
    """Fold the events; every one must be accepted."""
    return engine.fold(list(events))


def when(state: TableState, event: Event) -> Ruling | None:
    return engine.check(state, event)


def then_ok(state: TableState, *events: Event) -> TableState:
    for ev in events:
        new, ruling, ok = engine.step(state, ev)
        assert ok and ruling is None, ruling
        state = new
    return state


def full_wall(h0: str, h1: str, h2: str, front: str = "", back: str = "", seed: int = 7) -> list[Any]:
    """A 44-tile wall that completes the hands to the 84-tile set: ``front`` tiles are drawn first,
    ``back`` are the last tiles of the wall (``back[0]`` is the very last: the first kong draw)."""
    left = [4] * 21
    for k in parse(h0) + parse(h1) + parse(h2) + parse(front) + parse(back):
        left[k] -= 1
    assert min(left) >= 0, "more than four of a kind"
    rest = [k for k in range(21) for _ in range(left[k])]
    random.Random(seed).shuffle(rest)
    body = parse(front) + rest + list(reversed(parse(back)))
    assert len(body) == 44, len(body)
    return [TILE_NAMES[k] for k in body]


def burn(state: TableState, n: int) -> TableState:
    """``n`` rounds of draw-and-discard-the-drawn-tile (摸打), from the known wall."""
    for _ in range(n):
        hs = state.hand
        assert hs is not None and hs.wall is not None and hs.phase == "claim"
        seat = (hs.turn + 1) % 3
        tile = TILE_NAMES[hs.wall[hs.front]]
        state = then_ok(state, draw(seat, tile), discard(seat, tile))
    return state
