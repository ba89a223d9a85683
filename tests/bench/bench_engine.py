"""Replay speed of the engine: fold (legality check + evolve + settlement) over simulated hands.

Simulates ``TABLES × HANDS`` hands once (not timed; mixed presets, seeded), keeps each table as
JSON lines, then times, best of ``REPEAT``:

- baseline: msgspec-decoding every event of every table (the floor of any replay);
- replay: decoding + ``engine.fold`` of every table (every event checked, applied, every hand
  settled); also once with the engine's per-suit caches emptied first ("cold");
- settle only: ``settle_hand`` over the HandRecords of every finished hand.

Reports hands/s, events/s, the replay / baseline ratio and the peak memory of one replay
(tracemalloc, measured in a separate untimed pass). Target: ≥ 1,000 hands/s on one core.

Run: ``.venv/bin/python -m tests.bench.bench_engine`` (or ``make bench``).
"""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Callable

import msgspec

from tests.bench import knob

TABLES = knob("KWX_BENCH_TABLES", 40, 4)
HANDS = knob("KWX_BENCH_HANDS", 25, 2)
REPEAT = knob("KWX_BENCH_REPEAT", 3, 1)
PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"]


def _best(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _clear_caches() -> None:
    """Empty the engine's functools caches (per-suit shapes), whichever modules have them."""
    import importlib

    for module_name in ("domain.ready", "domain.shape"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def run() -> None:
    from domain import engine
    from domain.events import convert, decode_list
    from domain.facts import HandRecord
    from domain.settle import settle_hand
    from domain.simulate import simulate_table

    t0 = time.perf_counter()
    encoder = msgspec.json.Encoder()
    tables: list[bytes] = []
    records: list[tuple[HandRecord, object]] = []
    n_events = n_hands = 0
    for i in range(TABLES):
        events = simulate_table(
            random.Random(7_000 + i), HANDS, {"preset": PRESETS[i % len(PRESETS)]}, f"b{i}"
        )
        tables.append(encoder.encode(events))
        n_events += len(events)
        state = engine.initial()
        for wire in events:
            state, _, _ = engine.step(state, convert(wire))
            hs = state.hand
            if hs is not None and wire["type"] in ("hu", "hand_exhausted", "hand_aborted"):
                records.append((hs.record, state.rules))
        n_hands += len(state.settlements)
    sim_s = time.perf_counter() - t0

    def baseline() -> None:
        for data in tables:
            decode_list(data)

    def replay() -> None:
        for data in tables:
            engine.fold(decode_list(data))

    def settle_only() -> None:
        for record, rules in records:
            settle_hand(record, rules)  # type: ignore[arg-type]

    _clear_caches()
    t0 = time.perf_counter()
    replay()  # cold: the engine's per-suit caches start empty
    cold_s = time.perf_counter() - t0
    base_s = _best(baseline)
    replay_s = _best(replay)
    settle_s = _best(settle_only)

    tracemalloc.start()
    replay()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"bench_engine: {TABLES} tables × {HANDS} hands = {n_hands} hands, {n_events} events")
    print(f"  simulated once in {sim_s:.2f} s (not timed)")
    print(f"  baseline msgspec decode : {n_events / base_s:12,.0f} events/s  ({base_s * 1e3:8.1f} ms)")
    print(
        f"  replay (decode+fold)    : {n_hands / replay_s:12,.0f} hands/s, "
        f"{n_events / replay_s:,.0f} events/s  ({replay_s * 1e3:8.1f} ms) "
        f"= {replay_s / base_s:.1f}× the decode baseline"
    )
    print(f"  replay, cold caches     : {n_hands / cold_s:12,.0f} hands/s  ({cold_s * 1e3:8.1f} ms)")
    print(f"  settle_hand only        : {len(records) / settle_s:12,.0f} hands/s")
    print(f"  peak memory of a replay : {peak / 2**20:.1f} MiB (tracemalloc)")
    print(f"  target ≥ 1,000 hands/s  : {'met' if n_hands / replay_s >= 1000 else 'NOT met'}")


if __name__ == "__main__":
    run()
