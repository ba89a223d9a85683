"""Queries of the ``player_stats`` read model: a player's statistics and the leaderboard. Every
ratio is computed here from the summed counts (never an average of averages); definitions in
docs/projections.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

from sqlalchemy import Numeric, cast, func, nulls_last, select

from projections import player_stats
from projections.player_stats import TOTAL
from projections.schema import STAT_COUNTERS, player_patterns
from projections.schema import player_stats as stats_table
from projections.sql import Connection, fetch


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def with_ratios(c: dict[str, int]) -> dict[str, Any]:
    """The counters plus the ratios derived from them (definitions: docs/projections.md)."""
    out: dict[str, Any] = dict(c)
    out["ratios"] = {name: _ratio(c[num], c[den]) for name, (num, den) in RATIOS.items()}
    return out


RATIOS: dict[str, tuple[str, str]] = {  # ratio -> (numerator, denominator)
    "win_rate": ("wins", "hands_played"),
    "self_draw_share": ("wins_self_draw", "wins"),
    "deal_in_rate": ("deal_ins", "hands_played"),
    "liang_dao_rate": ("liang_dao_declared", "hands_played"),
    "liang_dao_success": ("liang_dao_won", "liang_dao_declared"),
    "lou_hu_per_hand": ("lou_hu_incurred", "hands_played"),
    "average_multiplier": ("sum_multiplier", "wins"),
    "average_payable": ("sum_payable", "wins"),
    "net_coins_per_hand": ("net_coins", "hands_played"),
}
# every statistic a leaderboard row shows: the counters, max_multiplier and the ratios
SORTABLE: tuple[str, ...] = (*STAT_COUNTERS, "max_multiplier", *RATIOS)
ORDERS = ("desc", "asc")


@dataclass(frozen=True, slots=True)
class PlayerStats:
    """A player's statistics per preset (only ``preset`` when given) and overall; None: none."""

    models: ClassVar[tuple[str, ...]] = (player_stats.NAME,)
    tenant: str
    player_id: str
    preset: str | None = None

    def __call__(self, conn: Connection) -> dict[str, Any] | None:
        c = stats_table.c
        p = player_patterns.c
        cols = [c.preset, *[func.sum(c[n]) for n in STAT_COUNTERS], func.max(c.max_multiplier)]
        where = [c.tenant == self.tenant, c.player_id == self.player_id, c.day == TOTAL]  # the totals rows
        pwhere = [p.tenant == self.tenant, p.player_id == self.player_id]
        if self.preset is not None:
            where.append(c.preset == self.preset)
            pwhere.append(p.preset == self.preset)
        rows = fetch(conn, select(*cols).where(*where).group_by(c.preset).order_by(c.preset.collate("C")))
        prow = fetch(conn, select(p.preset, p.pattern, p.wins).where(*pwhere))
        if not rows:
            return None
        patterns: dict[str, dict[str, int]] = {}
        for preset, pattern, wins in prow:
            patterns.setdefault(preset, {})[pattern] = int(wins)
        per_preset: dict[str, Any] = {}
        overall = dict.fromkeys(STAT_COUNTERS, 0)
        overall_max = 0
        overall_patterns: dict[str, int] = {}
        for row in rows:
            counters = {n: int(v) for n, v in zip(STAT_COUNTERS, row[1:-1], strict=True)}
            item = with_ratios(counters)
            item["max_multiplier"] = int(row[-1])
            item["patterns"] = dict(sorted(patterns.get(row[0], {}).items()))
            per_preset[row[0]] = item
            for n in STAT_COUNTERS:
                overall[n] += counters[n]
            overall_max = max(overall_max, int(row[-1]))
            for k, v in patterns.get(row[0], {}).items():
                overall_patterns[k] = overall_patterns.get(k, 0) + v
        total = with_ratios(overall)
        total["max_multiplier"] = overall_max
        total["patterns"] = dict(sorted(overall_patterns.items()))
        return {"player_id": self.player_id, "overall": total, "presets": per_preset}


@dataclass(frozen=True, slots=True)
class Leaderboard:
    """Players of ``tenant`` ranked by ``by`` (one of :data:`SORTABLE`), ``order`` desc or asc; a
    player without a value for a ratio (no hands, no wins) comes last either way; ties in player-id
    byte order. ``first`` / ``last``: UTC days, both inclusive (the day rows; neither: the totals
    rows, every hand with a time or not); players with at least ``min_hands`` hands; the page at
    ``offset`` of ``limit``. The caller checks ``by`` and ``order``."""

    models: ClassVar[tuple[str, ...]] = (player_stats.NAME,)
    tenant: str
    by: str = "net_coins"
    order: str = "desc"
    preset: str | None = None
    first: date | None = None
    last: date | None = None
    min_hands: int = 0
    offset: int = 0
    limit: int = 50

    def __call__(self, conn: Connection) -> dict[str, Any]:
        s = stats_table.c
        sums = {n: func.sum(s[n]) for n in STAT_COUNTERS}
        cols: dict[str, Any] = {**sums, "max_multiplier": func.max(s.max_multiplier)}
        for name, (num, den) in RATIOS.items():
            cols[name] = cast(sums[num], Numeric) / func.nullif(sums[den], 0)
        where = [s.tenant == self.tenant]
        if self.preset is not None:
            where.append(s.preset == self.preset)
        if self.first is None and self.last is None:
            where.append(s.day == TOTAL)  # all time: the totals rows (every hand, with a time or not)
        else:
            where.append(s.day > TOTAL)  # a period: the day rows
        if self.first is not None:
            where.append(s.day >= self.first)
        if self.last is not None:
            where.append(s.day <= self.last)
        value = cols[self.by]
        stmt = (
            select(s.player_id, *[cols[n] for n in (*STAT_COUNTERS, "max_multiplier")])
            .where(*where)
            .group_by(s.player_id)
            .having(sums["hands_played"] >= self.min_hands)
            .order_by(nulls_last(value.desc() if self.order == "desc" else value.asc()),
                      s.player_id.collate("C"))  # ties: byte order on every server
            .offset(self.offset)
            .limit(self.limit + 1)
        )  # fmt: skip
        rows = fetch(conn, stmt)
        board = []
        for i, r in enumerate(rows[: self.limit]):
            counters = {n: int(v) for n, v in zip(STAT_COUNTERS, r[1:-1], strict=True)}
            item: dict[str, Any] = {"rank": self.offset + i + 1, "player_id": r[0]}
            item.update(with_ratios(counters))
            item["max_multiplier"] = int(r[-1])
            item["win_rate"] = item["ratios"]["win_rate"]
            item["value"] = item["ratios"][self.by] if self.by in RATIOS else item[self.by]
            board.append(item)
        return {"players": board, "next_offset": self.offset + self.limit if len(rows) > self.limit else None}
