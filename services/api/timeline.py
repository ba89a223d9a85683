"""``GET /v1/tables/{id}/hands/{n}/timeline``: one hand in plain Chinese or English (issue 13,
"Read it"), rendered by ``projections.timeline.render`` (docs/timeline.md).

Support keys only: the lines show every draw, i.e. tiles no seat view shows (a platform key reads
``/state?seat=S`` instead). Tenants as every read: another tenant's table is the same 404 as a
missing one.

A hand's read costs what the hand costs: the hand's events are the one read the settlement and
the hand's audit fold too (``services.api.hand_reads.hand_events``, projections/hand_reads.py):
from the hand's own snapshot (the state right after its ``hand_started``, read model
``snapshots``) to the event before the next hand's; with no usable snapshot (the projector
behind, an engine change) from an earlier hand's or from event 1. An aborted hand n is the voided
deal; its re-deal is hand n+1 (hand numbers are consecutive).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel, ConfigDict, Field

from services.api import schemas
from services.api.deps import TableId, get_container, get_principal, read_lang
from services.api.hand_reads import hand_events
from services.api.read import table_of
from services.bootstrap import Container
from services.errors import NotFound
from services.store.keys import Principal


class Line(BaseModel):
    """One line: an event of the hand, or at its end a ``transfer`` / the ``net``."""

    model_config = ConfigDict(extra="allow")
    version: int | None = Field(description="the event's version (a transfer: the event that caused it)")
    at: str | None = Field(description="the event's at, when the platform sent one")
    kind: str = Field(description="the event type, or transfer / net")
    seat: int | None
    player: str | None
    tiles: list[str] = Field(description="wire names: 5p, 4s, C")
    codes: list[str] = Field(
        description="recorded violation codes and lou_hu / kong / kong_chain / liang_dao …"
    )
    text: str = Field(description="the line in the answer's language")
    why: str | None = Field(
        None,
        description="a transfer line only: its reason and what gave it, in the answer's language "
        "(the end of its text), e.g. 胡牌：自摸2筒，亮倒 ×2",
    )


class LouHuSummary(BaseModel):
    model_config = ConfigDict(extra="allow")
    seat: int
    player: str | None
    passed: dict[str, Any] = Field(description="{event, tile, from}")
    would_have_paid: dict[str, Any] = Field(description="{patterns [{id, x}], multiplier, payable, coins}")
    since: int
    lifted_by: int | None
    blocked_later_win: bool
    blocked_wins: list[int] = Field(description="events whose win this restriction blocked")
    text: str


class Timeline(BaseModel):
    table_id: str
    hand: int
    lang: str = Field(description="zh or en")
    seat_words: list[str]
    players: list[dict[str, Any]] = Field(description="[{seat, player, name}]")
    first_event: int
    last_event: int
    end: str | None = Field(description="hu / exhausted / aborted; null: still being played")
    lines: list[Line]
    lou_hu: list[LouHuSummary]
    folded_from: int = Field(
        description="the version of the snapshot the fold started from: the hand's own hand_started, "
        "an earlier hand's when its snapshot is missing, 0: event 1"
    )


router = APIRouter(
    prefix="/v1/tables",
    tags=["read"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()


@router.get(
    "/{table_id}/hands/{hand}/timeline",
    operation_id="read-hand_timeline",
    summary="A hand in plain Chinese or English: one line per event, rulings inline",
    response_model=Timeline,
)
def hand_timeline(
    table_id: TableId,
    hand: Annotated[int, Path(ge=1, le=2**31 - 1, description="the hand's number (1, 2, …)")],
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    lang: Annotated[str, Depends(read_lang)],
) -> Response:
    """Support keys only. Each line: ``version``, ``at``, ``seat``, ``player``, ``kind`` (the event
    type, or ``transfer`` / ``net`` at the hand's end), ``tiles`` (wire names), ``codes`` (ruling
    codes and markers: ``lou_hu``, ``kong_chain``, ``liang_dao``, a recorded violation's code …),
    ``text``; and per kind ``candidates`` (who could have won, what it would have paid, what became
    of it), ``kong`` (chain, link, coins), ``liang_dao`` (waits), ``wins``, ``transfer`` (with ``why``: its
    reason and what gave it, in the answer's language). ``lou_hu``
    sums up each 漏胡: what it would have paid (patterns, coins), when it lifted, which later wins
    it blocked."""
    head = table_of(container, principal, table_id, "support")
    from projections import timeline

    tenant = principal.tenant
    got = container.table_read(  # the replica once it holds the table's head (services/replica.py)
        tenant, table_id, head.version, lambda src: hand_events(src, tenant, table_id, hand, head.version)
    )
    if got.first is None:
        raise NotFound(f"no hand {hand} of {table_id!r}", message_zh=f"牌桌 {table_id} 没有第{hand}局")
    state, first, rest = got.opening(container.engine)
    body = timeline.render(container.engine, state, first, rest, lang)
    body = {"table_id": table_id, **body, "folded_from": got.start}
    return Response(_encoder.encode(body), media_type="application/json")
