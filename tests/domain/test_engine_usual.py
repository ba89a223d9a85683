"""The usual events' one-dispatch path (``engine.step`` / ``fold`` for draws and discards): given
states from random games → when a draw or a discard arrives, legal or not → then ``step`` gives
exactly what ``check`` followed by ``evolve`` gives; and a hand_started's counts (counted once for
its check and its application) are the dealt tiles."""

from __future__ import annotations

import random

import msgspec

from domain import engine
from domain.events import Event, TileDiscarded, TileDrawn
from domain.state import Ruling, TableState
from domain.tiles import TILE_NAMES, parse_counts
from tests.domain.engine_dsl import given, opened, started
from tests.domain.test_engine_actions import play


def check_then_evolve(state: TableState, ev: Event) -> tuple[TableState, Ruling | None, bool]:
    ruling = engine.check(state, ev)
    if ruling is not None and engine.rejects(state, ruling):
        return state, ruling, False
    return engine.evolve(state, ev, ruling), ruling, True


def probe(rng: random.Random, state: TableState, i: int) -> Event:
    """A draw or discard, often the plausible one (the turn seat, a held tile), sometimes not."""
    hs = state.hand
    seat = hs.turn if hs is not None and rng.random() < 0.6 else rng.randrange(3)
    tile = rng.choice(TILE_NAMES)
    if hs is not None and rng.random() < 0.6:
        held = [k for k, n in enumerate(hs.concealed[seat]) if n] if hs.concealed else []
        if held:
            tile = TILE_NAMES[rng.choice(held)]
    cls = TileDrawn if rng.random() < 0.5 else TileDiscarded
    return cls(id=f"p{i}", seat=seat, tile=tile)  # type: ignore[arg-type]


def test_step_of_draws_and_discards_is_check_then_evolve() -> None:
    rng = random.Random(11)
    accepted = rejected = 0
    for seed, preset in enumerate(["default", "platform_3d", "yunmeng", "xiaogan"]):
        _, events = play(400 + seed, 3, {"preset": preset}, check_all=False)
        for violations in ("reject", "record"):
            first = msgspec.structs.replace(events[0], violations=violations)
            state = engine.initial()
            for i, ev in enumerate([first, *events[1:]]):
                p = probe(rng, state, i)
                got = engine.step(state, p)
                assert got == check_then_evolve(state, p)
                accepted += got[2]
                rejected += not got[2]
                assert engine.step(state, ev) == check_then_evolve(state, ev)
                state = engine.step(state, ev)[0]
            assert engine.fold([first, *events[1:]]) == state
    assert accepted > 100 and rejected > 100  # both ways through the probes


def test_hand_started_counts_are_the_dealt_tiles() -> None:
    hands = ["1112345678999p C", "19p 19s CCFFP 2345s", "2233445566778s"]
    state = given(opened(), started(*hands, dealer=0))
    hs = state.hand
    assert hs is not None
    assert hs.concealed == tuple(tuple(parse_counts(h)) for h in hands)
    assert hs.seen == tuple(a + b + c for a, b, c in zip(*hs.concealed, strict=True))
