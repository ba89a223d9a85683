"""What a hand leaves behind for settlement and audit.

The reducer (``domain.engine``) records, as the hand is played, the facts that money depends on:
every kong with its place in a 杠上杠 chain, every win with its :class:`~domain.scoring.Score`,
the 亮倒 declarations in order, the 买码 tile. ``domain.settle.settle_hand(record, rules)`` turns a
finished :class:`HandRecord` into the CONTRACT.md §2 :class:`Settlement`, purely.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.scoring import Score

Party = int | Literal["house"]


class KongRecord(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    kind: Literal["concealed", "added", "exposed"]
    tile: int
    event: int  # version of the kong event
    chain: int = 1  # k: the k-th kong of a 杠上杠 chain (1 for a kong that starts one)
    source: int | None = None  # the discarder, for 直杠 (exposed)
    robbed: bool = False  # an added kong robbed by 抢杠胡 pays nothing


class WinRecord(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    source: int | None  # the discarder / robbed konger; None for a self-draw
    tile: int
    event: int  # version of the hu event
    score: Score
    liang_dao: bool = False  # the winner had declared 亮倒
    source_liang_dao: bool = False  # the discarder had declared 亮倒 too
    robbed_kong: bool = False
    kong_draw: bool = False
    after_kong_discard: bool = False
    violation: str | None = None  # ruling code when stored under violations: "record"


class Declaration(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    event: int


class HandRecord(msgspec.Struct, frozen=True, kw_only=True):
    hand: int
    dealer: int
    base: int  # the hand's base: the table's base, doubled by 上楼 where on
    start_event: int
    piao: tuple[int, int, int] | None = None
    dice: tuple[int, int] | None = None
    end: Literal["hu", "exhausted", "aborted"] | None = None
    end_event: int = 0
    kongs: tuple[KongRecord, ...] = ()
    wins: tuple[WinRecord, ...] = ()
    declarations: tuple[Declaration, ...] = ()  # 亮倒 in the order declared
    ma_tile: int | None = None
    ma_event: int = 0


class PatternOut(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    x: int
    detail: str = ""


class WinOut(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    from_: int | None = msgspec.field(name="from")
    tile: str
    patterns: tuple[PatternOut, ...]
    multiplier: int
    payable: int
    capped: int
    shu_kan: int = 0
    ma: int = 0
    event: int = 0
    decomposition: str = ""
    cap_note: str = ""
    bao_hu: str | None = None  # the liang_dao_feed mode when 包胡 applied


class Transfer(msgspec.Struct, frozen=True, kw_only=True):
    from_: Party = msgspec.field(name="from")
    to: Party
    amount: int
    reason: Literal["hu", "kong", "exhausted", "piao", "fee"]
    event: int
    detail: str = ""  # for a support agent: which rule, which factor
    detail_zh: str = ""  # the same, in Chinese


class Settlement(msgspec.Struct, frozen=True, kw_only=True):
    hand: int
    end: Literal["hu", "exhausted", "aborted"]
    dealer: int
    next_dealer: int
    wins: tuple[WinOut, ...]
    transfers: tuple[Transfer, ...]
    net: tuple[int, int, int]
    house: int = 0
    base: int = 1
