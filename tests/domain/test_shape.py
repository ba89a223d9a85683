"""Winning shapes (RULES.md §4): the table-driven checker against a slow brute force."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.shape import (
    Decomposition,
    Group,
    decompositions,
    format_decomposition,
    is_ready,
    is_seven_pairs,
    is_standard_win,
    is_win,
    waits,
)
from domain.tiles import N_KINDS, TOTAL_TILES, name, parse_counts

# -- the slow reference -------------------------------------------------------------------------


def _brute_sets(c: list[int]) -> list[list[tuple[str, int]]]:
    """Every way (as sorted group lists, possibly repeated) to split c into sets only."""
    i = next((k for k in range(N_KINDS) if c[k]), None)
    if i is None:
        return [[]]
    out: list[list[tuple[str, int]]] = []
    if c[i] >= 3:
        c[i] -= 3
        out += [[("tri", i), *rest] for rest in _brute_sets(c)]
        c[i] += 3
    if i < 18 and i % 9 <= 6 and c[i + 1] and c[i + 2]:
        for k in (i, i + 1, i + 2):
            c[k] -= 1
        out += [[("seq", i), *rest] for rest in _brute_sets(c)]
        for k in (i, i + 1, i + 2):
            c[k] += 1
    return out


def brute_decompositions(counts: Sequence[int]) -> set[tuple[int, tuple[tuple[str, int], ...]]]:
    c = list(counts)
    if sum(c) % 3 != 2:
        return set()
    found = set()
    for p in range(N_KINDS):
        if c[p] >= 2:
            c[p] -= 2
            for groups in _brute_sets(c):
                found.add((p, tuple(sorted(groups))))
            c[p] += 2
    return found


def brute_is_win(counts: Sequence[int]) -> bool:
    c = list(counts)
    if sum(c) == 14 and all(n % 2 == 0 for n in c):
        return True
    return bool(brute_decompositions(c))


def brute_waits(counts: Sequence[int]) -> tuple[int, ...]:
    out = []
    for k in range(N_KINDS):
        if counts[k] < 4:
            c = list(counts)
            c[k] += 1
            if brute_is_win(c):
                out.append(k)
    return tuple(out)


# -- strategies ---------------------------------------------------------------------------------


def _from_tiles(tiles: list[int]) -> tuple[int, ...]:
    counts = [0] * N_KINDS
    for t in tiles:
        counts[t // 4] += 1
    return tuple(counts)


def random_hand(size: int) -> st.SearchStrategy[tuple[int, ...]]:
    """``size`` tiles drawn from the 84-tile set."""
    return st.lists(st.integers(0, TOTAL_TILES - 1), min_size=size, max_size=size, unique=True).map(
        _from_tiles
    )


_groups = st.one_of(
    st.tuples(st.just("tri"), st.integers(0, N_KINDS - 1)),
    st.tuples(st.just("seq"), st.sampled_from([s * 9 + i for s in (0, 1) for i in range(7)])),
)


@st.composite
def near_win(draw: st.DrawFn) -> tuple[int, ...]:
    """A winning-looking 3n+2 hand, sometimes with one tile swapped: many wins and many near misses."""
    n_sets = draw(st.integers(0, 4))
    counts = [0] * N_KINDS
    for kind, t in draw(st.lists(_groups, min_size=n_sets, max_size=n_sets)):
        for k in (t, t, t) if kind == "tri" else (t, t + 1, t + 2):
            counts[k] += 1
    counts[draw(st.integers(0, N_KINDS - 1))] += 2
    if draw(st.booleans()):
        out = draw(st.sampled_from([k for k in range(N_KINDS) if counts[k]]))
        counts[out] -= 1
        counts[draw(st.integers(0, N_KINDS - 1))] += 1
    if max(counts) > 4:
        counts = [min(n, 4) for n in counts]
    return tuple(counts)


def _valid_3n2(c: Sequence[int]) -> bool:
    return max(c) <= 4 and sum(c) % 3 == 2


# -- properties ---------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(random_hand(14))
def test_is_win_agrees_with_brute_force_on_random_14_tile_hands(counts: tuple[int, ...]) -> None:
    assert is_win(counts) == brute_is_win(counts)


@settings(max_examples=600, deadline=None)
@given(near_win())
def test_is_win_agrees_with_brute_force_near_wins(counts: tuple[int, ...]) -> None:
    if not _valid_3n2(counts):
        return
    assert is_win(counts) == brute_is_win(counts)
    assert is_win(list(counts)) == is_win(counts)


@settings(max_examples=400, deadline=None)
@given(near_win())
def test_decompositions_are_exactly_the_brute_force_ones(counts: tuple[int, ...]) -> None:
    if not _valid_3n2(counts):
        return
    ours = decompositions(counts)
    as_set = {(d.pair, tuple(sorted((g.kind, g.tile) for g in d.sets))) for d in ours}
    assert len(as_set) == len(ours)  # distinct
    assert as_set == brute_decompositions(counts)
    assert is_standard_win(counts) == bool(ours)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4).flatmap(lambda melds: random_hand(13 - 3 * melds)))
def test_waits_agree_with_brute_force(counts: tuple[int, ...]) -> None:
    assert waits(counts) == brute_waits(counts)
    assert is_ready(counts) == bool(brute_waits(counts))


@settings(max_examples=300, deadline=None)
@given(near_win())
def test_waits_of_a_win_minus_one_tile_include_that_tile(counts: tuple[int, ...]) -> None:
    if not _valid_3n2(counts) or not is_win(counts):
        return
    for k in range(N_KINDS):
        if counts[k]:
            c = list(counts)
            c[k] -= 1
            assert k in waits(c)
            assert waits(c) == brute_waits(c)


# -- examples -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "win"),
    [
        ("123p 456p 789s 234s 99s", True),  # four sequences + pair
        ("111p 222s CCC FFF PP", True),  # all triplets, dragon pair
        ("4556p 123s 789s CCC 5p", True),  # seed 4556 + 5
        ("11p 99p 22s 77s CC FF 33s", True),  # seven pairs
        ("1111p 5555s 77s 99s CC", True),  # seven pairs, two fours count as four pairs
        ("1111p 33p 55p 77p 99p 1s", False),  # an odd tile out: not seven pairs
        ("CFP 123p 456p 789p 11s", False),  # dragons never form a sequence
        ("123p 456p 789s 23s 99s 7s", False),  # the not-a-win vector
        ("11p", True),  # with four melds: the single pair
        ("11p 22p", False),  # 3n+1: never a win
        ("89p 1s 123p 456p 789p 99s", False),  # no wrap-around or cross-suit sequence
    ],
)
def test_is_win_examples(hand: str, win: bool) -> None:
    assert is_win(parse_counts(hand)) is win


def test_seven_pairs_needs_exactly_fourteen_tiles() -> None:
    # given two melds declared, the 8 concealed tiles 11p 22p 33p 44p are pairs but not seven pairs
    assert not is_seven_pairs(parse_counts("11p 22p 33p 44p"))
    assert is_seven_pairs(parse_counts("1111p 22p 33p 44p 55p 66p"))


def test_decompositions_of_the_seed_hand_1122334456677p_plus_5p() -> None:
    # RULES.md §5 seed: three standard readings besides seven pairs.
    ds = [format_decomposition(d) for d in decompositions(parse_counts("1122334455 6677p"))]
    assert ds == ["234p 234p 567p 567p 11p", "123p 123p 567p 567p 44p", "123p 123p 456p 456p 77p"]


def test_decomposition_structure() -> None:
    (d,) = decompositions(parse_counts("22 4 5555 6s 123p 789p"))
    assert d == Decomposition(
        pair=10, sets=(Group("seq", 0), Group("seq", 6), Group("seq", 12), Group("tri", 13))
    )
    assert format_decomposition(d) == "123p 789p 456s 555s 22s"


def test_decompositions_empty_for_a_non_win_and_seven_pairs_only() -> None:
    assert decompositions(parse_counts("123p 456p 789s 23s 99s 7s")) == []
    assert decompositions(parse_counts("11p 99p 22s 77s CC FF 33s")) == []


@pytest.mark.parametrize(
    ("hand", "expected"),
    [
        ("1112345678999p", "1p 2p 3p 4p 5p 6p 7p 8p 9p"),  # 九莲: every 筒
        ("11p 99p 22s 77s CC FF 3s", "3s"),  # seven pairs, single wait
        ("4688p 234s 567s PPP", "5p"),  # seed 4688 waits 5
        ("333p 45p 678s 123s 22s", "3p 6p 2s"),  # the 暗四归一 vector (2s: 222s + 33p 345p)
        ("9p", "9p"),  # 手抓一: single tile
        ("1111p 234s 567s CCC", ""),  # 1111p + one tile is never a set + pair
        ("CFP 11p 22p 33p 44s", ""),  # three lone dragons: two too many singles
    ],
)
def test_waits_examples(hand: str, expected: str) -> None:
    got = " ".join(name(k) for k in waits(parse_counts(hand)))
    assert got == " ".join(name(k) for k in brute_waits(parse_counts(hand)))
    assert got == expected
