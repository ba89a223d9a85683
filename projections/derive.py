"""From stored events to facts, purely: fold one table's events through the engine and say what
each event made happen (a settled hand, a reported settlement to compare, a 漏胡, a hand start to
snapshot). The projector keeps one :class:`TableCtx` per table in memory and calls
:func:`advance_row` for each new event, with the ruling stored with it (the event is applied as the
append applied it, not checked again); a refold after a restart replays the table the same way and
drops the facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from domain.engine import Replayer, Ruling
from domain.events import Event, HandStarted, MaDrawn, SettlementReported, TableClosed, TableOpened
from domain.events import decode as decode_event
from projections.model import (
    EventRef,
    Fact,
    HandSettled,
    LouHuIncurred,
    ReportedLine,
    RulingRecorded,
    SettlementCompared,
    SnapshotTaken,
    TableInfo,
)


class FactCtx(msgspec.Struct, kw_only=True):
    """What fact-finding needs of a table beyond its engine state: its identity, reports waiting for
    their hand's settlement, a settlement a 买码 tile may still revise, the latest ``at``. The append
    keeps one per table (with its cached tip, and stored with the head's snapshot) to find each
    event's facts as it judges it; the projector's :class:`TableCtx` adds the state."""

    table_id: str
    tenant: str
    info: TableInfo | None = None
    pending_reports: dict[int, tuple[int, tuple[ReportedLine, ...]]] = msgspec.field(default_factory=dict)
    # ordinal of a settlement that a 买码 tile may still revise (maima on, self-draw, no ma yet)
    pending_ordinal: int = 0
    last_at: str | None = None  # the latest ``at`` of the table's events so far (None: none had one)


class TableCtx(FactCtx, kw_only=True):
    """What the projector knows of one table: the engine state after ``state.version`` events and
    the :class:`FactCtx`."""

    state: Any
    version: int = 0  # the last event version advanced over (applied, or skipped as unreadable)
    failures: int = 0  # events the engine could not apply (corrupted rows): skipped, logged


class Unreadable(ValueError):
    """A stored event the engine cannot apply."""


class _Recheck:
    """The type of :data:`RECHECK`."""


RECHECK: Final = _Recheck()
"""``advance``'s default ``ruling``: recompute the event's ruling with the engine (``engine.replay``)."""

_ruling_fields = msgspec.json.Decoder(dict[str, Any])


def stored_ruling(text: str | bytes) -> Ruling:
    """The engine's :class:`~domain.engine.Ruling` back from the ``events.ruling`` column: the JSON
    the service stores (``services.engine_adapter.ruling_json``: the ruling's fields as builtins,
    ``code`` named ``rule``). Raises on text that is not such a ruling."""
    fields = _ruling_fields.decode(text)
    fields["code"] = fields.pop("rule")
    return msgspec.convert(fields, Ruling)


def new_ctx(engine: Replayer, table_id: str, tenant: str) -> TableCtx:
    return TableCtx(table_id=table_id, tenant=tenant, state=engine.initial())


def _info(ctx: FactCtx, event: TableOpened, state: Any) -> TableInfo:
    rules = getattr(state, "rules", None)
    preset = getattr(rules, "preset", None) or str(event.rules.get("preset", "default"))
    p = event.players
    return TableInfo(
        table_id=ctx.table_id, tenant=ctx.tenant, players=(p[0], p[1], p[2]), preset=preset, base=event.base
    )


def _lou_hu(state: Any) -> dict[tuple[int, int, int], Any]:
    """Every 漏胡 the state knows of (finished hands' and the current hand's), by (hand, seat, event)."""
    out = {(lou.hand, lou.seat, lou.event): lou for lou in getattr(state, "lou_hu_log", ())}
    hand = getattr(state, "hand", None)
    if hand is not None:
        for lou in getattr(hand, "lou_hu_log", ()):
            out[(lou.hand, lou.seat, lou.event)] = lou
    return out


def _lou_hu_may_differ(before: Any, after: Any) -> bool:
    """False when both 漏胡 logs are the very same objects (the reducer keeps an unchanged field by
    reference), so no 漏胡 can be new: skips building two dicts per event. (True also when a hand
    starts or ends: then the logs are compared.)"""
    if before.lou_hu_log is not after.lou_hu_log:
        return True
    hand_before, hand_after = before.hand, after.hand
    if hand_before is hand_after:  # the same hand object: the same log
        return False
    if hand_before is None or hand_after is None:
        return True
    return bool(hand_before.lou_hu_log is not hand_after.lou_hu_log)


# Event classes are final (no subclasses), so ``type(event) is X`` decides what ``isinstance`` did.
_SETTLES_PENDING = frozenset({MaDrawn, HandStarted, TableClosed})
# Events that may give a fact whatever the state did (a snapshot, a report, a held settlement).
_MAY_GIVE_FACTS = frozenset({HandStarted, SettlementReported, TableClosed, MaDrawn})


def _record_for(state: Any, hand_no: int) -> Any:
    hand = getattr(state, "hand", None)
    record = getattr(hand, "record", None) if hand is not None else None
    return record if record is not None and record.hand == hand_no else None


def advance(
    engine: Replayer,
    ctx: TableCtx,
    body: str | bytes | Event,
    at: EventRef,
    ruling: str | bytes | _Recheck | None = RECHECK,
) -> list[Fact]:
    """Apply one stored event (version ``at.version``) to ``ctx`` in place; the facts it produced.

    ``ruling`` is the event's stored ruling (``events.ruling``: JSON text, None for a legal event):
    every stored event was accepted when it was appended, so the projector applies it with that
    ruling (``engine.evolve``, what the append did) instead of checking its legality again. By
    default (:data:`RECHECK`) the engine recomputes the ruling (``engine.replay``).

    Raises :class:`Unreadable` (after moving ``ctx.version`` on) when the stored event (or its
    ruling) cannot be decoded or applied — a row changed behind the service's back; ``kwx verify``
    reports those.
    """
    return advance_row(engine, ctx, body, ruling, at.version, at.position, at.tx_id)


def advance_row(
    engine: Replayer,
    ctx: TableCtx,
    body: str | bytes | Event,
    ruling: str | bytes | _Recheck | None,
    version: int,
    position: int,
    tx_id: int,
) -> list[Fact]:
    """:func:`advance` with the log row's fields as they come: the projector's per-event call (the
    facts' :class:`EventRef` is made only when there is a fact)."""
    before = ctx.state
    ctx.version = version
    try:
        event = decode_event(body) if isinstance(body, (str, bytes)) else body
        if ruling is None:
            after = engine.evolve(before, event)
        elif ruling is RECHECK:
            # A stored event was accepted when it was appended (legal, or recorded as a violation):
            # replay applies it even if an engine change refuses it now (the fold of every read).
            after = engine.replay(before, event)
        else:
            assert not isinstance(ruling, _Recheck)
            after = engine.evolve(before, event, stored_ruling(ruling))
    except Exception as exc:
        ctx.failures += 1
        raise Unreadable(f"{ctx.table_id} v{version}: {exc}") from exc
    ctx.state = after
    return observe(engine, ctx, event, before, after, ruling, version, position, tx_id)


def observe(
    engine: Any,
    ctx: FactCtx,
    event: Event,
    before: Any,
    after: Any,
    ruling: str | bytes | _Recheck | None,
    version: int,
    position: int = 0,
    tx_id: int = 0,
) -> list[Fact]:
    """The facts of one event that took the table from ``before`` to ``after`` (``ruling``: the
    ruling stored with it as JSON text, None for a legal event, :data:`RECHECK` for none known),
    moving ``ctx`` on. The one fact-finder: the projector's fold calls it through
    :func:`advance_row`, the append (``services.store.batch``) as it judges each event — so stored
    facts are what the fold would find (``engine``: anything with ``encode_state``)."""
    if event.at is not None:
        ctx.last_at = event.at
    kind = type(event)
    if kind is TableOpened and isinstance(event, TableOpened):  # (isinstance: for the type checker)
        ctx.info = _info(ctx, event, after)
    info = ctx.info
    if info is None:
        return []
    # Most events (draws, discards) give no fact: no settlement added, no 漏胡 logged.
    new_lou_hu = _lou_hu_may_differ(before, after)
    if not new_lou_hu and kind not in _MAY_GIVE_FACTS and after.settlements is before.settlements:
        if ruling is None or ruling is RECHECK:
            return []
        return [_ruled(info, EventRef(version=version, position=position, tx_id=tx_id), event, after, ruling)]
    at = EventRef(version=version, position=position, tx_id=tx_id)
    facts = _facts(engine, ctx, info, at, event, kind, before, after, new_lou_hu)
    if ruling is not None and ruling is not RECHECK:
        facts.insert(0, _ruled(info, at, event, after, ruling))
    return facts


class FactsFailed(Exception):
    """The fact-finder raised on the ``index``-th event of a batch (its cause is chained)."""

    def __init__(self, index: int) -> None:
        super().__init__(f"facts not found for the event at index {index}")
        self.index = index


# what observe_batch always looks at: events that may give facts whatever the state did, and the
# table's opening (its identity)
_LOOK_AT = _MAY_GIVE_FACTS | {TableOpened}


def observe_batch(
    engine: Any,
    ctx: FactCtx,
    events: Sequence[Event],
    states: Sequence[Any],
    rulings: dict[int, str],
    first: int,
) -> list[tuple[int, list[Fact]]]:
    """:func:`observe` over a judged batch — ``states`` the state before each event and after the
    last, ``rulings`` the stored ruling texts by index, ``first`` the first event's version — as
    (index, facts) for the events that gave some, moving ``ctx`` on. The append's one call per
    batch: an event that can give no fact (no settlement added, no 漏胡 logged, no ruling, not a
    kind that gives facts by itself) costs a few identity checks, not a call. Raises
    :class:`FactsFailed` (index) if the fact-finder fails."""
    out: list[tuple[int, list[Fact]]] = []
    last_at = ctx.last_at
    look_at = _LOOK_AT
    before = states[0]
    for i, event in enumerate(events):
        after = states[i + 1]
        at = event.at
        if at is not None:
            last_at = at
        if not (
            type(event) in look_at
            or after.settlements is not before.settlements
            or after.lou_hu_log is not before.lou_hu_log
            or (i in rulings if rulings else False)
            or (
                (hb := before.hand) is not (ha := after.hand)
                and (hb is None or ha is None or hb.lou_hu_log is not ha.lou_hu_log)
            )
        ):
            before = after
            continue
        ctx.last_at = last_at
        try:
            facts = observe(engine, ctx, event, before, after, rulings.get(i), first + i)
        except Exception as exc:
            raise FactsFailed(i) from exc
        if facts:
            out.append((i, facts))
        before = after
    ctx.last_at = last_at
    return out


def _ruled(info: TableInfo, at: EventRef, event: Event, after: Any, ruling: Any) -> RulingRecorded:
    """The recorded violation stored with the event (``events.ruling``, JSON text); ``hand``: the
    hand last started at the table (None before the first)."""
    fields = _ruling_fields.decode(ruling)
    detail = fields.get("detail")
    hand_no = getattr(after, "hand_no", 0)
    return RulingRecorded(
        info=info, at=at, event_type=str(event.__struct_config__.tag),
        hand=hand_no if isinstance(hand_no, int) and hand_no > 0 else None,
        rule=str(fields.get("rule", "")), kind=str(fields.get("kind", "")),
        message=str(fields.get("message", "")), message_zh=str(fields.get("message_zh", "")),
        detail=detail if isinstance(detail, dict) else {},
    )  # fmt: skip


def _facts(
    engine: Any,
    ctx: FactCtx,
    info: TableInfo,
    at: EventRef,
    event: Event,
    kind: type,
    before: Any,
    after: Any,
    new_lou_hu: bool,
) -> list[Fact]:
    facts: list[Fact] = []
    if kind is HandStarted and isinstance(event, HandStarted):
        facts.append(
            SnapshotTaken(info=info, at=at, hand=event.hand, state=bytes(engine.encode_state(after)))
        )
    if new_lou_hu:
        old_lou_hu = _lou_hu(before)
        for key, lou in _lou_hu(after).items():
            if key in old_lou_hu:
                continue
            facts.append(
                LouHuIncurred(
                    info=info, at=at, seat=lou.seat, hand=lou.hand, tile=_tile_name(lou.tile),
                    would_pay=lou.multiplier, table_at=ctx.last_at,
                )
            )  # fmt: skip
    # Settlements: final when the engine produces them, except a self-draw on a 买码 table, which
    # the ma_drawn event settles again; that one is held until ma_drawn (or the next hand).
    if ctx.pending_ordinal and kind in _SETTLES_PENDING:
        source_state = before if kind is HandStarted else after
        if len(source_state.settlements) >= ctx.pending_ordinal:
            s = source_state.settlements[ctx.pending_ordinal - 1]
            facts.extend(_settled(ctx, info, at, ctx.pending_ordinal, s, _record_for(source_state, s.hand)))
        ctx.pending_ordinal = 0
    settled_before = len(before.settlements)
    if len(after.settlements) != settled_before:
        for i, settlement in enumerate(after.settlements[settled_before:], start=settled_before + 1):
            record = _record_for(after, settlement.hand)
            if _ma_may_follow(after, record):
                ctx.pending_ordinal = i
                continue
            facts.extend(_settled(ctx, info, at, i, settlement, record))
    if kind is SettlementReported and isinstance(event, SettlementReported):
        lines = tuple(ReportedLine(from_=t.from_, to=t.to, amount=t.amount) for t in event.transfers)
        computed = next((s for s in reversed(after.settlements) if s.hand == event.hand), None)
        pending_hand = after.settlements[ctx.pending_ordinal - 1].hand if ctx.pending_ordinal else None
        if computed is None or pending_hand == event.hand:
            ctx.pending_reports[event.hand] = (at.version, lines)
        else:
            facts.append(_compared(info, at, event.hand, at.version, lines, computed))
    if kind is TableClosed:  # reports of hands that were never settled: computed is None
        for hand_no, (reported_event, lines) in sorted(ctx.pending_reports.items()):
            facts.append(_compared(info, at, hand_no, reported_event, lines, None))
        ctx.pending_reports.clear()
    return facts


def _ma_may_follow(state: Any, record: Any) -> bool:
    rules = getattr(state, "rules", None)
    if rules is None or not rules.maima or record is None or record.ma_tile is not None:
        return False
    return record.end == "hu" and any(w.source is None for w in record.wins)


def _settled(
    ctx: FactCtx, info: TableInfo, at: EventRef, ordinal: int, settlement: Any, record: Any
) -> list[Fact]:
    out: list[Fact] = [
        HandSettled(
            info=info, at=at, ordinal=ordinal, settlement=settlement, record=record, hand_at=ctx.last_at
        )
    ]
    pending = ctx.pending_reports.pop(settlement.hand, None)
    if pending is not None:
        out.append(_compared(info, at, settlement.hand, pending[0], pending[1], settlement))
    return out


def _compared(
    info: TableInfo,
    at: EventRef,
    hand: int,
    reported_event: int,
    lines: tuple[ReportedLine, ...],
    computed: Any,
) -> SettlementCompared:
    return SettlementCompared(
        info=info, at=at, hand=hand, reported_event=reported_event, reported=lines, computed=computed
    )


def _tile_name(kind: int) -> str:
    from domain.tiles import name

    return name(kind)
