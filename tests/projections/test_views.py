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


def test_the_full_views_seats_are_each_seats_own_and_the_rest_is_the_public_view() -> None:
    """Support's view: each seat's panel is the one that seat's own view shows, every other part
    of the table (settlements, rulings, coins …) the public view's, and the hand's wall and every
    hand besides."""
    checked = 0
    for state in states(78, 3):
        full, public = full_view(state), spectator_view(state)
        if state.hand is None:
            continue
        for s in (0, 1, 2):
            assert full["hand"]["seats"][s] == seat_view(state, s)["hand"]["seats"][s], (state.version, s)
        for key in ("settlements", "coins", "players", "hand_no", "dealer", "version"):
            assert full[key] == public[key], key
        checked += 1
    assert checked > 100


_TABLE_LEVEL = {"hand_started", "hand_exhausted", "hand_aborted", "wall_revealed", "settlement_reported",
                "table_closed", "ma_drawn"}  # fmt: skip


def _norm(action: dict[str, Any]) -> dict[str, Any]:
    """An action with its unset fields dropped, tuples as lists, and a drawn tile hidden."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in action.items() if v is not None}
    if out.get("type") in ("tile_drawn", "ma_drawn"):
        out.pop("tile", None)
    return out


def _the_seats_own(action: dict[str, Any], seat: int) -> bool:
    if action["type"] == "hu":  # a win names its winners, not a seat: the seat's own win alone
        return list(action["winners"]) == [seat]
    return action.get("seat") == seat or (action.get("seat") is None and action["type"] in _TABLE_LEVEL)


@pytest.mark.parametrize("seed", range(10))
def test_a_seat_view_lists_exactly_the_full_views_actions_that_seat_may_take(seed: int) -> None:
    own_wins = checked = 0
    for state in states(7100 + seed, 3):
        full = [_norm(a) for a in full_view(state)["legal_actions"]]
        for seat in (0, 1, 2):
            seen = [_norm(a) for a in seat_view(state, seat)["legal_actions"]]
            assert seen == [a for a in full if _the_seats_own(a, seat)], (state.version, seat)
            own_wins += sum(a["type"] == "hu" for a in seen)
            checked += 1
    assert checked > 200 and own_wins > 0  # the simulated hands did offer wins to check


def test_a_seat_sees_its_own_discard_win_in_a_double_win() -> None:
    from domain.tiles import TILE_NAMES
    from tests.paths import CONFORMANCE

    lines = (CONFORMANCE / "streams" / "double-win.jsonl").read_text().splitlines()
    state = engine.initial()
    for line in lines[:3]:
        state = engine.step(state, convert(msgspec.json.decode(line)))[0]
    assert state.version == 3
    for seat in (1, 2):
        wins = [a for a in seat_view(state, seat)["legal_actions"] if a["type"] == "hu"]
        assert [(list(a["winners"]), a["tile"], a["from"]) for a in wins] == [([seat], TILE_NAMES[4], 0)]
    assert [a for a in seat_view(state, 0)["legal_actions"] if a["type"] == "hu"] == []
    full_wins = [list(a["winners"]) for a in full_view(state)["legal_actions"] if a["type"] == "hu"]
    assert sorted(full_wins) == [[1], [1, 2], [2]]


_TILE_KEYS = {"tile", "tiles", "waits", "discard", "ma_tile", "drawn", "last_tile", "wall", "concealed",
              "concealed_all"}  # fmt: skip


def _ints_under_tile_keys(x: Any, path: str, out: set[str]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            here = f"{path}.{k}"
            if k == "rules":  # the rule options (kong_points.concealed is points, not a hand)
                continue
            if k in _TILE_KEYS or (k == "hidden" and isinstance(v, (list, tuple))):
                for item in v if isinstance(v, (list, tuple)) else [v]:
                    if isinstance(item, int) and not isinstance(item, bool):
                        out.add(here)
            if k.endswith("_event") and v == 0:
                out.add(f"{here} = 0")
            _ints_under_tile_keys(v, here, out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _ints_under_tile_keys(v, f"{path}[]", out)


def test_every_tile_in_every_view_is_a_tile_name_and_absent_events_are_null() -> None:
    from tests.projections.helpers import violating

    bad: set[str] = set()
    walked = kongs = 0
    tables = [t for seed in range(8300, 8304) for t in (simulated(seed, 3), violating(seed, 3)[0])]
    for events in tables:
        state = engine.initial()
        for e in events:
            state = engine.step(state, convert(e))[0]
            for view in (full_view(state), spectator_view(state), *(seat_view(state, s) for s in (0, 1, 2))):
                _ints_under_tile_keys(view, "", bad)
                walked += 1
            kongs += bool(state.hand and state.hand.record.kongs)
    assert walked > 500 and kongs > 0
    assert bad == set()
