"""The wall: how many tiles are left, which tile a draw must be, the SHA-256 commitment, and the
tile-count invariants (CONTRACT.md §1: at most four of a kind; a known wall plus the hands is
exactly the 84-tile set)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from domain.state import HandState
from domain.tiles import COPIES, N_KINDS, TILE_NAMES

WALL_SIZE = 44


def remaining(hs: HandState) -> int:
    """Tiles left in the wall (draws from the front and the back, and the 买码 tile, are gone)."""
    return WALL_SIZE - hs.front - hs.back


def expected_front(hs: HandState) -> int | None:
    """The tile the next normal draw must be, when the wall is known."""
    if hs.wall is None or remaining(hs) <= 0:
        return None
    return hs.wall[hs.front]


def expected_back(hs: HandState) -> int | None:
    """The tile the next kong replacement draw (or the 买码 tile) must be, when the wall is known."""
    if hs.wall is None or remaining(hs) <= 0:
        return None
    return hs.wall[WALL_SIZE - 1 - hs.back]


def sha256_of(tiles: Iterable[int]) -> str:
    """SHA-256 (hex) of the tiles' wire names concatenated: ``"1p5sC…"``."""
    return hashlib.sha256("".join(TILE_NAMES[k] for k in tiles).encode("ascii")).hexdigest()


def counts_of(groups: Iterable[Iterable[int]]) -> list[int]:
    out = [0] * N_KINDS
    for g in groups:
        for k in g:
            out[k] += 1
    return out


def over_four(counts: Sequence[int]) -> list[int]:
    """Kinds that appear more than four times."""
    return [k for k in range(N_KINDS) if counts[k] > COPIES]


def not_full_set(counts: Sequence[int]) -> list[int]:
    """Kinds that do not appear exactly four times (a known wall + hands must be the 84 tiles)."""
    return [k for k in range(N_KINDS) if counts[k] != COPIES]


def draws_match(hs: HandState, wall: Sequence[int]) -> tuple[str, str] | None:
    """None when every draw so far agrees with ``wall``; else the first mismatch (English, Chinese)."""
    for i, k in enumerate(hs.drawn_front):
        if wall[i] != k:
            drawn, held = TILE_NAMES[k], TILE_NAMES[wall[i]]
            return (f"front draw #{i + 1} was {drawn}, the wall has {held}",
                    f"从牌墙头摸的第{i + 1}张是{drawn}，牌墙上是{held}")  # fmt: skip
    for i, k in enumerate(hs.drawn_back):
        w = wall[WALL_SIZE - 1 - i]
        if w != k:
            drawn, held = TILE_NAMES[k], TILE_NAMES[w]
            return (f"back draw #{i + 1} was {drawn}, the wall has {held}",
                    f"从牌墙尾补的第{i + 1}张是{drawn}，牌墙上是{held}")  # fmt: skip
    return None
