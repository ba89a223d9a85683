"""``/v1/health``: no key needed; says whether the database answers."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from services.api import schemas
from services.api.answers import RETRY_AFTER, error_answer
from services.api.deps import get_container
from services.bootstrap import Container

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
            conn.execute("SELECT 1")
    except Exception as exc:
        # The answer says which fault (as every 503 does), never the driver's own text: this route
        # needs no key, and that text names hosts, sockets and roles. The detail goes to the log.
        status, error = error_answer(exc)
        message = error["message"] if status == 503 else "the database does not answer; retry"
        body.update(status="unavailable", database="unreachable", error="unavailable", message=message)
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER[1].decode()})
    return JSONResponse(body)
