"""Rules audit — which 碰 and 杠 are legal (RULES.md §3), by an independent reference, at every
point of simulated tables, in both directions (the engine refuses nothing the rules allow and
allows nothing they forbid). Seats that declared 亮倒 are left to the 亮倒 tests (their kongs depend
on the ready decompositions).

Reference, from RULES.md §3 and §8:
- 碰 of the last discard by another seat: two held, tiles left in the wall (the last discard can be
  won on but not claimed), not declared, and not holding three with ``no_peng_with_concealed_triplet``.
- 直杠 of it: three held, tiles left in the wall.
- 暗杠 right after one's own draw (or the dealer before the first discard): four held, tiles left.
- 补杠: a 碰 of the tile and the fourth in hand, tiles left, and with ``added_kong_immediate`` the
  tile just drawn.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from domain import engine
from domain.events import Kong, Peng, convert
from domain.rules import resolve
from domain.simulate import Policy, simulate_table
from domain.tiles import TILE_NAMES
from domain.walls import remaining


def _ok(state: Any, ev: Any) -> bool:
    return engine.check(state, ev) is None


@pytest.mark.parametrize(
    "spec",
    [
        {"preset": "default"},
        {"preset": "default", "added_kong_immediate": False, "no_peng_with_concealed_triplet": False},
    ],
    ids=["default", "lenient"],
)
def test_claims_reference_on_simulated_tables(spec: dict[str, Any]) -> None:
    rules = resolve(spec)
    policy = Policy(peng=0.3, exposed_kong=0.5, stack_chain=0.3)
    seen = {"peng": 0, "exposed": 0, "concealed": 0, "added": 0}
    for seed in range(8):
        wire = simulate_table(random.Random(seed), 4, dict(spec), f"t{seed}", policy)
        state = engine.initial()
        for raw in wire:
            hs = state.hand
            if hs is not None and hs.phase == "claim" and hs.last_tile is not None:
                k = hs.last_tile
                left = remaining(hs)
                for s in (0, 1, 2):
                    if s == hs.turn or hs.liang_dao[s] is not None:
                        continue
                    held = hs.concealed[s][k]
                    want = held >= 2 and left > 0 and not (held >= 3 and rules.no_peng_with_concealed_triplet)
                    got = _ok(state, Peng(id="x", seat=s, tile=TILE_NAMES[k]))  # type: ignore[arg-type]
                    assert got == want, (seed, raw, "peng", s, TILE_NAMES[k], held, left)
                    seen["peng"] += got
                    want = held >= 3 and left > 0
                    got = _ok(state, Kong(id="x", seat=s, tile=TILE_NAMES[k], kind="exposed"))  # type: ignore[arg-type]
                    assert got == want, (seed, raw, "exposed", s, TILE_NAMES[k], held, left)
                    seen["exposed"] += got
            if hs is not None and hs.phase == "discard" and hs.liang_dao[hs.turn] is None:
                s = hs.turn
                left = remaining(hs)
                for k in range(21):
                    held = hs.concealed[s][k]
                    want = hs.fresh and held == 4 and left > 0
                    got = _ok(state, Kong(id="x", seat=s, tile=TILE_NAMES[k], kind="concealed"))  # type: ignore[arg-type]
                    assert got == want, (seed, raw, "concealed", s, TILE_NAMES[k])
                    seen["concealed"] += got
                    pengs = any(m.kind == "peng" and m.tile == k for m in hs.melds[s])
                    want = (
                        hs.fresh
                        and pengs
                        and held >= 1
                        and left > 0
                        and (not rules.added_kong_immediate or hs.drawn == k)
                    )
                    got = _ok(state, Kong(id="x", seat=s, tile=TILE_NAMES[k], kind="added"))  # type: ignore[arg-type]
                    assert got == want, (seed, raw, "added", s, TILE_NAMES[k])
                    seen["added"] += got
            state, ruling, ok = engine.step(state, convert(raw))
            assert ok, (seed, raw, ruling)
    assert all(seen.values()), seen
