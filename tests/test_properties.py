"""Property tests over simulated tables (Hypothesis draws the seeds; example counts are bounded so
the suite stays fast).

Given a simulated table (domain/simulate.py) → when it is folded event by event → then tiles are
conserved, every settlement is zero-sum, folding in two parts equals folding at once, events and
states survive a JSON round trip, every simulated event is legal and a mutated one is rejected.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import cache
from itertools import pairwise
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import engine
from domain.events import canonical_bytes, convert, decode
from domain.rulings import ALL_CODES
from domain.simulate import simulate_table
from domain.state import TableState
from domain.tiles import N_KINDS, TILE_INDEX, TILE_NAMES
from domain.walls import remaining

PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]

seeds = st.integers(min_value=0, max_value=2**32 - 1)
presets = st.sampled_from(PRESETS)
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def table(seed: int, preset: str, hands: int = 3) -> tuple[dict[str, Any], ...]:
    return tuple(simulate_table(random.Random(seed), hands, {"preset": preset}, f"p{seed}"))


def states(events: tuple[dict[str, Any], ...]) -> list[TableState]:
    """The state after each event (asserting that each is accepted without a ruling)."""
    out = []
    state = engine.initial()
    for i, wire in enumerate(events):
        state, ruling, accepted = engine.step(state, convert(wire))
        assert accepted and ruling is None, (i, wire, ruling)
        out.append(state)
    return out


def tiles_in_play(state: TableState) -> int | None:
    hs = state.hand
    if hs is None:
        return None
    concealed = sum(sum(c) for c in hs.concealed)
    melds = sum(m.size for ms in hs.melds for m in ms)
    discards = sum(1 for ds in hs.discards for d in ds if not d.claimed)
    ma = 1 if hs.record.ma_tile is not None else 0  # turned from the wall, in nobody's hand
    # 抢杠胡: the reducer turns the robbed 补杠 back into a 碰 and keeps the robbed tile in no pile
    robbed = 1 if any(w.robbed_kong for w in hs.record.wins) else 0
    return concealed + melds + discards + remaining(hs) + ma + robbed


@FEW
@given(seeds, presets)
def test_tiles_are_conserved_at_every_step(seed: int, preset: str) -> None:
    for state in states(table(seed, preset)):
        n = tiles_in_play(state)
        assert n is None or n == 84


@FEW
@given(seeds, presets)
def test_every_settlement_is_zero_sum_with_the_house(seed: int, preset: str) -> None:
    final = engine.fold(convert(e) for e in table(seed, preset))
    assert final.closed
    assert len(final.settlements) == 3
    for s in final.settlements:
        assert sum(s.net) + s.house == 0
        net = [0, 0, 0]
        for t in s.transfers:
            assert t.amount > 0 and t.from_ != t.to
            if t.from_ != "house":
                net[t.from_] -= t.amount
            if t.to != "house":
                net[t.to] += t.amount
        assert tuple(net) == s.net
        assert [t.event for t in s.transfers] == sorted(t.event for t in s.transfers)
        if s.end == "aborted":  # nothing of a voided hand is settled
            assert not s.transfers and not s.wins and s.next_dealer == s.dealer
        elif s.end == "exhausted":
            assert not s.wins
        else:  # the winner deals next; after 一炮双响 the discarder
            want = s.wins[0].seat if len(s.wins) == 1 else s.wins[0].from_
            assert s.next_dealer == want


@FEW
@given(seeds, presets, st.data())
def test_fold_in_two_parts_equals_fold_at_once(seed: int, preset: str, data: st.DataObject) -> None:
    events = [convert(e) for e in table(seed, preset)]
    cut = data.draw(st.integers(min_value=0, max_value=len(events)), label="cut")
    whole = engine.encode_state(engine.fold(events))
    prefix = engine.fold(events[:cut])
    resumed = engine.decode_state(engine.encode_state(prefix))  # through a snapshot
    for ev in events[cut:]:
        resumed, ruling, accepted = engine.step(resumed, ev)
        assert accepted and ruling is None
    assert engine.encode_state(resumed) == whole


@FEW
@given(seeds, presets, st.data())
def test_events_and_states_survive_json(seed: int, preset: str, data: st.DataObject) -> None:
    events = table(seed, preset)
    for wire in events:
        ev = convert(wire)
        assert decode(canonical_bytes(ev)) == ev
        assert decode(msgspec.json.encode(wire)) == ev
    all_states = states(events)
    for i in data.draw(st.lists(st.integers(0, len(all_states) - 1), min_size=1, max_size=5), label="at"):
        raw = engine.encode_state(all_states[i])
        back = engine.decode_state(raw)
        assert back == all_states[i]
        assert engine.encode_state(back) == raw


def _mutations(state: TableState, wire: dict[str, Any]) -> list[dict[str, Any]]:
    """Changes of one field that can never be legal in this state."""
    hs = state.hand
    out: list[dict[str, Any]] = []
    kind = wire["type"]
    if kind in ("tile_drawn", "tile_discarded", "liang_dao"):  # only the seat in turn may
        out.extend({**wire, "seat": seat} for seat in range(3) if seat != wire["seat"])
    if kind == "tile_drawn" and hs is not None and hs.wall is not None:
        out.append({**wire, "tile": TILE_NAMES[(TILE_INDEX[wire["tile"]] + 1) % N_KINDS]})
    if kind == "tile_discarded" and hs is not None:
        missing = [k for k in range(N_KINDS) if hs.concealed[wire["seat"]][k] == 0]
        if missing:
            out.append({**wire, "tile": TILE_NAMES[missing[0]]})
    if kind == "hu":
        out.append({**wire, "tile": TILE_NAMES[(TILE_INDEX[wire["tile"]] + 1) % N_KINDS]})
    if kind == "hand_started":
        out.append({**wire, "hand": wire["hand"] + 1})
    return out


@FEW
@given(seeds, presets, st.data())
def test_simulated_events_are_legal_and_mutations_are_rejected(
    seed: int, preset: str, data: st.DataObject
) -> None:
    events = table(seed, preset)
    before = [engine.initial(), *states(events)[:-1]]
    candidates = [(i, m) for i, w in enumerate(events) for m in _mutations(before[i], w)]
    assert candidates
    picks = data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=8), label="mutations")
    for i, mutated in picks:
        ruling = engine.check(before[i], convert(mutated))
        assert ruling is not None, (i, events[i], mutated)
        assert ruling.code in ALL_CODES
        assert ruling.message
        state, _, accepted = engine.step(before[i], convert(mutated))
        assert not accepted and state is before[i]
    assert engine.fold(convert(e) for e in events).closed


def test_same_seed_same_stream() -> None:
    a = simulate_table(random.Random(42), 4, {"preset": "platform_3d"}, "same")
    b = simulate_table(random.Random(42), 4, {"preset": "platform_3d"}, "same")
    c = simulate_table(random.Random(43), 4, {"preset": "platform_3d"}, "same")
    assert a == b
    assert a != c


def _variety(events: list[dict[str, Any]], final: TableState) -> Counter[str]:
    seen: Counter[str] = Counter()
    for prev, wire in pairwise(events):
        t = wire["type"]
        seen[t] += 1
        if t == "kong":
            seen[f"kong_{wire['kind']}"] += 1
        if t == "hand_started" and "wall" not in wire:
            seen["wall_sha256_only"] += 1
        if t == "hu":
            seen["self_draw" if wire["from"] is None else "discard_win"] += 1
            if len(wire["winners"]) == 2:
                seen["double_win"] += 1
            if prev["type"] == "kong" and prev["kind"] == "added":
                seen["robbed_kong"] += 1
    for s in final.settlements:
        seen[f"end_{s.end}"] += 1
        if any("杠上杠" in t.detail for t in s.transfers):
            seen["kong_chain"] += 1
        if any(w.bao_hu for w in s.wins):
            seen["bao_hu"] += 1
    seen["lou_hu"] += len(final.lou_hu_log)
    computed = {s.hand: Counter() for s in final.settlements}
    for s in final.settlements:
        for t in s.transfers:
            computed[s.hand][(t.from_, t.to)] += t.amount
    for r in final.reported:
        reported: Counter[tuple[Any, Any]] = Counter()
        for a, b, amount in r.transfers:
            reported[(a, b)] += amount
        seen["report_matches" if +reported == +computed[r.hand] else "report_differs"] += 1
    return seen


def test_the_simulator_produces_every_variety() -> None:
    wanted = [
        "peng", "kong_concealed", "kong_added", "kong_exposed", "kong_chain", "liang_dao", "lou_hu",
        "self_draw", "discard_win", "robbed_kong", "double_win", "bao_hu", "end_hu", "end_exhausted",
        "end_aborted", "ma_drawn", "wall_sha256_only", "wall_revealed", "report_matches",
        "report_differs", "table_closed",
    ]  # fmt: skip
    total: Counter[str] = Counter()
    # a few hundred hands (12 tables × 25) normally show everything; rare ones get up to 1,200
    for i in range(48):
        events = simulate_table(random.Random(1000 + i), 25, {"preset": PRESETS[i % len(PRESETS)]}, f"v{i}")
        total += _variety(events, engine.fold(convert(e) for e in events))
        if i >= 11 and all(total[w] for w in wanted):
            break
    missing = [w for w in wanted if not total[w]]
    assert not missing, (missing, total)
    assert total["end_hu"] > 5 * total["end_exhausted"]  # wins are common, not just exhausted hands
    assert total["report_matches"] > 3 * total["report_differs"]  # mostly right, sometimes wrong
