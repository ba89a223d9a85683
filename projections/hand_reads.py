"""The events of one hand, from the hand's snapshot: what a hand's reads (its settlement, its
audit, its timeline) fold, so that they cost what the hand costs, not what the table costs.

Two steps, like :mod:`projections.replay` (never two pooled connections held at once, issue 11 §3):

1. :func:`locate` (on a connection the caller then gives back): from the snapshots
   (:mod:`projections.snapshots`: a ``hand_started``'s stored facts, or the read model's table), the
   latest snapshot of a hand ≤ n (normally hand n's own, the state right after its
   ``hand_started``) and the version before hand n+1's ``hand_started`` (the hand's last event).
2. :func:`load` (the events from the store, one pooled connection per page): the snapshot decoded
   and the stored events from its version to the hand's last event, as a :class:`HandEvents`.

Folding ``HandEvents.events`` (those after ``start``) onto ``HandEvents.initial`` gives the same
state, for everything of hands ≤ n, as folding the whole table from event 1: the snapshot is the
fold's own state (``engine.encode_state`` is byte-identical for equal states) and every event of a
hand lies between its ``hand_started`` and the next one. (A ``settlement_reported`` for hand n may
come later, in another hand: :class:`HandEvents` does not hold it; the audit reads those apart.)

A snapshot is only a cache: missing (the projector behind, or a rebuild), or undecodable (an older
engine), the fold starts from an earlier hand's snapshot or from event 1, and without hand n+1's
snapshot the read goes on until it meets hand n+1's ``hand_started`` (or the table's last event)
— slower, never different (tests/projections/test_hand_reads.py checks every hand against the
whole-table fold). ``last`` is the hand's last event either way.

This is the one read of a hand's events: the settlement, the hand's audit, the timeline
(:meth:`HandEvents.opening`) and the dispute report all fold it, so they agree on which events
hand n holds. Hand numbers are consecutive even after a ``hand_aborted`` (the engine refuses a
repeated number as ``sequence``): the re-deal of an aborted hand n is hand n+1, by the same
dealer, and hand n is the voided deal. (Were a number stored twice, by an engine that let it
through, ``first`` is its later deal, as the latest snapshot of hand n is.)

Example (a route)::

    span = reading(pool, lambda conn: hand_reads.locate(conn, tenant, table_id, n))
    got = hand_reads.load(span, store, engine, tenant, table_id, head_version)
    if got.first is None: ...                     # hand n never started: 404
    state = got.final(engine)                     # the table after hand n's last event
    for version, event, ruling, before, after in got.steps(engine): ...   # event by event
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from domain.engine import Replayer
from domain.events import Event, HandStarted, TableClosed, decode
from projections import snapshots
from projections.sql import Connection

if TYPE_CHECKING:
    from projections.projector import EventSource

__all__ = ["HandEvents", "HandSpan", "load", "locate"]

_MAX_HAND = 2**31 - 1  # the snapshots' hand column is an int4 (a hand number beyond it: none follows)


class HandSpan(msgspec.Struct, frozen=True, kw_only=True):
    """Where hand ``hand``'s fold starts and ends, from the snapshots read model."""

    hand: int
    start: int = 0  # the version ``state`` is the table after (0: fold from event 1)
    state: bytes | None = None  # engine.encode_state of the table after event ``start``
    end: int | None = None  # the hand's last event (hand n+1's hand_started − 1); None: the table's last


def locate(conn: Connection, tenant: str, table_id: str, hand: int) -> HandSpan:
    """The :class:`HandSpan` of the tenant's table's hand ``hand``: at most two snapshots, read
    backwards on their keys (:data:`projections.snapshots.LOCATE`); only the start's state is sent.
    Plain text, not a Core statement: compiling one cost more than running it (≈ 0.6 ms of a read)."""
    following = min(hand + 1, _MAX_HAND)  # a hand beyond the column's range: none follows, none is
    found = conn.execute(snapshots.LOCATE, snapshots.params(tenant, table_id, following=following)).fetchall()
    rows, seen = [], set()
    for row in found:  # a version in both sources comes twice
        if row[0] not in seen:
            seen.add(row[0])
            rows.append(row)
    end: int | None = None
    if rows and int(rows[0][1]) == hand + 1:
        end = int(rows[0][0]) - 1
        rows = rows[1:]
    state = snapshots.state_of(rows[0][2], rows[0][3]) if rows else None
    if state is None:
        return HandSpan(hand=hand, end=end)
    return HandSpan(hand=hand, start=int(rows[0][0]), state=state, end=end)


