"""Ruling codes and the one helper that builds a :class:`~domain.state.Ruling`.

``STRUCTURE`` codes break the shape of the record (order, turn, tiles, the wall) and are always
rejected; ``RULE`` codes break a rule of RULES.md and are rejected unless the table records
violations. docs/rulings.md describes each code with an example message.
"""

from __future__ import annotations

import re
from typing import Any

from domain.state import Ruling, TableState
from domain.tiles import TILE_NAMES

STRUCTURE: frozenset[str] = frozenset(
    {
        "sequence",
        "not_your_turn",
        "tile_not_held",
        "tile_count",
        "wall_mismatch",
        "closed",
        "bad_rules",  # added: table_opened with a rules dict that does not resolve
        "duplicate_player",  # added: table_opened naming one player in two seats
        "wrong_win_tile",  # added: a hu names another tile than the one it is on
    }
)

RULE: frozenset[str] = frozenset(
    {
        "not_a_winning_hand",
        "below_min_multiplier",
        "lou_hu",
        "claim_on_last_discard",
        "kong_without_wall",
        "added_kong_not_immediate",
        "peng_with_concealed_triplet",
        "liang_dao_not_ready",
        "liang_dao_locked",
        "liang_dao_kong_changes_waits",
        "liang_dao_min_wall",
        "feeding_declared_wait",
        "rob_kong_disabled",
        "multi_win_disabled",
        "liang_dao_hidden",  # added: tiles kept face down that are not concealed triplets
    }
)

ALL_CODES: frozenset[str] = STRUCTURE | RULE


def t(kind: int) -> str:
    """A tile kind as on the wire: ``t(4) == "5p"``."""
    return TILE_NAMES[kind]


def ts(kinds: tuple[int, ...] | list[int]) -> str:
    return " ".join(TILE_NAMES[k] for k in kinds) or "-"


_SEAT = re.compile(r"seat (\d) \(([^)]*)\)('s )?")


def who(state: TableState, seat: int) -> str:
    """A seat as messages name it: ``seat 1 (bob)``."""
    if state.players and 0 <= seat < len(state.players):
        return f"seat {seat} ({state.players[seat]})"
    return f"seat {seat}"


def make(event: int, code: str, message: str, message_zh: str, **detail: Any) -> Ruling:
    if code not in ALL_CODES:  # pragma: no cover - a typo in the engine itself
        raise ValueError(f"unknown ruling code {code!r}")
    # the Chinese text names seats the Chinese way: "seat 1 (bob)" → "1号位（bob）"
    zh = _SEAT.sub(lambda m: f"{m[1]}号位（{m[2]}）" + ("的" if m[3] else ""), message_zh)
    zh = zh.replace("replacement draw", "补牌").replace("draw", "摸牌").replace("the 买码 tile", "买码牌")
    return Ruling(
        code=code,
        message=message,
        message_zh=zh,
        event=event,
        kind="structure" if code in STRUCTURE else "rule",
        detail=detail,
    )
