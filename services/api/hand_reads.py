"""A hand's reads, from the hand's snapshot (projections/hand_reads.py): the audit of one hand,
``GET /v1/tables/{id}/hands/{n}/audit``, and :func:`hand_events`, which the hand's settlement
(services/api/read.py) and any other per-hand read (a timeline) fold.

Roles and tenants as the table's audit: support keys only; another tenant's table is the same 404
as a missing one. A hand that never started is a 404 naming the hand.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Path, Response
from starlette.concurrency import run_in_threadpool

from services.api import read_schemas, schemas
from services.api.deps import TableId, get_container, get_principal, read_lang
from services.bootstrap import Container
from services.db import reading
from services.errors import NotFound
from services.replica import Source
from services.store.keys import Principal

_encoder = msgspec.json.Encoder()

router = APIRouter(
    prefix="/v1/tables",
    tags=["read"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),
)


def hand_events(src: Container | Source, tenant: str, table_id: str, hand: int, head: int) -> Any:
    """The :class:`projections.hand_reads.HandEvents` of the tenant's table's hand ``hand`` (a
    table whose last event is ``head``), read from ``src`` (the container: the primary; or the
    source ``Container.table_read`` chose): the snapshot located on one pooled connection, given
    back before the events are read (each page on its own). ``.first is None``: no such hand."""
    from projections import hand_reads

    span = reading(src.pool, lambda conn: hand_reads.locate(conn, tenant, table_id, hand))
    return hand_reads.load(span, src.store, src.engine, tenant, table_id, head)


@router.get(
    "/{table_id}/hands/{hand}/audit",
    operation_id="read-hand_audit",
    summary="Every ruling of one hand (the table's audit restricted to it)",
    responses=read_schemas.responses(read_schemas.HandAuditAnswer),
)
async def hand_audit(
    table_id: TableId,
    hand: Annotated[int, Path(ge=1, description="the hand's number (1, 2, …)")],
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    language: Annotated[str, Depends(read_lang)],
) -> Response:
    """Support keys only: the table's ``/audit`` restricted to hand ``hand`` (its rulings, 漏胡,
    kong chains, reported-vs-computed settlements, wall check), with the hash chain over the
    hand's events. Folds the hand only, from its snapshot. Messages in Chinese when
    Accept-Language prefers zh."""
    from services.api.read import table_of

    head = await run_in_threadpool(table_of, container, principal, table_id, "support")
    tenant = principal.tenant

    def build(src: Source) -> dict[str, Any]:
        from domain.events import SettlementReported, decode
        from projections import hand_audit
        from services.store.hand_span import reports_after, verify_span

        got = hand_events(src, tenant, table_id, hand, head.version)
        if got.first is None:
            raise NotFound(
                f"no hand {hand} at table {table_id!r}", message_zh=f"牌桌 {table_id} 没有第{hand}局"
            )

        def store_reads(conn: Any) -> tuple[dict[str, Any], list[tuple[int, str]]]:
            chain = verify_span(conn, tenant, table_id, got.first, got.last)
            late = reports_after(conn, tenant, table_id, got.last, hand) if got.last < head.version else []
            return chain, late

        chain, late = reading(src.pool, store_reads)
        reported = []
        for version, body in late:
            event = decode(body)
            if isinstance(event, SettlementReported):
                reported.append(hand_audit.reported_of(version, event))
        return hand_audit.build_hand(container.engine, table_id, got, reported, chain, head.version, language)

    body = await run_in_threadpool(container.table_read, tenant, table_id, head.version, build)
    return Response(
        _encoder.encode(body),
        media_type="application/json",
        headers={"Content-Language": body["lang"], "Vary": "Accept-Language"},
    )
