"""``/v1/health``: no key needed; says whether the database answers, and how fresh the read models
are (``projections``: caught up, or how long ago the oldest event they lack was recorded; how many
events are parked — a count only, no tenant or table; which checkpoints are stale).

``/v1/projections/parked``: a tenant's own parked events (support or platform key), never another
tenant's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from projections import parked
from projections.queries.freshness import Freshness
from services.api import schemas
from services.api.answers import RETRY_AFTER, error_answer
from services.api.deps import Principal, get_container, get_principal, require_role
from services.bootstrap import Container
from services.db import reading

router = APIRouter(prefix="/v1", tags=["health"])


@router.get(
    "/health",
    operation_id="health-get",
    summary="Service and database health",
    response_model=schemas.Health,
    responses={503: {**schemas.error_responses(503)[503], "description": "the database does not answer"}},
)
def health(container: Annotated[Container, Depends(get_container)]) -> JSONResponse:
    body: dict[str, Any] = {"status": "ok", "database": "ok", "engine": container.engine.name}
    try:
        with container.pool.connection(timeout=2.0) as conn:
            body["projections"] = Freshness()(conn)
    except Exception as exc:
        # The answer says which fault (as every 503 does), never the driver's own text: this route
        # needs no key, and that text names hosts, sockets and roles. The detail goes to the log.
        status, error = error_answer(exc)
        message = error["message"] if status == 503 else "the database does not answer; retry"
        body.update(status="unavailable", database="unreachable", error="unavailable", message=message)
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER[1].decode()})
    return JSONResponse(body)


@router.get(
    "/projections/parked",
    operation_id="projections-parked",
    tags=["projections"],
    summary="This tenant's parked events",
    description="Events of the caller's tenant that a read model could not apply, oldest first "
    "(docs/projections.md §1): the model, table, version and event id, the error, when, how many "
    "tries, and `waits_for` — the version of the parked event of the same table it waits behind. "
    "An operator applies them again with `kwx projections retry` after a fix.",
    response_model=schemas.ParkedEvents,
    responses=schemas.error_responses(401, 403, 503),
)
def parked_events(
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many")] = 100,
) -> JSONResponse:
    require_role(principal, "support", "platform")
    items = reading(container.pool, lambda conn: parked.of_tenant(conn, principal.tenant, limit))
    return JSONResponse({"parked": items})
