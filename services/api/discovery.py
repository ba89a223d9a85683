"""Discovery (issue 13, find it): a tenant's tables without their ids, and a table's hands, read
from the ``discovery`` read model (projections/discovery.py), never from a scan of the log.

* ``GET /v1/tables``: filters ``player``, ``preset``, ``since``/``until`` (the hands' times: the
  events' ``at``; a table matches when its hands' times reach into the period), ``has`` (flags; several
  at once = all of them); newest first; ``cursor`` from the previous page's ``next_cursor``.
* ``GET /v1/players/{id}/tables``: the same with ``player`` in the path.
* ``GET /v1/tables/{id}/hands``: per hand its number, first and last event, dealer, end, winners
  with patterns and multiplier, net and flags; paged by hand number (``after``).

Roles: ``platform`` and ``support`` read their own tenant's tables; ``dashboard`` does not (it
reads aggregates: stats, ledgers, leaderboard), as for the other per-table reads. A cursor holds a
number of the tenant's own table list only (no global count, no log position), and another
tenant's table is as absent as one that never existed (issue 11 §4).
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, Field

from projections import discovery_queries
from projections.discovery import FLAGS
from projections.discovery import NAME as DISCOVERY
from services.api import schemas
from services.api.deps import (
    MAX_BIGINT,
    PRESET_ENUM,
    PlayerId,
    TableId,
    check_player_id,
    check_preset,
    check_table_id,
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
    tags=["discovery"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 501, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()
_ROLES = ("platform", "support")
_MODELS = (DISCOVERY,)  # the read model every route here answers from (501 where it is not kept)


class Winner(BaseModel):
    seat: int
    player: str
    from_: int | None = Field(alias="from", description="the discarder / robbed konger; null: self-draw")
    tile: str
    patterns: list[dict[str, Any]] = Field(description="[{id, x}] as in the settlement")
    multiplier: int
    payable: int
    event: int
    violation: str | None = Field(description='the rule a hu stored under violations: "record" broke')


class TableItem(BaseModel):
    table_id: str
    players: list[str]
    preset: str
    hands: int = Field(description="settled hands")
    first_at: str | None = Field(description="the earliest hand time (UTC), null: no event had an at")
    last_at: str | None
    flags: list[str] = Field(description=f"any of its hands': {', '.join(FLAGS)}")


class TablesPage(BaseModel):
    tables: list[TableItem]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next (older) page; null: last")


class HandItem(BaseModel):
    hand: int
    ordinal: int | None = Field(description="the settlement's ordinal on its table; null: not settled")
    first_event: int | None = Field(description="version of its hand_started")
    last_event: int | None = Field(description="version of the event that settled it")
    dealer: int | None
    end: str | None = Field(description="hu / exhausted / aborted; null: still being played")
    winners: list[Winner]
    net: list[int] | None
    flags: list[str]
    at: str | None = Field(description="the hand's time (UTC): the at of the event that settled it")


class HandsPage(BaseModel):
    table: TableItem
    hands: list[HandItem]
    next_after: int | None


def _json(body: Any) -> Response:
    return Response(_encoder.encode(body), media_type="application/json")


_CURSOR_RE = re.compile(r"^d1\.([1-9][0-9]{0,18})$")


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"d1.{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    """The seq a cursor continues before (MAX_BIGINT: none). Anything kwx did not write is a 422."""
    if cursor is None:
        return MAX_BIGINT
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        text = ""
    m = _CURSOR_RE.match(text) if len(cursor) <= 40 else None
    if m is None or int(m.group(1)) > MAX_BIGINT:
        raise Malformed(
            "cursor: not one this API returned (pass next_cursor as it came)",
            field="query.cursor",
            message_zh="cursor 不是本接口给出的：请原样传回 next_cursor",
        )
    return int(m.group(1))


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_time(value: str | None, field: str) -> datetime | None:
    """``since`` / ``until``: an RFC 3339 date-time (``2026-11-30T08:00:00+08:00``) or a UTC day
    (``2026-11-30``), which is the whole day as the leaderboard's days are: ``since`` from its
    00:00, ``until`` through its last microsecond (it was 00:00 for both, so ``until`` a day left
    that day out, and a date picker's "until today" found nothing of today)."""
    if value is None:
        return None
    text = value.strip().upper().replace("Z", "+00:00")
    try:
        if len(text) > 40:
            raise ValueError
        t = datetime.fromisoformat(text)
    except ValueError:
        raise Malformed(
            f"{field}: not a date or RFC 3339 date-time (got {value[:40]!r})",
            field=f"query.{field}",
            message_zh=f"{field} 不是日期（YYYY-MM-DD）或 RFC 3339 时间：收到 {value[:40]!r}",
        ) from None
    if field == "until" and _DAY.fullmatch(text):
        t += timedelta(days=1, microseconds=-1)
    return (t if t.tzinfo is not None else t.replace(tzinfo=UTC)).astimezone(UTC)


def has_mask(has: list[str]) -> int:
    mask = 0
    for item in has:
        for name in item.split(","):
            if name not in FLAGS:
                raise Malformed(
                    f"has: unknown flag {name[:40]!r}: expected any of {', '.join(FLAGS)}",
                    field="query.has",
                    message_zh=f"has 中没有这个标记 {name[:40]!r}：可选 {', '.join(FLAGS)}",
                )
            mask |= FLAGS[name]
    return mask


_Has = Annotated[
    list[str],
    Query(description=f"flags every listed table has (repeat or comma-separate): {', '.join(FLAGS)}"),
]
_Time = Query(
    description="RFC 3339 date-time or a UTC day YYYY-MM-DD (the whole day: since from its 00:00, until "
    "through its end): the hands' times (events' at)"
)
_Limit = Annotated[int, Query(ge=1, le=200)]


def _page(
    container: Container, tenant: str, player: str | None, preset: str | None, since: str | None,
    until: str | None, has: list[str], cursor: str | None, limit: int,
) -> Response:  # fmt: skip
    preset = check_preset(preset)
    s, u = parse_time(since, "since"), parse_time(until, "until")
    if s is not None and u is not None and s > u:
        raise empty_period(since, until)
    mask, before = has_mask(has), decode_cursor(cursor)

    def query(conn: Any) -> Any:
        return discovery_queries.tables(conn, tenant, player=player, preset=preset, since=s, until=u,
                                        mask=mask, before=before, limit=limit)  # fmt: skip

    # a read model: on the replica when one is configured and up (services/replica.py)
    items, next_seq = container.model_read(_MODELS, lambda src: reading(src.pool, query))
    return _json({"tables": items, "next_cursor": encode_cursor(next_seq) if next_seq is not None else None})


@router.get("/tables", operation_id="discovery-tables", summary="Find tables", response_model=TablesPage)
def list_tables(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    player: Annotated[str | None, Query(max_length=64, description="a player id seated at the table")] = None,
    preset: Annotated[str | None, Query(json_schema_extra=PRESET_ENUM)] = None,
    since: Annotated[str | None, _Time] = None,
    until: Annotated[str | None, _Time] = None,
    has: _Has = [],  # noqa: B006  # FastAPI copies a Query default per request
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    limit: _Limit = 50,
) -> Response:
    """The tenant's tables newest first (in the order kwx learned them), filtered."""
    require_role(principal, *_ROLES)
    if player is not None and (not player or "\x00" in player):
        raise Malformed("player: 1–64 characters, no NUL", field="query.player",
                        message_zh="player：1–64 个字符，不能含 NUL")  # fmt: skip
    return _page(container, principal.tenant, player, preset, since, until, has, cursor, limit)


@router.get(
    "/players/{player_id}/tables", operation_id="discovery-player_tables", summary="A player's tables",
    response_model=TablesPage,
)  # fmt: skip
def player_tables(
    player_id: PlayerId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    preset: Annotated[str | None, Query(json_schema_extra=PRESET_ENUM)] = None,
    since: Annotated[str | None, _Time] = None,
    until: Annotated[str | None, _Time] = None,
    has: _Has = [],  # noqa: B006  # FastAPI copies a Query default per request
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    limit: _Limit = 50,
) -> Response:
    """`GET /v1/tables?player=ID`, with the player in the path."""
    require_role(principal, *_ROLES)
    check_player_id(player_id)
    return _page(container, principal.tenant, player_id, preset, since, until, has, cursor, limit)


@router.get(
    "/tables/{table_id}/hands", operation_id="discovery-hands", summary="A table's hands",
    response_model=HandsPage,
)  # fmt: skip
def table_hands(
    table_id: TableId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    after: Annotated[int, Query(ge=0, le=2**31 - 1, description="hands after this hand number")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> Response:
    """Each hand of the table in order: what a replay page's hand list needs in one call."""
    require_role(principal, *_ROLES)
    check_table_id(table_id)
    table, items, next_after = container.model_read(
        _MODELS,
        lambda src: reading(
            src.pool, lambda conn: discovery_queries.hands(conn, principal.tenant, table_id, after, limit)
        ),
    )
    if table is None:
        raise NotFound(f"no table {table_id!r} with hands", message_zh=f"没有这张牌桌：{table_id}")
    return _json({"table": table, "hands": items, "next_after": next_after})
