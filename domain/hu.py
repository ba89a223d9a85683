"""Checks of 胡 (RULES.md §3, §4, §6, §9): the window a hu fits (self-draw, discard, robbed kong),
then per winner: a winning hand, the minimum multiplier, no 漏胡 restriction."""

from __future__ import annotations

from domain.events import Hu
from domain.lou_hu import blocking
from domain.rules import Rules
from domain.rulings import make, t, who
from domain.scoring import Score
from domain.state import HandState, Ruling, TableState
from domain.tiles import TILE_INDEX
from domain.winning import WinKind, score_win


def win_kind(hs: HandState, ev: Hu) -> WinKind | None:
    """What kind of win a structurally placed hu is: None when it fits no window."""
    if ev.from_ is None:
        return "self_draw" if hs.phase == "discard" else None
    if ev.from_ != hs.turn:
        return None
    if hs.phase == "claim":
        return "discard"
    if hs.phase == "rob":
        return "rob"
    return None


def win_score(hs: HandState, rules: Rules, seat: int, tile: int, kind: WinKind) -> Score | None:
    if kind != "self_draw":
        for c in hs.candidates:
            if c.seat == seat:
                return c.score
    return score_win(hs, rules, seat, tile, kind)


def check_hu(state: TableState, hs: HandState, rules: Rules, ev: Hu, v: int) -> Ruling | None:
    tile = TILE_INDEX[ev.tile]
    winners = ev.winners
    if len(set(winners)) != len(winners):
        return make(
            v, "sequence", f"hu lists seat {winners[0]} twice", f"胡牌者重复：{winners[0]}号位",
            winners=list(winners),
        )  # fmt: skip
    kind = win_kind(hs, ev)
    if kind is None:
        src = "self-draw" if ev.from_ is None else f"on seat {ev.from_}'s tile"
        return make(
            v, "sequence",
            f"hu {src} by {', '.join(who(state, s) for s in winners)} does not fit now (phase: "
            f"{hs.phase}, seat {hs.turn}): a win is a self-draw by the player to move, or on the last "
            "discard / the tile of an added kong just declared",
            "现在不能这样胡牌：只能自摸，或胡刚打出的牌/刚补杠的牌",
            winners=list(winners), phase=hs.phase, turn=hs.turn,
        )  # fmt: skip
    if kind == "self_draw":
        seat = winners[0]
        if len(winners) > 1 or seat != hs.turn:
            return make(
                v, "not_your_turn",
                f"only seat {hs.turn}, the player to move, can win by self-draw",
                f"只有轮到的{hs.turn}号位可以自摸",
                winners=list(winners), turn=hs.turn,
            )  # fmt: skip
        if not hs.fresh:
            return make(
                v, "sequence",
                f"{who(state, seat)} cannot win by self-draw right after a 碰: they must discard",
                f"{who(state, seat)} 碰牌后须打牌，不能自摸",
                seat=seat,
            )  # fmt: skip
        if hs.drawn is not None and tile != hs.drawn:
            return make(
                v, "wrong_win_tile",
                f"{who(state, seat)} wins by self-draw on {t(tile)}, "
                f"but the tile just drawn is {t(hs.drawn)}",
                f"{who(state, seat)} 自摸{t(tile)}，但刚摸到的是{t(hs.drawn)}",
                seat=seat, tile=t(tile), drawn=t(hs.drawn),
            )  # fmt: skip
        if hs.concealed[seat][tile] < 1:
            return make(
                v, "tile_not_held",
                f"{who(state, seat)} wins by self-draw on {t(tile)}, which they do not hold",
                f"{who(state, seat)} 自摸{t(tile)}，但手上没有这张牌",
                seat=seat, tile=t(tile),
            )  # fmt: skip
    else:
        if hs.last_tile is None or tile != hs.last_tile:
            return make(
                v, "wrong_win_tile",
                f"hu on {t(tile)} from seat {ev.from_}, but the tile there is "
                f"{t(hs.last_tile) if hs.last_tile is not None else 'none'}",
                f"胡{t(tile)}，但{ev.from_}号位打出/杠的牌是"
                f"{t(hs.last_tile) if hs.last_tile is not None else '无'}",
                tile=t(tile), source=ev.from_,
            )  # fmt: skip
        if hs.turn in winners:
            return make(
                v, "sequence",
                f"seat {hs.turn} cannot win on their own {'discard' if kind == 'discard' else 'kong'}",
                f"{hs.turn}号位不能胡自己打出/杠的牌",
                winners=list(winners),
            )  # fmt: skip
        if len(winners) > 1 and not rules.multi_win:
            return make(
                v, "multi_win_disabled",
                f"seats {winners[0]} and {winners[1]} both win on {t(tile)}, but multi_win is off "
                "(一炮双响 not allowed at this table)",
                f"{winners[0]}号位和{winners[1]}号位同时胡{t(tile)}，但本桌不允许一炮双响",
                winners=list(winners), tile=t(tile),
            )  # fmt: skip
        if kind == "rob" and not rules.rob_kong:
            return make(
                v, "rob_kong_disabled",
                f"{who(state, winners[0])} robs seat {hs.turn}'s added kong of {t(tile)}, but rob_kong "
                "is off (no 抢杠胡 at this table)",
                f"{who(state, winners[0])} 抢{hs.turn}号位的杠{t(tile)}，但本桌不允许抢杠胡",
                winners=list(winners), tile=t(tile), source=hs.turn,
            )  # fmt: skip
    for seat in winners:
        r = _check_winner(state, hs, rules, seat, tile, kind, v)
        if r is not None:
            return r
    return None


