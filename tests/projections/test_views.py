"""Seat views never leak a hidden tile: for every state of many simulated hands and every seat,
scramble everything that seat could not see (the others' concealed tiles unless shown by 亮倒,
their drawn tile, the wall) and check the seat's view does not change. No database."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from domain import engine
from domain.events import convert
from domain.tiles import N_KINDS
from projections.views import full_view, seat_view, spectator_view
from tests.projections.helpers import simulated


def _random_counts(rng: random.Random, n: int) -> tuple[int, ...]:
    counts = [0] * N_KINDS
    for _ in range(n):
        k = rng.choice([k for k in range(N_KINDS) if counts[k] < 4])
        counts[k] += 1
    return tuple(counts)


def scrambled(state: Any, viewer: int, rng: random.Random) -> Any:
    hs = state.hand
    if hs is None:
        return state
    concealed = list(hs.concealed)
    for o in (0, 1, 2):
        if o != viewer and hs.liang_dao[o] is None:
            concealed[o] = _random_counts(rng, sum(hs.concealed[o]))
    changes: dict[str, Any] = {"concealed": tuple(concealed)}
    if hs.turn != viewer and hs.drawn is not None:
        changes["drawn"] = rng.randrange(N_KINDS)
    if hs.wall is not None:
        wall = list(hs.wall)
        rest = wall[hs.front : len(wall) - hs.back]
        rng.shuffle(rest)
        changes["wall"] = tuple(wall[: hs.front] + rest + wall[len(wall) - hs.back :])
    return msgspec.structs.replace(state, hand=msgspec.structs.replace(hs, **changes))


def states(seed: int, hands: int) -> list[Any]:
    out = []
    state = engine.initial()
    for e in simulated(seed, hands):
        state = engine.step(state, convert(e))[0]
        out.append(state)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_a_seat_view_does_not_depend_on_what_the_seat_could_not_see(seed: int) -> None:
    rng = random.Random(seed)
    checked = effective = 0
    for state in states(5000 + seed, 2):
        for viewer in (0, 1, 2):
            view = seat_view(state, viewer)
            other = scrambled(state, viewer, rng)
            assert seat_view(other, viewer) == view, (state.version, viewer)
            effective += full_view(other) != full_view(state)  # the scramble did hide something
            hand = view.get("hand")
            if hand:
                for s in hand["seats"]:
                    if s["seat"] != viewer and s["liang_dao"] is None:
                        assert s["concealed"] is None and s["waits"] is None and s["lou_hu"] is None
                    if s["seat"] != viewer and s["liang_dao"] is not None:
                        assert isinstance(s["liang_dao"]["hidden"], int)  # how many kept face down, not which
                assert "wall" not in hand
            for action in view["legal_actions"]:
                assert action.get("seat") in (viewer, None)
                if action["type"] in ("tile_drawn", "ma_drawn"):
                    assert action["tile"] is None
            checked += 1
    assert checked > 100 and effective > checked // 2


def test_the_public_view_hides_every_hand_and_support_sees_all() -> None:
    for state in states(77, 1):
        public = spectator_view(state)
        full = full_view(state)
        if state.hand is None:
            continue
        for s in public["hand"]["seats"]:
            if s["liang_dao"] is None:
                assert s["concealed"] is None
        assert all(set(a) <= {"type", "seat"} for a in public["legal_actions"])
        assert [s["concealed"] for s in full["hand"]["seats"]] == full["hand"]["concealed_all"]
