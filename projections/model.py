"""What the projector hands to the read models: facts derived from the log, one per thing that
happened, each carrying the table it happened at.

Every projection is a pure function of these facts (``rows(fact) -> list[row]``); the projector
(``projections.projector``) derives them by folding each table's events through the engine.
"""

from __future__ import annotations

from typing import Any

import msgspec

from domain.facts import HandRecord, Settlement


class TableInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The table a fact belongs to: its tenant, players by seat and pinned preset."""

    table_id: str
    tenant: str
    players: tuple[str, str, str]
    preset: str = "default"
    base: int = 1


class EventRef(msgspec.Struct, frozen=True, kw_only=True):
    """Where in the log a fact was learned: the table version and the global position."""

    version: int
    position: int
    tx_id: int = 0


class HandSettled(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The engine produced the §2 settlement of a hand (the ``ordinal``-th of the table)."""

    info: TableInfo
    at: EventRef
    ordinal: int
    settlement: Settlement
    record: HandRecord | None = None
    # the hand's time: the ``at`` of the event that settled it, else the latest ``at`` of the table's
    # events before it (RFC 3339, as sent); None when no event of the table so far carried one
    hand_at: str | None = None


class ReportedLine(msgspec.Struct, frozen=True, kw_only=True):
    from_: int | str = msgspec.field(name="from")
    to: int | str
    amount: int


class SettlementCompared(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A ``settlement_reported`` event met the computed settlement of its hand (``computed`` is
    None when the engine has not settled that hand)."""

    info: TableInfo
    at: EventRef
    hand: int
    reported_event: int
    reported: tuple[ReportedLine, ...]
    computed: Settlement | None


class LouHuIncurred(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A seat passed a discard (or robbed kong) it could have won on: 漏胡."""

    info: TableInfo
    at: EventRef
    seat: int
    hand: int
    tile: str = ""
    would_pay: int = 0
    table_at: str | None = None  # the latest ``at`` of the table's events so far (None: none had one)


class SnapshotTaken(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The engine state of a table right after a ``hand_started`` event (for fast replay)."""

    info: TableInfo
    at: EventRef
    hand: int
    state: bytes


class RulingRecorded(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """An event was stored with a ruling: a rule violation recorded (``violations: record``), as
    the append stored it (``events.ruling``). Only the projector's fold gives it (a read's fold
    recomputes rulings and gives none)."""

    info: TableInfo
    at: EventRef
    event_type: str
    hand: int | None
    rule: str
    kind: str
    message: str
    message_zh: str = ""
    detail: dict[str, Any] = {}


Fact = HandSettled | SettlementCompared | LouHuIncurred | SnapshotTaken | RulingRecorded
