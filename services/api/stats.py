"""Players, coins and the discrepancy feed, read from the projections (docs/projections.md).

* ``GET /v1/players/{id}/stats``: per preset and overall; every ratio is computed here from the
  summed counts (never an average of averages).
* ``GET /v1/players/{id}/ledger``: the player's coin entries with running balance, paginated by
  the account's entry number (``after``); always the player account, even for a player named
  ``house``.
* ``GET /v1/house/ledger``: the same for the tenant's house account (service fees).
* ``GET /v1/leaderboard``: players of the tenant by net coins (or another counter).
* ``GET /v1/discrepancies``: hands whose reported payout differs from the computed one, paged by
  the tenant's own feed number (``seq``), with whether the feed holds every event of the tenant.

Roles: ``platform``, ``support`` and ``dashboard`` all read stats, ledgers and the leaderboard of
their own tenant; the discrepancy feed is for ``support`` and ``platform``. Nothing here counts or
orders by anything global (issue 11 §4): no log position, no checkpoint, no other tenant's numbers.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy import desc, select, text

from projections.ledger import HOUSE
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

router = APIRouter(
    prefix="/v1",
    tags=["stats"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()
_ALL_ROLES = ("platform", "support", "dashboard")
SORTABLE = ("net_coins", "wins", "hands_played", "max_multiplier", "sum_payable", "coins_won")


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
    cols = [player_stats.c.preset, *[player_stats.c[n] for n in STAT_COUNTERS], player_stats.c.max_multiplier]
    where = [player_stats.c.tenant == principal.tenant, player_stats.c.player_id == player_id]
    pwhere = [player_patterns.c.tenant == principal.tenant, player_patterns.c.player_id == player_id]
    if preset is not None:
        where.append(player_stats.c.preset == preset)
        pwhere.append(player_patterns.c.preset == preset)
    rows, prow = read_rows(
        container.pool,
        select(*cols).where(*where).order_by(player_stats.c.preset.collate("C")),
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
    routes. ``kind`` is ``player`` or ``house``; the two never share an account, whatever the id."""
    e = ledger_entries.c
    a = ledger_accounts.c
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
        )
        .where(e.tenant == tenant, e.account_kind == kind, e.account == account, e.seq > after)
        .order_by(e.seq)
        .limit(limit + 1),
    )
    if not found:
        raise NotFound(f"no ledger for {account!r}" if kind == "player" else "no ledger for the house")
    more = len(rows) > limit
    rows = rows[:limit]
    entries = [
        {"seq": int(r[0]), "amount": int(r[1]), "balance": int(r[2]), "counterparty": r[3],
         "counterparty_kind": r[4], "table_id": r[5], "hand": r[6], "event": r[7], "reason": r[8],
         "seat": r[9], "detail": r[10], "line": r[11]}
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
    and shaped like a player's ledger."""
    require_role(principal, *_ALL_ROLES)
    return _ledger(container, principal.tenant, "house", HOUSE, after, limit)


@router.get("/leaderboard", operation_id="stats-leaderboard", summary="Players ranked by a counter")
def leaderboard(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    by: Annotated[
        str, Query(description="the counter to rank by", json_schema_extra={"enum": list(SORTABLE)})
    ] = "net_coins",
    preset: Annotated[
        str | None, Query(description="only this preset", json_schema_extra=PRESET_ENUM)
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    require_role(principal, *_ALL_ROLES)
    if by not in SORTABLE:
        raise Malformed(f"by must be one of {', '.join(SORTABLE)}", field="query.by")
    check_preset(preset)
    from sqlalchemy import func

    s = player_stats.c
    value = func.max(s[by]) if by == "max_multiplier" else func.sum(s[by])
    stmt = (
        select(
            s.player_id,
            value.label("value"),
            func.sum(s.hands_played),
            func.sum(s.wins),
            func.sum(s.net_coins),
        )
        .where(s.tenant == principal.tenant, *([s.preset == preset] if preset is not None else []))
        .group_by(s.player_id)
        .order_by(desc("value"), s.player_id.collate("C"))  # ties: byte order on every server
        .limit(limit)
    )
    (rows,) = read_rows(container.pool, stmt)
    board = [
        {"rank": i + 1, "player_id": r[0], by: int(r[1]), "hands_played": int(r[2]), "wins": int(r[3]),
         "net_coins": int(r[4]), "win_rate": _ratio(int(r[3]), int(r[2]))}
        for i, r in enumerate(rows)
    ]  # fmt: skip
    return _json({"by": by, "preset": preset, "players": board})


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
