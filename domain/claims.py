"""Checks of 碰 and 杠 (RULES.md §3, §8): the claim window, tiles held, the wall, 亮倒 locks."""

from __future__ import annotations

from domain.events import Kong, Peng
from domain.liang_dao import kong_keeps_waits
from domain.rules import Rules
from domain.rulings import make, t, who
from domain.state import HandState, Ruling, TableState
from domain.tiles import TILE_INDEX
from domain.walls import remaining


def _claim_window(
    state: TableState, hs: HandState, seat: int, tile: int, what: tuple[str, str], v: int
) -> Ruling | None:
    """Structure of a claim (碰 / 直杠) of the last discard; ``what`` names it (English, Chinese)."""
    if hs.phase != "claim" or hs.last_tile is None:
        return make(
            v, "sequence",
            f"{who(state, seat)} claims {t(tile)} by {what[0]}, but there is no discard to claim now "
            f"(phase: {hs.phase})",
            f"{who(state, seat)} {what[1]}{t(tile)}，但现在没有可以碰/杠的打出的牌",
            seat=seat, tile=t(tile), phase=hs.phase,
        )  # fmt: skip
    if seat == hs.turn:
        return make(
            v, "not_your_turn",
            f"{who(state, seat)} cannot claim their own discard {t(tile)}",
            f"{who(state, seat)} 不能碰/杠自己打出的牌{t(tile)}",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if tile != hs.last_tile:
        return make(
            v, "sequence",
            f"{who(state, seat)} claims {t(tile)} by {what[0]}, but the last discard is {t(hs.last_tile)}",
            f"{who(state, seat)} {what[1]}{t(tile)}，但最后打出的牌是{t(hs.last_tile)}",
            seat=seat, tile=t(tile), last_discard=t(hs.last_tile),
        )  # fmt: skip
    return None


def check_peng(state: TableState, hs: HandState, rules: Rules, ev: Peng, v: int) -> Ruling | None:
    seat, tile = ev.seat, TILE_INDEX[ev.tile]
    r = _claim_window(state, hs, seat, tile, ("碰 (peng)", "碰"), v)
    if r is not None:
        return r
    held = hs.concealed[seat][tile]
    if held < 2:
        return make(
            v, "tile_not_held",
            f"{who(state, seat)} cannot 碰 {t(tile)}: they hold {held} {t(tile)}, a 碰 needs two",
            f"{who(state, seat)} 不能碰{t(tile)}：手上只有{held}张",
            seat=seat, tile=t(tile), held=held,
        )  # fmt: skip
    if remaining(hs) == 0:
        return make(
            v, "claim_on_last_discard",
            f"{who(state, seat)} may not 碰 {t(tile)}: it is the last discard of the hand, which can be "
            "won on but not claimed (最后打出去的一张牌，不可以吃碰杠)",
            f"{who(state, seat)} 不能碰{t(tile)}：这是最后一张打出的牌，只能胡不能碰杠",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if hs.liang_dao[seat] is not None:
        return make(
            v, "liang_dao_locked",
            f"{who(state, seat)} declared 亮倒 and may not 碰 {t(tile)}: after 亮倒 the hand cannot change",
            f"{who(state, seat)} 已亮倒，不能碰{t(tile)}（亮倒后不能换牌）",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if held >= 3 and rules.no_peng_with_concealed_triplet:
        return make(
            v, "peng_with_concealed_triplet",
            f"{who(state, seat)} holds a concealed triplet of {t(tile)}: they may 直杠 it or let it go, "
            "but not 碰 it (no_peng_with_concealed_triplet: 不能碰后再杠)",
            f"{who(state, seat)} 手上有三张{t(tile)}，只能直杠或不要，不能碰（不能碰后再杠）",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    return None


def _no_wall(state: TableState, hs: HandState, seat: int, tile: int, v: int) -> Ruling:
    return make(
        v, "kong_without_wall",
        f"{who(state, seat)} may not 杠 {t(tile)}: the wall is empty (no kong by the player who drew "
        "the last tile, nor on the last discard: 摸到最后一张牌，有杠不能杠，打出去的牌其他人也不能杠)",
        f"{who(state, seat)} 不能杠{t(tile)}：牌墙已空（摸到最后一张牌有杠不能杠，打出去的牌其他人也不能杠）",
        seat=seat, tile=t(tile),
    )  # fmt: skip


def _changes_waits(state: TableState, seat: int, tile: int, kind: str, v: int) -> Ruling:
    what = "直杠 (exposed kong)" if kind == "exposed" else "暗杠 (concealed kong)"
    return make(
        v, "liang_dao_kong_changes_waits",
        f"{who(state, seat)} declared 亮倒 and may not {what} {t(tile)}: the triplet is not an "
        "independent set in every ready decomposition, so the kong would change the declared waits",
        f"{who(state, seat)} 已亮倒，不能杠{t(tile)}：这三张不是独立的一组，开杠会改变所听的牌",
        seat=seat, tile=t(tile), kind=kind,
    )  # fmt: skip


def check_kong(state: TableState, hs: HandState, rules: Rules, ev: Kong, v: int) -> Ruling | None:
    seat, tile, kind = ev.seat, TILE_INDEX[ev.tile], ev.kind
    held = hs.concealed[seat][tile]
    if kind == "exposed":
        r = _claim_window(state, hs, seat, tile, ("直杠 (exposed kong)", "直杠"), v)
        if r is not None:
            return r
        if held < 3:
            return make(
                v, "tile_not_held",
                f"{who(state, seat)} cannot 直杠 {t(tile)}: they hold {held} {t(tile)}, it needs three",
                f"{who(state, seat)} 不能直杠{t(tile)}：手上只有{held}张",
                seat=seat, tile=t(tile), held=held,
            )  # fmt: skip
        if remaining(hs) == 0:
            return _no_wall(state, hs, seat, tile, v)
        if hs.liang_dao[seat] is not None and not kong_keeps_waits(hs, seat, tile, kind):
            return _changes_waits(state, seat, tile, "exposed", v)
        return None
    # 暗杠 / 补杠: right after one's own draw (or the dealer before the first discard)
    if hs.phase != "discard" or seat != hs.turn:
        return make(
            v, "not_your_turn" if hs.phase == "discard" else "sequence",
            f"{who(state, seat)} cannot declare a {kind} kong of {t(tile)} now: "
            + (f"it is seat {hs.turn}'s turn" if hs.phase == "discard" else f"phase is {hs.phase}"),
            f"{who(state, seat)} 现在不能杠{t(tile)}",
            seat=seat, tile=t(tile), phase=hs.phase, turn=hs.turn,
        )  # fmt: skip
    if not hs.fresh:
        return make(
            v, "sequence",
            f"{who(state, seat)} cannot declare a {kind} kong of {t(tile)} right after a 碰: "
            "暗杠 and 补杠 come right after one's own draw; after 碰 the player discards",
            f"{who(state, seat)} 碰牌后须打牌，不能暗杠/补杠",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if kind == "concealed":
        if held < 4:
            return make(
                v, "tile_not_held",
                f"{who(state, seat)} cannot 暗杠 {t(tile)}: they hold {held}, it needs four",
                f"{who(state, seat)} 不能暗杠{t(tile)}：手上只有{held}张",
                seat=seat, tile=t(tile), held=held,
            )  # fmt: skip
    else:
        if not any(m.kind == "peng" and m.tile == tile for m in hs.melds[seat]) or held < 1:
            return make(
                v, "tile_not_held",
                f"{who(state, seat)} cannot 补杠 {t(tile)}: a 补杠 needs an exposed 碰 of {t(tile)} and the "
                f"fourth tile in hand (held: {held})",
                f"{who(state, seat)} 不能补杠{t(tile)}：需要已碰的{t(tile)}和手上的第四张",
                seat=seat, tile=t(tile), held=held,
            )  # fmt: skip
    if remaining(hs) == 0:
        return _no_wall(state, hs, seat, tile, v)
    if hs.liang_dao[seat] is not None and tile != hs.drawn:
        return make(
            v, "liang_dao_locked",
            f"{who(state, seat)} declared 亮倒: only the tile just drawn "
            f"({t(hs.drawn) if hs.drawn is not None else 'none'}) may be konged, not {t(tile)}",
            f"{who(state, seat)} 已亮倒，只能用刚摸到的牌开杠，不能杠{t(tile)}",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if kind == "added" and rules.added_kong_immediate and tile != hs.drawn:
        return make(
            v, "added_kong_not_immediate",
            f"{who(state, seat)} may 补杠 {t(tile)} only with the tile just drawn "
            "(added_kong_immediate: 明杠必须当时就杠，否则就不能再杠)",
            f"{who(state, seat)} 不能补杠{t(tile)}：明杠必须当时就杠，否则就不能再杠",
            seat=seat, tile=t(tile),
            drawn=t(hs.drawn) if hs.drawn is not None else None,
        )  # fmt: skip
    if kind == "concealed" and hs.liang_dao[seat] is not None and not kong_keeps_waits(hs, seat, tile, kind):
        return _changes_waits(state, seat, tile, "concealed", v)
    return None
