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

from domain.shape import is_standard_win

_ZERO9 = (0,) * 9


@lru_cache(maxsize=1 << 16)
def _suit_ok(v: tuple[int, ...]) -> bool:
    """The nine counts are sets (sum ≡ 0) or sets + one pair (sum ≡ 2)."""
    r = sum(v) % 3
    if r == 1:
        return False
    if r == 2:
        return is_standard_win(v + _ZERO9 + (0, 0, 0))
    return is_standard_win(v + _ZERO9 + (2, 0, 0))


@lru_cache(maxsize=1 << 16)
def _suit_adds(v: tuple[int, ...]) -> tuple[int, ...]:
    """Offsets i (0..8) with v + e_i sets (+ pair): only where v[i] < 4."""
    out = []
    for i in range(9):
        if v[i] >= 4:
            continue
        lo, hi = max(0, i - 2), min(9, i + 3)
        if not any(v[lo:hi]):
            continue
        u = (*v[:i], v[i] + 1, *v[i + 1 :])
        if _suit_ok(u):
            out.append(i)
    return tuple(out)


def _dragons_ok(d: tuple[int, ...]) -> bool:
    pairs = 0
    for n in d:
        if n == 2:
            pairs += 1
        elif n not in (0, 3):
            return False
    return pairs <= 1


def waits(counts: Sequence[int]) -> tuple[int, ...]:
    """The kinds that complete a 3n+1 concealed hand, ascending (as ``domain.shape.waits``)."""
    c = counts if type(counts) is tuple else tuple(counts)
    total = sum(c)
    if total % 3 != 1:
        return ()
    p, s, d = c[0:9], c[9:18], c[18:21]
    p_ok, s_ok, d_ok = _suit_ok(p), _suit_ok(s), _dragons_ok(d)
    out: list[int] = []
    if s_ok and d_ok:
        out.extend(_suit_adds(p))
    if p_ok and d_ok:
        out.extend(9 + i for i in _suit_adds(s))
    if p_ok and s_ok:
        for i in range(3):
            if 0 < d[i] < 4:
                dd = list(d)
                dd[i] += 1
                if _dragons_ok(tuple(dd)):
                    out.append(18 + i)
    if total == 13 and c.count(1) + c.count(3) == 1:  # 七对: six pairs (or fours) and one odd kind
        k = c.index(1) if 1 in c else c.index(3)
        if k not in out:
            out.append(k)
            out.sort()
    return tuple(out)
