"""Replaying from a per-hand snapshot equals folding from event 1 (a property test, no database):
given a simulated table → when its state after a random event N is rebuilt from the latest
hand_started snapshot (encoded and decoded as stored) plus the events after it → then it equals
stepping events 1, 2, … N."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain import engine
from domain.events import convert
from projections.derive import advance, new_ctx
from projections.model import EventRef, SnapshotTaken
from tests.projections.helpers import simulated


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), hands=st.integers(1, 3), data=st.data())
def test_snapshot_plus_rest_equals_stepping(seed: int, hands: int, data: Any) -> None:
    events = [convert(e) for e in simulated(seed, hands)]
    ctx = new_ctx(engine, "t", "x")
    snapshots: dict[int, bytes] = {}
    stepped = []
    for v, e in enumerate(events, start=1):
        for fact in advance(engine, ctx, e, EventRef(version=v, position=v)):
            if isinstance(fact, SnapshotTaken):
                snapshots[v] = fact.state
        stepped.append(ctx.state)
    n = data.draw(st.integers(1, len(events)), label="N")
    start = max((v for v in snapshots if v <= n), default=0)
    state = engine.decode_state(snapshots[start]) if start else engine.initial()
    for e in events[start:n]:
        state = engine.step(state, e)[0]
    assert state == stepped[n - 1]
    assert engine.encode_state(state) == engine.encode_state(stepped[n - 1])
