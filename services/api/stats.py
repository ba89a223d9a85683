"""Players, coins and the discrepancy feed, read from the projections (docs/projections.md).

* ``GET /v1/players/{id}/stats``: per preset and overall; every ratio is computed from the summed
  counts (never an average of averages).
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

The routes parse, call and answer: the SQL is the read models' own (``projections/queries/``), run
with the one retry after a lost connection (``services.db.reading``).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, TypeVar

import msgspec
from fastapi import APIRouter, Depends, Query, Response

from projections import queries, wording
from projections.ledger import HOUSE
from projections.queries.discrepancies import FeedPage
from projections.queries.ledger import LedgerPage
from projections.queries.player_stats import ORDERS, SORTABLE, Leaderboard, PlayerStats
from services.api import read_schemas, schemas
from services.api.deps import (
    MAX_BIGINT,
    PRESET_ENUM,
    PlayerId,
    check_player_id,
    check_preset,
    empty_period,
    get_container,
    get_principal,
    require_role,
)
from services.bootstrap import Container
from services.db import reading
from services.errors import Malformed, NotFound
from services.store.keys import Principal

router = APIRouter(
    prefix="/v1",
    tags=["stats"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 501, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()
_ALL_ROLES = ("platform", "support", "dashboard")
T = TypeVar("T")


def _json(body: Any) -> Response:
    return Response(_encoder.encode(body), media_type="application/json")


def _models(container: Container, query: queries.Query[T]) -> T:
    """A read model query, on the replica when one is configured and up (services/replica.py):
    these models are behind the log anyway, by the projector's lag and the replica's. 501 when the
    query's models are not kept here (KWX_READ_MODELS)."""
    return container.model_read(query.models, lambda src: reading(src.pool, query))


@router.get(
    "/players/{player_id}/stats",
    operation_id="stats-player_stats",
    summary="A player's statistics",
    responses=read_schemas.responses(read_schemas.PlayerStatsAnswer),
)
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
    answer = _models(container, PlayerStats(principal.tenant, player_id, preset))
    if answer is None:
        raise NotFound(f"no statistics for player {player_id!r}", message_zh=f"没有玩家 {player_id} 的统计")
    answer["pattern_names"] = wording.pattern_names(answer["overall"]["patterns"])
    return _json(answer)


def _ledger(container: Container, tenant: str, kind: str, account: str, after: int, limit: int) -> Response:
    """One account's page (:class:`projections.queries.ledger.LedgerPage`): both ledger routes."""
    answer = _models(container, LedgerPage(tenant, kind, account, after, limit))
    if answer is None:
        raise NotFound(f"no ledger for {account!r}", message_zh=f"没有 {account} 的金币账")
    return _json(answer)


_After = Annotated[int, Query(ge=0, le=MAX_BIGINT, description="entries after this entry number")]
_Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get(
    "/players/{player_id}/ledger",
    operation_id="stats-player_ledger",
    summary="A player's coin ledger",
    responses=read_schemas.responses(read_schemas.LedgerAnswer),
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


@router.get(
    "/house/ledger",
    operation_id="stats-house_ledger",
    summary="The house's coin ledger",
    responses=read_schemas.responses(read_schemas.LedgerAnswer),
)
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
            f"{field.split('.')[-1]} must be a UTC date YYYY-MM-DD (got {value[:40]!r})",
            field=field,
            message_zh=f"{field.split('.')[-1]} 应为 UTC 日期 YYYY-MM-DD：收到 {value[:40]!r}",
        ) from None


@router.get(
    "/leaderboard",
    operation_id="stats-leaderboard",
    summary="Players ranked by a statistic",
    responses=read_schemas.responses(read_schemas.LeaderboardAnswer),
)
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
        raise Malformed(f"by must be one of {', '.join(SORTABLE)} (got {by[:40]!r})", field="query.by",
                        message_zh=f"by 应为以下之一：{', '.join(SORTABLE)}（收到 {by[:40]!r}）")  # fmt: skip
    if order not in ORDERS:
        raise Malformed(
            f"order must be one of {', '.join(ORDERS)} (got {order[:40]!r})",
            field="query.order",
            message_zh=f"order 应为以下之一：{', '.join(ORDERS)}（收到 {order[:40]!r}）",
        )
    check_preset(preset)
    first, last = _day(since, "query.since"), _day(until, "query.until")
    if first is not None and last is not None and first > last:
        raise empty_period(since, until)
    board = _models(
        container, Leaderboard(principal.tenant, by, order, preset, first, last, min_hands, offset, limit)
    )
    return _json({"by": by, "order": order, "preset": preset, "since": since, "until": until,
                  "min_hands": min_hands, "offset": offset, "limit": limit, **board})  # fmt: skip


@router.get(
    "/discrepancies",
    operation_id="stats-discrepancies",
    summary="Reported payouts that differ",
    responses=read_schemas.responses(read_schemas.DiscrepancyFeedAnswer),
)
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
    return _json(_models(container, FeedPage(principal.tenant, after, limit)))
