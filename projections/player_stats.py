"""Read model ``player_stats``: per player and preset, summed counters (definitions in
docs/projections.md), twice: a totals row (``day`` = :data:`TOTAL`) and a row per day. Only counts
and sums are stored; every ratio (win rate, average multiplier, …) is computed at read time from
summed counts, so "overall" is the sum of the preset rows and a period the sum of its day rows,
while the all-time leaderboard and a player's stats read the totals rows only.

The day is the UTC date of the hand's time (``HandSettled.hand_at``: the ``at`` of the event that
settled it, else the latest ``at`` before it on the table). A hand whose table's events carry no
``at`` has no day: it counts in the totals only. A 漏胡 counts on the day of the latest ``at`` of
its table.

A ``hu`` recorded with a violation (a ``violations: "record"`` table) is not a win here: it counts
in ``hu_violations`` and in none of the win counters, multipliers, patterns or deal-ins. The coins
its settlement moved (none for ``not_a_winning_hand``; a real win recorded with another rule
violation is paid as scored, docs/rulings.md 28) count in the coin counters like any others.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime

import msgspec

from projections.model import Fact, HandSettled, LouHuIncurred
from projections.schema import STAT_COUNTERS, player_patterns, player_stats
from projections.sql import Connection, MultiRowInsert

NAME = "player_stats"

Key = tuple[str, str, str, date | None]  # tenant, player id, preset, day (None: no day)

TOTAL = date(1, 1, 1)  # ``day`` of the totals rows (every hand, with a day or not)


def day_of(at: str | None) -> date | None:
    """The UTC date of an RFC 3339 time as sent (``2026-11-30T23:30:00-02:00`` → 2026-12-01); None
    for no time, or one no calendar day after :data:`TOTAL` holds (year 0000, 0001-01-01)."""
    if at is None:
        return None
    text = at.upper().replace(" ", "T").replace("Z", "+00:00")
    if text[17:19] == "60":  # a leap second: the day is that of its second 59
        text = text[:17] + "59" + text[19:]
    try:
        day = datetime.fromisoformat(text).astimezone(UTC).date()
    except (ValueError, OverflowError):  # past Python's years 1…9999 in UTC: the date as written
        try:
            day = date.fromisoformat(text[:10])
        except ValueError:  # year 0000
            return None
    return day if day > TOTAL else None


class StatDelta(msgspec.Struct, kw_only=True):
    tenant: str
    player_id: str
    preset: str
    day: date | None = None
    counters: dict[str, int] = msgspec.field(default_factory=dict)
    max_multiplier: int = 0
    patterns: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.tenant, self.player_id, self.preset, self.day)

    def add(self, counter: str, n: int = 1) -> None:
        if counter not in _KNOWN:
            raise KeyError(counter)
        counters = self.counters
        counters[counter] = counters.get(counter, 0) + n


_KNOWN = frozenset(STAT_COUNTERS)  # (a set: ``in`` on the tuple scanned ≈ 25 names per add)


def _settled(fact: HandSettled) -> list[StatDelta]:
    info, s, record = fact.info, fact.settlement, fact.record
    day = day_of(fact.hand_at)
    seats = [StatDelta(tenant=info.tenant, player_id=p, preset=info.preset, day=day) for p in info.players]
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
    violated: set[tuple[int, int]] = set()
    if record is not None:
        for w in record.wins:
            robbed_by_event[(w.event, w.seat)] = w.robbed_kong
            liang_dao_by_event[(w.event, w.seat)] = w.liang_dao
            if w.violation is not None:
                violated.add((w.event, w.seat))
    else:  # no record: a zero multiplier is the recorded not_a_winning_hand (every real win has ≥ 1)
        violated = {(w.event, w.seat) for w in s.wins if w.multiplier == 0}
    real = [w for w in s.wins if (w.event, w.seat) not in violated]
    for w in s.wins:
        if (w.event, w.seat) in violated:
            seats[w.seat].add("hu_violations")
    dealt_in: set[int] = set()
    for w in real:
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
        if len(real) > 1:
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
        if len(real) > 1:
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
            tenant=fact.info.tenant, player_id=fact.info.players[fact.seat], preset=fact.info.preset,
            day=day_of(fact.table_at),
        )  # fmt: skip
        d.add("lou_hu_incurred")
        return [d]
    return []


def merge(deltas: list[StatDelta]) -> dict[Key, StatDelta]:
    """Sum the deltas of a batch per key (pure)."""
    out: dict[Key, StatDelta] = {}
    for d in deltas:
        acc = out.get(d.key)
        if acc is None:
            acc = out[d.key] = StatDelta(tenant=d.tenant, player_id=d.player_id, preset=d.preset, day=d.day)
        for name, n in d.counters.items():
            acc.counters[name] = acc.counters.get(name, 0) + n
        for name, n in d.patterns.items():
            acc.patterns[name] = acc.patterns.get(name, 0) + n
        acc.max_multiplier = max(acc.max_multiplier, d.max_multiplier)
    return out


_SLOT = {name: i for i, name in enumerate(STAT_COUNTERS)}  # a counter's place in a row's values
_WIDTH = len(STAT_COUNTERS)
_VALUES = (*STAT_COUNTERS, "max_multiplier")  # a row's values after its key, in _sums' order


def _sums(batch: list[StatDelta]) -> tuple[dict[Key, list[int]], Counter[tuple[str, str, str, str]]]:
    """Pure: the batch summed in one pass — per key its counters in :data:`STAT_COUNTERS` order and
    its greatest multiplier last, the day rows (a delta with a day) and the totals rows (every
    delta, as ``day`` = :data:`TOTAL`); and the pattern wins per (tenant, player, preset, pattern).
    The same sums as :func:`merge` twice (the rows, then their totals), without a Struct per key."""
    sums: dict[Key, list[int]] = {}
    patterns: Counter[tuple[str, str, str, str]] = Counter()
    slot, width = _SLOT, _WIDTH
    for d in batch:
        keys: tuple[Key, ...] = ((d.tenant, d.player_id, d.preset, TOTAL),)
        if d.day is not None:
            keys += ((d.tenant, d.player_id, d.preset, d.day),)
        for key in keys:
            acc = sums.get(key)
            if acc is None:
                acc = sums[key] = [0] * (width + 1)
            for name, n in d.counters.items():
                acc[slot[name]] += n
            if d.max_multiplier > acc[width]:
                acc[width] = d.max_multiplier
        for p, n in d.patterns.items():
            patterns[(d.tenant, d.player_id, d.preset, p)] += n
    return sums, patterns


def _row(key: Key, values: list[int]) -> dict[str, object]:
    """A key's upsert row: its counters and maximum that are not 0 (the statement takes a counter
    left out as 0: ``MultiRowInsert``'s ``zeros``) — a hand moves ≈ 5 of a player's 28."""
    row: dict[str, object] = {"tenant": key[0], "player_id": key[1], "preset": key[2], "day": key[3]}
    for name, n in zip(_VALUES, values, strict=True):
        if n:
            row[name] = n
    return row


def write(conn: Connection, batch: list[StatDelta]) -> None:
    if not batch:
        return
    # the batch's day rows, then its totals (every delta, with a day or not) as the TOTAL rows
    sums, patterns = _sums(batch)
    order = sorted(sums, key=lambda k: (k[3] == TOTAL, k))
    _STATS_UPSERT.execute(conn, [_row(key, sums[key]) for key in order])
    pattern_rows = [
        {"tenant": t, "player_id": player, "preset": preset, "pattern": p, "wins": n}
        for (t, player, preset, p), n in sorted(patterns.items())
    ]
    _PATTERNS_UPSERT.execute(conn, pattern_rows)


# Keys are unique per batch (merged), as ON CONFLICT DO UPDATE requires; counters add up, the
# maximum stays the maximum.
_STATS_UPSERT = MultiRowInsert(
    player_stats,
    ["tenant", "player_id", "preset", "day", *_VALUES],
    zeros=_VALUES,
    tail="ON CONFLICT (tenant, player_id, preset, day) DO UPDATE SET "
    + ", ".join(f"{c} = {player_stats.name}.{c} + excluded.{c}" for c in STAT_COUNTERS)
    + f", max_multiplier = greatest({player_stats.name}.max_multiplier, excluded.max_multiplier)",
)
_PATTERNS_UPSERT = MultiRowInsert(
    player_patterns,
    ["tenant", "player_id", "preset", "pattern", "wins"],
    "ON CONFLICT (tenant, player_id, preset, pattern) "
    f"DO UPDATE SET wins = {player_patterns.name}.wins + excluded.wins",
)