_KIND_EN = {"self_draw": "by self-draw", "discard": "on a discard", "rob": "by robbing a kong"}


def _check_winner(
    state: TableState, hs: HandState, rules: Rules, seat: int, tile: int, kind: WinKind, v: int
) -> Ruling | None:
    sc = win_score(hs, rules, seat, tile, kind)
    if sc is None:
        return make(
            v, "not_a_winning_hand",
            f"{who(state, seat)} declares hu {_KIND_EN[kind]} on {t(tile)}, but their tiles do not form "
            "a winning hand (four sets and a pair, or seven pairs)",
            f"{who(state, seat)} 胡{t(tile)}，但牌型不成胡（四组加一对或七对）",
            seat=seat, tile=t(tile),
        )  # fmt: skip
    if not sc.allowed:
        return make(
            v, "below_min_multiplier",
            f"{who(state, seat)} wins {_KIND_EN[kind]} on {t(tile)} for ×{sc.multiplier}, below the "
            f"minimum ×{sc.min_required} for this kind of win (屁胡只能自摸)",
            f"{who(state, seat)} 胡{t(tile)}只有{sc.multiplier}番，不够{sc.min_required}番起胡",
            seat=seat, tile=t(tile), multiplier=sc.multiplier, min_required=sc.min_required,
        )  # fmt: skip
    if kind != "self_draw":
        r = blocking(hs, rules, seat, sc)
        if r is not None:
            bigger = " and this win is not bigger" if rules.lou_hu == "unless_bigger" else ""
            return make(
                v, "lou_hu",
                f"{who(state, seat)} may not win on {t(tile)}: 漏胡 — they passed a win on {t(r.tile)} "
                f"(event {r.event}, would have paid ×{r.multiplier}) and have not drawn since{bigger} "
                f"(lou_hu: {rules.lou_hu})",
                f"{who(state, seat)} 漏胡：第{r.event}手放过了{t(r.tile)}（{r.multiplier}番），"
                "还没有摸牌，不能胡别人打出的牌",
                seat=seat, tile=t(tile), passed_event=r.event, passed_tile=t(r.tile),
                would_pay=r.multiplier, multiplier=sc.multiplier, mode=rules.lou_hu,
            )  # fmt: skip
    return None
