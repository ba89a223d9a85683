"""Winning shapes (RULES.md §4): is it a win, in how many ways, and what does a ready hand wait on.

Everything works on the concealed part of a hand as a count vector of 21 ints (domain/tiles.py).
With ``n`` declared melds the concealed part of a winning hand has ``3 × (4 − n) + 2`` tiles.

- Standard shape: sets + one pair. A set is a sequence (three consecutive numbers of one suit) or a
  triplet; dragons never form sequences. (Kongs are always declared melds, so the concealed part
  never holds one: four identical concealed tiles are a triplet plus one more tile in a sequence.)
- Seven pairs (七对): exactly 14 concealed tiles, every count even; four identical count as two
  pairs.

Speed: the suits are independent, so ``is_win`` looks each suit's nine counts up, as a tuple, in a
table of every suit vector that splits into sets, or into sets and one pair. The table is built
once at import from the sets themselves (about 20k vectors, a few tens of ms) — the same idea as
the classic table-driven agari checks. Dragons need no table: each count must be 0, 2 or 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

from domain.tiles import N_KINDS, format_counts, name

__all__ = [
    "Decomposition",
    "Group",
    "decompositions",
    "format_decomposition",
    "is_ready",
    "is_seven_pairs",
    "is_standard_win",
    "is_win",
    "waits",
]

_SUIT_SIZE = 9


def _build_suit_table() -> frozenset[tuple[int, ...]]:
    """Every 9-count vector (each count ≤ 4) that is k sets (k ≤ 4), with or without one pair."""
    sets: list[tuple[int, ...]] = []
    for i in range(_SUIT_SIZE):
        tri = [0] * _SUIT_SIZE
        tri[i] = 3
        sets.append(tuple(tri))
    for i in range(_SUIT_SIZE - 2):
        seq = [0] * _SUIT_SIZE
        seq[i] = seq[i + 1] = seq[i + 2] = 1
        sets.append(tuple(seq))
    empty = (0,) * _SUIT_SIZE
    only_sets: set[tuple[int, ...]] = {empty}
    frontier = {empty}
    for _ in range(4):
        grown: set[tuple[int, ...]] = set()
        for v in frontier:
            for s in sets:
                w = tuple(a + b for a, b in zip(v, s, strict=True))
                if max(w) <= 4:
                    grown.add(w)
        only_sets |= grown
        frontier = grown
    with_pair: set[tuple[int, ...]] = set()
    for v in only_sets:
        if sum(v) > 12:
            continue
        for i in range(_SUIT_SIZE):
            if v[i] <= 2:
                p = list(v)
                p[i] += 2
                with_pair.add(tuple(p))
    return frozenset(only_sets | with_pair)


# A suit vector is in the table iff it splits into sets (sum ≡ 0 mod 3) or sets + one pair (≡ 2).
_SUIT_TABLE: frozenset[tuple[int, ...]] = _build_suit_table()
# Dragons: each count 0, 2 or 3, with at most one pair.
_DRAGON_TABLE: frozenset[tuple[int, ...]] = frozenset(
    (a, b, c) for a in (0, 2, 3) for b in (0, 2, 3) for c in (0, 2, 3) if (a == 2) + (b == 2) + (c == 2) <= 1
)
SUIT_TABLE = _SUIT_TABLE  # for domain.ready
DRAGON_TABLE = _DRAGON_TABLE


def is_standard_win(counts: Sequence[int]) -> bool:
    """Sets + one pair. ``counts``: the concealed part (3n+2 tiles)."""
    c = counts if type(counts) is tuple else tuple(counts)
    # Each part is in its table only with sum ≡ 0 (sets) or ≡ 2 (sets + pair) mod 3; with a total
    # ≡ 2 mod 3 exactly one part then holds the pair.
    return sum(c) % 3 == 2 and c[0:9] in _SUIT_TABLE and c[9:18] in _SUIT_TABLE and c[18:21] in _DRAGON_TABLE


def is_seven_pairs(counts: Sequence[int]) -> bool:
    """七对: 14 concealed tiles, every count even (counts are ≤ 4, so: no 1 and no 3)."""
    return sum(counts) == 14 and 1 not in counts and 3 not in counts


def is_win(counts: Sequence[int]) -> bool:
    """Whether the concealed part (3n+2 tiles, n = 4 − melds) is a winning shape (RULES.md §4)."""
    c = counts if type(counts) is tuple else tuple(counts)
    # Dragons first: their 3-tuple is the cheapest look-up and rejects most random hands. Each part
    # is in its table only with a sum ≡ 0 (sets) or ≡ 2 (sets + pair) mod 3; with a total ≡ 2
    # exactly one part holds the pair.
    if c[18:21] in _DRAGON_TABLE and c[0:9] in _SUIT_TABLE and c[9:18] in _SUIT_TABLE:
        return sum(c) % 3 == 2
    return 1 not in c and 3 not in c and sum(c) == 14


def waits(counts: Sequence[int]) -> tuple[int, ...]:
    """The kinds that complete a 3n+1 concealed hand (听牌), ascending.

    Only kinds with fewer than four copies in the hand are waits (the fifth copy does not exist).
    A wait always lies within two of a held tile of its suit (or is a held dragon), so only those
    kinds are tried.
    """
    c = list(counts)
    if sum(c) % 3 != 1:
        return ()
    out: list[int] = []
    for k in range(N_KINDS):
        if c[k] >= 4:
            continue
        if k >= 18:
            if c[k] == 0:
                continue
        else:
            lo = k - k % 9
            if not any(c[j] for j in range(max(lo, k - 2), min(lo + 9, k + 3))):
                continue
        c[k] += 1
        if is_win(c):
            out.append(k)
        c[k] -= 1
    return tuple(out)


def is_ready(counts: Sequence[int]) -> bool:
    """听牌: some tile completes the 3n+1 concealed hand."""
    return bool(waits(counts))


# ---------------------------------------------------------------------------------------------
# Decompositions (used by scoring)


class Group(NamedTuple):
    """A set of the standard shape: ``seq`` (tiles ``tile, tile+1, tile+2``) or ``tri``."""

    kind: Literal["seq", "tri"]
    tile: int

    def kinds(self) -> tuple[int, int, int]:
        t = self.tile
        return (t, t + 1, t + 2) if self.kind == "seq" else (t, t, t)

    def notation(self) -> str:
        return _GROUP_NOTATION.get(self) or _group_notation(self)


def _group_notation(g: Group) -> str:
    counts = [0] * N_KINDS
    for k in g.kinds():
        counts[k] += 1
    return format_counts(counts)


# Every possible set, written once (notation is display work on the scoring path).
_GROUP_NOTATION: dict[Group, str] = {
    g: _group_notation(g)
    for g in [Group("tri", k) for k in range(N_KINDS)]
    + [Group("seq", b + i) for b in (0, 9) for i in range(_SUIT_SIZE - 2)]
}


class Decomposition(NamedTuple):
    """One way to read a standard concealed part: the pair (eyes, 将) and the sets, sorted by their
    lowest tile (then ``seq`` before ``tri``)."""

    pair: int
    sets: tuple[Group, ...]


_SuitSplit = tuple[int, tuple[tuple[Literal["seq", "tri"], int], ...]]  # (pair offset or -1, sets)


@lru_cache(maxsize=8192)
def _suit_splits(v: tuple[int, ...], sequences: bool) -> tuple[_SuitSplit, ...]:
    """All distinct splits of one suit's counts into sets and at most one pair.

    Canonical: at the lowest non-empty index ``i`` decide at once whether a triplet and/or the pair
    sit at ``i``; every remaining ``i`` must start a sequence. Distinct choices give distinct
    multisets, so each split is produced exactly once.
    """
    out: list[_SuitSplit] = []

    def walk(c: list[int], i: int, pair: int, acc: list[tuple[Literal["seq", "tri"], int]]) -> None:
        while i < len(c) and c[i] == 0:
            i += 1
        if i == len(c):
            out.append((pair, tuple(acc)))
            return
        n = c[i]
        for tri in (0, 1):
            for pr in (0, 1):
                if pr and pair >= 0:
                    continue
                seqs = n - 3 * tri - 2 * pr
                if seqs < 0:
                    continue
                if seqs and (not sequences or i + 2 >= len(c) or c[i + 1] < seqs or c[i + 2] < seqs):
                    continue
                c[i] = 0
                if seqs:
                    c[i + 1] -= seqs
                    c[i + 2] -= seqs
                added: list[tuple[Literal["seq", "tri"], int]] = [("tri", i)] * tri
                added += [("seq", i)] * seqs
                walk(c, i + 1, i if pr else pair, acc + added)
                c[i] = n
                if seqs:
                    c[i + 1] += seqs
                    c[i + 2] += seqs

    walk(list(v), 0, -1, [])
    return tuple(out)


def decompositions(counts: Sequence[int]) -> list[Decomposition]:
    """Every distinct standard reading (pair + sets) of a 3n+2 concealed part; [] if none.

    Seven pairs is not included here (see :func:`is_seven_pairs`). Order is deterministic: by
    pair, then by the sets (each sorted by lowest tile).
    """
    c = tuple(counts)
    p, s, d = c[0:9], c[9:18], c[18:21]
    if sum(c) % 3 != 2 or p not in _SUIT_TABLE or s not in _SUIT_TABLE or d not in _DRAGON_TABLE:
        return []  # not is_standard_win(c)
    parts = (_part_splits(p, 0), _part_splits(s, 9), _part_splits(d, 18))
    if len(parts[0]) == len(parts[1]) == len(parts[2]) == 1:
        # one split per part (the usual case): exactly one of them holds the pair (sum ≡ 2), the
        # others have -1
        (p0, s0), (p1, s1), (p2, s2) = parts[0][0], parts[1][0], parts[2][0]
        return [Decomposition(max(p0, p1, p2), s0 + s1 + s2)]
    combos: list[tuple[int, tuple[Group, ...]]] = [(-1, ())]
    for splits in parts:
        nxt: list[tuple[int, tuple[Group, ...]]] = []
        for pair, groups in combos:
            for sp_pair, sp_sets in splits:
                if sp_pair >= 0 and pair >= 0:
                    continue
                nxt.append((sp_pair if sp_pair >= 0 else pair, groups + sp_sets))
        combos = nxt
    # each part's sets are sorted already and the parts' kinds do not overlap: the sets are sorted
    out = [Decomposition(pair, groups) for pair, groups in combos if pair >= 0]
    if len(out) > 1:
        out.sort(key=lambda d: (d.pair, [_by_tile(g) for g in d.sets]))
    return out


@lru_cache(maxsize=8192)
def _part_splits(v: tuple[int, ...], base: int) -> tuple[tuple[int, tuple[Group, ...]], ...]:
    """:func:`_suit_splits` of one part (筒 at 0, 条 at 9, dragons at 18) with absolute kinds:
    (pair kind or -1, sets sorted by their lowest tile, then ``seq`` before ``tri``)."""
    return tuple(
        (
            base + pair if pair >= 0 else -1,
            tuple(sorted((Group(kind, base + off) for kind, off in sets), key=_by_tile)),
        )
        for pair, sets in _suit_splits(v, base < 18)
    )


def _by_tile(g: Group) -> tuple[int, str]:
    return (g.tile, g.kind)


@lru_cache(maxsize=8192)
def format_decomposition(d: Decomposition) -> str:
    """Compact notation, sets first then the pair: ``"456p 123s 789s CCC 55p"``."""
    return " ".join([g.notation() for g in d.sets] + [name(d.pair) * 2 if d.pair >= 18 else _pair(d.pair)])


def _pair(k: int) -> str:
    n = name(k)
    return n[0] * 2 + n[1]
