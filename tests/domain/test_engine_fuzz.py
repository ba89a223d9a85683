"""Robustness: given states from random games → when any well-formed event arrives (random type, seat,
tile, kind, winners) → then ``check`` never raises, and on a recording table every event it does not
reject as structure is applied by ``evolve`` without raising, leaving an encodable state."""

from __future__ import annotations

import random

import msgspec

from domain import engine
from domain.events import (
    Event,
    HandAborted,
    HandExhausted,
    Hu,
    Kong,
    LiangDao,
    MaDrawn,
    Peng,
    SettlementReported,
    TableClosed,
    TileDiscarded,
    TileDrawn,
    WallRevealed,
)
from domain.tiles import TILE_NAMES
from tests.domain.test_engine_actions import play


def random_event(rng: random.Random, i: int) -> Event:
    seat = rng.randrange(3)
    tile: str = rng.choice(TILE_NAMES)
    kind = rng.randrange(12)
    eid = f"f{i}"
    if kind == 0:
        return TileDrawn(id=eid, seat=seat, tile=tile)  # type: ignore[arg-type]
    if kind == 1:
        return TileDiscarded(id=eid, seat=seat, tile=tile)  # type: ignore[arg-type]
    if kind == 2:
        return Peng(id=eid, seat=seat, tile=tile)  # type: ignore[arg-type]
    if kind == 3:
        k = rng.choice(["concealed", "added", "exposed"])
        return Kong(id=eid, seat=seat, tile=tile, kind=k)  # type: ignore[arg-type]
    if kind == 4:
        hidden = [rng.choice(TILE_NAMES) for _ in range(rng.randrange(2))]
        return LiangDao(id=eid, seat=seat, discard=tile, hidden=hidden)  # type: ignore[arg-type]
    if kind in (5, 6):
        winners = rng.sample([0, 1, 2], rng.choice([1, 1, 2]))
        frm = rng.choice([None, 0, 1, 2])
        return Hu(id=eid, winners=winners, tile=tile, from_=frm)  # type: ignore[arg-type]
    if kind == 7:
        return HandExhausted(id=eid)
    if kind == 8:
        return MaDrawn(id=eid, tile=tile)  # type: ignore[arg-type]
    if kind == 9:
        return WallRevealed(id=eid, wall=[rng.choice(TILE_NAMES) for _ in range(44)])  # type: ignore[misc]
    if kind == 10:
        return SettlementReported(id=eid, hand=rng.randrange(1, 4), transfers=[])
    return rng.choice([HandAborted(id=eid, reason="x"), TableClosed(id=eid)])


def test_check_never_raises_and_recorded_events_apply() -> None:
    rng = random.Random(5)
    for seed in range(4):
        _, events = play(300 + seed, 3, {"preset": "platform_3d" if seed % 2 else "default"}, check_all=False)
        opened = msgspec.structs.replace(events[0], violations="record")  # type: ignore[call-arg]
        states = [engine.fold([opened])]
        st = states[0]
        for ev in events[1:]:
            st = engine.evolve(st, ev)
            states.append(st)
        for i in range(3000):
            base = rng.choice(states)
            ev = random_event(rng, i)
            ruling = engine.check(base, ev)
            new, r2, ok = engine.step(base, ev)
            assert r2 == ruling
            if ruling is None or ruling.kind == "rule":
                assert ok
                engine.decode_state(engine.encode_state(new))
                for j in range(3):  # keep going from a state an illegal-but-recorded event made
                    nxt = random_event(rng, 10 * i + j)
                    new = engine.step(new, nxt)[0]
                engine.decode_state(engine.encode_state(new))
            else:
                assert not ok and new is base
