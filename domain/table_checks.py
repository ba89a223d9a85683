"""Checks of the table-level events (CONTRACT.md §1): table_opened, hand_started, ma_drawn,
wall_revealed, settlement_reported, table_closed; and of a tile taken from the wall."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from domain.events import (
    HandStarted,
    MaDrawn,
    SettlementReported,
    TableClosed,
    TableOpened,
    WallRevealed,
)
from domain.rules import RulesError, resolve
from domain.rulings import make, t, who
from domain.state import HandState, Ruling, TableState
from domain.table_events import dealt
from domain.tiles import TILE_INDEX
from domain.walls import (
    counts_of,
    draws_match,
    expected_back,
    expected_front,
    not_full_set,
    over_four,
    remaining,
)


def check_opened(ev: TableOpened, v: int) -> Ruling | None:
    seen: set[str] = set()
    for seat, player in enumerate(ev.players):
        if player in seen:
            return make(
                v, "duplicate_player",
                f"table_opened: player {player!r} sits in two seats (seat {ev.players.index(player)} "
                f"and seat {seat}); each seat needs its own player",
                f"开桌有误：玩家{player}同时坐在{ev.players.index(player)}号和{seat}号座位",
                field=f"players[{seat}]", player=player,
            )  # fmt: skip
        seen.add(player)
    try:
        resolve(ev.rules)
    except RulesError as exc:
        return make(
            v, "bad_rules", f"table_opened: {exc.message}", f"开桌规则有误：{exc.message}",
            field=exc.field,
        )  # fmt: skip
    return None


def _opened_again(state: TableState, ev: Any, v: int) -> Ruling | None:
    return make(
        v, "sequence", "table_opened may only be the first event", "table_opened只能是第一个事件",
    )  # fmt: skip


def _check_hand_started(state: TableState, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, HandStarted)
    hs = state.hand
    if hs is not None and hs.phase != "over":
        return make(
            v, "sequence",
            f"hand {ev.hand} cannot start: hand {hs.hand} is still in progress",
            f"第{hs.hand}局还没有结束，不能开始第{ev.hand}局",
            hand=ev.hand, current=hs.hand,
        )  # fmt: skip
    if ev.hand != state.hand_no + 1:
        return make(
            v, "sequence",
            f"hand numbers are consecutive: expected hand {state.hand_no + 1}, got {ev.hand}",
            f"局数必须连续：应为第{state.hand_no + 1}局，实际为第{ev.hand}局",
            hand=ev.hand, expected=state.hand_no + 1,
        )  # fmt: skip
    if state.next_dealer is not None and ev.dealer != state.next_dealer:
        return make(
            v, "sequence",
            f"hand {ev.hand} must be dealt by seat {state.next_dealer} (from the last hand's result), "
            f"not seat {ev.dealer}",
            f"第{ev.hand}局的庄家应为{state.next_dealer}号位，不是{ev.dealer}号位",
            dealer=ev.dealer, expected=state.next_dealer,
        )  # fmt: skip
    for seat, tiles in enumerate(ev.hands):
        need = 14 if seat == ev.dealer else 13
        if len(tiles) != need:
            return make(
                v, "sequence",
                f"seat {seat} is dealt {len(tiles)} tiles; the dealer gets 14, the others 13",
                f"{seat}号位发了{len(tiles)}张牌：庄家14张，其他13张",
                seat=seat, count=len(tiles), expected=need,
            )  # fmt: skip
    counts = dealt(ev)[1]  # walls.counts_of of the hands' kinds (counted once for check and evolve)
    bad = over_four(counts) if max(counts) > 4 else []
    if bad:
        return make(
            v, "tile_count",
            f"the hands hold {counts[bad[0]]} × {t(bad[0])}; there are only four of each tile",
            f"发牌中{t(bad[0])}有{counts[bad[0]]}张，每种牌只有四张",
            tile=t(bad[0]), count=counts[bad[0]],
        )  # fmt: skip
    if ev.wall is not None:
        total = list(counts)
        for x in ev.wall:
            total[TILE_INDEX[x]] += 1
        bad = not_full_set(total) if min(total) != 4 or max(total) != 4 else []
        if bad:
            return make(
                v, "tile_count",
                f"the hands and the wall hold {total[bad[0]]} × {t(bad[0])}: together they must be "
                "exactly the 84-tile set",
                f"手牌加牌墙中{t(bad[0])}有{total[bad[0]]}张，必须正好是84张牌",
                tile=t(bad[0]), count=total[bad[0]],
            )  # fmt: skip
        if ev.wall_sha256 is not None and (digest := _sha256_of_names(ev.wall)) != ev.wall_sha256.lower():
            return make(
                v, "wall_mismatch",
                "the wall does not match its wall_sha256 commitment",
                "牌墙与其SHA-256承诺不符",
                expected=ev.wall_sha256.lower(), actual=digest,
            )  # fmt: skip
    return None


def _check_settlement_reported(state: TableState, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, SettlementReported)
    if not any(s.hand == ev.hand for s in state.settlements):
        return make(
            v, "sequence",
            f"settlement_reported for hand {ev.hand}, which has not finished",
            f"第{ev.hand}局还没有结束，不能报告结算",
            hand=ev.hand,
        )  # fmt: skip
    return None


def _ok(state: TableState, ev: Any, v: int) -> Ruling | None:
    return None


def _check_ma(state: TableState, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, MaDrawn)
    hs, rules = state.hand, state.rules
    assert rules is not None
    if not rules.maima:
        return make(v, "sequence", "ma_drawn, but maima (买码) is off at this table", "本桌没有买码")
    rec = hs.record if hs is not None else None
    if (
        hs is None
        or rec is None
        or hs.phase != "over"
        or rec.end != "hu"
        or rec.wins[0].source is not None
        or rec.ma_tile is not None
    ):
        return make(
            v, "sequence",
            "ma_drawn comes once, right after a self-draw hu (买码 only after 自摸)",
            "买码只在自摸胡牌之后进行一次",
        )  # fmt: skip
    if remaining(hs) <= 0:
        return make(
            v, "sequence",
            "ma_drawn, but the wall is empty: there is no tile to turn",
            "牌墙已空，无码可买",
        )  # fmt: skip
    return check_wall_tile(state, hs, TILE_INDEX[ev.tile], back=True, v=v, seat=None)


def _check_wall_revealed(state: TableState, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, WallRevealed)
    hs = state.hand
    if hs is None or hs.wall_sha256 is None or hs.wall is not None:
        return make(
            v, "sequence",
            "wall_revealed only follows a hand_started that committed wall_sha256 without the wall",
            "只有开局时只给出牌墙SHA-256承诺的一局才能公布牌墙",
        )  # fmt: skip
    digest = _sha256_of_names(ev.wall)
    if digest != hs.wall_sha256.lower():
        return make(
            v, "wall_mismatch",
            f"the revealed wall of hand {hs.hand} does not match the wall_sha256 committed at its start "
            f"(event {hs.start_event})",
            f"第{hs.hand}局公布的牌墙与开局时的SHA-256承诺不符",
            hand=hs.hand, expected=hs.wall_sha256.lower(), actual=digest,
        )  # fmt: skip
    wall = [TILE_INDEX[x] for x in ev.wall]
    dealt = _dealt_counts(hs)
    total = [a + b for a, b in zip(dealt, counts_of([wall]), strict=True)]
    bad = not_full_set(total)
    if bad:
        return make(
            v, "tile_count",
            f"the hands and the revealed wall hold {total[bad[0]]} × {t(bad[0])}: together they must be "
            "exactly the 84-tile set",
            f"手牌加公布的牌墙中{t(bad[0])}有{total[bad[0]]}张，必须正好是84张牌",
            tile=t(bad[0]), count=total[bad[0]],
        )  # fmt: skip
    mismatch = draws_match(hs, wall)
    if mismatch is not None:
        return make(
            v, "wall_mismatch",
            f"hand {hs.hand}: {mismatch[0]}",
            f"第{hs.hand}局的摸牌与公布的牌墙不符：{mismatch[1]}",
            hand=hs.hand,
        )  # fmt: skip
    return None


def _sha256_of_names(wall: Sequence[str]) -> str:
    """``walls.sha256_of`` of the wall's kinds, from the wire names themselves (no round trip)."""
    return hashlib.sha256("".join(wall).encode("ascii")).hexdigest()


