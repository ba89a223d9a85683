"""Rules audit — fan (RULES.md §5–§6) by an independent brute-force reference, on random winning
hands: the multiplier before the cap, the payable amount and ``allowed`` must agree with
``domain.fan.score``.

The reference is written from the §5 table only: every way to split the concealed tiles into a
pair and sets (plain recursion, no tables), plus seven pairs without melds; the patterns of a
reading multiply; the best reading counts; then the cap with ``cap_exempt`` and the minimum.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from domain.fan import score
from domain.rules import Rules, resolve
from domain.scoring import WinSituation
from domain.tiles import Meld

C, F, P = 18, 19, 20
DRAGONS = (C, F, P)


def _suit(k: int) -> int:
    return k // 9 if k < 18 else 2


def _sets(c: list[int], start: int = 0) -> Iterator[list[tuple[str, int]]]:
    """Every split of ``c`` into triplets and sequences (as (kind, first tile))."""
    k = next((i for i in range(start, 21) if c[i]), None)
    if k is None:
        yield []
        return
    if c[k] >= 3:
        c[k] -= 3
        for rest in _sets(c, k):
            yield [("tri", k), *rest]
        c[k] += 3
    if k < 18 and k % 9 <= 6 and c[k + 1] and c[k + 2]:
        for i in (k, k + 1, k + 2):
            c[i] -= 1
        for rest in _sets(c, k):
            yield [("seq", k), *rest]
        for i in (k, k + 1, k + 2):
            c[i] += 1


def _readings(c: list[int]) -> Iterator[tuple[int, list[tuple[str, int]]]]:
    for pair in range(21):
        if c[pair] >= 2:
            c[pair] -= 2
            for sets in _sets(c):
                yield pair, sets
            c[pair] += 2


def reference(sit: WinSituation, rules: Rules) -> tuple[int, int, bool] | None:
    c = list(sit.concealed)  # consumed while the readings are generated
    held = sit.concealed  # what the winner holds, winning tile included
    melds = sit.melds
    win = sit.win_tile
    pengs = {m.tile for m in melds if m.kind == "peng"}
    all_tiles = [k for k in range(21) if held[k]] + [m.tile for m in melds]
    qys = len({_suit(k) for k in all_tiles}) == 1 and _suit(all_tiles[0]) != 2

    situ = 1
    if sit.self_draw and sit.kong_draw:
        situ *= 2 ** max(1, sit.kong_chain) if rules.kong_chain_kai_hua == "doubling" else 2
    if not sit.self_draw and sit.after_kong_discard:
        situ *= 2
    if not sit.self_draw and sit.robbed_kong:
        situ *= 2
    if sit.self_draw and sit.last_tile:
        situ *= 2
    if sit.liang_dao:
        situ *= 2

    best: tuple[int, list[str]] | None = None
    for pair, sets in _readings(c):
        ids: list[str] = []
        m = situ
        tris = [t for kind, t in sets if kind == "tri"] + [x.tile for x in melds]
        if all(kind == "tri" for kind, _ in sets):
            m *= 2
            ids.append("peng_peng_hu")
        dragons = {t for t in tris if t in DRAGONS}
        if len(dragons) == 3:
            m *= 8
        elif len(dragons) == 2 and pair in DRAGONS:
            m *= 4
        if qys:
            m *= 4
        if len(melds) == 4:
            m *= rules.shou_zhua_yi_fan
        if win in (4, 13) and ("seq", win - 1) in sets:
            m *= 2
        si = 1
        if held[win] == 4:
            si *= 4
        elif win in pengs:
            si *= 2
        if rules.pin_dao == "full" and m >= 4:
            for k in range(21):
                if k != win and held[k] == 4:
                    si *= 4
                elif k != win and k in pengs and held[k] == 1:
                    si *= 2
        m *= si
        if best is None or m > best[0]:
            best = (m, ids)
    exempt_ids: list[str] = []
    if not melds and all(n % 2 == 0 for n in held) and sum(held) == 14:
        fours = sum(1 for n in held if n == 4)
        pid = ("qi_dui", "long_qi_dui", "shuang_long_qi_dui", "san_long_qi_dui")[fours]
        m = (4, 8, 16, 32)[fours] * situ * (4 if qys else 1)
        if best is None or m > best[0] or (m == best[0] and pid in rules.cap_exempt):
            best = (m, [pid])
            exempt_ids = [pid]
    if best is None:
        return None
    mult = best[0]
    if rules.cap is None:
        capped = mult
    else:
        limit = max([rules.cap] + [rules.cap_exempt[i] for i in exempt_ids if i in rules.cap_exempt])
        capped = min(mult, limit)
    need = rules.min_multiplier_self_draw if sit.self_draw else rules.min_multiplier_discard
    return mult, capped, mult >= need


def _random_win(rng: random.Random) -> WinSituation | None:
    left = [4] * 21
    suits = rng.choice([[0], [1], [0, 1], [0, 1, 2], [0, 2], [1, 2]])
    kinds = [k for k in range(21) if _suit(k) in suits]
    concealed = [0] * 21
    melds: list[Meld] = []
    if rng.random() < 0.15:
        pairs = 0
        while pairs < 7:
            k = rng.choice(kinds)
            if left[k] >= 2:
                left[k] -= 2
                concealed[k] += 2
                pairs += 1
    else:
        n_melds = rng.choice([0, 0, 0, 1, 1, 2, 3, 4])
        for _ in range(n_melds):
            k = rng.choice(kinds)
            kind = rng.choice(["peng", "peng", "kong_concealed", "kong_added", "kong_exposed"])
            size = 3 if kind == "peng" else 4
            if left[k] < size:
                return None
            left[k] -= size
            melds.append(Meld(kind=kind, tile=k))  # type: ignore[arg-type]
        for _ in range(4 - n_melds):
            k = rng.choice(kinds)
            if k < 18 and k % 9 <= 6 and rng.random() < 0.6 and all(left[k + i] for i in range(3)):
                for i in range(3):
                    left[k + i] -= 1
                    concealed[k + i] += 1
            elif left[k] >= 3:
                left[k] -= 3
                concealed[k] += 3
            else:
                return None
        k = rng.choice(kinds)
        if left[k] < 2:
            return None
        left[k] -= 2
        concealed[k] += 2
    win = rng.choice([k for k in range(21) if concealed[k]])
    self_draw = rng.random() < 0.5
    return WinSituation(
        concealed=tuple(concealed),
        melds=tuple(melds),
        win_tile=win,
        self_draw=self_draw,
        kong_draw=self_draw and rng.random() < 0.15,
        kong_chain=rng.choice([0, 1, 2, 3]),
        last_tile=self_draw and rng.random() < 0.1,
        after_kong_discard=not self_draw and rng.random() < 0.15,
        robbed_kong=not self_draw and rng.random() < 0.1,
        liang_dao=rng.random() < 0.3,
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"preset": "default"},
        {"preset": "xiangyang"},
        {"preset": "shiyan"},
        {"preset": "uncapped", "kong_chain_kai_hua": "doubling"},
        {"preset": "yunmeng", "shou_zhua_yi_fan": 2},
    ],
    ids=lambda s: "-".join(map(str, s.values())),
)
def test_fan_reference_on_random_winning_hands(spec: dict[str, object]) -> None:
    rules = resolve(spec)
    rng = random.Random(2026)
    compared = 0
    while compared < 3000:
        sit = _random_win(rng)
        if sit is None:
            continue
        got = score(sit, rules)
        want = reference(sit, rules)
        assert want is not None and got is not None, sit
        assert (got.multiplier, got.capped, got.allowed) == want, (sit, got.patterns, want)
        compared += 1