class HandEvents(msgspec.Struct, kw_only=True):
    """The stored events a hand's read folds.

    ``events``: (version, decoded event, stored ruling JSON or None) of versions ``max(start, 1)``
    to ``last``, in order; those with version ≤ ``start`` (the snapshot's own ``hand_started``)
    are already in ``initial``. ``first``: the version of hand ``hand``'s ``hand_started`` (None:
    the hand never started). ``last``: the hand's last event (the one before hand n+1's
    ``hand_started``, or the table's last)."""

    hand: int
    start: int
    initial: Any  # the engine state after event ``start`` (the initial state when 0)
    events: list[tuple[int, Event, dict[str, Any] | None]]
    first: int | None
    last: int

    def steps(self, engine: Replayer) -> Iterator[tuple[int, Event, dict[str, Any] | None, Any, Any]]:
        """(version, event, ruling, state before, state after) of each event, folded as it was
        accepted (``engine.replay``); an event already in ``initial`` has before = after."""
        state = self.initial
        for version, event, ruling in self.events:
            before = state
            if version > self.start:
                state = engine.replay(state, event)
            yield version, event, ruling, before, state

    def final(self, engine: Replayer) -> Any:
        """The table's state after event ``last``."""
        state = self.initial
        for version, event, _ in self.events:
            if version > self.start:
                state = engine.replay(state, event)
        return state

    def opening(self, engine: Replayer) -> tuple[Any, tuple[int, Event, dict[str, Any] | None], list[Any]]:
        """What the timeline renders (projections/timeline.py): (the table's state right after
        hand ``hand``'s ``hand_started``, that event as (version, event, ruling), the hand's later
        events up to, not including, a ``table_closed``). Only for a hand that started."""
        assert self.first is not None
        state = self.initial
        first: tuple[int, Event, dict[str, Any] | None] | None = None
        rest: list[Any] = []
        for item in self.events:
            version, event, _ = item
            if first is None:
                if version > self.start:
                    state = engine.replay(state, event)
                if version == self.first:
                    first = item
                continue
            if isinstance(event, TableClosed):
                break
            rest.append(item)
        assert first is not None
        return state, first, rest


def load(
    span: HandSpan, source: EventSource, engine: Replayer, tenant: str, table_id: str, head: int
) -> HandEvents:
    """The :class:`HandEvents` of ``span`` (:func:`locate`, already read) on a table whose last
    event is ``head``: the snapshot decoded (undecodable: from event 1) and the events read from
    ``source`` a page at a time, up to the hand's last event (the one before hand n+1's
    ``hand_started``, found in the events when its snapshot is not there)."""
    state: Any = engine.initial()
    start = 0
    if span.state is not None:
        try:
            state = engine.decode_state(span.state)
            start = span.start
        except Exception:  # a snapshot of an older engine: fold from the start instead
            state, start = engine.initial(), 0
    last = head if span.end is None else min(span.end, head)
    events: list[tuple[int, Event, dict[str, Any] | None]] = []
    first: int | None = None
    after = max(start - 1, 0)
    ended = False
    while after < last and not ended:
        page = source.read_table(tenant, table_id, after=after, limit=min(1000, last - after))
        if not page:
            break
        for row in page:
            event = decode(row.body)
            if isinstance(event, HandStarted):
                if event.hand == span.hand:  # a number stored twice (refused now): its later deal
                    first = row.version
                elif event.hand > span.hand:  # the next hand (its snapshot was not there): stop
                    ended = True
                    break
            ruling = msgspec.json.decode(row.ruling) if row.ruling else None
            events.append((row.version, event, ruling))
            after = row.version
    return HandEvents(hand=span.hand, start=start, initial=state, events=events, first=first, last=after)
