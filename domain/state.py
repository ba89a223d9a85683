"""The table state the reducer folds events into (CONTRACT.md §3 ``state``).

Frozen msgspec Structs, tuples and ints only, so that :func:`domain.engine.encode_state` is
deterministic: equal states encode to identical bytes. Tiles are kinds ``0..20``
(domain/tiles.py); a hand is a count vector of 21 ints. Every event-version field (``event``,
``since``, ``lifted_by`` …) is the table version of the event it names.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from domain.facts import HandRecord, Settlement
from domain.rules import Rules
from domain.scoring import Score
from domain.tiles import Meld

Phase = Literal["discard", "claim", "replacement", "rob", "over"]
RulingKind = Literal["structure", "rule"]

EMPTY_COUNTS: tuple[int, ...] = (0,) * 21


class Ruling(msgspec.Struct, frozen=True, kw_only=True):
    """Why an event is (or was) illegal. ``code`` is stable (docs/rulings.md lists every one)."""

    code: str
    message: str  # English, for a support agent: which seat, which tile, which rule, why
    message_zh: str  # the same in Chinese
    event: int  # the version the event has / would have (state.version + 1)
    kind: RulingKind  # structure: always rejected; rule: rejected unless violations == "record"
    detail: dict[str, Any] = {}


class Discard(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    tile: int
    event: int
    claimed: bool = False  # taken by 碰 / 直杠 (a discard won on ends the hand instead)


class LiangDaoInfo(msgspec.Struct, frozen=True, kw_only=True):
    """亮倒 of one seat: declared at ``event`` with ``discard``; the waits are fixed from then on."""

    event: int
    discard: int
    waits: tuple[int, ...]
    hidden: tuple[int, ...] = ()  # kinds of concealed triplets kept face down (三个的不亮)


class LouHu(msgspec.Struct, frozen=True, kw_only=True):
    """漏胡: ``seat`` could legally have won on ``tile`` (discard / robbed kong at ``event``, from
    ``source``) for ``multiplier`` and did not; restricted ``since`` the event that closed the
    window, until ``lifted_by`` (their own next draw)."""

    hand: int
    seat: int
    event: int
    tile: int
    source: int
    multiplier: int
    since: int
    lifted_by: int | None = None


class Candidate(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A seat whose waits hold the current discard / kong tile, scored once when it appeared."""

    seat: int
    score: Score | None
    legal: bool  # could legally win now (winning shape, minimum met, no 漏胡 restriction)


class KongChain(msgspec.Struct, frozen=True, kw_only=True):
    """杠上杠: the current chain's seat (the last konger), length k and money factor 2^(k−1)."""

    seat: int
    length: int
    factor: int
    # "draw": the last kong's replacement draw may still be followed by a kong of the same seat;
    # "discard": that seat's discard after the replacement draw may still be 直杠'd by anyone;
    # "kong": waiting for the replacement draw.
    stage: Literal["kong", "draw", "discard"] = "kong"


class ReportedSettlement(msgspec.Struct, frozen=True, kw_only=True):
    hand: int
    event: int
    transfers: tuple[tuple[int | str, int | str, int], ...]  # (from, to, amount) as reported


class HandState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    hand: int
    dealer: int
    base: int
    start_event: int
    # wall: the 44 tiles in draw order when known; front / back = tiles drawn from each end
    wall: tuple[int, ...] | None = None
    wall_sha256: str | None = None
    wall_revealed: int = 0  # version of the wall_revealed event
    front: int = 0
    back: int = 0
    drawn_front: tuple[int, ...] = ()  # tiles drawn from the front, in order
    drawn_back: tuple[int, ...] = ()  # kong replacement draws (then the ma tile), in order
    seen: tuple[int, ...] = EMPTY_COUNTS  # tiles of each kind dealt or drawn so far
    concealed: tuple[tuple[int, ...], ...] = ()  # per seat, count vector
    melds: tuple[tuple[Meld, ...], ...] = ((), (), ())
    discards: tuple[tuple[Discard, ...], ...] = ((), (), ())
    phase: Phase = "discard"
    turn: int = 0  # discard: who discards; claim: the discarder; replacement/rob: the konger
    fresh: bool = True  # the turn seat just drew (or is the dealer before the first discard)
    drawn: int | None = None  # the tile the turn seat just drew (None: dealer's start, after 碰)
    drawn_event: int = 0
    from_back: bool = False  # that draw was a kong replacement draw
    last_tile: int | None = None  # claim: the discard; rob: the added kong's tile
    last_event: int = 0
    after_kong: bool = False  # the discard in the claim window follows its player's kong (杠上炮)
    candidates: tuple[Candidate, ...] = ()  # who may win on last_tile (scored when it appeared)
    chain: KongChain | None = None
    kong_money: tuple[int, int, int] = (0, 0, 0)  # net coins from kongs so far in this hand
    liang_dao: tuple[LiangDaoInfo | None, ...] = (None, None, None)
    waits: tuple[tuple[int, ...], ...] = ((), (), ())  # cached waits of each 3n+1 hand
    lou_hu: tuple[LouHu | None, ...] = (None, None, None)  # active restriction per seat
    lou_hu_log: tuple[LouHu, ...] = ()
    record: HandRecord
    ended: int = 0  # version of the event that ended the hand


class TableState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    version: int = 0  # number of events applied
    opened: bool = False
    table_event: str = ""  # id of table_opened
    players: tuple[str, ...] = ()
    base: int = 1
    rules: Rules | None = None
    rules_spec: dict[str, Any] = {}
    violations: Literal["reject", "record"] = "reject"
    override: bool = False  # rules replaced by fold(rules_override=…): violations are recorded
    closed: bool = False
    hand_no: int = 0  # the last hand started
    dealer: int | None = None  # dealer of the current / last hand
    next_dealer: int | None = None  # None until the first hand is settled (the platform chooses)
    shang_lou: int = 0  # 上楼 level for the next hand: its base is doubled this many times
    hand: HandState | None = None
    coins: tuple[int, int, int] = (0, 0, 0)  # settled coins per seat (kong money of the hand aside)
    house: int = 0
    settlements: tuple[Settlement, ...] = ()
    reported: tuple[ReportedSettlement, ...] = ()
    rulings: tuple[Ruling, ...] = ()  # recorded violations (violations: "record")
    lou_hu_log: tuple[LouHu, ...] = ()  # 漏胡 of finished hands (the hand in play: hand.lou_hu_log)
    wall_checks: tuple[tuple[int, int, str], ...] = ()  # (hand, event, result) of sha256 reveals
