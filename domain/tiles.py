"""Tiles, the compact notation, and melds.

The 84-tile set of 卡五星 has 21 kinds, four of each: 1–9 筒 (``1p``…``9p``), 1–9 条 (``1s``…``9s``)
and the three dragons 红中 ``C``, 发财 ``F``, 白板 ``P`` (RULES.md §1). Inside the engine a tile kind
is an ``int``:

* ``0``…``8``   = ``1p``…``9p``
* ``9``…``17``  = ``1s``…``9s``
* ``18, 19, 20`` = ``C``, ``F``, ``P``

A hand is usually handled as a *count vector*: a list or tuple of 21 ints, ``counts[k]`` copies of
kind ``k``. On the wire and in every message a tile is its string (``"5p"``, ``"C"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec

N_KINDS = 21
COPIES = 4
TOTAL_TILES = N_KINDS * COPIES  # 84

PIN, SOU, DRAGON = 0, 1, 2  # suit index of a kind: 筒, 条, dragons
C, F, P = 18, 19, 20

TILE_NAMES: tuple[str, ...] = tuple(
    [f"{n}p" for n in range(1, 10)] + [f"{n}s" for n in range(1, 10)] + ["C", "F", "P"]
)
TILE_INDEX: dict[str, int] = {name: i for i, name in enumerate(TILE_NAMES)}

# The wire type of one tile: msgspec rejects anything else and names the field.
TileStr = Literal[
    "1p", "2p", "3p", "4p", "5p", "6p", "7p", "8p", "9p",
    "1s", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s",
    "C", "F", "P",
]  # fmt: skip

Counts = list[int]


class TileError(ValueError):
    """A tile or hand string that is not valid notation."""


def tile(name: str) -> int:
    """The kind of one tile string: ``tile("5p") == 4``."""
    try:
        return TILE_INDEX[name]
    except KeyError:
        raise TileError(f"unknown tile {name!r}: expected 1p…9p, 1s…9s, C, F or P") from None


def name(kind: int) -> str:
    return TILE_NAMES[kind]


def suit(kind: int) -> int:
    return kind // 9 if kind < 18 else DRAGON


def number(kind: int) -> int:
    """1–9 for suited tiles, 0 for dragons."""
    return kind % 9 + 1 if kind < 18 else 0


def is_dragon(kind: int) -> bool:
    return kind >= 18


def parse(text: str) -> list[int]:
    """Parse compact notation into a list of kinds, in the order written.

    ``parse("4556p 88s CCC") == [3, 4, 4, 5, 16, 16, 18, 18, 18]``. Digits are held until their
    suit letter (``p`` or ``s``); ``C``/``F``/``P`` stand alone and repeat. Whitespace is ignored.
    """
    out: list[int] = []
    pending: list[str] = []
    for pos, ch in enumerate(text):
        if ch.isspace():
            continue
        if ch in "123456789":
            pending.append(ch)
        elif ch in "ps":
            if not pending:
                raise TileError(f"suit letter {ch!r} at position {pos} has no digits before it in {text!r}")
            out.extend(TILE_INDEX[d + ch] for d in pending)
            pending = []
        elif ch in "CFP":
            if pending:
                raise TileError(
                    f"digits {''.join(pending)!r} before {ch!r} at position {pos} have no suit in {text!r}"
                )
            out.append(TILE_INDEX[ch])
        else:
            raise TileError(
                f"unexpected character {ch!r} at position {pos} in {text!r}: "
                "use digits 1-9 with p or s, and C, F, P for the dragons"
            )
    if pending:
        raise TileError(f"digits {''.join(pending)!r} at the end of {text!r} have no suit letter")
    return out


def to_counts(kinds: Iterable[int]) -> Counts:
    counts = [0] * N_KINDS
    for k in kinds:
        counts[k] += 1
    return counts


def parse_counts(text: str) -> Counts:
    return to_counts(parse(text))


def format_kinds(kinds: Iterable[int]) -> str:
    """Compact notation, sorted: ``format_kinds([18, 3, 4]) == "45p C"``."""
    return format_counts(to_counts(kinds))


def format_counts(counts: Sequence[int]) -> str:
    groups: list[str] = []
    for s, letter in ((0, "p"), (9, "s")):
        digits = "".join(str(k - s + 1) * counts[k] for k in range(s, s + 9))
        if digits:
            groups.append(digits + letter)
    dragons = "".join(TILE_NAMES[k] * counts[k] for k in (C, F, P))
    if dragons:
        groups.append(dragons)
    return " ".join(groups)


def expand(counts: Sequence[int]) -> list[int]:
    return [k for k in range(N_KINDS) for _ in range(counts[k])]


MeldKind = Literal["peng", "kong_concealed", "kong_added", "kong_exposed"]
KONG_KINDS: frozenset[str] = frozenset({"kong_concealed", "kong_added", "kong_exposed"})


class Meld(msgspec.Struct, frozen=True, kw_only=True):
    """A declared set: 碰 (``peng``), 暗杠 (``kong_concealed``), 补杠 (``kong_added``, an upgraded
    peng) or 直杠 (``kong_exposed``). ``source`` is the seat whose discard was claimed (None for a
    concealed kong), ``event`` the version of the event that made it (0 when scored outside a table).
    """

    kind: MeldKind
    tile: int
    source: int | None = None
    event: int = 0

    @property
    def is_kong(self) -> bool:
        return self.kind in KONG_KINDS

    @property
    def size(self) -> int:
        return 4 if self.kind in KONG_KINDS else 3
