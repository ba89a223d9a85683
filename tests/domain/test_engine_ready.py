"""domain.ready.waits (the reducer's cached-per-suit waits) agrees with domain.shape.waits."""

from __future__ import annotations

import random

from domain import ready, shape
from domain.tiles import parse_counts


def _winning(rng: random.Random) -> list[int] | None:
    c = [0] * 21
    if rng.random() < 0.15:  # seven pairs, sometimes with a four-of-a-kind (龙七对)
        kinds = rng.sample(range(21), 7)
        for k in kinds:
            c[k] += 2
        if rng.random() < 0.5:
            c[kinds[0]] += 2
            c[kinds[1]] -= 2
        return c
    sets = rng.choice([1, 2, 3, 4])
    for _ in range(sets):
        if rng.random() < 0.5:
            k = rng.randrange(21)
            c[k] += 3
        else:
            s = rng.choice([0, 9])
            k = s + rng.randrange(7)
            for j in (k, k + 1, k + 2):
                c[j] += 1
    c[rng.randrange(21)] += 2
    return c if max(c) <= 4 else None


def test_same_waits_as_shape_on_ready_and_random_hands() -> None:
    rng = random.Random(11)
    checked = ready_seen = 0
    while checked < 20000:
        c = _winning(rng)
        if c is None:
            continue
        k = rng.choice([k for k in range(21) if c[k]])
        c[k] -= 1
        assert ready.waits(c) == shape.waits(c), c
        ready_seen += bool(ready.waits(c))
        checked += 1
    assert ready_seen > 15000
    tiles = [k for k in range(21) for _ in range(4)]
    for _ in range(20000):
        c = [0] * 21
        for k in rng.sample(tiles, rng.choice([1, 4, 7, 10, 13])):
            c[k] += 1
        assert ready.waits(c) == shape.waits(c), c


def test_examples() -> None:
    assert ready.waits(parse_counts("1112345678999p")) == tuple(range(9))
    assert ready.waits(parse_counts("23334567s 11p 789p")) == (0, 11)
    assert ready.waits(parse_counts("112233p 4455s CCP")) == (20,)  # 七对 single wait
    assert ready.waits(parse_counts("1122p 3344s CCC 55s")) == (
        0,
        1,
        18,
    )  # 111p 22p 345s 345s CCC, or 七对 with CCCC
