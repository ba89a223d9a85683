"""Facts from simulated tables (no database): given every preset, including 买码 tables whose
self-draw settlements are revised by ma_drawn → when the events are advanced one by one → then
each settlement is projected exactly once and equals the engine's final one, each report is
compared once, and each 漏胡 is counted once. On tables that record violations, applying each
event with its stored ruling (as the projector does) equals folding with every check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain import engine
from domain.events import Event, convert
from projections.derive import Unreadable, advance, new_ctx, stored_ruling
from projections.model import (
    EventRef,
    HandSettled,
    LouHuIncurred,
    RulingRecorded,
    SettlementCompared,
    SnapshotTaken,
)
from tests.projections.helpers import PRESETS, simulated, violating


@pytest.mark.parametrize("preset", PRESETS)
def test_each_settlement_report_and_lou_hu_once(preset: str) -> None:
    for seed in range(6):
        events = [convert(e) for e in simulated(seed, 4, preset=preset)]
        ctx = new_ctx(engine, "t", "acme")
        facts = []
        for v, e in enumerate(events, start=1):
            facts += advance(engine, ctx, e, EventRef(version=v, position=v))
        state = engine.fold(events)
        settled = [f for f in facts if isinstance(f, HandSettled)]
        assert [f.settlement for f in settled] == list(state.settlements)
        assert [f.ordinal for f in settled] == list(range(1, len(state.settlements) + 1))
        compared = [f for f in facts if isinstance(f, SettlementCompared)]
        assert sorted(f.reported_event for f in compared) == sorted(r.event for r in state.reported)
        for f in compared:
            final = next(s for s in reversed(state.settlements) if s.hand == f.hand)
            assert f.computed == final  # compared with the settlement after 买码, never before
        lou = {(x.hand, x.seat, x.event) for x in state.lou_hu_log}
        if state.hand is not None:
            lou |= {(x.hand, x.seat, x.event) for x in state.hand.lou_hu_log}
        assert len([f for f in facts if isinstance(f, LouHuIncurred)]) == len(lou)
        starts = [f for f in facts if isinstance(f, SnapshotTaken)]
        assert len(starts) == sum(1 for e in events if type(e).__name__ == "HandStarted")


@pytest.mark.parametrize("preset", PRESETS)
def test_skipping_unchanged_lou_hu_logs_gives_the_same_facts(
    preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections import derive

    def facts_of(events: list[object]) -> list[object]:
        ctx = new_ctx(engine, "t", "acme")
        out: list[object] = []
        for v, e in enumerate(events, start=1):
            out += advance(engine, ctx, e, EventRef(version=v, position=v))  # type: ignore[arg-type]
        return out

    lou_hu = 0
    for seed in range(6):
        events = [convert(e) for e in simulated(seed, 4, preset=preset)]
        fast = facts_of(events)
        with monkeypatch.context() as m:
            m.setattr(derive, "_lou_hu_may_differ", lambda before, after: True)  # always compare
            slow = facts_of(events)
        assert fast == slow
        lou_hu += sum(isinstance(f, LouHuIncurred) for f in slow)
    assert lou_hu, "the simulator passes some wins (漏胡), so the comparison is exercised"


def _with_stored_rulings(wire: list[dict[str, object]]) -> list[tuple[Event, str | None]]:
    """Each event with the ``events.ruling`` text the store keeps for it: the service's engine
    adapter steps it (``ruling_json``) and the store encodes that as JSON (services/store/events.py)."""
    import msgspec

    from services.engine_adapter import DomainEngine

    adapter = DomainEngine()
    state = adapter.initial()
    out: list[tuple[Event, str | None]] = []
    for raw in wire:
        event = convert(raw)
        verdict = adapter.step(state, event)
        assert verdict.accepted
        out.append(
            (event, msgspec.json.encode(verdict.ruling).decode() if verdict.ruling is not None else None)
        )
        state = verdict.state
    return out


def test_stored_rulings_are_the_engines_rulings_again() -> None:
    import msgspec

    from services.engine_adapter import ruling_json

    rulings = []
    for seed in range(12):
        wire, _ = violating(seed, 3)
        rulings += engine.fold([convert(e) for e in wire]).rulings
    rulings += _lou_hu_record_table().rulings
    assert {r.code for r in rulings} >= {"not_a_winning_hand", "liang_dao_not_ready", "lou_hu"}
    for ruling in rulings:
        fields = ruling_json(ruling)
        # as PostgreSQL's jsonb gives it back: keys in another order
        text = msgspec.json.encode(dict(reversed(list(fields.items()))))
        rebuilt = stored_ruling(text)
        assert rebuilt == ruling
        assert type(rebuilt.detail) is dict and rebuilt.detail == ruling.detail


def _lou_hu_record_table() -> Any:
    wire = _golden_lou_hu()
    return engine.fold([convert(e) for e in wire])


def _golden_lou_hu() -> list[dict[str, Any]]:
    """tests/golden/lou-hu-rejected.jsonl (a hu after 漏胡) on a table that records violations."""
    import json
    from pathlib import Path

    lines = (Path(__file__).parents[1] / "golden" / "lou-hu-rejected.jsonl").read_text().splitlines()
    wire = [json.loads(line) for line in lines if line.strip()]
    wire[0] = dict(wire[0], violations="record")
    return wire


@pytest.mark.parametrize("seed", range(8))
def test_applying_the_stored_ruling_equals_folding_with_checks(seed: int) -> None:
    wire, codes = violating(seed, 3) if seed else (_golden_lou_hu(), ["lou_hu"])
    stored = _with_stored_rulings(wire)
    assert codes and sum(ruling is not None for _, ruling in stored) == len(codes)
    folded = engine.fold([e for e, _ in stored])  # every event checked, as `kwx settle` folds
    trusted, rechecked = new_ctx(engine, "t", "acme"), new_ctx(engine, "t", "acme")
    trusted_facts, rechecked_facts = [], []
    for v, (event, ruling) in enumerate(stored, start=1):
        at = EventRef(version=v, position=v)
        trusted_facts += advance(engine, trusted, event, at, ruling)
        rechecked_facts += advance(engine, rechecked, event, at)
    assert trusted.state == folded == rechecked.state
    assert engine.encode_state(trusted.state) == engine.encode_state(folded)
    # the same facts, and with the stored ruling also one RulingRecorded per ruling (the feed's)
    recorded = [f for f in trusted_facts if isinstance(f, RulingRecorded)]
    assert [f for f in trusted_facts if not isinstance(f, RulingRecorded)] == rechecked_facts
    assert [f.rule for f in recorded] == [json.loads(r)["rule"] for _, r in stored if r is not None]
    assert sorted(f.rule for f in recorded) == sorted(codes)
    assert len(folded.rulings) == len(codes)
    settled = [f.settlement for f in trusted_facts if isinstance(f, HandSettled)]
    assert settled == list(folded.settlements)
    # the ruling matters: applied without it, the state differs (the recorded rulings are missing)
    blind = new_ctx(engine, "t", "acme")
    for v, (event, _) in enumerate(stored, start=1):
        advance(engine, blind, event, EventRef(version=v, position=v), None)
    assert blind.state.rulings == () and blind.state != folded


def test_a_recorded_false_hu_settles_as_the_engine_does() -> None:
    """A hu that is not a winning hand, applied with its stored ruling, is a win marked as the
    violation (RULES: it pays nothing); without the ruling it would be scored as a real win."""
    found = 0
    for seed in range(1, 30):
        wire, codes = violating(seed, 2)
        if "not_a_winning_hand" not in codes:
            continue
        stored = _with_stored_rulings(wire)
        ctx = new_ctx(engine, "t", "acme")
        facts = []
        for v, (event, ruling) in enumerate(stored, start=1):
            facts += advance(engine, ctx, event, EventRef(version=v, position=v), ruling)
        marked = [
            w for f in facts if isinstance(f, HandSettled) and f.record is not None for w in f.record.wins
            if w.violation == "not_a_winning_hand"
        ]  # fmt: skip
        found += len(marked)
    assert found >= 3


def test_an_unreadable_stored_ruling_is_unreadable() -> None:
    events = [convert(e) for e in simulated(1, 1)]
    ctx = new_ctx(engine, "t", "acme")
    advance(engine, ctx, events[0], EventRef(version=1, position=1), None)
    with pytest.raises(Unreadable):
        advance(engine, ctx, events[1], EventRef(version=2, position=2), '{"rule": 5}')
    assert (ctx.version, ctx.failures, ctx.state.version) == (2, 1, 1)
    with pytest.raises(Unreadable):
        advance(
            engine, ctx, '{"type": "tile_discarded", "tile": "ZZ"}', EventRef(version=3, position=3), None
        )
    assert (ctx.version, ctx.failures) == (3, 2)
