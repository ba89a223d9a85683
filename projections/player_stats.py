"""Read model ``player_stats``: per player and preset, summed counters (definitions in
docs/projections.md). Only counts and sums are stored; every ratio (win rate, average multiplier,
…) is computed at read time from summed counts, so "overall" is the sum of the preset rows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from projections.model import Fact, HandSettled, LouHuIncurred
from projections.schema import STAT_COUNTERS, player_patterns, player_stats
from projections.sql import Connection, MultiRowInsert

NAME = "player_stats"

Key = tuple[str, str, str]  # tenant, player id, preset


class StatDelta(msgspec.Struct, kw_only=True):
    tenant: str
    player_id: str
    preset: str
    counters: dict[str, int] = msgspec.field(default_factory=dict)
    max_multiplier: int = 0
    patterns: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.tenant, self.player_id, self.preset)

    def add(self, counter: str, n: int = 1) -> None:
        if counter not in _KNOWN:
            raise KeyError(counter)
        counters = self.counters
        counters[counter] = counters.get(counter, 0) + n


_KNOWN = frozenset(STAT_COUNTERS)  # (a set: ``in`` on the tuple scanned ≈ 25 names per add)


def _settled(fact: HandSettled) -> list[StatDelta]:
    info, s, record = fact.info, fact.settlement, fact.record
    seats = [StatDelta(tenant=info.tenant, player_id=p, preset=info.preset) for p in info.players]
    if s.end == "aborted":
        for d in seats:
            d.add("hands_aborted")
        return seats
    for seat, d in enumerate(seats):
        d.add("hands_played")
        if s.end == "exhausted":
            d.add("hands_exhausted")
        d.add("net_coins", s.net[seat])
    seats[s.dealer].add("hands_dealt")
    for t in s.transfers:
        if isinstance(t.from_, int):
            seats[t.from_].add("coins_lost", t.amount)
        if isinstance(t.to, int):
            seats[t.to].add("coins_won", t.amount)

    robbed_by_event: dict[tuple[int, int], bool] = {}
    liang_dao_by_event: dict[tuple[int, int], bool] = {}
    if record is not None:
        for w in record.wins:
            robbed_by_event[(w.event, w.seat)] = w.robbed_kong
            liang_dao_by_event[(w.event, w.seat)] = w.liang_dao
    dealt_in: set[int] = set()
    for w in s.wins:
        d = seats[w.seat]
        ids = {p.id for p in w.patterns}
        d.add("wins")
        if w.from_ is None:
            d.add("wins_self_draw")
        elif robbed_by_event.get((w.event, w.seat), "qiang_gang_hu" in ids):
            d.add("wins_robbed_kong")
            if record is None:  # otherwise counted from the kong records below
                seats[w.from_].add("robbed_kongs")
        else:
            d.add("wins_discard")
            dealt_in.add(w.from_)
        if len(s.wins) > 1:
            d.add("wins_double")
        if liang_dao_by_event.get((w.event, w.seat), "liang_dao" in ids):
            d.add("liang_dao_won")
        if w.bao_hu is not None and w.from_ is not None:
            payer = seats[w.from_]
            payer.add("bao_hu_paid")
            paid = sum(
                t.amount
                for t in s.transfers
                if t.reason == "hu" and t.from_ == w.from_ and t.to == w.seat and t.event == w.event
            )
            payer.add("bao_hu_coins", paid)
        d.add("sum_multiplier", w.multiplier)
        d.add("sum_payable", w.payable)
        d.max_multiplier = max(d.max_multiplier, w.multiplier)
        for pattern_id in sorted(ids):
            d.patterns[pattern_id] = d.patterns.get(pattern_id, 0) + 1
    for seat in dealt_in:
        seats[seat].add("deal_ins")
        if len(s.wins) > 1:
            seats[seat].add("deal_ins_double")
    if record is not None:
        for seat in sorted({decl.seat for decl in record.declarations}):
            seats[seat].add("liang_dao_declared")
        for k in record.kongs:
            if k.robbed:
                seats[k.seat].add("robbed_kongs")
                continue
            seats[k.seat].add(f"kongs_{k.kind}")
            if k.chain > 1:
                seats[k.seat].add("kongs_in_chain")
    return seats


def rows(fact: Fact) -> list[StatDelta]:
    """The pure part: a fact → the counter increments per (tenant, player, preset)."""
    if isinstance(fact, HandSettled):
        return [d for d in _settled(fact) if d.counters or d.patterns]
    if isinstance(fact, LouHuIncurred):
        d = StatDelta(
            tenant=fact.info.tenant, player_id=fact.info.players[fact.seat], preset=fact.info.preset
        )
        d.add("lou_hu_incurred")
        return [d]
    return []


def merge(deltas: list[StatDelta]) -> dict[Key, StatDelta]:
    """Sum the deltas of a batch per key (pure)."""
    out: dict[Key, StatDelta] = {}
    for d in deltas:
        acc = out.get(d.key)
        if acc is None:
            acc = out[d.key] = StatDelta(tenant=d.tenant, player_id=d.player_id, preset=d.preset)
        for name, n in d.counters.items():
            acc.counters[name] = acc.counters.get(name, 0) + n
        for name, n in d.patterns.items():
            acc.patterns[name] = acc.patterns.get(name, 0) + n
        acc.max_multiplier = max(acc.max_multiplier, d.max_multiplier)
    return out


def write(conn: Connection, batch: list[StatDelta]) -> None:
    if not batch:
        return
    merged = merge(batch)
    values: list[dict[str, Any]] = []
    for key in sorted(merged):
        d = merged[key]
        row: dict[str, Any] = {"tenant": d.tenant, "player_id": d.player_id, "preset": d.preset}
        for name in STAT_COUNTERS:
            row[name] = d.counters.get(name, 0)
        row["max_multiplier"] = d.max_multiplier
        values.append(row)
    _STATS_UPSERT.execute(conn, values)
    pattern_rows = [
        {"tenant": d.tenant, "player_id": d.player_id, "preset": d.preset, "pattern": p, "wins": n}
        for key in sorted(merged)
        for d in (merged[key],)
        for p, n in sorted(Counter(d.patterns).items())
    ]
    _PATTERNS_UPSERT.execute(conn, pattern_rows)


# Keys are unique per batch (merged), as ON CONFLICT DO UPDATE requires; counters add up, the
# maximum stays the maximum.
_STATS_UPSERT = MultiRowInsert(
    player_stats,
    ["tenant", "player_id", "preset", *STAT_COUNTERS, "max_multiplier"],
    "ON CONFLICT (tenant, player_id, preset) DO UPDATE SET "
    + ", ".join(f"{c} = {player_stats.name}.{c} + excluded.{c}" for c in STAT_COUNTERS)
    + f", max_multiplier = greatest({player_stats.name}.max_multiplier, excluded.max_multiplier)",
)
_PATTERNS_UPSERT = MultiRowInsert(
    player_patterns,
    ["tenant", "player_id", "preset", "pattern", "wins"],
    "ON CONFLICT (tenant, player_id, preset, pattern) "
    f"DO UPDATE SET wins = {player_patterns.name}.wins + excluded.wins",
)
