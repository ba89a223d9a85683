"""``check(state, event)``: is ``event`` legal as the next event of the table? (CONTRACT.md §1,
RULES.md §2–§9). Pure; returns the first :class:`~domain.state.Ruling` that applies, or None.

Structure checks (order, turn, tiles held, tile counts, the wall) come before rule checks. The
claims (碰 / 杠 / 胡) live in domain/claims.py, 亮倒 in domain/liang_dao.py, 漏胡 in
domain/lou_hu.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.claims import check_hu, check_kong, check_peng, who
from domain.events import (
    Event,
    HandAborted,
    HandExhausted,
    HandStarted,
    Hu,
    Kong,
    LiangDao,
    MaDrawn,
    Peng,
    SettlementReported,
    TableClosed,
    TableOpened,
    TileDiscarded,
    TileDrawn,
    WallRevealed,
)
from domain.liang_dao import check_declaration, feeding
from domain.rules import Rules, RulesError, resolve
from domain.rulings import make, t
from domain.state import HandState, Ruling, TableState
from domain.tiles import TILE_INDEX, TILE_NAMES
from domain.walls import (
    WALL_SIZE,
    counts_of,
    draws_match,
    expected_back,
    expected_front,
    not_full_set,
    over_four,
    remaining,
    sha256_of,
)


def check(state: TableState, ev: Event) -> Ruling | None:
    v = state.version + 1
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
        return _check_opened(ev, v)
    fn = _TABLE.get(type(ev))
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


# --- table-level events -------------------------------------------------------------------------


def _check_opened(ev: TableOpened, v: int) -> Ruling | None:
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
    hands = [[TILE_INDEX[x] for x in h] for h in ev.hands]
    counts = counts_of(hands)
    bad = over_four(counts)
    if bad:
        return make(
            v, "tile_count",
            f"the hands hold {counts[bad[0]]} × {t(bad[0])}; there are only four of each tile",
            f"发牌中{t(bad[0])}有{counts[bad[0]]}张，每种牌只有四张",
            tile=t(bad[0]), count=counts[bad[0]],
        )  # fmt: skip
    if ev.wall is not None:
        wall = [TILE_INDEX[x] for x in ev.wall]
        total = counts_of([*hands, wall])
        bad = not_full_set(total)
        if bad:
            return make(
                v, "tile_count",
                f"the hands and the wall hold {total[bad[0]]} × {t(bad[0])}: together they must be "
                "exactly the 84-tile set",
                f"手牌加牌墙中{t(bad[0])}有{total[bad[0]]}张，必须正好是84张牌",
                tile=t(bad[0]), count=total[bad[0]],
            )  # fmt: skip
        if ev.wall_sha256 is not None and sha256_of(wall).lower() != ev.wall_sha256.lower():
            return make(
                v, "wall_mismatch",
                "the wall does not match its wall_sha256 commitment",
                "牌墙与其SHA-256承诺不符",
                expected=ev.wall_sha256.lower(), actual=sha256_of(wall),
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
    return _check_wall_tile(state, hs, TILE_INDEX[ev.tile], back=True, v=v, what="the 买码 tile")


def _check_wall_revealed(state: TableState, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, WallRevealed)
    hs = state.hand
    if hs is None or hs.wall_sha256 is None or hs.wall is not None:
        return make(
            v, "sequence",
            "wall_revealed only follows a hand_started that committed wall_sha256 without the wall",
            "只有开局时只给出牌墙SHA-256承诺的一局才能公布牌墙",
        )  # fmt: skip
    wall = [TILE_INDEX[x] for x in ev.wall]
    digest = sha256_of(wall)
    if digest != hs.wall_sha256.lower():
        return make(
            v, "wall_mismatch",
            f"the revealed wall of hand {hs.hand} does not match the wall_sha256 committed at its start "
            f"(event {hs.start_event})",
            f"第{hs.hand}局公布的牌墙与开局时的SHA-256承诺不符",
            hand=hs.hand, expected=hs.wall_sha256.lower(), actual=digest,
        )  # fmt: skip
    start = [hs.concealed[s] for s in (0, 1, 2)]
    dealt = _dealt_counts(hs, start)
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
            f"hand {hs.hand}: {mismatch}",
            f"第{hs.hand}局的摸牌与公布的牌墙不符：{mismatch}",
            hand=hs.hand,
        )  # fmt: skip
    return None


def _dealt_counts(hs: HandState, _start: list[tuple[int, ...]]) -> list[int]:
    """Tiles dealt at the hand's start = all tiles seen minus the draws."""
    seen = list(hs.seen)
    for k in hs.drawn_front:
        seen[k] -= 1
    for k in hs.drawn_back:
        seen[k] -= 1
    return seen


_TableCheck = Callable[[TableState, Any, int], "Ruling | None"]
_TABLE: dict[type, _TableCheck] = {
    TableOpened: _opened_again,
    HandStarted: _check_hand_started,
    SettlementReported: _check_settlement_reported,
    TableClosed: _ok,
    MaDrawn: _check_ma,
    WallRevealed: _check_wall_revealed,
}


# --- events of a hand in progress ---------------------------------------------------------------


def _check_wall_tile(
    state: TableState, hs: HandState, tile: int, *, back: bool, v: int, what: str
) -> Ruling | None:
    if hs.wall is not None:
        want = expected_back(hs) if back else expected_front(hs)
        if want is not None and want != tile:
            end = "back" if back else "front"
            return make(
                v, "wall_mismatch",
                f"{what} is {t(tile)}, but the next tile at the {end} of the known wall is {t(want)}",
                f"{what}是{t(tile)}，但牌墙{'尾' if back else '头'}的下一张是{t(want)}",
                tile=t(tile), expected=t(want), end=end,
            )  # fmt: skip
        return None
    if hs.seen[tile] >= 4:
        return make(
            v, "tile_count",
            f"{what} is {t(tile)}, but all four {t(tile)} are already in play",
            f"{what}是{t(tile)}，但四张{t(tile)}都已出现",
            tile=t(tile),
        )  # fmt: skip
    return None


def _check_draw(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, TileDrawn)
    seat, tile = ev.seat, TILE_INDEX[ev.tile]
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
    if remaining(hs) <= 0:
        return make(
            v, "sequence",
            f"{who(state, seat)} draws, but the wall is empty: the hand ends with a hu on the last "
            "discard or hand_exhausted (荒庄)",
            f"{who(state, seat)} 摸牌，但牌墙已空：应胡最后一张牌或荒庄",
            seat=seat,
        )  # fmt: skip
    what = f"{who(state, seat)}'s {'replacement ' if back else ''}draw"
    return _check_wall_tile(state, hs, tile, back=back, v=v, what=what)


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


def _check_discard(state: TableState, hs: HandState, rules: Rules, ev: Any, v: int) -> Ruling | None:
    assert isinstance(ev, TileDiscarded)
    tile = TILE_INDEX[ev.tile]
    return _discard_structure(state, hs, ev.seat, tile, v) or _discard_rules(
        state, hs, rules, ev.seat, tile, v
    )


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
    return feeding(hs, rules, seat, tile, v, who(state, seat)) or check_declaration(
        hs, rules, seat, tile, hidden, v, who(state, seat)
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
    TileDrawn: _check_draw,
    TileDiscarded: _check_discard,
    LiangDao: _check_liang_dao,
    Peng: _check_peng,
    Kong: _check_kong,
    Hu: _check_hu,
    HandExhausted: _check_exhausted,
    HandAborted: _check_aborted,
}

__all__ = ["TILE_NAMES", "WALL_SIZE", "check"]
