"""``GET /v1/tables/{id}/hands/{n}/timeline``: one hand in plain Chinese or English (issue 13,
"Read it"), rendered by ``projections.timeline.render`` (docs/timeline.md).

Support keys only: the lines show every draw, i.e. tiles no seat view shows (a platform key reads
``/state?seat=S`` instead). Tenants as every read: another tenant's table is the same 404 as a
missing one.

A hand's read costs what the hand costs: the fold starts from the hand's own snapshot (the state
right after its ``hand_started``, read model ``snapshots``) and reads only the hand's events; with
no usable snapshot (the projector behind, an engine change) it folds from event 1. When a hand
number was dealt again after ``hand_aborted``, the timeline is of the last deal of that number.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel, ConfigDict, Field

from domain.events import HandStarted, TableClosed, decode
from services.api import schemas
from services.api.deps import TableId, get_container, get_principal, read_lang
from services.api.read import table_of
from services.bootstrap import Container
from services.db import reading
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
    folded_from: int = Field(description="the snapshot's version the fold started from (0: event 1)")


router = APIRouter(
    prefix="/v1/tables",
    tags=["read"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),  # type: ignore[arg-type]
)
_encoder = msgspec.json.Encoder()
_PAGE = 200


def _rows(container: Container, tenant: str, table_id: str, after: int, upto: int) -> list[Any]:
    page = container.store.read_table(tenant, table_id, after, min(_PAGE, upto - after))
    return [(r.version, decode(r.body), msgspec.json.decode(r.ruling) if r.ruling else None) for r in page]


def hand_events(
    container: Container, tenant: str, table_id: str, hand: int, head: int
) -> tuple[Any, Any, list[Any], int]:
    """(state right after the hand's ``hand_started``, that event as (version, event, ruling), the
    hand's later events, the version the fold started from)."""
    engine = container.engine
    from projections import hand_snapshot

    snap = reading(container.pool, lambda conn: hand_snapshot.of_hand(conn, tenant, table_id, hand))
    state, first, start = None, None, 0
    if snap is not None:
        try:
            state = engine.decode_state(snap[1])
        except Exception:  # a snapshot of an older engine: fold from the start instead
            state = None
        if state is not None:
            got = _rows(container, tenant, table_id, snap[0] - 1, snap[0])
            if got and isinstance(got[0][1], HandStarted) and got[0][1].hand == hand:
                first, start = got[0], snap[0]
    if first is None:  # fold from event 1 up to the last deal of this hand number
        state, first, start = engine.initial(), None, 0
        found: Any = None
        after = 0
        folded = engine.initial()
        while after < head:
            page = _rows(container, tenant, table_id, after, head)
            if not page:
                break
            for item in page:
                folded = engine.replay(folded, item[1])
                if isinstance(item[1], HandStarted) and item[1].hand == hand:
                    found = (item, folded)
            after = page[-1][0]
        if found is None:
            raise NotFound(f"no hand {hand} of {table_id!r}")
        first, state = found
    rest: list[Any] = []
    after = first[0]
    while after < head:
        page = _rows(container, tenant, table_id, after, head)
        if not page:
            break
        for item in page:
            if isinstance(item[1], HandStarted | TableClosed):
                return state, first, rest, start
            rest.append(item)
        after = page[-1][0]
    return state, first, rest, start


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
    of it), ``kong`` (chain, link, coins), ``liang_dao`` (waits), ``wins``, ``transfer``. ``lou_hu``
    sums up each 漏胡: what it would have paid (patterns, coins), when it lifted, which later wins
    it blocked."""
    head = table_of(container, principal, table_id, "support")
    from projections import timeline

    state, first, rest, start = hand_events(container, principal.tenant, table_id, hand, head.version)
    body = timeline.render(container.engine, state, first, rest, lang)
    body = {"table_id": table_id, **body, "folded_from": start}
    return Response(_encoder.encode(body), media_type="application/json")
