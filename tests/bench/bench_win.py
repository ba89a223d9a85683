"""Win detection speed: ``domain.shape.is_win`` against the ``mahjong`` package's ``Agari.is_agari``.

Two sets of 14-tile concealed hands, drawn with a seeded ``random.Random``:
(a) random winning hands (four sets + a pair, some seven pairs), (b) random 14-tile hands drawn
from the 84-tile set (almost never a win). Our tiles map onto mahjong's 34-array: 1p–9p → 9–17
(its pins), 1s–9s → 18–26 (its sous), C F P → 31 32 33 (its dragons). The conversion happens
before timing; both sides get their native input (our count tuple, its 34-list).

Run: ``.venv/bin/python -m tests.bench.bench_win`` (or ``make bench``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from domain.shape import is_win
from domain.tiles import N_KINDS, TOTAL_TILES
from tests.bench import knob

N_HANDS = knob("KWX_BENCH_WIN_HANDS", 20_000, 500)
REPEAT = knob("KWX_BENCH_REPEAT", 5, 1)
_TO_34 = [9 + k for k in range(9)] + [18 + k for k in range(9)] + [31, 32, 33]


def random_winning_hand(rng: random.Random) -> tuple[int, ...]:
    """Four sets + a pair (one in ten: seven pairs), within four copies per kind."""
    while True:
        counts = [0] * N_KINDS
        if rng.random() < 0.1:
            for k in rng.sample(range(N_KINDS), 7):
                counts[k] += 2
            return tuple(counts)
        for _ in range(4):
            if rng.random() < 0.6:
                s = rng.randrange(2)
                start = s * 9 + rng.randrange(7)
                for k in (start, start + 1, start + 2):
                    counts[k] += 1
            else:
                counts[rng.randrange(N_KINDS)] += 3
        counts[rng.randrange(N_KINDS)] += 2
        if max(counts) <= 4:
            return tuple(counts)


def random_hand(rng: random.Random) -> tuple[int, ...]:
    """14 tiles drawn from the 84-tile set."""
    counts = [0] * N_KINDS
    for t in rng.sample(range(TOTAL_TILES), 14):
        counts[t // 4] += 1
    return tuple(counts)


def to_34(counts: Sequence[int]) -> list[int]:
    out = [0] * 34
    for k, n in enumerate(counts):
        out[_TO_34[k]] = n
    return out


def _rate(fn: Callable[[Sequence[int]], bool], hands: Sequence[Sequence[int]]) -> tuple[float, int]:
    best = float("inf")
    wins = 0
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        wins = sum(1 for h in hands if fn(h))
        best = min(best, time.perf_counter() - t0)
    return len(hands) / best, wins


def run() -> None:
    from mahjong.agari import Agari

    rng = random.Random(20260101)
    sets = {
        "winning hands": [random_winning_hand(rng) for _ in range(N_HANDS)],
        "random 14-tile hands": [random_hand(rng) for _ in range(N_HANDS)],
    }
    agari = Agari().is_agari
    print(f"bench_win: {N_HANDS} hands each, best of {REPEAT}")
    for label, ours in sets.items():
        theirs = [to_34(h) for h in ours]
        ours_rate, ours_wins = _rate(is_win, ours)
        theirs_rate, theirs_wins = _rate(agari, theirs)
        print(
            f"  {label:22s} kwx is_win {ours_rate:12,.0f} hands/s | mahjong Agari.is_agari "
            f"{theirs_rate:12,.0f} hands/s | ratio {ours_rate / theirs_rate:5.2f}x "
            f"| wins {ours_wins} vs {theirs_wins}"
        )


if __name__ == "__main__":
    run()
