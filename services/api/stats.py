"""Players, coins and the discrepancy feed, read from the projections (docs/projections.md).

* ``GET /v1/players/{id}/stats``: per preset and overall; every ratio is computed here from the
  summed counts (never an average of averages).
* ``GET /v1/players/{id}/ledger``: the player's coin entries with running balance, paginated by
  the account's entry number (``after``); always the player account, even for a player named
  ``house``.
* ``GET /v1/house/ledger``: the same for the tenant's house account (service fees).
* ``GET /v1/leaderboard``: players of the tenant ranked by any statistic it shows (counters,
  ``max_multiplier``, ratios), either order, paged by ``offset``, over a period of UTC days
  (``since`` / ``until``), a preset and a minimum number of hands.
* ``GET /v1/discrepancies``: hands whose reported payout differs from the computed one, paged by
  the tenant's own feed number (``seq``), with whether the feed holds every event of the tenant.

Roles: ``platform``, ``support`` and ``dashboard`` all read stats, ledgers and the leaderboard of
their own tenant; the discrepancy feed is for ``support`` and ``platform``. Nothing here counts or
orders by anything global (issue 11 §4): no log position, no checkpoint, no other tenant's numbers.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy import select, text

from projections.ledger import HOUSE
from projections.player_stats import TOTAL
from projections.schema import (
    STAT_COUNTERS,
    discrepancies,
    ledger_accounts,
    ledger_entries,
    player_patterns,
    player_stats,
)
from services.api import schemas
from services.api.deps import (
    MAX_BIGINT,
    PRESET_ENUM,
    PlayerId,
    check_player_id,
    check_preset,
    get_container,
    get_principal,
    require_role,
)
from services.bootstrap import Container
from services.db import read_rows
from services.errors import Malformed, NotFound
from services.store.keys import Principal
from services.store.schema import events as stored_events

router = APIRouter(
    prefix="/v1",
    tags=["stats"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()
_ALL_ROLES = ("platform", "support", "dashboard")


def _json(body: Any) -> Response:
    return Response(_encoder.encode(body), media_type="application/json")


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def with_ratios(c: dict[str, int]) -> dict[str, Any]:
    """The counters plus the ratios derived from them (definitions: docs/projections.md)."""
    out: dict[str, Any] = dict(c)
    out["ratios"] = {
        "win_rate": _ratio(c["wins"], c["hands_played"]),
        "self_draw_share": _ratio(c["wins_self_draw"], c["wins"]),
        "deal_in_rate": _ratio(c["deal_ins"], c["hands_played"]),
        "liang_dao_rate": _ratio(c["liang_dao_declared"], c["hands_played"]),
        "liang_dao_success": _ratio(c["liang_dao_won"], c["liang_dao_declared"]),
        "lou_hu_per_hand": _ratio(c["lou_hu_incurred"], c["hands_played"]),
        "average_multiplier": _ratio(c["sum_multiplier"], c["wins"]),
        "average_payable": _ratio(c["sum_payable"], c["wins"]),
        "net_coins_per_hand": _ratio(c["net_coins"], c["hands_played"]),
    }
    return out


# Whether the feed holds every event of the tenant stored so far: none of the tenant's events is
# after the discrepancies model's checkpoint in the log's order (epoch, tx_id, position) — a model
# that never ran: all are. A scan of the log's tail after the checkpoint (the events_log_order
# index), as long as the lag. The checkpoint comes as scalar subqueries (InitPlans: values by the
# time the scan starts) and the ORDER BY … LIMIT 1 matches the index, so the plan is that index
# range scan from the checkpoint on, never a scan of the whole table.
_CHECKPOINT = "(SELECT c.{} FROM projection_checkpoints c WHERE c.name = 'discrepancies')"
FEED_PENDING = (
    "SELECT 1 FROM events e WHERE (e.epoch, e.tx_id, e.position) > ("
    f"coalesce({_CHECKPOINT.format('epoch')}, 0), "
    f"coalesce({_CHECKPOINT.format('tx_id')}, 0)::text::xid8, coalesce({_CHECKPOINT.format('position')}, 0)) "
    "AND e.tenant = :tenant ORDER BY e.epoch, e.tx_id, e.position LIMIT 1"
)  # a row: some event of the tenant is not in the feed yet


@router.get("/players/{player_id}/stats", operation_id="stats-player_stats", summary="A player's statistics")
def player_statistics(
    player_id: PlayerId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    preset: Annotated[
        str | None, Query(description="only this preset", json_schema_extra=PRESET_ENUM)
    ] = None,
) -> Response:
    require_role(principal, *_ALL_ROLES)
    check_player_id(player_id)
    check_preset(preset)
    from sqlalchemy import func

    c = player_stats.c
    cols = [c.preset, *[func.sum(c[n]) for n in STAT_COUNTERS], func.max(c.max_multiplier)]
    where = [c.tenant == principal.tenant, c.player_id == player_id, c.day == TOTAL]  # the totals rows
    pwhere = [player_patterns.c.tenant == principal.tenant, player_patterns.c.player_id == player_id]
    if preset is not None:
        where.append(c.preset == preset)
        pwhere.append(player_patterns.c.preset == preset)
    rows, prow = read_rows(
        container.pool,
        select(*cols).where(*where).group_by(c.preset).order_by(c.preset.collate("C")),
        select(player_patterns.c.preset, player_patterns.c.pattern, player_patterns.c.wins).where(*pwhere),
    )
    if not rows:
        raise NotFound(f"no statistics for player {player_id!r}")
    patterns: dict[str, dict[str, int]] = {}
    for p, pattern, wins in prow:
        patterns.setdefault(p, {})[pattern] = int(wins)
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
    return _json({"player_id": player_id, "overall": total, "presets": per_preset})


def _ledger(container: Container, tenant: str, kind: str, account: str, after: int, limit: int) -> Response:
    """One account's page of entries (``seq > after``) with its balance: the answer of both ledger
    routes. ``kind`` is ``player`` or ``house``; the two never share an account, whatever the id.
    Each entry carries the time of the event that caused it: its ``at`` (as the platform sent it,
    null when it had none) and ``recorded_at`` (when kwx stored it), read from the event itself
    (the store's key (tenant, table_id, version): one index probe per entry of the page)."""
    e = ledger_entries.c
    a = ledger_accounts.c
    ev = stored_events.c
    mine = (a.tenant == tenant, a.account_kind == kind, a.account == account)
    found, rows = read_rows(
        container.pool,
        select(a.balance, a.entries).where(*mine),
        select(
            e.seq,
            e.amount,
            e.balance,
            e.counterparty,
            e.counterparty_kind,
            e.table_id,
            e.hand,
            e.event,
            e.reason,
            e.seat,
            e.detail,
            e.line,
            ev.body["at"].astext,
            ev.recorded_at,
        )
        .select_from(
            ledger_entries.outerjoin(
                stored_events, (ev.tenant == e.tenant) & (ev.table_id == e.table_id) & (ev.version == e.event)
            )
        )
        .where(e.tenant == tenant, e.account_kind == kind, e.account == account, e.seq > after)
        .order_by(e.seq)
        .limit(limit + 1),
    )
    if not found and kind == "player":
        raise NotFound(f"no ledger for {account!r}")
    if not found:  # a tenant whose house never received a fee: an empty ledger, not an unknown one
        found = [(0, 0)]
    more = len(rows) > limit
    rows = rows[:limit]
    entries = [
        {"seq": int(r[0]), "amount": int(r[1]), "balance": int(r[2]), "counterparty": r[3],
         "counterparty_kind": r[4], "table_id": r[5], "hand": r[6], "event": r[7], "reason": r[8],
         "seat": r[9], "detail": r[10], "line": r[11], "at": r[12],
         "recorded_at": r[13].isoformat() if r[13] is not None else None}
        for r in rows
    ]  # fmt: skip
    return _json(
        {
            "account": account,
            "kind": kind,
            "balance": int(found[0][0]),
            "entries_total": int(found[0][1]),
            "entries": entries,
            "next_after": entries[-1]["seq"] if more else None,
        }
    )


_After = Annotated[int, Query(ge=0, le=MAX_BIGINT, description="entries after this entry number")]
_Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get(
    "/players/{player_id}/ledger", operation_id="stats-player_ledger", summary="A player's coin ledger"
)
def player_ledger(
    player_id: PlayerId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: _After = 0,
    limit: _Limit = 100,
) -> Response:
    """Always the player account (`kind` is `player`), whatever the id: a player named `house` reads
    their own entries here; the house's account is `GET /v1/house/ledger`."""
    require_role(principal, *_ALL_ROLES)
    check_player_id(player_id)
    return _ledger(container, principal.tenant, "player", player_id, after, limit)


@router.get("/house/ledger", operation_id="stats-house_ledger", summary="The house's coin ledger")
def house_ledger(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: _After = 0,
    limit: _Limit = 100,
) -> Response:
    """The house account of the key's tenant (it receives the service fees; `kind` is `house`), paged
    and shaped like a player's ledger; a tenant whose house received nothing yet has an empty one
    (balance 0, no entries)."""
    require_role(principal, *_ALL_ROLES)
    return _ledger(container, principal.tenant, "house", HOUSE, after, limit)


RATIOS: dict[str, tuple[str, str]] = {  # ratio -> (numerator, denominator), as in with_ratios
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
MAX_OFFSET = 1_000_000
_ORDERS: dict[str, Any] = {"enum": list(ORDERS)}


def _day(value: str | None, field: str) -> date | None:
    """``?since=`` / ``?until=``: a UTC date ``YYYY-MM-DD`` (days are the read model's unit)."""
    if value is None:
        return None
    try:
        if len(value) != 10:
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        raise Malformed(
            f"{field.split('.')[-1]} must be a UTC date YYYY-MM-DD (got {value[:40]!r})", field=field
        ) from None


@router.get("/leaderboard", operation_id="stats-leaderboard", summary="Players ranked by a statistic")
def leaderboard(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    by: Annotated[
        str, Query(description="the statistic to rank by", json_schema_extra={"enum": list(SORTABLE)})
    ] = "net_coins",
    order: Annotated[
        str, Query(description="desc (default): highest first; asc: lowest first", json_schema_extra=_ORDERS)
    ] = "desc",
    preset: Annotated[
        str | None, Query(description="only this preset", json_schema_extra=PRESET_ENUM)
    ] = None,
    since: Annotated[
        str | None, Query(description="only hands on or after this UTC day (YYYY-MM-DD; the events' at)")
    ] = None,
    until: Annotated[
        str | None, Query(description="only hands on or before this UTC day (YYYY-MM-DD; the events' at)")
    ] = None,
    min_hands: Annotated[
        int, Query(ge=0, le=MAX_BIGINT, description="only players with at least this many hands played")
    ] = 0,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="skip this many ranked players")] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    """Players of the key's tenant ranked by `by` (any counter, `max_multiplier` or ratio shown in a
    row), `order` desc or asc; a player without a value for a ratio (no hands, no wins) comes last
    either way; ties in player-id byte order. `since` / `until` (UTC days, both inclusive) sum the
    hands of that period: a hand's day is the `at` of its events (docs/projections.md), and a
    hand whose table's events carry no `at` is in no period. `next_offset`: the next page's
    `offset`, null on the last page."""
    require_role(principal, *_ALL_ROLES)
    if by not in SORTABLE:
        raise Malformed(f"by must be one of {', '.join(SORTABLE)} (got {by[:40]!r})", field="query.by")
    if order not in ORDERS:
        raise Malformed(f"order must be one of {', '.join(ORDERS)} (got {order[:40]!r})", field="query.order")
    check_preset(preset)
    first, last = _day(since, "query.since"), _day(until, "query.until")
    if first is not None and last is not None and first > last:
        raise Malformed(f"since {since} is after until {until}: an empty period", field="query.since")
    from sqlalchemy import Numeric, cast, func, nulls_last

    s = player_stats.c
    sums = {n: func.sum(s[n]) for n in STAT_COUNTERS}
    cols = {**sums, "max_multiplier": func.max(s.max_multiplier)}
    for name, (num, den) in RATIOS.items():
        cols[name] = cast(sums[num], Numeric) / func.nullif(sums[den], 0)
    where = [s.tenant == principal.tenant]
    if preset is not None:
        where.append(s.preset == preset)
    if first is None and last is None:
        where.append(s.day == TOTAL)  # all time: the totals rows (every hand, with a time or not)
    else:
        where.append(s.day > TOTAL)  # a period: the day rows
    if first is not None:
        where.append(s.day >= first)
    if last is not None:
        where.append(s.day <= last)
    value = cols[by]
    stmt = (
        select(s.player_id, *[cols[n] for n in (*STAT_COUNTERS, "max_multiplier")])
        .where(*where)
        .group_by(s.player_id)
        .having(sums["hands_played"] >= min_hands)
        .order_by(nulls_last(value.desc() if order == "desc" else value.asc()),
                  s.player_id.collate("C"))  # ties: byte order on every server
        .offset(offset)
        .limit(limit + 1)
    )  # fmt: skip
    (rows,) = read_rows(container.pool, stmt)
    more = len(rows) > limit
    board = []
    for i, r in enumerate(rows[:limit]):
        counters = {n: int(v) for n, v in zip(STAT_COUNTERS, r[1:-1], strict=True)}
        item: dict[str, Any] = {"rank": offset + i + 1, "player_id": r[0]}
        item.update(with_ratios(counters))
        item["max_multiplier"] = int(r[-1])
        item["win_rate"] = item["ratios"]["win_rate"]
        item["value"] = item["ratios"][by] if by in RATIOS else item[by]
        board.append(item)
    return _json({"by": by, "order": order, "preset": preset, "since": since, "until": until,
                  "min_hands": min_hands, "offset": offset, "limit": limit, "players": board,
                  "next_offset": offset + limit if more else None})  # fmt: skip


@router.get("/discrepancies", operation_id="stats-discrepancies", summary="Reported payouts that differ")
def discrepancy_feed(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: Annotated[
        int, Query(ge=0, le=MAX_BIGINT, description="the tenant's feed number (seq): entries after this")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """The tenant's feed in the order kwx learned the entries: `seq` 1, 2, … counts this tenant's
    discrepancies only; `caught_up`: every event of the tenant stored so far is in the feed."""
    require_role(principal, "support", "platform")
    d = discrepancies.c
    # caught_up first: the page read after it holds at least what it counted as in the feed
    pending, rows = read_rows(
        container.pool,
        text(FEED_PENDING).bindparams(tenant=principal.tenant),
        select(
            d.feed_seq, d.table_id, d.hand, d.reported_event, d.lines, d.net_computed, d.net_reported,
            d.reported,
        )
        .where(d.tenant == principal.tenant, d.feed_seq > after)
        .order_by(d.feed_seq)
        .limit(limit + 1),
    )
    more = len(rows) > limit
    rows = rows[:limit]
    items = [
        {"seq": int(r[0]), "table_id": r[1], "hand": r[2], "reported_event": r[3], "lines": r[4],
         "net_computed": r[5], "net_reported": r[6], "reported": r[7]}
        for r in rows
    ]  # fmt: skip
    return _json({"discrepancies": items, "next_after": items[-1]["seq"] if more else None,
                  "caught_up": not pending})  # fmt: skip
