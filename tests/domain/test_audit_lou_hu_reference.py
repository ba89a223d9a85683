"""Rules audit — 漏胡 (RULES.md §9) by an independent reference, on simulated tables.

The reference follows RULES.md §9 literally, from the events: when a discard (or an added kong's
tile) appears, every other seat that could legally win it — a winning hand (scored by the engine's
``score``: scoring is audited elsewhere) meeting ``min_multiplier_discard``, 抢杠胡 allowed, and not
itself restricted — and does not win it by the time the next event comes, is restricted; its own
next draw lifts the restriction. ``until_own_draw`` blocks every discard / robbed-kong win,
``unless_bigger`` only those not strictly bigger than the passed multiplier, ``off`` none. After
every event the engine's restricted seats must be the reference's, every win the reference allows
on a discard / added kong must be accepted and every one it blocks refused with ``lou_hu``, and no
accepted win on another player's tile may break a reference restriction.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from domain import engine
from domain.events import Hu, convert
from domain.rules import resolve
from domain.simulate import Policy, simulate_table
from domain.tiles import TILE_INDEX, TILE_NAMES
from domain.winning import score_win


def _could_win(hs: Any, rules: Any, seat: int, tile: int, kind: str) -> int | None:
    """The multiplier ``seat`` would win ``tile`` for, if it is a legal win (restriction aside)."""
    if kind == "rob" and not rules.rob_kong:
        return None
    sc = score_win(hs, rules, seat, tile, kind)  # type: ignore[arg-type]
    if sc is None or sc.multiplier < rules.min_multiplier_discard:
        return None
    return sc.multiplier


@pytest.mark.parametrize("mode", ["until_own_draw", "unless_bigger", "off"])
def test_lou_hu_reference_on_simulated_tables(mode: str) -> None:
    policy = Policy(take_discard_win=0.5, take_rob=0.5, declare_liang_dao=0.5)
    checked_blocks = 0
    for seed in range(10):
        wire = simulate_table(
            random.Random(seed), 5, {"preset": "default", "lou_hu": mode}, f"t{seed}", policy
        )
        rules = resolve({"preset": "default", "lou_hu": mode})
        state = engine.initial()
        restricted: dict[int, int] = {}  # seat -> passed multiplier
        window: dict[int, int] = {}  # seat -> multiplier it could win the open tile for
        for raw in wire:
            ev = convert(raw)
            t = raw["type"]
            hs = state.hand
            if t == "hand_started":
                restricted, window = {}, {}
            elif hs is not None and hs.phase != "over" and t not in ("settlement_reported", "wall_revealed"):
                winners = set(raw.get("winners", [])) if t == "hu" else set()
                if t == "hu" and raw.get("from") is not None:
                    for w in winners:
                        if w in restricted and mode != "off":
                            m = window.get(w)
                            assert mode == "unless_bigger" and m is not None and m > restricted[w], (
                                seed,
                                raw,
                            )
                # the window closes: every seat that could have won and did not is restricted
                for seat, m in window.items():
                    if seat not in winners and mode != "off":
                        restricted[seat] = m
                window = {}
                if t == "tile_drawn":
                    restricted.pop(raw["seat"], None)
            state, ruling, ok = engine.step(state, ev)
            assert ok, (seed, raw, ruling)
            hs = state.hand
            if (
                hs is not None
                and hs.phase in ("claim", "rob")
                and t in ("tile_discarded", "liang_dao", "kong")
            ):
                tile = TILE_INDEX[raw.get("tile") or raw.get("discard")]
                kind = "rob" if hs.phase == "rob" else "discard"
                for seat in (0, 1, 2):
                    if seat == hs.turn:
                        continue
                    m = _could_win(hs, rules, seat, tile, kind)
                    if m is None:
                        continue
                    blocked = seat in restricted and not (mode == "unless_bigger" and m > restricted[seat])
                    # both directions: the engine accepts exactly the wins the reference allows
                    r = engine.check(state, Hu(id="x", winners=[seat], tile=TILE_NAMES[tile], from_=hs.turn))
                    assert (r.code if r else None) == ("lou_hu" if blocked else None), (seed, raw, seat, r)
                    if blocked:
                        checked_blocks += 1
                    else:
                        window[seat] = m
            if hs is not None and hs.phase == "discard" and hs.fresh and hs.drawn is not None:
                # self-draw is never restricted: a win meeting min_multiplier_self_draw is accepted
                sc = score_win(hs, rules, hs.turn, hs.drawn, "self_draw")
                want = None if sc is not None and sc.multiplier >= rules.min_multiplier_self_draw else "x"
                r = engine.check(state, Hu(id="x", winners=[hs.turn], tile=TILE_NAMES[hs.drawn], from_=None))
                assert (None if r is None else "x") == want, (seed, raw, r)
            if hs is not None and hs.phase != "over":
                engine_restricted = {s for s in (0, 1, 2) if hs.lou_hu[s] is not None}
                assert engine_restricted == set(restricted), (seed, raw, hs.lou_hu, restricted)
    if mode == "until_own_draw":
        assert checked_blocks > 0
