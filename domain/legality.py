"""``check(state, event)``: is ``event`` legal as the next event of the table? (CONTRACT.md §1,
RULES.md §2–§9). Pure; returns the first :class:`~domain.state.Ruling` that applies, or None.

Structure checks (order, turn, tiles held, tile counts, the wall) come before rule checks. The
claims (碰 / 杠 / 胡) live in domain/claims.py, 亮倒 in domain/liang_dao.py, 漏胡 in
domain/lou_hu.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.claims import check_kong, check_peng
from domain.events import (
    Event,
    HandAborted,
    HandExhausted,
    Hu,
    Kong,
    LiangDao,
    Peng,
    TableOpened,
    TileDiscarded,
    TileDrawn,
)
from domain.hu import check_hu
from domain.liang_dao import check_declaration, feeding
from domain.rules import Rules
from domain.rulings import make, t, who
from domain.state import HandState, Ruling, TableState
from domain.table_checks import TABLE, check_opened, check_wall_tile
from domain.tiles import TILE_INDEX, TILE_NAMES
from domain.walls import (
    WALL_SIZE,
    remaining,
)


def check(state: TableState, ev: Event) -> Ruling | None:
    v = state.version + 1
    hs = state.hand
    if hs is not None and hs.phase != "over" and not state.closed:
        # a hand in progress (so the table is open): the usual case first
        hand_fn = _HAND.get(type(ev))
        if hand_fn is not None:
            rules = state.rules
            assert rules is not None
            return hand_fn(state, hs, rules, ev, v)
    if state.closed:
        return make(
            v, "closed",
            f"the table is closed (table_closed): no {ev.__struct_config__.tag} may follow",
            "牌桌已关闭，不能再记录任何事件",
            type=ev.__struct_config__.tag,
        )  # fmt: skip
    if not state.opened:
        if type(ev) is not TableOpened:
            return make(
                v, "sequence",
                f"table_opened must be the first event, not {ev.__struct_config__.tag}",
                "第一个事件必须是table_opened（开桌）",
                type=ev.__struct_config__.tag,
            )  # fmt: skip
        return check_opened(ev, v)
    fn = TABLE.get(type(ev))
    if fn is not None:
        return fn(state, ev, v)
    hs = state.hand
    rules = state.rules
    assert rules is not None
    if hs is None or hs.phase == "over":
        return make(
            v, "sequence",
            f"{ev.__struct_config__.tag} needs a hand in progress; "
            + ("no hand has started yet" if hs is None else f"hand {hs.hand} is over"),
            "现在没有进行中的一局，不能记录该动作",
            type=ev.__struct_config__.tag,
        )  # fmt: skip
    hand_fn = _HAND[type(ev)]
    return hand_fn(state, hs, rules, ev, v)


# --- events of a hand in progress ---------------------------------------------------------------


def check_draw(state: TableState, hs: HandState, rules: Rules, ev: TileDrawn, v: int) -> Ruling | None:
    return draw_ruling(state, hs, rules, ev.seat, TILE_INDEX[ev.tile], v)


def draw_ruling(
    state: TableState, hs: HandState, rules: Rules, seat: int, tile: int, v: int
) -> Ruling | None:
    """:func:`check` of ``seat`` drawing ``tile`` in a hand in progress (``hs``), as the event of
    version ``v``."""
    if hs.phase == "claim":
        nxt = (hs.turn + 1) % 3
        if seat != nxt:
            return make(
                v, "not_your_turn",
                f"{who(state, seat)} draws, but after seat {hs.turn}'s discard it is seat {nxt}'s draw",
                f"{who(state, seat)} 摸牌，但{hs.turn}号位打牌后应由{nxt}号位摸牌",
                seat=seat, expected=nxt,
            )  # fmt: skip
        back = False
    elif hs.phase in ("replacement", "rob"):
        if seat != hs.turn:
            return make(
                v, "not_your_turn",
                f"{who(state, seat)} draws, but seat {hs.turn} owes the replacement draw after their kong",
                f"{who(state, seat)} 摸牌，但应由开杠的{hs.turn}号位补牌",
                seat=seat, expected=hs.turn,
            )  # fmt: skip
        back = True
    else:
        code = "sequence" if seat == hs.turn else "not_your_turn"
        return make(
            v, code,
            f"{who(state, seat)} draws, but seat {hs.turn} holds {14 - 3 * len(hs.melds[hs.turn])} tiles "
            "and must discard (or kong, or win) first",
            f"{who(state, seat)} 摸牌，但{hs.turn}号位应先打牌",
            seat=seat, turn=hs.turn,
        )  # fmt: skip
    if WALL_SIZE - hs.front - hs.back <= 0:  # remaining(hs)
        return make(
            v, "sequence",
            f"{who(state, seat)} draws, but the wall is empty: the hand ends with a hu on the last "
            "discard or hand_exhausted (荒庄)",
            f"{who(state, seat)} 摸牌，但牌墙已空：应胡最后一张牌或荒庄",
            seat=seat,
        )  # fmt: skip
    wall = hs.wall
    if wall is None:
        if hs.seen[tile] < 4:
            return None  # the usual case of check_wall_tile
    elif wall[WALL_SIZE - 1 - hs.back if back else hs.front] == tile:
        return None  # the known wall's next tile at that end (check_wall_tile's usual case)
    return check_wall_tile(state, hs, tile, back=back, v=v, seat=seat)


def _discard_structure(state: TableState, hs: HandState, seat: int, tile: int, v: int) -> Ruling | None:
    if hs.phase != "discard" or seat != hs.turn:
        if hs.phase == "discard":
            return make(
                v, "not_your_turn",
                f"{who(state, seat)} discards {t(tile)}, but it is seat {hs.turn}'s turn to discard",
                f"{who(state, seat)} 打{t(tile)}，但现在轮到{hs.turn}号位打牌",
                seat=seat, tile=t(tile), turn=hs.turn,
            )  # fmt: skip
        waiting = (hs.turn + 1) % 3 if hs.phase == "claim" else hs.turn
        return make(
            v, "not_your_turn" if seat != waiting else "sequence",
            f"{who(state, seat)} discards {t(tile)}, but seat {waiting} must draw first (phase: {hs.phase})",
            f"{who(state, seat)} 打{t(tile)}，但应先由{waiting}号位摸牌",
            seat=seat, tile=t(tile), phase=hs.phase,
        )  # fmt: skip
    if hs.concealed[seat][tile] < 1:
        return make(
            v, "tile_not_held",
            f"{who(state, seat)} discards {t(tile)}, which they do not hold",
            f"{who(state, seat)} 打{t(tile)}，但手上没有这张牌",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    return None


def _discard_rules(
    state: TableState, hs: HandState, rules: Rules, seat: int, tile: int, v: int
) -> Ruling | None:
    if hs.liang_dao[seat] is not None and hs.drawn is not None and tile != hs.drawn:
        return make(
            v, "liang_dao_locked",
            f"{who(state, seat)} declared 亮倒 and must discard the tile just drawn ({t(hs.drawn)}), "
            f"not {t(tile)}: after 亮倒 the hand cannot change",
            f"{who(state, seat)} 已亮倒，必须打出刚摸到的{t(hs.drawn)}，不能打{t(tile)}",
            seat=seat, tile=t(tile), drawn=t(hs.drawn),
        )  # fmt: skip
    if not rules.liang_dao_forbid_feeding:
        return None
    return feeding(hs, rules, seat, tile, v, who(state, seat))


def check_discard(state: TableState, hs: HandState, rules: Rules, ev: TileDiscarded, v: int) -> Ruling | None:
    return discard_ruling(state, hs, rules, ev.seat, TILE_INDEX[ev.tile], v)


def discard_ruling(
    state: TableState, hs: HandState, rules: Rules, seat: int, tile: int, v: int
) -> Ruling | None:
    """:func:`check` of ``seat`` discarding ``tile`` in a hand in progress (``hs``), as the event of
    version ``v``."""
    if hs.phase != "discard" or seat != hs.turn or hs.concealed[seat][tile] < 1:
        return _discard_structure(state, hs, seat, tile, v)  # the ruling (its usual case inline here)
    if hs.liang_dao[seat] is None and not rules.liang_dao_forbid_feeding:
        return None  # the usual discard: neither a 亮倒 lock nor a feeding rule applies
    return _discard_rules(state, hs, rules, seat, tile, v)


def _check_liang_dao(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, LiangDao)
    seat, tile = ev.seat, TILE_INDEX[ev.discard]
    r = _discard_structure(state, hs, seat, tile, v)
    if r is not None:
        return r
    if hs.liang_dao[seat] is not None:
        return make(
            v, "sequence",
            f"{who(state, seat)} already declared 亮倒 at event {hs.liang_dao[seat].event}",  # type: ignore[union-attr]
            f"{who(state, seat)} 已经亮倒过了",
            seat=seat,
        )  # fmt: skip
    hidden = [TILE_INDEX[x] for x in ev.hidden]
    name = who(state, seat)
    return feeding(hs, rules, seat, tile, v, name) or check_declaration(
        hs, rules, seat, tile, hidden, v, name
    )


def _check_exhausted(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    if remaining(hs) == 0 and hs.phase in ("claim", "replacement", "rob"):
        return None
    return make(
        v, "sequence",
        f"hand_exhausted (荒庄) only after the last discard of an empty wall; {remaining(hs)} tiles "
        f"are left (phase: {hs.phase})",
        f"只有牌墙摸完且最后一张牌无人胡时才能荒庄；牌墙还剩{remaining(hs)}张",
        wall=remaining(hs), phase=hs.phase,
    )  # fmt: skip


def _check_aborted(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    return None


def _check_peng(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, Peng)
    return check_peng(state, hs, rules, ev, v)


def _check_kong(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, Kong)
    return check_kong(state, hs, rules, ev, v)


def _check_hu(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, Hu)
    return check_hu(state, hs, rules, ev, v)


_HandCheck = Callable[[TableState, HandState, Rules, Any, int], "Ruling | None"]
_HAND: dict[type, _HandCheck] = {
    TileDrawn: check_draw,
    TileDiscarded: check_discard,
    LiangDao: _check_liang_dao,
    Peng: _check_peng,
    Kong: _check_kong,
    Hu: _check_hu,
    HandExhausted: _check_exhausted,
    HandAborted: _check_aborted,
}

__all__ = ["TILE_NAMES", "WALL_SIZE", "check", "discard_ruling", "draw_ruling"]