def _dealt_counts(hs: HandState) -> list[int]:
    """Tiles dealt at the hand's start = all tiles seen minus the draws."""
    seen = list(hs.seen)
    for k in hs.drawn_front:
        seen[k] -= 1
    for k in hs.drawn_back:
        seen[k] -= 1
    return seen


TableCheck = Callable[[TableState, Any, int], "Ruling | None"]
TABLE: dict[type, TableCheck] = {
    TableOpened: _opened_again,
    HandStarted: _check_hand_started,
    SettlementReported: _check_settlement_reported,
    TableClosed: _ok,
    MaDrawn: _check_ma,
    WallRevealed: _check_wall_revealed,
}


def check_wall_tile(
    state: TableState, hs: HandState, tile: int, *, back: bool, v: int, seat: int | None
) -> Ruling | None:
    """A tile taken from the wall (``seat``'s draw, or the 买码 tile when None): the known wall's
    next tile at that end, or — wall unknown — not a fifth copy."""
    if hs.wall is not None:
        want = expected_back(hs) if back else expected_front(hs)
        if want is not None and want != tile:
            what = _what(state, seat, back)
            end = "back" if back else "front"
            return make(
                v, "wall_mismatch",
                f"{what} is {t(tile)}, but the next tile at the {end} of the known wall is {t(want)}",
                f"{what}是{t(tile)}，但牌墙{'尾' if back else '头'}的下一张是{t(want)}",
                tile=t(tile), expected=t(want), end=end,
            )  # fmt: skip
        return None
    if hs.seen[tile] >= 4:
        what = _what(state, seat, back)
        return make(
            v, "tile_count",
            f"{what} is {t(tile)}, but all four {t(tile)} are already in play",
            f"{what}是{t(tile)}，但四张{t(tile)}都已出现",
            tile=t(tile),
        )  # fmt: skip
    return None


def _what(state: TableState, seat: int | None, back: bool) -> str:
    if seat is None:
        return "the 买码 tile"
    return f"{who(state, seat)}'s {'replacement ' if back else ''}draw"
