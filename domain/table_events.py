"""Applying the table-level events, and the end of a hand: table_opened, hand_started (上楼 base),
settlement_reported, table_closed, wall_revealed, ma_drawn; settling a finished hand
(``domain.settle.settle_hand``), the next dealer and the 上楼 level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from domain.events import HandStarted, MaDrawn, SettlementReported, TableOpened, WallRevealed
from domain.facts import HandRecord, Settlement
from domain.ready import waits
from domain.rules import Rules, resolve
from domain.settle import SettlementError, settle_hand
from domain.state import HandState, ReportedSettlement, Ruling, TableState
from domain.tiles import TILE_INDEX

_replace = msgspec.structs.replace


def set3(t: tuple[Any, ...], i: int, value: Any) -> tuple[Any, ...]:
    if i == 0:
        return (value, t[1], t[2])
    if i == 1:
        return (t[0], value, t[2])
    return (t[0], t[1], value)


def add1(counts: tuple[int, ...], kind: int, n: int) -> tuple[int, ...]:
    c = list(counts)
    c[kind] += n
    return tuple(c)


def rules_of(state: TableState) -> Rules:
    assert state.rules is not None
    return state.rules


def hand_of(state: TableState) -> HandState:
    assert state.hand is not None
    return state.hand


def chain_factor(length: int, cap: int | None) -> int:
    f: int = 2 ** (length - 1)
    return min(f, cap) if cap is not None else f


def apply_opened(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, TableOpened)
    return _replace(
        state,
        opened=True,
        table_event=ev.id,
        players=tuple(ev.players),
        base=ev.base,
        rules=resolve(ev.rules),
        rules_spec=dict(ev.rules),
        violations=ev.violations,
        version=v,
    )


def apply_started(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, HandStarted)
    rules = rules_of(state)
    base = state.base
    if rules.shang_lou:
        base <<= state.shang_lou
        if ev.dice is not None and ev.dice[0] == ev.dice[1]:
            base <<= 1  # 骰子点数相同，本局底分x2 (stacks with 上楼)
    concealed, seen = dealt(ev)
    dealer = ev.dealer
    ws = tuple(() if s == dealer else waits(concealed[s]) for s in (0, 1, 2))
    piao = tuple(ev.piao) if ev.piao is not None else None
    record = HandRecord(
        hand=ev.hand,
        dealer=dealer,
        base=base,
        start_event=v,
        piao=(piao[0], piao[1], piao[2]) if piao is not None else None,
        dice=(ev.dice[0], ev.dice[1]) if ev.dice is not None else None,
    )
    hs = HandState(
        hand=ev.hand,
        dealer=dealer,
        base=base,
        start_event=v,
        wall=tuple(map(TILE_INDEX.__getitem__, ev.wall)) if ev.wall is not None else None,
        wall_sha256=ev.wall_sha256.lower() if ev.wall_sha256 is not None else None,
        seen=seen,
        concealed=concealed,
        waits=ws,
        phase="discard",
        turn=dealer,
        fresh=True,
        record=record,
    )
    return _replace(state, hand=hs, hand_no=ev.hand, dealer=dealer, version=v)


# The last hand_started counted, by identity of the (immutable) event: its check
# (domain.table_checks) and its application use the same counts.
_last_dealt: tuple[HandStarted, tuple[tuple[int, ...], ...], tuple[int, ...]] | None = None


def dealt(ev: HandStarted) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The count vectors of the hands dealt, per seat, and of all three together."""
    global _last_dealt
    last = _last_dealt
    if last is not None and last[0] is ev:
        return last[1], last[2]
    concealed = tuple([_counts(h) for h in ev.hands])
    seen = tuple([a + b + c for a, b, c in zip(*concealed, strict=True)])
    _last_dealt = (ev, concealed, seen)
    return concealed, seen


def _counts(tiles: Sequence[str]) -> tuple[int, ...]:
    c = [0] * 21
    for x in tiles:
        c[TILE_INDEX[x]] += 1
    return tuple(c)


def apply_reported(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, SettlementReported)
    rep = ReportedSettlement(
        hand=ev.hand, event=v, transfers=tuple((x.from_, x.to, x.amount) for x in ev.transfers)
    )
    return _replace(state, reported=(*state.reported, rep), version=v)


def apply_closed(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    return _replace(state, closed=True, version=v)


def apply_wall_revealed(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, WallRevealed)
    hs = hand_of(state)
    result = "ok" if ruling is None else ruling.code
    hs = _replace(hs, wall=tuple([TILE_INDEX[x] for x in ev.wall]), wall_revealed=v)
    return _replace(state, hand=hs, wall_checks=(*state.wall_checks, (hs.hand, v, result)), version=v)


def apply_ma(state: TableState, ev: Any, v: int, ruling: Ruling | None) -> TableState:
    assert isinstance(ev, MaDrawn)
    hs = hand_of(state)
    k = TILE_INDEX[ev.tile]
    rec = _replace(hs.record, ma_tile=k, ma_event=v)
    hs = _replace(hs, record=rec, back=hs.back + 1, drawn_back=(*hs.drawn_back, k), seen=add1(hs.seen, k, 1))
    # the hand was settled at its hu; settle again with the 买码 tile
    return settle(state, hs, v, resettle=True)


def end_hand(state: TableState, hs: HandState, v: int) -> TableState:
    hs = _replace(hs, phase="over", ended=v, candidates=(), last_tile=None, drawn=None)
    return settle(state, hs, v, resettle=False)


def settle(state: TableState, hs: HandState, v: int, *, resettle: bool) -> TableState:
    """The table at version ``v`` with ``hs`` (over) settled into its settlements and coins."""
    rules = rules_of(state)
    rec = hs.record
    try:
        s: Settlement | None = settle_hand(rec, rules)
    except SettlementError:
        s = None
    settlements = state.settlements
    coins = list(state.coins)
    house = state.house
    if resettle and settlements and settlements[-1].hand == rec.hand:
        old = settlements[-1]
        coins = [c - n for c, n in zip(coins, old.net, strict=True)]
        house -= old.house
        settlements = settlements[:-1]
    next_dealer = state.next_dealer
    shang_lou = state.shang_lou
    if s is not None:
        settlements = (*settlements, s)
        coins = [c + n for c, n in zip(coins, s.net, strict=True)]
        house += s.house
        next_dealer = s.next_dealer
    elif rec.end == "aborted":
        next_dealer = rec.dealer
    log = state.lou_hu_log
    if not resettle and hs.lou_hu_log:
        log = (*log, *hs.lou_hu_log)  # the hand's 漏胡 records, final once it is over
    if not resettle and rules.shang_lou and rec.end != "aborted":
        # 上楼 (十堰): after 一炮双响 or 荒庄 the next hand's base doubles (not cumulative)
        shang_lou = 1 if rec.end == "exhausted" or len(rec.wins) > 1 else 0
    return _replace(
        state,
        hand=hs,
        settlements=settlements,
        coins=(coins[0], coins[1], coins[2]),
        house=house,
        next_dealer=next_dealer,
        shang_lou=shang_lou,
        lou_hu_log=log,
        version=v,
    )
