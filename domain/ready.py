"""Fast waits (听牌) for the reducer's hot path: the same answer as ``domain.shape.waits``.

The three parts of a hand (筒, 条, dragons) are independent: a 3n+1 hand wins with tile ``w`` iff
the part that receives ``w`` becomes "sets, or sets + a pair" and every other part already is one
(the total ≡ 2 mod 3 then forces exactly one pair), or the hand becomes seven pairs. Which tiles
complete one suit's nine counts depends on those nine counts only, so it is cached per suit
vector; a discard then costs three dictionary look-ups instead of ~20 ``is_win`` calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from domain.shape import DRAGON_TABLE, SUIT_TABLE


def _suit_ok(v: tuple[int, ...]) -> bool:
    """The nine counts are sets (sum ≡ 0) or sets + one pair (sum ≡ 2): the shape table holds
    exactly those vectors."""
    return v in SUIT_TABLE


# (i, lo, hi): a wait i of a suit lies within two of a held tile, v[lo:hi]
_NEAR = tuple((i, max(0, i - 2), min(9, i + 3)) for i in range(9))


def _adds(v: tuple[int, ...], base: int) -> tuple[int, ...]:
    if sum(v) % 3 == 0:
        return ()  # one more tile gives a sum ≡ 1: neither sets nor sets + pair
    out = []
    u = list(v)
    for i, lo, hi in _NEAR:
        n = u[i]
        if n >= 4 or not any(v[lo:hi]):
            continue
        u[i] = n + 1
        if tuple(u) in SUIT_TABLE:
            out.append(base + i)
        u[i] = n
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _suit_adds(v: tuple[int, ...]) -> tuple[int, ...]:
    """Offsets i (0..8) with v + e_i sets (+ pair): only where v[i] < 4."""
    return _adds(v, 0)


@lru_cache(maxsize=1 << 16)
def _sou_adds(v: tuple[int, ...]) -> tuple[int, ...]:
    """The kinds 9 + i of :func:`_suit_adds` (the 条 suit)."""
    return _adds(v, 9)


def _dragons_ok(d: tuple[int, ...]) -> bool:
    return d in DRAGON_TABLE


def _dragon_adds(d: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for i in range(3):
        if 0 < d[i] < 4 and (*d[:i], d[i] + 1, *d[i + 1 :]) in DRAGON_TABLE:
            out.append(18 + i)
    return tuple(out)


# The dragon kinds (18..20) that make each possible dragon part (counts 0..4) sets (+ pair).
_DRAGON_ADDS: dict[tuple[int, ...], tuple[int, ...]] = {
    (a, b, c): _dragon_adds((a, b, c)) for a in range(5) for b in range(5) for c in range(5)
}


def waits(counts: Sequence[int]) -> tuple[int, ...]:
    """The kinds that complete a 3n+1 concealed hand, ascending (as ``domain.shape.waits``)."""
    c = counts if type(counts) is tuple else tuple(counts)
    total = sum(c)
    if total % 3 != 1:
        return ()
    p, s = c[0:9], c[9:18]
    p_ok, s_ok = p in SUIT_TABLE, s in SUIT_TABLE
    out: tuple[int, ...] = ()
    if p_ok or s_ok:  # otherwise no part can take the wait: two of the three must be sets (+ pair)
        d = c[18:21]
        d_ok = d in DRAGON_TABLE
        if s_ok and d_ok:
            out = _suit_adds(p)
        if p_ok and d_ok:
            out += _sou_adds(s)
        if p_ok and s_ok:
            out += _DRAGON_ADDS.get(d) or _dragon_adds(d)
    # 七对: six pairs (or fours) and one odd kind, so at most seven kinds held (the cheaper test first)
    if total == 13 and c.count(0) >= 14 and c.count(1) + c.count(3) == 1:
        k = c.index(1) if 1 in c else c.index(3)
        if k not in out:
            out = tuple(sorted((*out, k)))
    return out
