"""Facts from simulated tables (no database): given every preset, including 买码 tables whose
self-draw settlements are revised by ma_drawn → when the events are advanced one by one → then
each settlement is projected exactly once and equals the engine's final one, each report is
compared once, and each 漏胡 is counted once."""

from __future__ import annotations

import pytest

from domain import engine
from domain.events import convert
from projections.derive import advance, new_ctx
from projections.model import EventRef, HandSettled, LouHuIncurred, SettlementCompared, SnapshotTaken
from tests.projections.helpers import PRESETS, simulated


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
