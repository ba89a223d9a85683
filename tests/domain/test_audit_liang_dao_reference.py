"""Rules audit — 亮倒 legality (RULES.md §8) by an independent reference, at every point of simulated
tables, in both directions.

Reference, from §8 and the seeds (亮倒后不可以换手中的牌…可以在不影响听牌的情况下开杠; 23334567 不可以杠3):
- 亮倒 with a discard: the 13 tiles left are ready; not fewer than ``liang_dao_min_wall`` tiles left.
- A declarer discards only the tile just drawn (any tile when it drew none), never 碰s.
- A declarer's 暗杠 / 补杠 only of the tile just drawn; a 暗杠 / 直杠 only of a triplet that is a set
  of every ready reading of the 13-tile hand, for every wait, the kong tile itself not being a wait
  (docs/decisions.md R3); a 补杠 always (tiles left in the wall as for anyone).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from domain import engine
from domain.events import Kong, LiangDao, Peng, TileDiscarded, convert
from domain.rules import resolve
from domain.shape import decompositions, is_seven_pairs, waits
from domain.simulate import Policy, simulate_table
from domain.tiles import TILE_NAMES
from domain.walls import remaining


def _keeps_waits(c13: list[int], tile: int) -> bool:
    ws = waits(c13)
    if not ws or c13[tile] != 3:
        return False
    for w in ws:
        if w == tile:
            return False
        d = list(c13)
        d[w] += 1
        if is_seven_pairs(d):
            return False
        if any(("tri", tile) not in [(g.kind, g.tile) for g in dec.sets] for dec in decompositions(d)):
            return False
    return True


def _ok(state: Any, ev: Any) -> bool:
    return engine.check(state, ev) is None


@pytest.mark.parametrize("spec", [{"preset": "default"}, {"preset": "xiaogan"}], ids=["default", "xiaogan"])
def test_liang_dao_reference_on_simulated_tables(spec: dict[str, Any]) -> None:
    rules = resolve(spec)
    policy = Policy(declare_liang_dao=0.8, concealed_kong=0.9, exposed_kong=0.9, stack_chain=0.3)
    seen = {"declare": 0, "refused": 0, "kong": 0, "locked": 0}
    for seed in range(24):
        wire = simulate_table(random.Random(seed), 5, dict(spec), f"t{seed}", policy)
        state = engine.initial()
        for raw in wire:
            hs = state.hand
            if hs is not None and hs.phase == "discard":
                s = hs.turn
                c = list(hs.concealed[s])
                declared = hs.liang_dao[s] is not None
                for k in range(21):
                    if not c[k]:
                        continue
                    name = TILE_NAMES[k]
                    want = not declared or hs.drawn is None or hs.drawn == k
                    got = _ok(state, TileDiscarded(id="x", seat=s, tile=name))  # type: ignore[arg-type]
                    assert got == want, (seed, raw, "discard", name)
                    seen["locked"] += not got
                    if not declared:
                        c[k] -= 1
                        ready = bool(waits(c))
                        c[k] += 1
                        wall_ok = (
                            rules.liang_dao_min_wall is None or remaining(hs) >= rules.liang_dao_min_wall
                        )
                        got = _ok(state, LiangDao(id="x", seat=s, discard=name))  # type: ignore[arg-type]
                        assert got == (ready and wall_ok), (seed, raw, "liang_dao", name)
                        seen["declare" if got else "refused"] += 1
                if declared and hs.fresh and remaining(hs) > 0:
                    for k in range(21):
                        if c[k] == 4:
                            c13 = list(c)
                            c13[k] -= 1
                            want = hs.drawn == k and _keeps_waits(c13, k)
                            got = _ok(state, Kong(id="x", seat=s, tile=TILE_NAMES[k], kind="concealed"))  # type: ignore[arg-type]
                            assert got == want, (seed, raw, "concealed", TILE_NAMES[k])
                            seen["kong"] += 1
            if hs is not None and hs.phase == "claim" and hs.last_tile is not None:
                k = hs.last_tile
                for s in (0, 1, 2):
                    if s == hs.turn or hs.liang_dao[s] is None:
                        continue
                    assert not _ok(state, Peng(id="x", seat=s, tile=TILE_NAMES[k]))  # type: ignore[arg-type]
                    if hs.concealed[s][k] == 3:
                        want = remaining(hs) > 0 and _keeps_waits(list(hs.concealed[s]), k)
                        got = _ok(state, Kong(id="x", seat=s, tile=TILE_NAMES[k], kind="exposed"))  # type: ignore[arg-type]
                        assert got == want, (seed, raw, "exposed", TILE_NAMES[k])
                        seen["kong"] += 1
            state, ruling, ok = engine.step(state, convert(raw))
            assert ok, (seed, raw, ruling)
    assert seen["declare"] and seen["refused"] and seen["locked"] and seen["kong"], seen
